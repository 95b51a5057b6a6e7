// note.js is the visit note form's diagnosis search: as the provider
// types a code or words, the ICD-10-CM codes that match fill the search's
// suggestions (GET /providers/diagnoses); choosing one adds it to the
// note's diagnoses as a checked box, which unchecking removes. Without
// JavaScript, codes are typed into the comma-separated field instead.
//
// The note's section is redrawn when its forms are sent (live.js), so the
// script holds no element: it listens on the document and looks the
// search's parts up at each event. It may be loaded again by a redraw;
// it runs once.
(function () {
  "use strict";
  if (!window.fetch || window.teleclinicNote) {
    return;
  }
  var found = {}; // code → description, of the last answer
  var timer = null;
  var asked = "";
  var answeredInto = null; // the suggestion list the last answer filled
  window.teleclinicNote = { asked: 0 };

  function el(id) {
    return document.getElementById(id);
  }

  function lookup() {
    var search = el("dx-search");
    if (!search) {
      return;
    }
    var q = search.value.trim();
    // A redrawn section has an empty suggestion list: ask again.
    if (q.length < 2 || (q === asked && answeredInto === el("dx-options"))) {
      return;
    }
    asked = q;
    window.teleclinicNote.asked++;
    fetch("/providers/diagnoses?q=" + encodeURIComponent(q), { credentials: "same-origin" })
      .then(function (res) { return res.ok ? res.json() : []; })
      .then(function (list) {
        var options = el("dx-options");
        if (!options) {
          return;
        }
        options.textContent = "";
        found = {};
        list.forEach(function (d) {
          found[d.code] = d.description;
          var o = document.createElement("option");
          o.value = d.code;
          o.label = d.code + " " + d.description;
          o.textContent = d.code + " " + d.description;
          options.appendChild(o);
        });
        answeredInto = options;
      })
      .catch(function () {});
  }

  function add(code) {
    var search = el("dx-search");
    var chosen = el("dx-chosen");
    if (!search || !chosen) {
      return;
    }
    if (chosen.querySelector('input[value="' + CSS.escape(code) + '"]')) {
      search.value = "";
      return;
    }
    var li = document.createElement("li");
    var label = document.createElement("label");
    label.className = "check";
    var box = document.createElement("input");
    box.type = "checkbox";
    box.name = "diagnoses";
    box.value = code;
    box.checked = true;
    label.appendChild(box);
    label.appendChild(document.createTextNode(" " + code + " " + found[code]));
    li.appendChild(label);
    chosen.appendChild(li);
    search.value = "";
  }

  document.addEventListener("input", function (e) {
    if (e.target.id !== "dx-search") {
      return;
    }
    var v = e.target.value.trim().toUpperCase();
    if (found[v]) { // a suggestion chosen
      add(v);
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(lookup, 200);
  });
  // Enter in the search adds the first suggestion rather than sending the
  // note.
  document.addEventListener("keydown", function (e) {
    if (e.target.id !== "dx-search" || e.key !== "Enter") {
      return;
    }
    e.preventDefault();
    var options = el("dx-options");
    var first = options && options.querySelector("option");
    if (first) {
      add(first.value);
    }
  });
})();

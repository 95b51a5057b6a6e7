// note.js is the visit note form's diagnosis search: as the provider
// types a code or words, the ICD-10-CM codes that match fill the search's
// suggestions (GET /providers/diagnoses); choosing one adds it to the
// note's diagnoses as a checked box, which unchecking removes. Without
// JavaScript, codes are typed into the comma-separated field instead.
(function () {
  "use strict";
  var search = document.getElementById("dx-search");
  var options = document.getElementById("dx-options");
  var chosen = document.getElementById("dx-chosen");
  if (!search || !options || !chosen || !window.fetch) {
    return;
  }
  var found = {}; // code → description, of the last answer
  var timer = null;
  var asked = "";

  function lookup() {
    var q = search.value.trim();
    if (q.length < 2 || q === asked) {
      return;
    }
    asked = q;
    fetch("/providers/diagnoses?q=" + encodeURIComponent(q), { credentials: "same-origin" })
      .then(function (res) { return res.ok ? res.json() : []; })
      .then(function (list) {
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
      })
      .catch(function () {});
  }

  function add(code) {
    if (chosen.querySelector('input[value="' + code + '"]')) {
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

  search.addEventListener("input", function () {
    var v = search.value.trim().toUpperCase();
    if (found[v]) { // a suggestion chosen
      add(v);
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(lookup, 200);
  });
  // Enter in the search adds the first suggestion rather than sending the
  // note.
  search.addEventListener("keydown", function (e) {
    if (e.key !== "Enter") {
      return;
    }
    e.preventDefault();
    var first = options.querySelector("option");
    if (first) {
      add(first.value);
    }
  });
})();

// live.js keeps a portal page current. The page names its event stream
// in an element's data-live and its own address in data-live-page. On each
// "changed" event the page is read again and every element marked
// data-live-region is replaced by its new version (matched by id); the
// stream itself carries no data. On "ended" (the session is over) the page
// reloads, which sends the browser to sign in.
//
// A form marked data-inplace (the visit's message form) is sent with
// fetch instead of by navigation, so nothing else on the page (the video
// call above all) is interrupted: the answer, the page the form's
// redirect leads to, has its live regions swapped in; a refusal's message
// is shown in the form's [role=alert] element.
// The browser's time zone: until the profile names one, the server shows
// times in the zone of the "tz" cookie set here from Intl. A page drawn
// before the cookie said the right zone, and showing times, is drawn
// again once (the sessionStorage mark stops a loop).
// T is a message in the page's language (window.teleclinicMessages, from
// /i18n/{lang}.js; a message it lacks stays in English), each %s filled
// with the next argument.
window.T = function (key) {
  var all = window.teleclinicMessages || {};
  var text = Object.prototype.hasOwnProperty.call(all, key) ? all[key] : key;
  var args = Array.prototype.slice.call(arguments, 1);
  return text.replace(/%s/g, function () { return args.length ? String(args.shift()) : "%s"; });
};

(function () {
  "use strict";
  var root = document.documentElement;
  if (root.getAttribute("data-zone-from") === "profile" || !window.Intl) {
    return;
  }
  var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!tz || !/^[A-Za-z0-9_\/+-]+$/.test(tz)) { // an IANA name is a valid cookie value as it is
    return;
  }
  document.cookie = "tz=" + tz + "; path=/; max-age=31536000; samesite=lax";
  if (root.getAttribute("data-zone") === tz || !document.querySelector("time, [data-times]")) {
    return;
  }
  try {
    if (sessionStorage.getItem("teleclinic.tz") === tz) {
      return;
    }
    sessionStorage.setItem("teleclinic.tz", tz);
  } catch (e) {
    return;
  }
  location.reload();
})();

(function () {
  "use strict";
  if (!window.fetch || !window.DOMParser) {
    return;
  }
  var conf = document.querySelector("[data-live]");
  var page = (conf && conf.getAttribute("data-live-page")) || location.pathname;
  var busy = false;
  var again = false;

  // The rule of every redraw, once for the whole portal: what a person is
  // doing is never taken from them. A region is replaced by its new
  // version, but each control they changed and did not send (a note being
  // typed, a box ticked) keeps its value in the new version, a part they
  // opened (details with an id) stays open, the control they are in keeps
  // the focus and the selection, and a region holding
  // input that its new version has no place for is not replaced at all
  // until the input is sent or undone. Scripts listen from the document
  // (delegated), so a redrawn region keeps working.

  // state is what a control holds now, as a string to compare.
  function state(el) {
    if (el.type === "checkbox" || el.type === "radio") {
      return el.checked ? "1" : "0";
    }
    if (el.tagName === "SELECT") {
      return Array.prototype.map.call(el.options, function (o) { return o.selected ? "1" : "0"; }).join("");
    }
    return el.value;
  }

  // key names a control across redraws: a redraw by the stream may put
  // a form's new copy in place while the form is on its way.
  function key(el) {
    if (el.id) {
      return "#" + el.id;
    }
    return (el.name || "") + ((el.type === "checkbox" || el.type === "radio") ? "=" + el.value : "");
  }

  // unsaved says whether the person changed el from what the page drew
  // and has not sent it (sent: the controls of the form just sent, by
  // key, with what they held when it went).
  function unsaved(el, sent) {
    if (el.disabled || el.readOnly || /^(hidden|submit|button|reset|image)$/.test(el.type)) {
      return false;
    }
    if (sent && sent.has(key(el)) && sent.get(key(el)) === state(el)) {
      return false;
    }
    if (el.type === "file") {
      return el.files && el.files.length > 0;
    }
    if (el.type === "checkbox" || el.type === "radio") {
      return el.checked !== el.defaultChecked;
    }
    if (el.tagName === "SELECT") {
      return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    return el.value !== el.defaultValue;
  }

  // counterpart is el's place in fresh: the element of the same id, or of
  // the same name (and, for a box, value).
  function counterpart(el, fresh) {
    if (el.id) {
      return fresh.querySelector("#" + CSS.escape(el.id));
    }
    if (!el.name) {
      return null;
    }
    var sel = "[name=\"" + CSS.escape(el.name) + "\"]";
    if (el.type === "checkbox" || el.type === "radio") {
      sel += "[value=\"" + CSS.escape(el.value) + "\"]";
    }
    return fresh.querySelector(sel);
  }

  // carry moves old's unsaved input into fresh; false when some of it has
  // no place there (old must stay).
  function carry(old, fresh, sent) {
    var controls = old.querySelectorAll("input, textarea, select");
    for (var i = 0; i < controls.length; i++) {
      var el = controls[i];
      if (!unsaved(el, sent)) {
        continue;
      }
      var to = counterpart(el, fresh);
      if (!to || to.tagName !== el.tagName || to.type !== el.type || el.type === "file") {
        return false;
      }
      if (el.type === "checkbox" || el.type === "radio") {
        to.checked = el.checked;
      } else if (el.tagName === "SELECT") {
        for (var j = 0; j < el.options.length && j < to.options.length; j++) {
          to.options[j].selected = el.options[j].selected;
        }
      } else {
        to.value = el.value;
      }
    }
    return true;
  }

  // swap replaces the page's live regions with html's; after a form sent
  // in place (form, with sent: its controls as they went), the region
  // that form sits in too (data-inplace-region) and no other.
  function swap(html, form, sent) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var regions = Array.prototype.slice.call(document.querySelectorAll("[data-live-region]"));
    var own = form && form.closest("[data-inplace-region]");
    if (own && regions.indexOf(own) < 0) {
      regions.push(own);
    }
    var active = document.activeElement;
    var focus = null;
    regions.forEach(function (old) {
      var found = doc.getElementById(old.id);
      if (!found) {
        return;
      }
      var fresh = document.importNode(found, true);
      if (!carry(old, fresh, sent)) {
        return;
      }
      if (active && old.contains(active) && active !== old) {
        focus = { to: counterpart(active, fresh), from: active };
      }
      // What the person opened (a Cancel… with its reason) stays open.
      Array.prototype.forEach.call(old.querySelectorAll("details[id][open]"), function (d) {
        var to = fresh.querySelector("#" + CSS.escape(d.id));
        if (to && to.tagName === "DETAILS") {
          to.open = true;
        }
      });
      old.replaceWith(fresh);
    });
    if (focus && focus.to) {
      focus.to.focus({ preventScroll: true });
      try {
        if (typeof focus.from.selectionStart === "number" && focus.to.value === focus.from.value) {
          focus.to.setSelectionRange(focus.from.selectionStart, focus.from.selectionEnd, focus.from.selectionDirection);
        }
      } catch (e) { /* a control without a selection (a box, a date) */ }
    }
    document.dispatchEvent(new Event("teleclinic:swapped"));
  }

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(page, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (res) {
        if (res.redirected || !res.ok) {
          location.reload();
          return null;
        }
        return res.text();
      })
      .then(function (html) {
        if (html) {
          swap(html);
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  // notice shows the notice of the page a form led to ("The note is
  // saved…") where the page shows its notices.
  function notice(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main .notice[role=status]");
    var old = document.querySelector("main .notice[role=status]");
    if (!fresh) {
      return;
    }
    if (old) {
      old.textContent = fresh.textContent;
    } else {
      var h1 = document.querySelector("main h1");
      if (h1) {
        h1.insertAdjacentElement("afterend", document.importNode(fresh, true));
      }
    }
  }

  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.hasAttribute || !form.hasAttribute("data-inplace")) {
      return;
    }
    e.preventDefault();
    var alert = form.querySelector("[role=alert]");
    var button = form.querySelector("button[type=submit]");
    var data = new FormData(form);
    if (e.submitter && e.submitter.name) { // which button: save or sign
      data.append(e.submitter.name, e.submitter.value);
    }
    var body = new URLSearchParams(data);
    // What the form's controls held as it went: input typed after this
    // is still unsaved when the answer redraws the form.
    var sent = new Map();
    Array.prototype.forEach.call(form.elements, function (el) {
      sent.set(key(el), state(el));
    });
    if (button) {
      button.disabled = true;
    }
    fetch(form.getAttribute("action") || location.pathname, { method: "POST", credentials: "same-origin", headers: { Accept: "text/html" }, body: body })
      .then(function (res) {
        return res.text().then(function (html) {
          if (res.ok) {
            swap(html, form, sent);
            notice(html);
            // A sent form is emptied for the next message, unless the
            // person typed on while it went. The form may be a new copy
            // by now (a redraw came first): the one on the page.
            var now = form.isConnected ? form : (form.id && document.getElementById(form.id));
            var typedOn = now && Array.prototype.some.call(now.elements, function (el) { return sent.has(key(el)) && sent.get(key(el)) !== state(el); });
            if (now && now.getAttribute("data-inplace") !== "keep" && !typedOn) {
              now.reset();
            }
            if (alert) {
              alert.hidden = true;
            }
            return;
          }
          var doc = new DOMParser().parseFromString(html, "text/html");
          var why = doc.querySelector("main [role=alert]");
          throw new Error(why ? why.textContent : T("The server refused (%s).", res.status));
        });
      })
      .catch(function (err) {
        if (alert) {
          alert.textContent = err.message === "Failed to fetch" ? T("Not sent: the connection was lost. Try again.") : err.message;
          alert.hidden = false;
        }
      })
      .then(function () {
        if (button) {
          button.disabled = false;
        }
      });
  });

  // A file field that names its bounds (data-max-files, data-max-bytes)
  // says at once, before any byte is sent, when the chosen files pass
  // them, and the form does not send until they fit.
  document.addEventListener("change", function (e) {
    var input = e.target;
    if (!input.matches || !input.matches("input[type=file][data-max-bytes]") || !input.files) {
      return;
    }
    var total = 0;
    for (var i = 0; i < input.files.length; i++) {
      total += input.files[i].size;
    }
    var maxBytes = parseInt(input.getAttribute("data-max-bytes"), 10);
    var maxFiles = parseInt(input.getAttribute("data-max-files"), 10) || Infinity;
    var text = "";
    if (input.files.length > maxFiles) {
      text = T("Choose at most %s files.", maxFiles);
    } else if (total > maxBytes) {
      text = T("These files weigh %s MB together; the most is %s MB. Choose fewer or smaller ones.", Math.ceil(total / 1048576), Math.floor(maxBytes / 1048576));
    }
    input.setCustomValidity(text);
    var out = document.getElementById(input.id + "-error");
    if (out) {
      out.textContent = text;
      out.hidden = !text;
    }
  });

  if (!conf || !window.EventSource) {
    return;
  }
  var es = new EventSource(conf.getAttribute("data-live"));
  es.addEventListener("changed", refresh);
  es.addEventListener("ended", function () {
    es.close();
    location.reload();
  });
})();

// live.js keeps a portal page current. The page names its event stream
// in an element's data-live and its own address in data-live-page. On each
// "changed" event the page is read again and every element marked
// data-live-region is replaced by its new version (matched by id); the
// stream itself carries no data. On "ended" (the session is over) the page
// reloads, which sends the browser to sign in.
(function () {
  "use strict";
  var conf = document.querySelector("[data-live]");
  if (!conf || !window.EventSource || !window.fetch) {
    return;
  }
  var page = conf.getAttribute("data-live-page") || location.pathname;
  var busy = false;
  var again = false;

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var focused = document.activeElement && document.activeElement.id;
    document.querySelectorAll("[data-live-region]").forEach(function (old) {
      var fresh = doc.getElementById(old.id);
      if (fresh) {
        old.replaceWith(document.importNode(fresh, true));
      }
    });
    // Keyboard users keep their place when the control is still there.
    if (focused && document.activeElement === document.body) {
      var el = document.getElementById(focused);
      if (el) {
        el.focus();
      }
    }
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

  var es = new EventSource(conf.getAttribute("data-live"));
  es.addEventListener("changed", refresh);
  es.addEventListener("ended", function () {
    es.close();
    location.reload();
  });
})();

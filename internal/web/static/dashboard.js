// dashboard.js alerts a provider when a patient arrives. The dashboard's
// live region (kept current by live.js) says how many patients wait and
// how many messages are new; when a new patient appears in the waiting
// room or the e-consults, or a new message comes, the page plays a sound
// (which the provider can mute; the choice is kept in the browser), shows
// a browser notification if the provider allowed them, and always keeps
// the count in the tab's title. Each waiting patient's wait counts up.
//
// window.teleclinicAlerts shows what the page did, for the browser tests.
(function () {
  "use strict";
  var sound = document.getElementById("arrival-sound");
  var soundButton = document.getElementById("alert-sound");
  var notifyButton = document.getElementById("alert-notify");
  var baseTitle = document.title;
  var loaded = Date.now();
  var state = { alerts: 0, played: 0, notified: 0, requested: false, muted: false };
  try {
    state.muted = localStorage.getItem("teleclinic.mute") === "1";
  } catch (e) { /* storage off: the sound stays on */ }

  function region() {
    return document.getElementById("dashboard-live");
  }

  // What the region shows now: the counts, and who waits (by element id).
  function read() {
    var el = region();
    var waiting = [];
    el.querySelectorAll("#queue-list > li, #inbox-list > li").forEach(function (li) {
      var a = li.querySelector("a");
      waiting.push({ id: li.id, name: a ? a.textContent : "A patient" });
    });
    return {
      waiting: parseInt(el.getAttribute("data-waiting") || "0", 10),
      unread: parseInt(el.getAttribute("data-unread") || "0", 10),
      who: waiting
    };
  }

  function showTitle(now) {
    var n = now.waiting + now.unread;
    document.title = (n > 0 ? "(" + n + ") " : "") + baseTitle;
  }

  function showSound() {
    soundButton.setAttribute("aria-pressed", state.muted ? "false" : "true");
    soundButton.textContent = state.muted ? "Arrival sound off" : "Arrival sound on";
  }

  function showNotify() {
    notifyButton.hidden = !window.Notification || Notification.permission !== "default";
  }

  function alertFor(text) {
    state.alerts++;
    if (!state.muted && sound) {
      sound.currentTime = 0;
      var played = sound.play();
      if (played && played.then) {
        played.then(function () {
          state.played++;
        }, function () { /* the browser refused sound before a click */ });
      }
    }
    if (window.Notification && Notification.permission === "granted") {
      try {
        new Notification("Teleclinic: " + text, { tag: "teleclinic-arrival" });
        state.notified++;
      } catch (e) { /* some browsers notify only from a service worker */ }
    }
  }

  var last = read();
  showTitle(last);
  showSound();
  showNotify();

  document.addEventListener("teleclinic:swapped", function () {
    var now = read();
    var before = {};
    last.who.forEach(function (w) {
      before[w.id] = true;
    });
    var fresh = now.who.filter(function (w) {
      return !before[w.id];
    });
    if (fresh.length > 0) {
      alertFor(fresh.map(function (w) { return w.name; }).join(", ") + (fresh.length === 1 ? " is waiting" : " are waiting"));
    } else if (now.unread > last.unread) {
      alertFor("a new message from a patient");
    }
    last = now;
    showTitle(now);
    loaded = Date.now();
    tick();
  });

  soundButton.addEventListener("click", function () {
    state.muted = !state.muted;
    try {
      localStorage.setItem("teleclinic.mute", state.muted ? "1" : "0");
    } catch (e) { /* kept for this page only */ }
    showSound();
  });

  notifyButton.addEventListener("click", function () {
    state.requested = true;
    Notification.requestPermission().then(showNotify, showNotify);
  });

  // Each wait counts up from what the server said when it drew the page.
  function words(sec) {
    var m = Math.floor(sec / 60);
    if (m < 1) {
      return "under a minute";
    }
    return m < 60 ? m + " min" : Math.floor(m / 60) + " h " + (m % 60) + " min";
  }
  function tick() {
    var gone = Math.floor((Date.now() - loaded) / 1000);
    region().querySelectorAll("[data-waited]").forEach(function (el) {
      el.textContent = "waiting " + words(parseInt(el.getAttribute("data-waited"), 10) + gone);
    });
  }
  setInterval(tick, 30000);

  window.teleclinicAlerts = state;
})();

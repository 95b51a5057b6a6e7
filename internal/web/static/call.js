// call.js is the visit page's video call. The page's section#call names
// the call's routes in data-call and the mode in data-mode:
//
// p2p: browser to browser. Joining (POST {call}/join) makes this page a
// peer; every peer already in the call gets a "join" signal and sends this
// page an offer; this page answers. Offers, answers and ICE candidates go
// through the server (POST {call}/signal) and arrive on an event stream
// ({call}/events), which the browser resumes by itself after a drop (the
// server numbers the signals). The peer that sent the offer restarts ICE
// when a connection fails, so a dropped network reconnects without a
// reload.
//
// livekit: the join answers a token of the visit's LiveKit room, and
// livekit-client connects to it.
//
// A page in the call marks it in its tab's sessionStorage, so a reload
// joins again by itself. A person is one peer: a join from another tab or
// device takes the call over, and the earlier page is told ("replaced")
// and stops.
//
// window.teleclinicCall shows what the call is doing (peers, timing,
// inbound video statistics) to the browser tests and to support.
(function () {
  "use strict";
  var root = document.getElementById("call");
  if (!root || !window.fetch) {
    return;
  }
  var base = root.getAttribute("data-call");
  var mode = root.getAttribute("data-mode");
  var role = root.getAttribute("data-role");
  function $(id) {
    return document.getElementById(id);
  }
  var ui = {
    stage: $("stage"), self: $("local-video"), status: $("call-status"), check: $("call-check"), join: $("call-join"),
    mute: $("call-mute"), camera: $("call-camera"), share: $("call-share"), leave: $("call-leave"), end: $("call-end"),
    confirm: $("end-confirm"), record: $("call-record"), recIndicator: $("rec-indicator"), consent: $("record-consent"),
    joinAudio: $("call-join-audio"), meter: $("mic-level"), speaker: $("call-speaker"), network: $("call-network"),
    checkResult: $("devcheck-result"), testSound: $("test-sound"), devcheck: $("devcheck")
  };
  var audioOnly = false; // joined, or joining, without the camera
  var trouble = ""; // what the last device check found wrong, in words
  var check = { level: 0, network: "", sound: false, relay: "" }; // what the device check found
  var local = null; // the camera and microphone
  var screen = null; // the shared screen, while shared
  var me = null; // this page's place in the call (the join's answer)
  var events = null;
  var room = null; // LiveKit mode
  var peers = {};
  // Through LiveKit, the others' seats in the call (their peer ids), as
  // the server's signals tell: whose consent a recording needs.
  var seats = {};
  var timing = { join: 0, firstFrame: 0 };
  var seat = "teleclinic.call:" + base; // set while this tab is in the call
  function remember(on) {
    try {
      if (on) {
        sessionStorage.setItem(seat, "1");
      } else {
        sessionStorage.removeItem(seat);
      }
    } catch (e) { /* storage off: a reload asks to join again */ }
  }
  function wasInCall() {
    try {
      return sessionStorage.getItem(seat) === "1";
    } catch (e) {
      return false;
    }
  }
  var replacedText = T("You joined this call from another tab or device, so this one has left it. Press Join the call to move the call back here.");

  function say(text) {
    ui.status.textContent = text;
  }

  function show(el, on) {
    if (el) {
      el.hidden = !on;
    }
  }

  function inCall(on) {
    document.documentElement.classList.toggle("in-call", on);
    show(ui.check, !on);
    show(ui.join, !on);
    show(ui.joinAudio, !on);
    show(ui.devcheck, !on);
    [ui.mute, ui.camera, ui.share, ui.leave, ui.end, ui.record].forEach(function (el) {
      show(el, on);
    });
    if (!navigator.mediaDevices || !navigator.mediaDevices.getDisplayMedia) {
      show(ui.share, false);
    }
  }

  // The device check: the camera and microphone, started as the page
  // opens, with the microphone's level, a test sound and a test of the
  // network; and what to do, for this browser, when it refuses them or
  // finds none. Without a camera (or by choice) the visit goes on by
  // voice.
  function devices(quiet) {
    if (local && (!audioOnly || local.getVideoTracks().length === 0)) {
      return Promise.resolve(local);
    }
    if (local && audioOnly) { // the camera is put away for a voice-only visit
      local.getVideoTracks().forEach(function (t) {
        t.stop();
        local.removeTrack(t);
      });
      return Promise.resolve(local);
    }
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      return Promise.reject(new Error(T("This browser cannot use a camera here. Open the page over https in a current browser.")));
    }
    if (!quiet) {
      say(T("Asking for your camera and microphone…"));
    }
    var video = audioOnly ? false : { width: 640, height: 480 };
    return navigator.mediaDevices.getUserMedia({ audio: true, video: video })
      .catch(function (err) {
        if (video && (err.name === "NotFoundError" || err.name === "OverconstrainedError")) {
          // No camera: the visit can go on by voice.
          return navigator.mediaDevices.getUserMedia({ audio: true });
        }
        throw err;
      })
      .then(function (stream) {
        trouble = "";
        local = stream;
        show(ui.stage, true);
        show(ui.devcheck, !me);
        ui.self.srcObject = stream;
        meter(stream);
        var cam = stream.getVideoTracks().length > 0;
        if (!quiet) {
          say(cam ? T("Your camera and microphone work. Join when you are ready.")
            : audioOnly ? T("Your microphone works: you will join by voice.")
              : T("No camera was found: you can join with your microphone only."));
        }
        return stream;
      }, function (err) {
        var text = T("Your camera or microphone could not be used: %s", err.message);
        if (err.name === "NotAllowedError" || err.name === "SecurityError") {
          text = T("Camera and microphone are blocked for this page.") + " " + unblockHelp() + " " + T("Then press Check camera and microphone.");
        } else if (err.name === "NotFoundError") {
          text = T("No camera or microphone was found. Connect one, then press Check camera and microphone again.");
        } else if (err.name === "NotReadableError") {
          text = T("Another app is using your camera or microphone. Close it, then press Check camera and microphone again.");
        }
        say(text);
        trouble = text;
        err.said = true;
        throw err;
      });
  }

  // unblockHelp is how this browser gives a page back its camera.
  function unblockHelp() {
    var ua = navigator.userAgent;
    if (/Edg\//.test(ua)) {
      return T("In Edge, click the lock left of the address, set Camera and Microphone to Allow, and reload the page.");
    }
    if (/Firefox\//.test(ua)) {
      return T("In Firefox, click the crossed-out camera left of the address and remove the block, then reload the page.");
    }
    if (/Chrome\//.test(ua)) {
      return T("In Chrome, click the camera icon at the right of the address bar (or the tune icon left of it), choose to always allow this site, and reload the page.");
    }
    if (/Safari\//.test(ua)) {
      return T("In Safari, open Safari > Settings for this website, set Camera and Microphone to Allow, and reload the page.");
    }
    return T("Allow the camera and microphone in your browser's settings for this site, and reload the page.");
  }

  // meter shows the microphone's level, so a muted or dead microphone is
  // seen before the visit.
  var levels = null;
  var meterCtx = null;
  function meter(stream) {
    if (!ui.meter || levels || !stream.getAudioTracks().length) {
      return;
    }
    var Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) {
      return;
    }
    var ctx = new Ctx();
    meterCtx = ctx;
    var an = ctx.createAnalyser();
    an.fftSize = 512;
    ctx.createMediaStreamSource(stream).connect(an);
    var buf = new Float32Array(an.fftSize);
    levels = setInterval(function () {
      an.getFloatTimeDomainData(buf);
      var sum = 0;
      for (var i = 0; i < buf.length; i++) {
        sum += buf[i] * buf[i];
      }
      var level = Math.min(1, Math.sqrt(sum / buf.length) * 4);
      check.level = Math.max(check.level, level);
      ui.meter.value = level;
    }, 100);
    // A browser that starts sound only after a click resumes it then.
    document.addEventListener("click", function () {
      if (ctx.state === "suspended") {
        ctx.resume();
      }
    }, { once: true });
  }

  function tell(text) {
    if (ui.checkResult) {
      ui.checkResult.textContent = text;
    }
  }

  // testSound plays a chime through the speakers.
  function testSound() {
    ui.testSound.currentTime = 0;
    ui.testSound.play().then(function () {
      check.sound = true;
      tell(T("Playing a chime: if you heard it, your speakers work. If not, turn the sound up or choose another output."));
    }, function () {
      tell(T("The browser did not play the chime. Check that the page is not muted."));
    });
  }

  // candidates gathers the ICE candidates of a connection with servers
  // (and policy), answering the kinds found ({host, srflx, relay}) within
  // five seconds.
  function candidates(servers, policy) {
    return new Promise(function (resolve) {
      if (!window.RTCPeerConnection) {
        resolve({});
        return;
      }
      var found = {};
      var conf = { iceServers: servers };
      if (policy) {
        conf.iceTransportPolicy = policy;
      }
      var pc = new RTCPeerConnection(conf);
      var done = function () {
        pc.close();
        resolve(found);
      };
      pc.onicecandidate = function (e) {
        if (!e.candidate) {
          done();
          return;
        }
        var m = / typ (\w+)/.exec(e.candidate.candidate);
        if (m) {
          found[m[1]] = true;
        }
      };
      pc.createDataChannel("check");
      pc.createOffer().then(function (o) { return pc.setLocalDescription(o); }).catch(done);
      setTimeout(done, 5000);
    });
  }

  // relayCheck asks the server for the relay a join would get and tries
  // it alone: "ok", "failed", or "" when there is none to try (no relay,
  // or not yet: a relay is handed out once a provider has the visit).
  function relayCheck() {
    return post("/relay").then(function (d) {
      var turn = (d.ice_servers || []).filter(function (s) {
        return [].concat(s.urls).some(function (u) { return /^turns?:/.test(u); });
      });
      if (!turn.length) {
        return "";
      }
      return candidates(turn, "relay").then(function (k) { return k.relay ? "ok" : "failed"; });
    }, function () { return ""; });
  }

  // testNetwork times a request to this server, asks the STUN servers how
  // this network reaches the internet (whether a call can go direct), and
  // tries the clinic's relay, which a call takes where it cannot.
  function testNetwork() {
    tell(T("Testing the connection…"));
    var t0 = performance.now();
    var stun = [];
    try {
      stun = JSON.parse(root.getAttribute("data-stun") || "[]");
    } catch (e) { /* none */ }
    var server = fetch("/static/portal.css?ping=" + Date.now(), { cache: "no-store" }).then(function (res) {
      return res.ok ? Math.round(performance.now() - t0) : -1;
    }, function () { return -1; });
    var kinds = candidates(stun.length ? [{ urls: stun }] : []);
    var relay = mode === "livekit" ? Promise.resolve("") : relayCheck();
    Promise.all([server, kinds, relay]).then(function (r) {
      var ms = r[0], k = r[1];
      check.relay = r[2];
      var text = ms < 0 ? T("The clinic's server could not be reached: check your internet connection.") : T("Connection to the clinic: %s ms.", ms);
      if (k.srflx) {
        text += " " + T("Your network allows direct calls.");
      } else if (stun.length) {
        text += " " + T("Your network hides you from direct calls; the call may need the clinic's relay and can take a moment longer.");
      } else if (k.host) {
        text += " " + T("Your browser can make calls from this network.");
      }
      if (r[2] === "ok") {
        text += " " + T("The clinic's relay answers: a call gets through even where direct calls are blocked.");
      } else if (r[2] === "failed") {
        text += " " + T("The clinic's relay did not answer from this network: if the call cannot connect, try another network, such as your phone's data.");
      }
      check.network = text;
      tell(text);
    });
  }

  function post(path, body, keepalive) {
    return fetch(base + path, {
      method: "POST", credentials: "same-origin", keepalive: !!keepalive,
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {})
    }).then(function (res) {
      if (res.status === 204) {
        return null;
      }
      return res.json().then(function (data) {
        if (!res.ok) {
          var err = new Error(data.message || T("The server refused."));
          err.status = res.status;
          throw err;
        }
        return data;
      });
    });
  }

  function signal(to, type, data) {
    return post("/signal", { peer: me.peer, to: to, type: type, data: data }).catch(function (err) {
      say(T("A message to the other side was lost (%s); the call may need a moment.", err.message));
      return null;
    });
  }

  // A remote participant's tile.
  function tile(id, name) {
    var fig = document.createElement("figure");
    fig.className = "tile";
    fig.id = "peer-" + id;
    var video = document.createElement("video");
    video.autoplay = true;
    video.playsInline = true;
    var cap = document.createElement("figcaption");
    cap.textContent = name || T("Participant");
    fig.appendChild(video);
    fig.appendChild(cap);
    ui.stage.appendChild(fig);
    // The first frame shown, for the call's setup time.
    var frame = function () {
      if (!timing.firstFrame && video.videoWidth > 0) {
        timing.firstFrame = performance.now();
      }
    };
    if (video.requestVideoFrameCallback) {
      video.requestVideoFrameCallback(frame);
    } else {
      video.addEventListener("loadeddata", frame);
    }
    return { fig: fig, video: video, cap: cap };
  }

  function peerFor(id, name, initiator) {
    var p = peers[id];
    if (p) {
      return p;
    }
    var pc = new RTCPeerConnection({ iceServers: me.ice_servers, iceTransportPolicy: me.ice_transport_policy || "all" });
    p = peers[id] = { id: id, name: name, pc: pc, initiator: initiator, pending: [], view: tile(id, name), restarts: 0 };
    // The camera, or the screen while it is shared, as the video.
    var video = (screen || local).getVideoTracks()[0];
    local.getAudioTracks().forEach(function (t) {
      pc.addTrack(t, local);
    });
    if (video) {
      pc.addTrack(video, local);
    }
    pc.onicecandidate = function (e) {
      if (e.candidate) {
        signal(id, "candidate", e.candidate.toJSON());
      }
    };
    pc.ontrack = function (e) {
      var stream = e.streams[0] || new MediaStream([e.track]);
      if (p.view.video.srcObject !== stream) {
        p.view.video.srcObject = stream;
      }
    };
    pc.onconnectionstatechange = function () {
      if (pc.connectionState === "connected") {
        say(T("Connected with %s.", p.name || T("the other participant")));
      } else if (pc.connectionState === "failed" || pc.connectionState === "disconnected") {
        restart(p);
      }
    };
    return p;
  }

  // ICE restart after a failed or long-disconnected connection: the peer
  // that made the first offer makes a new one with new ICE credentials
  // (new TURN allocations too), and again every 10 s until it connects.
  function restart(p) {
    say(T("The connection with %s dropped; reconnecting…", p.name || T("the other participant")));
    if (!p.initiator || p.restarting) {
      return;
    }
    p.restarting = true;
    setTimeout(function () {
      p.restarting = false;
      var st = p.pc.connectionState;
      if (peers[p.id] !== p || st === "connected" || st === "closed") {
        return;
      }
      p.restarts++;
      p.pc.restartIce();
      offer(p, true);
      setTimeout(function () {
        var now = p.pc.connectionState;
        if (peers[p.id] === p && now !== "connected" && now !== "closed") {
          restart(p);
        }
      }, 10000);
    }, p.pc.connectionState === "failed" ? 0 : 3000);
  }

  function offer(p, iceRestart) {
    return p.pc.createOffer({ iceRestart: !!iceRestart })
      .then(function (o) {
        return p.pc.setLocalDescription(o);
      })
      .then(function () {
        return signal(p.id, "offer", { sdp: p.pc.localDescription.sdp, name: myName(), role: role });
      });
  }

  function myName() {
    return me && me.name ? me.name : "";
  }

  function flush(p) {
    var list = p.pending;
    p.pending = [];
    list.forEach(function (c) {
      p.pc.addIceCandidate(c).catch(function () {});
    });
  }

  function drop(id) {
    var p = peers[id];
    if (!p) {
      return;
    }
    delete peers[id];
    p.pc.close();
    p.view.fig.remove();
  }

  // The signals both modes act on alike: the recording's notice, the
  // consents and its state, a newcomer (who was not asked), and this
  // person's call taken over by another page of theirs. True when s was
  // one of them and needs nothing more.
  function onCallSignal(s) {
    var d = s.data || {};
    switch (s.type) {
      case "join":
        if (rec.recorder) {
          stopRecording(T("Recording stopped: someone joined who was not asked. Press Record to ask everyone again."));
        }
        return false;
      case "record": // the provider asks everyone's consent
        askConsent(s.from, d.name);
        return true;
      case "consent":
        if (rec.asking) {
          rec.answers[s.from] = !!d.agree;
          consentAnswered();
        }
        return true;
      case "state":
        if (typeof d.recording === "boolean") {
          show(ui.recIndicator, d.recording);
        }
        return false;
      case "replaced": // this person joined from another page: that one has the call now
        remember(false);
        hangUp();
        me = null;
        say(replacedText);
        return true;
    }
    return false;
  }

  // LiveKit mode: the SFU carries the media and its signalling; the call's
  // signals on the server say who is in the call, by their seat (peer):
  // whose consent a recording needs.
  function onSeatSignal(s) {
    var d = s.data || {};
    if (s.type === "join") {
      seats[s.from] = { name: d.name };
    } else if (s.type === "leave") {
      delete seats[s.from];
      if (rec.asking) {
        consentAnswered();
      }
    }
  }

  // who names a participant as their join or offer does: an interpreter
  // as one, their name already with their language.
  function who(d) {
    return d.role === "interpreter" && d.name ? T("%s (interpreter)", d.name) : d.name;
  }

  function onSignal(s) {
    if (onCallSignal(s)) {
      return;
    }
    if (mode === "livekit") {
      onSeatSignal(s);
      return;
    }
    var d = s.data || {};
    var p = peers[s.from];
    switch (s.type) {
      case "join": // a newcomer: this page offers
        drop(s.from);
        offer(peerFor(s.from, who(d), true));
        say(T("%s joined the call.", who(d) || T("Someone")));
        break;
      case "offer":
        p = peerFor(s.from, who(d), false);
        if (d.name) {
          p.view.cap.textContent = who(d);
          p.name = who(d);
        }
        p.pc.setRemoteDescription({ type: "offer", sdp: d.sdp })
          .then(function () {
            flush(p);
            return p.pc.createAnswer();
          })
          .then(function (a) {
            return p.pc.setLocalDescription(a);
          })
          .then(function () {
            return signal(s.from, "answer", { sdp: p.pc.localDescription.sdp });
          })
          .catch(function (err) {
            say(T("Could not connect with %s: %s", p.name || T("the other participant"), err.message));
          });
        break;
      case "answer":
        if (p) {
          p.pc.setRemoteDescription({ type: "answer", sdp: d.sdp }).then(function () {
            flush(p);
          });
        }
        break;
      case "candidate":
        if (p && p.pc.remoteDescription) {
          p.pc.addIceCandidate(d).catch(function () {});
        } else if (p) {
          p.pending.push(d);
        }
        break;
      case "state":
        if (p) {
          p.view.cap.textContent = (p.name || T("Participant")) + (d.muted ? " " + T("(muted)") : "") + (d.camera === false ? " " + T("(camera off)") : "");
        }
        break;
      case "leave":
        if (p) {
          say(T("%s left the call.", p.name || T("The other participant")));
        }
        drop(s.from);
        break;
    }
  }

  function follow() {
    events = new EventSource(base + "/events?peer=" + encodeURIComponent(me.peer) + "&after=" + me.after);
    events.addEventListener("signal", function (e) {
      onSignal(JSON.parse(e.data));
    });
    // The browser reconnects a dropped stream by itself; a stream the
    // server refuses (this page's seat was given up while it slept) is
    // closed for good, and the page must join again.
    events.onerror = function () {
      if (events && events.readyState === EventSource.CLOSED) {
        hangUp();
        say(T("The connection to the call was lost. Join again to continue."));
      }
    };
    events.addEventListener("ended", function (e) {
      var d = JSON.parse(e.data);
      events.close();
      remember(false);
      if (d.code === "unauthenticated") {
        location.reload(); // to sign in
        return;
      }
      hangUp();
      if (d.status === "completed" || d.status === "cancelled") {
        over();
      } else {
        say(T("You are no longer in the call. Join again when you are ready."));
      }
    });
  }

  function join() {
    unring();
    ui.join.disabled = true;
    timing.join = performance.now();
    timing.firstFrame = 0;
    devices()
      .then(function () {
        say(T("Joining…"));
        return post("/join", { audio_only: audioOnly });
      })
      .then(function (j) {
        me = j;
        remember(true);
        if (j.mode === "livekit") {
          return joinLiveKit(j);
        }
        inCall(true);
        follow();
        say(j.peers.length ? T("Connecting with %s…", j.peers.map(function (x) { return x.name; }).join(", "))
          : (role === "provider" ? T("You are in the call. Your patient will appear here when they join.")
            : T("You are in the call. Your provider will appear here when they join.")));
      })
      .catch(function (err) {
        remember(false);
        if (err.status) {
          say(err.message);
        } else if (!err.said) {
          hangUp();
          say(T("The call could not start (%s). Try again in a moment.", err.message));
        }
      })
      .then(function () {
        ui.join.disabled = false;
      });
  }

  function hangUp() {
    if (rec.recorder) {
      stopRecording("");
    }
    Object.keys(peers).forEach(drop);
    seats = {};
    if (events) {
      events.close();
      events = null;
    }
    if (room) {
      room.disconnect();
      room = null;
    }
    stopScreen(true);
    inCall(false);
  }

  function leave() {
    var was = me;
    if (was) {
      rec.peer = was.peer;
    }
    hangUp();
    me = null;
    remember(false);
    if (was && was.peer) {
      post("/leave", { peer: was.peer }, true).catch(function () {});
    }
    say(role === "patient" ? T("You left the call and are back in the waiting room. Join again when you are ready.")
      : role === "provider" ? T("You left the call. Join again to continue, or end the visit.")
        : T("You left the call. Join again while the visit goes on."));
  }

  function sendState() {
    if (!me || !me.peer || !local) {
      return;
    }
    var a = local.getAudioTracks()[0];
    var v = local.getVideoTracks()[0];
    signal("", "state", { muted: a ? !a.enabled : true, camera: v ? v.enabled : false });
  }

  function toggle(button, tracks, onLabel, offLabel) {
    var off = button.getAttribute("aria-pressed") !== "true";
    tracks.forEach(function (t) {
      t.enabled = !off;
    });
    button.setAttribute("aria-pressed", off ? "true" : "false");
    button.textContent = off ? offLabel : onLabel;
    if (room) {
      return off;
    }
    sendState();
    return off;
  }

  function videoSenders() {
    var out = [];
    Object.keys(peers).forEach(function (id) {
      peers[id].pc.getSenders().forEach(function (s) {
        if (s.track && s.track.kind === "video") {
          out.push(s);
        }
      });
    });
    return out;
  }

  function stopScreen(quiet) {
    if (!screen) {
      return;
    }
    screen.getTracks().forEach(function (t) {
      t.stop();
    });
    screen = null;
    var cam = local && local.getVideoTracks()[0];
    videoSenders().forEach(function (s) {
      if (cam) {
        s.replaceTrack(cam);
      }
    });
    if (local) {
      ui.self.srcObject = local;
    }
    ui.share.setAttribute("aria-pressed", "false");
    ui.share.textContent = T("Share screen");
    if (!quiet) {
      say(T("You stopped sharing your screen."));
    }
  }

  function share() {
    if (screen) {
      stopScreen(false);
      return;
    }
    if (room) {
      var on = ui.share.getAttribute("aria-pressed") !== "true";
      room.localParticipant.setScreenShareEnabled(on).then(function () {
        ui.share.setAttribute("aria-pressed", on ? "true" : "false");
        ui.share.textContent = on ? T("Stop sharing") : T("Share screen");
      });
      return;
    }
    navigator.mediaDevices.getDisplayMedia({ video: true }).then(function (s) {
      screen = s;
      var track = s.getVideoTracks()[0];
      track.addEventListener("ended", function () {
        stopScreen(false);
      });
      videoSenders().forEach(function (sender) {
        sender.replaceTrack(track);
      });
      ui.self.srcObject = s;
      ui.share.setAttribute("aria-pressed", "true");
      ui.share.textContent = T("Stop sharing");
      say(T("You are sharing your screen."));
    }, function () {
      say(T("Screen sharing was not started."));
    });
  }

  function endVisit() {
    var go = function () {
      // The recording is saved first: a completed visit takes no more.
      (rec.recorder ? stopRecording("") : Promise.resolve()).then(function () {
        return post("/end");
      }).then(function () {
        say(T("The visit has ended."));
      }, function (err) {
        say(err.message);
      });
    };
    if (ui.confirm && ui.confirm.showModal) {
      ui.confirm.returnValue = "";
      ui.confirm.showModal();
      ui.confirm.addEventListener("close", function once() {
        ui.confirm.removeEventListener("close", once);
        if (ui.confirm.returnValue === "end") {
          go();
        }
      });
    } else if (window.confirm(T("End the visit for everyone?"))) {
      go();
    }
  }

  // Recording, with everyone's consent. The provider's Record sends a
  // notice ("record") to the call; every other page asks its person, and
  // answers ("consent"). When all present agree, the provider's page
  // records what it receives (the first other participant's video, and
  // everyone's sound) with MediaRecorder, in parts of ten minutes, and
  // sends each part to the visit's recordings; the server keeps a part only
  // if everyone in the call agreed to that notice. Someone joining stops it.
  var rec = { asking: false, request: 0, answers: {}, recorder: null, chunks: [], start: 0, timer: null, audio: null, saved: 0 };

  function recordToggle() {
    if (rec.recorder) {
      stopRecording(T("You stopped the recording."));
      return;
    }
    if (rec.asking) {
      return;
    }
    rec.asking = true;
    rec.answers = {};
    say(T("Asking everyone in the call to agree to the recording…"));
    signal("", "record", { name: myName() }).then(function (answer) {
      if (!answer) {
        rec.asking = false;
        return;
      }
      rec.request = answer.seq;
      consentAnswered();
      setTimeout(function () {
        if (rec.asking) {
          rec.asking = false;
          say(T("Not everyone answered the recording notice; nothing is recorded."));
        }
      }, 60000);
    });
  }

  function consentAnswered() {
    if (!rec.asking || !rec.request) {
      return;
    }
    // Everyone else in the call answers: the mesh's peers, or through
    // LiveKit the seats the server knows.
    var others = mode === "livekit" ? seats : peers;
    var ids = Object.keys(others);
    for (var i = 0; i < ids.length; i++) {
      var a = rec.answers[ids[i]];
      if (a === false) {
        rec.asking = false;
        say(T("%s did not agree; nothing is recorded.", others[ids[i]].name || T("Someone")));
        return;
      }
      if (a !== true) {
        return; // still waiting
      }
    }
    rec.asking = false;
    startRecording();
  }

  // The sound of everyone and the video of the first other participant
  // (or this page's own camera when alone), as one stream.
  function mixed() {
    var ctx = new AudioContext();
    var out = ctx.createMediaStreamDestination();
    var video = null;
    var add = function (stream) {
      if (stream && stream.getAudioTracks().length) {
        ctx.createMediaStreamSource(stream).connect(out);
      }
    };
    add(local);
    Object.keys(peers).forEach(function (id) {
      var s = peers[id].view.video.srcObject;
      add(s);
      // Through LiveKit a participant's sound is a track of its own.
      (peers[id].tracks || []).forEach(function (t) {
        if (t.kind === "audio" && t.mediaStreamTrack) {
          add(new MediaStream([t.mediaStreamTrack]));
        }
      });
      if (!video && s && s.getVideoTracks().length) {
        video = s.getVideoTracks()[0];
      }
    });
    if (!video && local && local.getVideoTracks().length) {
      video = local.getVideoTracks()[0];
    }
    rec.audio = ctx;
    return new MediaStream((video ? [video] : []).concat(out.stream.getAudioTracks()));
  }

  function startRecording() {
    if (!window.MediaRecorder) {
      say(T("This browser cannot record."));
      return;
    }
    var stream = mixed();
    var part = function () {
      var chunks = [];
      var started = Math.floor(Date.now() / 1000);
      var r = new MediaRecorder(stream, { mimeType: "video/webm", videoBitsPerSecond: 250000, audioBitsPerSecond: 32000 });
      r.ondataavailable = function (e) {
        if (e.data.size > 0) {
          chunks.push(e.data);
        }
      };
      r.onstop = function () {
        var sent = upload(new Blob(chunks, { type: "video/webm" }), started, Math.floor(Date.now() / 1000));
        if (r.onsent) {
          r.onsent(sent);
        }
      };
      r.start(1000);
      rec.recorder = r;
    };
    part();
    // A new part every ten minutes: each is a recording of its own, and a
    // crash loses at most the part in progress.
    rec.timer = setInterval(function () {
      rec.recorder.stop();
      part();
    }, 600000);
    ui.record.setAttribute("aria-pressed", "true");
    ui.record.textContent = T("Stop recording");
    show(ui.recIndicator, true);
    signal("", "state", { recording: true });
    say(T("Everyone agreed: the call is being recorded."));
  }

  // stopRecording ends the recording; its promise settles once the last
  // part is saved (or could not be).
  function stopRecording(why) {
    clearInterval(rec.timer);
    var done = Promise.resolve();
    var r = rec.recorder;
    if (r && r.state !== "inactive") {
      done = new Promise(function (resolve) {
        r.onsent = function (sent) {
          sent.then(resolve, resolve);
        };
      });
      r.stop();
    }
    rec.recorder = null;
    if (rec.audio) {
      rec.audio.close();
      rec.audio = null;
    }
    ui.record.setAttribute("aria-pressed", "false");
    ui.record.textContent = T("Record");
    show(ui.recIndicator, false);
    if (me && me.peer) {
      signal("", "state", { recording: false });
    }
    if (why) {
      say(why);
    }
    return done;
  }

  function upload(blob, start, end) {
    var form = new FormData();
    form.append("file", blob, "call.webm");
    form.append("start", String(start));
    form.append("end", String(Math.max(end, start)));
    form.append("peer", (me && me.peer) || rec.peer);
    form.append("request", String(rec.request));
    return fetch(base + "/recording", { method: "POST", credentials: "same-origin", body: form }).then(function (res) {
      return res.json().then(function (d) {
        if (!res.ok) {
          throw new Error(d.message);
        }
        rec.saved++;
        say(T("The recording (%s KB) is saved with the visit.", Math.round(d.size / 1024)));
      });
    }).catch(function (err) {
      say(T("The recording could not be saved: %s", err.message));
    });
  }

  // A participant's answer to the recording notice.
  function askConsent(from, name) {
    if (!ui.consent || !ui.consent.showModal) {
      signal(from, "consent", { agree: false });
      return;
    }
    $("consent-ask").textContent = name ? T("%s asks to record this call.", name) : T("The provider asks to record this call.");
    ui.consent.returnValue = "";
    ui.consent.showModal();
    ui.consent.addEventListener("close", function once() {
      ui.consent.removeEventListener("close", once);
      signal(from, "consent", { agree: ui.consent.returnValue === "yes" });
    });
  }

  // LiveKit mode: the SFU carries the media; the page publishes its
  // camera and microphone and shows what it subscribes to.
  function joinLiveKit(j) {
    var LK = window.LivekitClient;
    if (!LK) {
      throw new Error(T("The call's client did not load; reload the page."));
    }
    room = new LK.Room({ adaptiveStream: true, dynacast: true });
    room.on(LK.RoomEvent.TrackSubscribed, function (track, pub, participant) {
      var p = peers[participant.identity];
      if (!p) {
        p = peers[participant.identity] = { id: participant.identity, view: tile(participant.identity, participant.name), tracks: [] };
        // What the page asks of a peer connection, over the SFU's: the
        // state, and the statistics of this participant's tracks.
        p.pc = {
          connectionState: "connected",
          close: function () {},
          getStats: function () {
            return Promise.all(p.tracks.map(function (t) {
              return t.getRTCStatsReport ? t.getRTCStatsReport() : undefined;
            })).then(function (reports) {
              var all = new Map();
              reports.forEach(function (r) {
                if (r) {
                  r.forEach(function (v, k) { all.set(k, v); });
                }
              });
              return all;
            });
          }
        };
      }
      p.tracks.push(track);
      if (track.kind === "video") {
        track.attach(p.view.video);
      } else {
        // The sound plays from an element in the participant's tile.
        p.view.fig.appendChild(track.attach());
      }
    });
    room.on(LK.RoomEvent.ParticipantDisconnected, function (participant) {
      drop(participant.identity);
    });
    room.on(LK.RoomEvent.Disconnected, function (reason) {
      if (reason === LK.DisconnectReason.DUPLICATE_IDENTITY) {
        remember(false);
        say(replacedText);
      } else if (!ui.leave.hidden) {
        say(T("You are no longer in the call. Join again when you are ready."));
      }
      inCall(false);
    });
    seats = {};
    (j.peers || []).forEach(function (x) {
      seats[x.peer] = { name: x.name };
    });
    return room.connect(j.livekit_url, j.livekit_token).then(function () {
      inCall(true);
      follow();
      return room.localParticipant.enableCameraAndMicrophone();
    }).then(function () {
      say(T("You are in the call."));
    });
  }

  // The provider's one-time link for a guest (an interpreter, a relative).
  function invite() {
    post("/invite").then(function (d) {
      var box = $("invite-box");
      var link = $("invite-link");
      link.value = d.url;
      box.hidden = false;
      link.focus();
      link.select();
      say(T("A guest link is ready below: it lets one person in, once, for two hours."));
    }, function (err) {
      say(err.message);
    });
  }

  // An interpreter brought into the call: the link goes to them by email
  // or text, and they join as a guest.
  function interpreter(btn) {
    btn.disabled = true;
    post("/interpreter", { interpreter_id: btn.getAttribute("data-interpreter"), via: btn.getAttribute("data-via") }).then(function (d) {
      say(d.via === "text" ? T("A link is on its way to %s by text; they join when they open it.", d.name)
        : T("A link is on its way to %s by email; they join when they open it.", d.name));
    }, function (err) {
      say(err.message);
    }).then(function () {
      btn.disabled = false;
    });
  }

  // over puts the call away for good once the visit has ended: out of the
  // call, camera and microphone off (their light goes out), no more Join.
  function over() {
    remember(false);
    hangUp();
    me = null;
    if (local) {
      local.getTracks().forEach(function (t) {
        t.stop();
      });
      local = null;
    }
    ui.self.srcObject = null;
    if (levels) {
      clearInterval(levels);
      levels = null;
    }
    if (meterCtx) {
      meterCtx.close().catch(function () {});
      meterCtx = null;
    }
    [ui.check, ui.join, ui.joinAudio, ui.devcheck, $("call-invite"), $("invite-box"), $("interpreters")].forEach(function (el) {
      show(el, false);
    });
    unring();
    root.classList.add("over");
    say(T("The visit has ended. Thank you."));
  }

  // The visit's state, as the page's live region draws it (static/live.js
  // redraws it on every change of the visit): when the provider joins
  // while the patient waits on this page, the patient joins by themselves
  // if the device check found their camera or microphone working, and is
  // rung otherwise; when the visit ends, the call is put away.
  var state = "";
  var opened = false; // an appointment's call opens at its time (opensIn)
  var preview = null; // the device check started as the page opened
  function followState() {
    var el = $("visit-live");
    var now = el ? el.getAttribute("data-state") || "" : "";
    if (now === state) {
      return;
    }
    state = now;
    if (now === "completed" || now === "cancelled") {
      over();
    } else if (now === "in progress" && role !== "provider") {
      providerIn();
    }
  }

  function providerIn() {
    if (me || ui.join.disabled || !opened) { // in the call, joining, or not open yet
      return;
    }
    var working = function (stream) {
      return stream && stream.getTracks().some(function (t) { return t.readyState === "live"; });
    };
    (local ? Promise.resolve(local) : preview || Promise.reject(new Error("no check"))).then(function (stream) {
      if (!working(stream) || me) {
        throw new Error("no working device");
      }
      say(T("Your provider is in the call. Joining…"));
      join();
    }).catch(ring);
  }

  // ring calls the person to the call when the page may not join by
  // itself: a sound (where the browser lets a page play one), the tab's
  // title, a vibration, a large Join button with the focus, and the
  // status read out.
  var rung = null; // the title before the ring
  function ring() {
    if (me || rung !== null) {
      return;
    }
    rung = document.title;
    document.title = "● " + T("Your provider is ready") + " – " + rung;
    ui.join.classList.add("ring");
    ui.join.focus();
    say(T("Your provider is in the call.") + " " + (trouble || T("Press Join the call.")));
    if (navigator.vibrate) {
      navigator.vibrate([300, 150, 300]);
    }
    if (ui.testSound) {
      var played = ui.testSound.play();
      if (played && played.catch) {
        played.catch(function () { /* no sound before a gesture */ });
      }
    }
  }

  function unring() {
    if (rung !== null) {
      document.title = rung;
      rung = null;
    }
    ui.join.classList.remove("ring");
  }

  ui.check.addEventListener("click", function () {
    local = local && local.active ? local : null;
    devices().catch(function () {});
  });
  ui.join.addEventListener("click", function () {
    audioOnly = false;
    join();
  });
  if (ui.joinAudio) {
    ui.joinAudio.addEventListener("click", function () {
      audioOnly = true;
      join();
    });
  }
  if (ui.speaker) {
    ui.speaker.addEventListener("click", testSound);
  }
  if (ui.network) {
    ui.network.addEventListener("click", testNetwork);
  }
  ui.leave.addEventListener("click", leave);
  ui.mute.addEventListener("click", function () {
    var off = toggle(ui.mute, local ? local.getAudioTracks() : [], T("Mute"), T("Unmute"));
    if (room) {
      room.localParticipant.setMicrophoneEnabled(!off);
    }
  });
  ui.camera.addEventListener("click", function () {
    var off = toggle(ui.camera, local ? local.getVideoTracks() : [], T("Turn camera off"), T("Turn camera on"));
    if (room) {
      room.localParticipant.setCameraEnabled(!off);
    }
  });
  ui.share.addEventListener("click", share);
  if (ui.end) {
    ui.end.addEventListener("click", endVisit);
  }
  if (ui.record) {
    ui.record.addEventListener("click", recordToggle);
  }
  if ($("call-invite")) {
    $("call-invite").addEventListener("click", invite);
  }
  Array.prototype.forEach.call(root.querySelectorAll("[data-interpreter]"), function (btn) {
    btn.addEventListener("click", function () {
      interpreter(btn);
    });
  });
  // A page that closes leaves the call, so its seat is free at once.
  window.addEventListener("pagehide", function () {
    if (me && me.peer) {
      post("/leave", { peer: me.peer }, true).catch(function () {});
    }
  });

  // An appointment's call opens a set time before the start: the page
  // counts down from what the server said, so the browser's clock does
  // not matter.
  var opensIn = parseInt(root.getAttribute("data-opens-in") || "0", 10);
  var previewLead = 15 * 60; // seconds before the call opens
  opened = opensIn <= 0;
  // The preview starts as the page opens (the browser asks once), but not
  // for an appointment still far off: reading its time turns no camera on.
  if (!wasInCall() && root.getAttribute("data-autojoin") !== "1" && opensIn < previewLead) {
    preview = devices(opensIn > 0);
    preview.catch(function () {});
  } else if (opensIn >= previewLead) {
    // No empty video and meter for a visit days off: they show once the
    // person checks their camera.
    show(ui.stage, false);
    show(ui.devcheck, false);
  }
  if (opensIn > 0) {
    ui.join.disabled = true;
    setTimeout(function () {
      ui.join.disabled = false;
      opened = true;
      if (ui.joinAudio) {
        ui.joinAudio.disabled = false;
      }
      say(T("The call is open: join when you are ready."));
    }, opensIn * 1000);
  } else if (wasInCall() || root.getAttribute("data-autojoin") === "1") {
    // A reload of a page that was in the call joins it again, as does the
    // page the dashboard's Start visit opens.
    if (window.history && history.replaceState) {
      history.replaceState(null, "", location.pathname);
    }
    join();
  }
  // The state as the page opened: a page opened while the provider is
  // already in the call shows it (the live region says so) but does not
  // join by itself; it could take the call from this person's other tab.
  state = ($("visit-live") || { getAttribute: function () { return ""; } }).getAttribute("data-state") || "";
  document.addEventListener("teleclinic:swapped", followState);

  window.teleclinicCall = {
    mode: mode,
    check: check,
    audioOnly: function () {
      return audioOnly;
    },
    timing: timing,
    recordings: function () {
      return rec.saved;
    },
    peers: function () {
      return Object.keys(peers);
    },
    // The width of the video track each connection sends from (the
    // camera's, or the screen's while sharing), whatever the encoder
    // scales it to.
    sending: function () {
      return videoSenders().map(function (s) {
        return s.track.getSettings().width || 0;
      });
    },
    // Each connection's state and how many ICE restarts this page made.
    states: function () {
      return Object.keys(peers).map(function (id) {
        return { peer: id, state: peers[id].pc.connectionState, restarts: peers[id].restarts || 0 };
      });
    },
    // The inbound RTP statistics of every connection: bytes of video and
    // audio received, and the candidate pair in use.
    stats: function () {
      var ids = Object.keys(peers);
      return Promise.all(ids.map(function (id) {
        if (!peers[id].pc.getStats) {
          return {};
        }
        return peers[id].pc.getStats().then(function (report) {
          // A peer whose tile is not drawn yet (its track still on the
          // way) has no width.
          var view = peers[id] && peers[id].view;
          var out = { peer: id, videoBytes: 0, audioBytes: 0, relay: false, width: view ? view.video.videoWidth : 0 };
          // The pair in use is the one the transport names; a pair
          // flagged nominated is the fallback for browsers without it
          // (the flag alone can lag behind the media).
          var selected = "", nominated = "";
          report.forEach(function (r) {
            if (r.type === "inbound-rtp" && r.kind === "video") {
              out.videoBytes += r.bytesReceived || 0;
            } else if (r.type === "inbound-rtp" && r.kind === "audio") {
              out.audioBytes += r.bytesReceived || 0;
            } else if (r.type === "transport" && r.selectedCandidatePairId) {
              selected = r.selectedCandidatePairId;
            } else if (r.type === "candidate-pair" && r.nominated && r.state === "succeeded") {
              nominated = r.id;
            }
          });
          var pair = report.get(selected || nominated);
          var local = pair && report.get(pair.localCandidateId);
          out.relay = !!local && local.candidateType === "relay";
          return out;
        });
      }));
    }
  };
}());

package web

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/live"
)

// The portal's pages stay current with server-sent events: a page names
// its stream in data-live, and static/live.js, on each event "changed",
// reads the page again and swaps in its data-live-region parts. The
// stream says only that something changed; what the page then shows is
// read by the page's own handler, with its own permission checks, so a
// stream never shows more than a reload would.

// streamChanges writes an event "changed" each time src's Poll reports
// one (a frame of its own making; changed is the one frame). done runs
// when the stream ends: it closes the watches; tick, when not nil, runs
// at every keep-alive (a waiting patient's presence).
func (s *Server) streamChanges(w http.ResponseWriter, r *http.Request, src live.Polled, done func(), tick func(context.Context) error) error {
	release, err := s.openStream(r)
	if err != nil {
		done()
		return err
	}
	pump := s.pump(r)
	pump.Tick = tick
	pump.Serve(w, r, src, func() { done(); release() })
	return nil
}

// changed is the portal's one change event; id, when set, is what the
// browser sends back on reconnecting.
func changed(id string) live.Frame { return live.Frame{Name: "changed", ID: id, Data: []byte("{}")} }

// openStream takes a place for r's stream in the limits of streams open
// at once (per session, per address, in all).
func (s *Server) openStream(r *http.Request) (release func(), err error) {
	p, _ := s.principal(r)
	return s.cfg.Streams.Open(live.CredentialKey(p), edge.ClientAddr(r))
}

// pump is the portal's side of an event stream (live.Pump): the session is
// checked again before any event once a credential may have ended or its
// time is up, and at every keep-alive, and a stream
// that may no longer be read (signed out, revoked, idle, the visit no
// longer the caller's) ends with an event "ended" with the error's code.
func (s *Server) pump(r *http.Request) live.Pump {
	// The session's credentials alone: a parked stream's check runs on a
	// worker after the request has ended, so it touches nothing of the
	// request's (its log line's principal, its context).
	creds := s.sessionCredentials(r)
	return live.Pump{
		KeepAlive: s.cfg.KeepAlive,
		Closing:   s.cfg.Closing,
		Check: func(ctx context.Context) (int64, error) {
			p, err := s.sessionPrincipal(ctx, creds)
			if err != nil {
				return 0, err
			}
			return p.Until, nil
		},
		Epoch: s.app.CredentialEpoch,
		Now:   s.app.Unix,
		End:   func(err error) live.Frame { return endedFrame(clinic.ErrorCode(err), "") },
		Log:   s.log, Route: r.Pattern, RequestID: edge.RequestID(r.Context()),
		Parker: s.cfg.Parker,
	}
}

// endedFrame is the portal's end event: the code, and for a call whose
// visit closed, the visit's status.
func endedFrame(code, status string) live.Frame {
	b, _ := json.Marshal(streamEnded{Code: code, Status: status})
	return live.Frame{Name: "ended", Data: b}
}

type streamEnded struct {
	Code   string `json:"code"`
	Status string `json:"status,omitempty"`
}

// visitEvents is the visit page's stream: its thread and state, and, while
// the caller waits in the room's queue, the queue.
func (s *Server) visitEvents(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	d, err := s.app.GetVisit(ctx, p, id, false)
	if err != nil {
		return err
	}
	// The thread from the place the page (or the last event) had.
	from := live.LastEventID(r)
	if from < 0 {
		from = math.MaxInt32
	}
	vw, err := s.app.WatchVisit(ctx, p, id, from)
	if err != nil {
		return err
	}
	src := live.Polled{Subs: []*live.Sub{vw.Sub()}, Ahead: vw.Ahead}
	var qw *app.QueueWatch
	if d.Visit.Kind == clinic.KindWalkin && d.Visit.Status == clinic.VisitPending && d.Visit.MemberID == p.UserID() && d.Room != nil {
		if qw, err = s.app.WatchQueue(ctx, p, d.Room.Code); err != nil {
			vw.Close()
			return err
		}
		if _, _, err := qw.Poll(ctx, live.Changes{}); err != nil { // the queue as the page drew it
			vw.Close()
			qw.Close()
			return err
		}
		src.Subs = append(src.Subs, qw.Sub())
	}
	// The thread's changes and the queue's come as one: each watch reads
	// what concerns it (a queue's change is no new message).
	src.Poll = func(ctx context.Context, ch live.Changes) ([]live.Frame, error) {
		_, moved, err := vw.Poll(ctx, ch)
		if err != nil {
			return nil, err
		}
		if qw != nil {
			_, q, err := qw.Poll(ctx, ch)
			if err != nil {
				return nil, err
			}
			moved = moved || q
		}
		if !moved {
			return nil, nil
		}
		return []live.Frame{changed(strconv.Itoa(vw.Seen()))}, nil
	}
	return s.streamChanges(w, r, src, func() {
		vw.Close()
		if qw != nil {
			qw.Close()
		}
	}, vw.Tick)
}

// dashboardEvents is the dashboard's stream (app.WatchDashboard).
func (s *Server) dashboardEvents(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	dw, err := s.app.WatchDashboard(r.Context(), p)
	if err != nil {
		return err
	}
	src := live.Polled{Subs: []*live.Sub{dw.Sub()}, Ahead: func() bool { return false },
		Poll: func(_ context.Context, ch live.Changes) ([]live.Frame, error) {
			if ch.Kinds == nil {
				return nil, nil
			}
			return []live.Frame{changed("")}, nil
		}}
	return s.streamChanges(w, r, src, dw.Close, nil)
}

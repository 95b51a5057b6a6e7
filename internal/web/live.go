package web

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

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

// changeSource blocks until something a page shows changed (true), d
// passed (false), or ctx ended.
type changeSource func(ctx context.Context, d time.Duration) (bool, error)

// streamChanges writes an event "changed" each time a source reports one.
// id, when set, gives each event the id the browser sends back on
// reconnecting.
func (s *Server) streamChanges(w http.ResponseWriter, r *http.Request, id func() string, sources ...changeSource) error {
	release, err := s.openStream(r)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	changes, errs := make(chan struct{}, 1), make(chan error, len(sources))
	for _, src := range sources {
		go func() {
			for {
				changed, err := src(ctx, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				if changed {
					select {
					case changes <- struct{}{}:
					default: // one "changed" covers any number of changes
					}
				}
			}
		}()
	}
	s.pump(r).Run(ctx, w, func(ctx context.Context, d time.Duration) ([]live.Frame, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-errs:
			return nil, err
		case <-changes:
			return []live.Frame{{Name: "changed", ID: id(), Data: []byte("{}")}}, nil
		case <-t.C:
			return nil, nil
		}
	})
	return nil
}

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
	return live.Pump{
		KeepAlive: s.cfg.KeepAlive,
		Closing:   s.cfg.Closing,
		Check: func(context.Context) (int64, error) {
			p, err := s.principal(withPageState(r))
			if err != nil {
				return 0, err
			}
			return p.Until, nil
		},
		Epoch: s.app.CredentialEpoch,
		Now:   s.app.Unix,
		End:   func(err error) live.Frame { return endedFrame(clinic.ErrorCode(err), "") },
		Log:   s.log, Route: r.Pattern, RequestID: edge.RequestID(r.Context()),
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
	defer vw.Close()
	// The watch runs in its source's goroutine; the place it has reached
	// is handed to the stream's loop through seen.
	var seen atomic.Int64
	seen.Store(int64(vw.Seen()))
	sources := []changeSource{func(ctx context.Context, d time.Duration) (bool, error) {
		ev, err := vw.Next(ctx, d)
		seen.Store(int64(vw.Seen()))
		return ev != nil, err
	}}
	if d.Visit.Kind == clinic.KindWalkin && d.Visit.Status == clinic.VisitPending && d.Visit.MemberID == p.UserID() && d.Room != nil {
		qw, err := s.app.WatchQueue(ctx, p, d.Room.Code)
		if err != nil {
			return err
		}
		defer qw.Close()
		if _, err := qw.Next(ctx, 0); err != nil { // the queue as the page drew it
			return err
		}
		sources = append(sources, func(ctx context.Context, d time.Duration) (bool, error) {
			q, err := qw.Next(ctx, d)
			return q != nil, err
		})
	}
	return s.streamChanges(w, r, func() string { return strconv.FormatInt(seen.Load(), 10) }, sources...)
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
	defer dw.Close()
	return s.streamChanges(w, r, func() string { return "" }, dw.Next)
}

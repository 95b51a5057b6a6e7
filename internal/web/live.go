package web

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"teleclinic/internal/clinic"
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

// streamChanges writes an event "changed" each time a source reports one,
// and a keep-alive after each quiet KeepAlive, when the session is checked
// again: a session that ended (signed out, revoked, idle) ends the stream
// with an event "signedout". id, when set, gives each event the id the
// browser sends back on reconnecting.
func (s *Server) streamChanges(w http.ResponseWriter, r *http.Request, id func() string, sources ...changeSource) error {
	ctx, cancel := live.Until(r.Context(), s.cfg.Closing)
	defer cancel()
	keep := s.cfg.KeepAlive
	if keep <= 0 {
		keep = live.KeepAlive
	}
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
	st, err := live.OpenStream(w)
	if err != nil {
		return nil
	}
	tick := time.NewTicker(keep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
			if st.Event("changed", id(), []byte("{}")) != nil {
				return nil
			}
		case err := <-errs:
			if ctx.Err() == nil {
				s.log.Info("page stream ended", "route", r.Pattern, "code", clinic.ErrorCode(err))
				_ = st.Event("ended", "", []byte(`{"code":"`+clinic.ErrorCode(err)+`"}`))
			}
			return nil
		case <-tick.C:
			if _, err := s.principal(withPageState(r)); err != nil {
				_ = st.Event("ended", "", []byte(`{"code":"`+clinic.ErrorCode(err)+`"}`))
				return nil
			}
			if st.Comment("keep-alive") != nil {
				return nil
			}
		}
	}
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

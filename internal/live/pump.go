package live

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"teleclinic/internal/clinic"
)

// Frame is one event as a door encodes it.
type Frame struct {
	Name, ID string
	Data     []byte
}

// Source waits up to d for what a stream sends next: frames, or none when
// d passed quietly. An error ends the stream (ctx's when ctx ended).
type Source func(ctx context.Context, d time.Duration) ([]Frame, error)

// Pump runs the event streams of both doors (the API's and the portal's):
// it waits on the door's Source, checks the caller's credential before
// every event it sends and at every keep-alive, sends keep-alives, stops on
// shutdown, and ends a stream whose caller's right ended with the door's
// end event. A door supplies its encoder (the Source's frames), its check
// and its end event; nothing else of a stream is written twice.
type Pump struct {
	// KeepAlive is how long a stream stays quiet before a keep-alive
	// (default KeepAlive). The keep-alive also runs Check and Tick when
	// the stream is busy.
	KeepAlive time.Duration
	// Closing is done when the server shuts down: the stream then ends
	// without an end event, and its client reconnects to a server that is
	// up.
	Closing context.Context
	// Check says whether the caller may still read the stream: their
	// credential not logged out, revoked, expired or rotated, and until
	// when (unix seconds on Now's clock; 0 for no time limit) that holds
	// unless a credential event comes. It runs when the stream opens, at
	// every keep-alive, and before a batch of events when Epoch has moved
	// or until has passed since the last check, so that not one event
	// reaches a caller whose right ended, and a change watched by
	// thousands of streams is not thousands of credential reads.
	Check func(ctx context.Context) (until int64, err error)
	// Epoch is the bus's CredentialEpoch; nil rechecks before every batch.
	Epoch func() uint64
	// Now is the clock until is on.
	Now func() int64
	// Tick, when set, runs at every keep-alive after Check (the call's
	// stream marks its peer seen there).
	Tick func(ctx context.Context) error
	// End is the event that ends a stream err stopped.
	End func(err error) Frame
	// Log notes why a stream ended (an internal error as an error), with
	// Route and RequestID. (A logger made With them was 1–3 KB that every
	// parked stream held.)
	Log              *slog.Logger
	Route, RequestID string
	// Parker, when set, holds the streams Serve answers while they wait,
	// without a goroutine each; nil serves each with its own (Run).
	Parker *Parker
}

// Run answers the request with an event stream and pumps src into it
// until the client leaves, the server shuts down, or an error ends it.
func (p Pump) Run(ctx context.Context, w http.ResponseWriter, src Source) {
	ctx, cancel := Until(ctx, p.Closing)
	defer cancel()
	st, err := OpenStream(w)
	if err != nil {
		return // the client has gone
	}
	keep := p.KeepAlive
	if keep <= 0 {
		keep = KeepAlive
	}
	var c credCheck
	if err := c.run(ctx, p); err != nil {
		p.end(ctx, st, err)
		return
	}
	checked := time.Now()
	for {
		frames, err := src(ctx, keep-time.Since(checked))
		switch {
		case err != nil:
		case time.Since(checked) >= keep:
			checked = time.Now()
			// The caller first: no frame goes to one whose right ended.
			// The frames read are then theirs, and go before a Tick that
			// ends the stream (a replaced call page's "replaced").
			if err = c.run(ctx, p); err == nil {
				for _, f := range frames {
					if st.Event(f.Name, f.ID, f.Data) != nil {
						return
					}
				}
				frames = nil
				if p.Tick != nil {
					err = p.Tick(ctx)
				}
				if err == nil && st.Comment("keep-alive") != nil {
					return
				}
			}
		case len(frames) > 0 && c.stale(p):
			err = c.run(ctx, p)
		}
		if err != nil {
			p.end(ctx, st, err)
			return
		}
		for _, f := range frames {
			if st.Event(f.Name, f.ID, f.Data) != nil {
				return
			}
		}
	}
}

// credCheck is a stream's last credential check: the epoch it saw and
// until when its answer holds.
type credCheck struct {
	epoch uint64
	until int64
}

// stale says whether the caller must be checked again before the next
// events: a credential event came since, or the answer's time is up.
func (c *credCheck) stale(p Pump) bool {
	return p.Epoch == nil || p.Now == nil || p.Epoch() != c.epoch || (c.until != 0 && p.Now() >= c.until)
}

// run checks the caller, noting the epoch from before the check (an event
// during it makes the next batch check again).
func (c *credCheck) run(ctx context.Context, p Pump) error {
	var epoch uint64
	if p.Epoch != nil {
		epoch = p.Epoch()
	}
	until, err := p.Check(ctx)
	c.epoch, c.until = epoch, until
	return err
}

// alive is the keep-alive's check: the credential, then the door's Tick.
func (p Pump) alive(ctx context.Context, c *credCheck) error {
	if err := c.run(ctx, p); err != nil {
		return err
	}
	if p.Tick != nil {
		return p.Tick(ctx)
	}
	return nil
}

// end writes the end event for err, unless the client went away or the
// server is shutting down (ctx ended), when there is no one to tell.
func (p Pump) end(ctx context.Context, st *Stream, err error) {
	if f, ok := p.endFrame(ctx, err); ok {
		_ = st.Event(f.Name, f.ID, f.Data)
	}
}

// endFrame is the end event for err, noting why the stream ended; ok is
// false when the client went away or the server is shutting down (ctx
// ended), when there is no one to tell.
func (p Pump) endFrame(ctx context.Context, err error) (f Frame, ok bool) {
	if ctx.Err() != nil {
		return Frame{}, false
	}
	code := clinic.ErrorCode(err)
	if p.Log != nil {
		if code == clinic.EInternal {
			p.Log.Error("event stream", "route", p.Route, "request_id", p.RequestID, "err", err)
		} else {
			p.Log.Info("event stream ended", "route", p.Route, "request_id", p.RequestID, "code", code)
		}
	}
	return p.End(err), true
}

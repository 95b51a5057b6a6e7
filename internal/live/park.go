package live

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// A stream that waits for its next event used to be a parked handler: its
// goroutine (8–16 KB of stack), the one net/http reads the connection
// with, and net/http's buffers, 58–62 KB a stream in all
// (docs/performance.md, "What a stream holds"). 10,000 watchers were
// 600 MB. A parked stream here is the connection, taken over from
// net/http once its first events are written, the source and its
// subscription: no goroutine and no buffer while it waits. Its events
// wake it (Sub.OnEvent), a timer its keep-alive, and the kernel its
// client's hang-up (hangups); a few workers then poll and write it.

// Polled is a source that does not wait: Poll reads what ch's changes
// announce (nothing when ch has none and Ahead is false) and gives the
// frames for them, none when nothing the stream shows changed. Ahead says
// Poll has something without a change: at the start, or more than a page
// behind. Subs are what it listens to; their changes come to Poll as one.
type Polled struct {
	Subs  []*Sub
	Ahead func() bool
	Poll  func(ctx context.Context, ch Changes) ([]Frame, error)
}

// take is what the subscriptions have pending, as one set.
func (src Polled) take() Changes {
	var ch Changes
	for _, sub := range src.Subs {
		kinds, since := sub.Take()
		for k := range kinds {
			if ch.Kinds == nil {
				ch.Kinds = map[string]bool{}
			}
			ch.Kinds[k] = true
		}
		if since.After(ch.Since) {
			ch.Since = since
		}
	}
	return ch
}

// onEvent calls f at each event of any of the subscriptions.
func (src Polled) onEvent(f func()) {
	for _, sub := range src.Subs {
		sub.OnEvent(f)
	}
}

// blocking is src as a Source, for a stream with a goroutine of its own.
func (src Polled) blocking() Source {
	ready := make(chan struct{}, 1)
	src.onEvent(func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	return func(ctx context.Context, d time.Duration) ([]Frame, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			ch := src.take()
			if ch.Kinds == nil && !src.Ahead() {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-t.C:
					return nil, nil
				case <-ready:
					continue
				}
			}
			frames, err := src.Poll(ctx, ch)
			if err != nil || len(frames) > 0 {
				return frames, err
			}
		}
	}
}

// Serve answers r with src's events, as Run does, and calls done when the
// stream has ended (the source's and the stream slot's release). With a
// Parker, an HTTP/1 stream is parked once it opens; otherwise (HTTP/2,
// or no Parker) a goroutine serves it, and Serve returns when it ends.
func (p Pump) Serve(w http.ResponseWriter, r *http.Request, src Polled, done func()) {
	if p.Parker == nil || r.ProtoMajor != 1 || p.Closing == nil {
		defer done()
		p.Run(r.Context(), w, src.blocking())
		return
	}
	// Hijack fails where the writer cannot give up its connection; the
	// stream is then served here.
	streamHeader(w.Header())
	head := w.Header().Clone()
	conn, _, err := http.NewResponseController(w).Hijack()
	if errors.Is(err, http.ErrNotSupported) {
		defer done()
		p.Run(r.Context(), w, src.blocking())
		return
	}
	if err != nil {
		done()
		return
	}
	p.Parker.park(p, conn, head, context.WithoutCancel(r.Context()), src, done)
}

// Parker holds the parked streams of a server and the workers that write
// them. Workers are few (parkWorkers): a change watched by thousands of
// streams is thousands of polls, which share their reads (app/shared.go)
// and are written a worker's turn at a time, so they neither contend
// with each other nor take the database's connections from the requests.
type Parker struct {
	closing context.Context
	hangups *hangups

	mu      sync.Mutex
	ready   *sync.Cond
	queue   []*parked
	stopped bool
}

// parkWorkers is how many workers poll and write parked streams.
func parkWorkers() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// parkedWrite bounds one write to a parked stream: a client that takes in
// nothing for that long (its connection's buffers full) is dropped, so it
// holds a worker no longer.
const parkedWrite = 5 * time.Second

// NewParker starts the workers of parked streams; they stop, and every
// parked stream ends without an end event, when closing is done (the
// server is shutting down: clients reconnect to one that is up).
func NewParker(closing context.Context) *Parker {
	pk := &Parker{closing: closing, hangups: newHangups(closing)}
	pk.ready = sync.NewCond(&pk.mu)
	for range parkWorkers() {
		go pk.work()
	}
	context.AfterFunc(closing, func() {
		pk.mu.Lock()
		pk.stopped = true
		pk.mu.Unlock()
		pk.ready.Broadcast()
	})
	return pk
}

func (pk *Parker) push(s *parked) {
	pk.mu.Lock()
	pk.queue = append(pk.queue, s)
	pk.mu.Unlock()
	pk.ready.Signal()
}

func (pk *Parker) pop() *parked {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	for len(pk.queue) == 0 && !pk.stopped {
		pk.ready.Wait()
	}
	if pk.stopped {
		return nil
	}
	s := pk.queue[0]
	pk.queue[0] = nil
	pk.queue = pk.queue[1:]
	if len(pk.queue) == 0 {
		pk.queue = nil // let a burst's backing array go
	}
	return s
}

func (pk *Parker) work() {
	var buf []byte
	for s := pk.pop(); s != nil; s = pk.pop() {
		buf = s.run(buf[:0])
		if cap(buf) > 64<<10 {
			buf = nil // one large page does not stay with the worker
		}
	}
}

// What a parked stream is woken for.
const (
	wakeChange = 1 << iota // its subscription has events, or Poll is ahead
	wakeKeep               // its keep-alive is due
	wakeGone               // its client hung up, or the server is shutting down
)

// parked is one parked stream.
type parked struct {
	pk     *Parker
	pump   Pump
	src    Polled
	conn   net.Conn
	ctx    context.Context
	cancel context.CancelFunc
	done   func()
	keep   time.Duration
	timer  *time.Timer
	cred   credCheck
	// unwatch stops the hang-up watch and the shutdown's.
	unwatch func()

	mu     sync.Mutex
	wake   int
	queued bool // in the workers' queue, or being run
	once   sync.Once
}

// park writes the stream's head, its caller's check and what the source
// has at once, then leaves the stream to the workers.
func (pk *Parker) park(p Pump, conn net.Conn, head http.Header, ctx context.Context, src Polled, done func()) {
	keep := p.KeepAlive
	if keep <= 0 {
		keep = KeepAlive
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &parked{pk: pk, pump: p, src: src, conn: conn, ctx: ctx, cancel: cancel, done: done, keep: keep}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	head.Set("Connection", "close") // the body ends when the stream does
	head.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	_ = head.Write(&b)
	b.WriteString("\r\n" + streamStart)
	if err := s.write(b.Bytes()); err != nil {
		s.finish(errGone)
		return
	}
	if err := s.cred.run(ctx, p); err != nil {
		s.finish(err)
		return
	}
	// What there is at the start, written from the request's goroutine
	// before any worker can see the stream.
	if buf, err := s.poll(b.Bytes()[:0], Changes{}); err != nil {
		s.finish(err)
		return
	} else if len(buf) > 0 && s.write(buf) != nil {
		s.finish(errGone)
		return
	}
	// Under s.mu: the timer's, the hang-up's and the shutdown's calls,
	// which may come at once, see the fields set.
	s.mu.Lock()
	s.timer = time.AfterFunc(keep, func() { s.kick(wakeKeep) })
	unhang := pk.hangups.watch(conn, func() { s.kick(wakeGone) })
	stopClosing := context.AfterFunc(pk.closing, func() { s.finish(errGone) })
	s.unwatch = func() { unhang(); stopClosing() }
	s.mu.Unlock()
	// From here on only a worker touches the source.
	ahead := src.Ahead()
	src.onEvent(func() { s.kick(wakeChange) })
	if ahead {
		s.kick(wakeChange)
	}
}

// errGone ends a stream without an end event: its client hung up or
// cannot take more, or the server is shutting down.
var errGone = errors.New("event stream: the client is gone")

// kick wakes s for why: it joins the workers' queue unless it is there.
func (s *parked) kick(why int) {
	s.mu.Lock()
	s.wake |= why
	if s.queued {
		s.mu.Unlock()
		return
	}
	s.queued = true
	s.mu.Unlock()
	s.pk.push(s)
}

// run is a worker's turn at s: what woke it, handled; buf is the worker's
// buffer, returned for the next turn.
func (s *parked) run(buf []byte) []byte {
	s.mu.Lock()
	why := s.wake
	s.wake = 0
	s.mu.Unlock()
	buf, err := s.handle(buf, why)
	if err != nil {
		s.finish(err)
		return buf
	}
	s.mu.Lock()
	if s.wake != 0 {
		s.mu.Unlock()
		s.pk.push(s) // woken again meanwhile: still queued
		return buf
	}
	s.queued = false
	s.mu.Unlock()
	return buf
}

func (s *parked) handle(buf []byte, why int) ([]byte, error) {
	if why&wakeGone != 0 || s.ctx.Err() != nil {
		return buf, errGone
	}
	if why&wakeKeep != 0 {
		// Every keep-alive, busy or quiet: the caller checked, the door's
		// Tick, and a comment.
		if err := s.pump.alive(s.ctx, &s.cred); err != nil {
			return buf, err
		}
		buf = appendComment(buf, "keep-alive")
		s.timer.Reset(s.keep)
	}
	if why&wakeChange != 0 {
		ch := s.src.take()
		var err error
		if buf, err = s.poll(buf, ch); err != nil {
			return buf, err
		}
		if s.src.Ahead() {
			s.kick(wakeChange) // the next page at the next turn
		}
	}
	if len(buf) > 0 && s.write(buf) != nil {
		return buf, errGone
	}
	return buf, nil
}

// poll appends the frames the source has for ch to buf (none without a
// change unless it is ahead, as every source is at its start), the caller
// checked again first when a credential may have ended.
func (s *parked) poll(buf []byte, ch Changes) ([]byte, error) {
	if ch.Kinds == nil && !s.src.Ahead() {
		return buf, nil
	}
	frames, err := s.src.Poll(s.ctx, ch)
	if err != nil || len(frames) == 0 {
		return buf, err
	}
	if s.cred.stale(s.pump) {
		if err := s.cred.run(s.ctx, s.pump); err != nil {
			return buf, err
		}
	}
	for _, f := range frames {
		buf = appendEvent(buf, f.Name, f.ID, f.Data)
	}
	return buf, nil
}

func (s *parked) write(b []byte) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(parkedWrite))
	_, err := s.conn.Write(b)
	return err
}

// finish ends s once: the end event for err unless the client is gone or
// the server shutting down, then the connection closed and done called.
func (s *parked) finish(err error) {
	s.once.Do(func() {
		if !errors.Is(err, errGone) && s.pk.closing.Err() == nil {
			if f, ok := s.pump.endFrame(s.ctx, err); ok {
				_ = s.write(appendEvent(nil, f.Name, f.ID, f.Data))
			}
		}
		s.cancel()
		s.mu.Lock()
		timer, unwatch := s.timer, s.unwatch
		s.mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		if unwatch != nil {
			unwatch()
		}
		_ = s.conn.Close()
		s.done()
	})
}

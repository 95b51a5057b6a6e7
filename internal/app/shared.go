package app

import (
	"context"
	"sync"
	"time"
)

// sharedReads lets the event streams woken by one change share one read
// of what changed: a room's queue, a visit's thread row. Without it each
// stream read for itself (and audited each delivery), and with 2,000
// streams open 10 posted messages cost 4,593 PostgreSQL transactions: the
// statements of a change must not grow with its watchers
// (docs/performance.md, "Streams").
//
// A stream that got an event at since may use a read that started at or
// after since: events are published after their change commits, so such a
// read sees the change. A read in flight that started earlier is not
// used; a later one is started and shared in turn.
type sharedReads struct {
	mu sync.Mutex
	m  map[string]*sharedRead
}

type sharedRead struct {
	started time.Time
	done    chan struct{}
	val     any
	err     error
}

// sharedReadTimeout bounds a shared read, which runs apart from the
// context of the stream that started it (one stream leaving must not
// fail the others' read).
const sharedReadTimeout = 10 * time.Second

// shared returns read's result for key from a read that started at or
// after since, starting one if there is none.
func shared[T any](ctx context.Context, s *sharedReads, key string, since time.Time, read func(ctx context.Context) (T, error)) (T, error) {
	s.mu.Lock()
	if r := s.m[key]; r != nil && !r.started.Before(since) {
		s.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		v, _ := r.val.(T)
		return v, r.err
	}
	if s.m == nil {
		s.m = map[string]*sharedRead{}
	}
	if len(s.m) >= 4096 { // forget the finished reads of quiet topics
		for k, r := range s.m {
			select {
			case <-r.done:
				delete(s.m, k)
			default:
			}
		}
	}
	r := &sharedRead{started: time.Now(), done: make(chan struct{})}
	s.m[key] = r
	s.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
	v, err := read(rctx)
	cancel()
	r.val, r.err = v, err
	close(r.done)
	return v, err
}

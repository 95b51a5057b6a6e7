package store

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// Grouped runs fn in a write transaction, like Tx, and returns once fn's
// writes are committed or undone. On SQLite the transactions of callers
// that arrive while one is being written share the next commit: each fn
// runs inside its own savepoint of one transaction, so a fn that fails
// undoes only its own writes, and the group is committed once. SQLite has
// one writer, and a commit writes every page the transaction touched to the
// WAL; a group of message posts appends to the same table and index pages,
// so it writes each of them once instead of once per post (pprof: the
// commit was two fifths of the writer's time in a post). Nothing is
// reported committed before it is.
//
// fn sees the writes of the group's earlier members, as if they had
// committed just before it. Its statements run on the group's context, not
// on the caller's: one caller going away must not interrupt a transaction
// that carries the others' writes. A group that fails as a whole (its
// commit, or a savepoint the engine lost) is run again without the member
// that failed, so fn must, as for Tx, build its result only from what it
// reads in the attempt that commits.
//
// On PostgreSQL every transaction commits on its own connection in
// parallel, and Grouped is Tx.
func (s *Store) Grouped(ctx context.Context, fn func(q *Q) error) error {
	return s.eng.grouped(ctx, fn)
}

// run queues fn for the next group and returns its outcome.
func (g *txGroup) run(ctx context.Context, fn func(q *Q) error) error {
	r := &groupReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case g.reqs <- r:
	case <-g.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once taken, fn may be running: the caller waits for its outcome
	// rather than leave while fn still writes to what it captured.
	return <-r.done
}

var errStoreClosed = errors.New("store: closed")

// maxGroup bounds one group's members: a longer group holds the writer
// longer and makes its first member wait for the last.
const maxGroup = 64

// txGroup is the goroutine that commits the groups of Grouped.
type txGroup struct {
	s    *Store
	reqs chan *groupReq // unbuffered: a request is taken only by the loop
	quit chan struct{}
	done chan struct{}
	stop sync.Once
}

type groupReq struct {
	ctx  context.Context
	fn   func(q *Q) error
	err  error
	done chan error
}

func newTxGroup(s *Store) *txGroup {
	g := &txGroup{s: s, reqs: make(chan *groupReq), quit: make(chan struct{}), done: make(chan struct{})}
	go g.loop()
	return g
}

// close stops the loop after the group it is writing.
func (g *txGroup) close() {
	g.stop.Do(func() { close(g.quit) })
	<-g.done
}

func (g *txGroup) loop() {
	defer close(g.done)
	for {
		group := gather(g.reqs, g.quit, maxGroup)
		if group == nil {
			return
		}
		g.commit(group)
	}
}

// gather waits for a request, then takes the ones already waiting behind
// it, up to max: the requests that arrived while the last group was being
// written. It returns nil once quit is closed.
func gather[T any](reqs <-chan T, quit <-chan struct{}, max int) []T {
	var first T
	select {
	case first = <-reqs:
	case <-quit:
		return nil
	}
	group := []T{first}
	for len(group) < max {
		select {
		case r := <-reqs:
			group = append(group, r)
		default:
			return group
		}
	}
	return group
}

// commit writes a group and answers each member.
func (g *txGroup) commit(group []*groupReq) {
	pending := make([]*groupReq, 0, len(group))
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.done <- err // gone before its turn: nothing was written
			continue
		}
		pending = append(pending, r)
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		if len(pending) == 1 {
			// Alone, a member is an ordinary transaction on its own
			// context (a panic still must not end the loop).
			r := pending[0]
			r.done <- g.s.Tx(r.ctx, func(q *Q) error { err, _ := runMember(r.fn, q); return err })
			return
		}
		failed, err := g.attempt(pending)
		switch {
		case err == nil:
			for _, r := range pending {
				r.done <- r.err
			}
			return
		case failed >= 0:
			// The member's failure took the transaction with it (a panic,
			// or an error that made the engine roll back): it gets its
			// error, and the others are written again without it.
			pending[failed].done <- err
			pending = append(pending[:failed:failed], pending[failed+1:]...)
		case errors.Is(err, ErrRetry) && retryPause(context.Background(), attempt):
		default:
			for _, r := range pending {
				r.done <- err
			}
			return
		}
	}
}

// attempt runs the members in one transaction, each in a savepoint. It
// returns the index of a member whose failure ended the transaction, or -1.
func (g *txGroup) attempt(members []*groupReq) (failed int, err error) {
	failed = -1
	ctx := context.Background()
	err = g.s.tx(ctx, func(q *Q) error {
		q.fixed = ctx
		for i, r := range members {
			if _, err := q.exec(ctx, "SAVEPOINT member"); err != nil {
				return err
			}
			var panicked bool
			r.err, panicked = runMember(r.fn, q)
			if panicked {
				failed = i
				return r.err
			}
			if r.err != nil {
				_, err := q.exec(ctx, "ROLLBACK TO member")
				if err == nil {
					_, err = q.exec(ctx, "RELEASE member")
				}
				if err != nil {
					failed = i
					return fmt.Errorf("%w (undoing it: %v)", r.err, err)
				}
				continue
			}
			if _, err := q.exec(ctx, "RELEASE member"); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	return failed, err
}

// runMember calls fn, turning a panic into an error that carries the stack:
// the loop serves every writer and must survive one member's bug.
func runMember(fn func(q *Q) error, q *Q) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			err, panicked = fmt.Errorf("store: grouped transaction panicked: %v\n%s", v, debug.Stack()), true
		}
	}()
	return fn(q), false
}

package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// postBatcher writes PostgreSQL message posts that arrive together as one
// pipelined batch: each post is still its one statement (MessagePost's
// postgres), but a batch sends them all in one round trip and PostgreSQL
// runs everything up to the batch's single Sync as one implicit transaction,
// so the batch commits, and waits for its WAL flush, once. On a small
// server the commit's flush was the larger half of PostgreSQL's work for a
// post (pgbench: the post statement alone 4,400 per second at 8 clients,
// 8,500 with synchronous_commit off), and each round trip cost the server
// a write and a read system call.
//
// Posts are sorted by visit before they are sent: the first statement of a
// post locks its visit's row, so two batches in flight lock rows in the
// same order and cannot deadlock each other. A post that fails takes the
// batch's transaction with it; it gets its error and the others are sent
// again without it. A batch that PostgreSQL rolls back for a deadlock or a
// serialization failure is sent again whole. Nothing is answered before
// its batch committed. As for Grouped, a batch runs on its own context:
// one client going away must not interrupt the others' writes.
type postBatcher struct {
	db   *sql.DB
	d    *dialect
	reqs chan *postReq // unbuffered: a request is taken only by a writer
	quit chan struct{}
	wg   sync.WaitGroup
	stop sync.Once
}

type postReq struct {
	ctx   context.Context
	mp    *MessagePost
	query string
	args  []any
	err   error // the member's own outcome once its batch committed
	done  chan error
}

// postWriters is how many batches may be in flight at once: one per two
// cores, at least one. While a batch waits for its commit the next one
// fills; more writers make smaller batches, which on 2 cores measured
// slower (messages-post 2,083–2,219 per second with two writers, 2,350–2,407
// with one).
func postWriters() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// maxPostBatch bounds a batch: a longer one makes its first post wait for
// its last.
const maxPostBatch = 32

func newPostBatcher(db *sql.DB, d *dialect) *postBatcher {
	b := &postBatcher{db: db, d: d, reqs: make(chan *postReq), quit: make(chan struct{})}
	for range postWriters() {
		b.wg.Add(1)
		go b.loop()
	}
	return b
}

// close stops the writers after the batches they are writing.
func (b *postBatcher) close() {
	b.stop.Do(func() { close(b.quit) })
	b.wg.Wait()
}

// post queues mp and returns once it is committed or has failed.
func (b *postBatcher) post(ctx context.Context, mp *MessagePost) error {
	query, args := mp.postgres()
	r := &postReq{ctx: ctx, mp: mp, query: b.d.rebind(query), args: args, done: make(chan error, 1)}
	select {
	case b.reqs <- r:
	case <-b.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

func (b *postBatcher) loop() {
	defer b.wg.Done()
	for {
		batch := gather(b.reqs, b.quit, maxPostBatch)
		if batch == nil {
			return
		}
		b.write(batch)
	}
}

// write sends a batch until every member has its answer.
func (b *postBatcher) write(batch []*postReq) {
	pending := make([]*postReq, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err // gone before its turn: nothing was written
			continue
		}
		pending = append(pending, r)
	}
	slices.SortStableFunc(pending, func(x, y *postReq) int { return cmp.Compare(x.mp.Message.VisitID, y.mp.Message.VisitID) })
	for attempt := 1; len(pending) > 0; attempt++ {
		failed, err := b.send(pending)
		switch {
		case err == nil:
			for _, r := range pending {
				r.done <- r.err
			}
			return
		case errors.Is(err, ErrRetry) && retryPause(context.Background(), attempt):
		case failed >= 0 && len(pending) > 1:
			pending[failed].done <- err
			pending = slices.Delete(pending, failed, failed+1)
		default:
			for _, r := range pending {
				r.done <- err
			}
			return
		}
	}
}

// send runs the members as one pipelined batch. Once it committed, each
// member's results are on its MessagePost, and a member whose visit is
// closed or gone (its statement wrote nothing) has ErrNotFound as its own
// outcome. On an error it returns the index of the member whose statement
// failed, or -1 when the batch failed as a whole (its connection or its
// commit).
func (b *postBatcher) send(members []*postReq) (failed int, err error) {
	failed = -1
	ctx := context.Background()
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		batch := &pgx.Batch{}
		for _, r := range members {
			batch.Queue(r.query, r.args...)
		}
		br := pc.SendBatch(ctx, batch)
		results := make([]postResult, len(members))
		for i := range members {
			res := &results[i]
			err := br.QueryRow().Scan(&res.id, &res.seq, &res.webhooks, &res.pushes)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				res.closed = true
			case err != nil:
				failed = i
				_ = br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		for i, r := range members {
			r.err = results[i].apply(r.mp)
		}
		return nil
	})
	if err != nil {
		return failed, fmt.Errorf("post batch: %w", b.d.translate(err))
	}
	return -1, nil
}

// postResult is the row a post statement returns; closed when there was
// none.
type postResult struct {
	id               int64
	seq              int
	webhooks, pushes int
	closed           bool
}

func (res *postResult) apply(mp *MessagePost) error {
	if res.closed {
		return ErrNotFound
	}
	mp.Message.ID, mp.Message.Seq = res.id, res.seq
	mp.Announced, mp.Pushed = res.webhooks > 0, res.pushes > 0
	mp.Audit.ObjectID = strconv.FormatInt(res.id, 10)
	return nil
}

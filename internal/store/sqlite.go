package store

import (
	"context"
	"database/sql"
	"log/slog"
	"slices"
	"sync"

	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
)

// sqliteEngine is SQLite's machinery (engine): prepared statements cached
// per pool, one committer that makes the writers that arrive together share
// a commit (sqlite_group.go), and the read-audit journal beside the database
// file (sqlite_journal.go).
type sqliteEngine struct {
	s      *Store
	wc, rc *stmtCache
	group  *txGroup
	// path is the database file, beside which the audit journal lives; ""
	// for an in-memory database, which has no journal.
	path string
}

func newSQLiteEngine(s *Store, path string) *sqliteEngine {
	return &sqliteEngine{s: s, wc: newStmtCache(s.w), rc: newStmtCache(s.r), group: newTxGroup(s), path: path}
}

func (e *sqliteEngine) stmts(write bool) stmtSource {
	if write {
		return e.wc
	}
	return e.rc
}

// keyCtx is ctx without its cancellation: a read by key takes
// microseconds, while a context that can be cancelled costs a goroutine
// from database/sql and one from the driver for every statement, about
// 2 µs of the 10 µs a request's token lookup took
// (BenchmarkAuthenticate_RequestContext).
func (e *sqliteEngine) keyCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

func (e *sqliteEngine) grouped(ctx context.Context, fn func(q *Q) error) error {
	return e.group.run(ctx, fn)
}

// postMessage writes the post's statements in a Grouped transaction, where
// a statement costs no round trip. The users' push endpoints are read
// first, on the reader pool, not while holding the writer.
func (e *sqliteEngine) postMessage(ctx context.Context, mp *MessagePost) error {
	eps, err := e.s.Read().UsersEndpoints(ctx, mp.Message.AccountID, mp.NotifyUsers)
	if err != nil {
		return err
	}
	eps = slices.DeleteFunc(eps, func(ep *clinic.Endpoint) bool { return !slices.Contains(mp.PushTypes, ep.Type) })
	return e.grouped(ctx, func(q *Q) error { return q.postMessage(ctx, mp, eps) })
}

// readAudits starts the journal, where the system calls allow telling a
// live store's journal from one a process left behind (canLock) and the
// database is a file.
func (e *sqliteEngine) readAudits(ctx context.Context) (auditSink, error) {
	if e.path == "" || !canLock {
		return committedAudits{e.s}, nil
	}
	return e.s.startJournal(ctx, e.path+".audit")
}

// newBus is in process: one process serves a SQLite database.
func (e *sqliteEngine) newBus(string, *slog.Logger) live.Bus { return live.NewLocal() }

func (e *sqliteEngine) poolStats() map[string]sql.DBStats {
	return map[string]sql.DBStats{"writer": e.s.w.Stats(), "reader": e.s.r.Stats()}
}

func (e *sqliteEngine) close() error {
	e.group.close()
	e.wc.close()
	e.rc.close()
	return firstErr(e.s.w.Close(), e.s.r.Close())
}

// stmtCache keeps a pool's prepared statements by query text. SQLite spends
// most of a small query's time parsing it (pprof: about a third of the CPU
// of GET /rooms); a prepared statement is parsed once per connection, which
// database/sql does lazily on each connection it runs on. The cache is
// bounded: queries built with a variable number of placeholders past the
// bound run unprepared.
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

const maxCachedStmts = 2000

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// get returns the statement, preparing it on the pool if needed.
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.RLock()
	st, known := c.m[query]
	full := len(c.m) >= maxCachedStmts
	c.mu.RUnlock()
	if st != nil || known || full {
		return st // nil while another call prepares it
	}
	c.mu.Lock()
	if _, known = c.m[query]; known {
		c.mu.Unlock()
		return nil
	}
	c.m[query] = nil // being prepared
	c.mu.Unlock()
	st, err := c.db.PrepareContext(ctx, query)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.m, query) // the unprepared path reports the error
		return nil
	}
	c.m[query] = st
	return st
}

// lookup returns the statement if it is prepared, and otherwise has it
// prepared in the background.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.RLock()
	st, known := c.m[query]
	c.mu.RUnlock()
	if !known {
		go c.get(context.Background(), query)
	}
	return st
}

func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		if st != nil {
			st.Close()
		}
	}
	c.m = map[string]*sql.Stmt{}
}

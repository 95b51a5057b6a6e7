// Package store is Teleclinic's persistence: SQL over database/sql for SQLite
// (the embedded default) and PostgreSQL, with one set of queries for both.
// It holds no permission checks and no business rules; every query that reads
// clinic data takes the account id in its WHERE clause.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Store is an open database: a writer pool and a reader pool. On SQLite the
// writer is a single connection (SQLite allows one writer; queueing in Go is
// cheaper than busy-waiting in the driver) and readers are a separate pool of
// query-only connections. On PostgreSQL both are the same pool.
type Store struct {
	w, r    *sql.DB
	d       *dialect
	wc, rc  *stmtCache   // nil on PostgreSQL
	group   *txGroup     // Grouped's committer; nil on PostgreSQL
	posts   *postBatcher // message posts' batches on PostgreSQL; nil on SQLite
	jpath   string       // the SQLite file, beside which the audit journal lives
	journal *journal     // read audits, once StartReadAudits ran; nil on PostgreSQL
}

// Open connects to dsn: a "postgres://" or "postgresql://" URL selects
// PostgreSQL, anything else is a SQLite file path. It does not migrate.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if isPostgres(dsn) {
		return openPostgres(ctx, dsn)
	}
	return openSQLite(ctx, dsn)
}

// Close flushes the audit journal and closes both pools.
func (s *Store) Close() error {
	var jerr error
	if s.journal != nil {
		jerr = s.journal.close()
	}
	s.group.close()
	s.posts.close()
	s.wc.close()
	s.rc.close()
	err := s.w.Close()
	if s.r != s.w {
		if e := s.r.Close(); err == nil {
			err = e
		}
	}
	return firstErr(jerr, err)
}

// Engine names the database engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.d.name }

// Read returns a query handle on the reader pool, for reads outside a
// transaction. Writing through it fails on SQLite.
func (s *Store) Read() *Q { return &Q{db: s.r, d: s.d, cache: s.rc} }

// Write returns a query handle on the writer pool for a single autocommit
// statement that needs no transaction around it.
func (s *Store) Write() *Q { return &Q{db: s.w, d: s.d, cache: s.wc} }

// Tx runs fn in a write transaction and commits if fn returns nil. On SQLite
// the transaction takes the write lock at BEGIN (txlock=immediate), so a
// read-then-write inside it cannot fail halfway with "database is locked".
// A transaction that fails with a serialization failure or a deadlock (two
// PostgreSQL transactions updating the same rows in another order) is run
// again, up to a few times: fn must therefore only build its result from
// what it reads, never carry state from a failed attempt.
func (s *Store) Tx(ctx context.Context, fn func(q *Q) error) error {
	for attempt := 1; ; attempt++ {
		err := s.tx(ctx, fn)
		if !errors.Is(err, ErrRetry) || !retryPause(ctx, attempt) {
			return err
		}
	}
}

// retryPause waits before attempt+1 of a transaction that failed with
// ErrRetry, and reports false when there is to be none.
func retryPause(ctx context.Context, attempt int) bool {
	if attempt >= maxTxAttempts {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(attempt*attempt) * time.Duration(1+rand.IntN(5)) * time.Millisecond):
		return true
	}
}

const maxTxAttempts = 5

func (s *Store) tx(ctx context.Context, fn func(q *Q) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", s.d.translate(err))
	}
	if err := fn(&Q{db: tx, d: s.d, cache: s.wc, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", s.d.translate(err))
	}
	return nil
}

// DB exposes the writer pool for migrations and test tooling.
func (s *Store) DB() *sql.DB { return s.w }

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Q runs queries written with '?' placeholders on either engine. All the
// table-family files hang their methods on it, so the same method works on a
// pool or inside a transaction.
type Q struct {
	db    querier
	d     *dialect
	cache *stmtCache // prepared statements of the pool (SQLite only)
	tx    *sql.Tx    // set inside a transaction
	// fixed, when set, is the context every statement runs on, whatever
	// context the caller passes (a Grouped transaction's).
	fixed context.Context
}

// ctx is the context a statement runs on.
func (q *Q) ctx(ctx context.Context) context.Context {
	if q.fixed != nil {
		return q.fixed
	}
	return ctx
}

// byKey is the context for a read of one row by key. On SQLite, outside a
// transaction, it is ctx without its cancellation: such a read takes
// microseconds, while a context that can be cancelled costs a goroutine
// from database/sql and one from the driver for every statement, about
// 2 µs of the 10 µs a request's token lookup took
// (BenchmarkAuthenticate_RequestContext). PostgreSQL keeps ctx: its reads
// cross a network that may stall.
func (q *Q) byKey(ctx context.Context) context.Context {
	if q.d.postgres || q.tx != nil || q.fixed != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// stmt is the prepared statement of query, or nil when statements are not
// cached (PostgreSQL, where pgx caches them itself) or the cache is full.
func (q *Q) stmt(ctx context.Context, query string) *sql.Stmt {
	if q.cache == nil {
		return nil
	}
	if q.tx == nil {
		return q.cache.get(ctx, query)
	}
	// In a transaction the pool's connection may be the one the transaction
	// holds (SQLite's single writer), so a missing statement cannot be
	// prepared on the pool now: it runs unprepared and is prepared once the
	// connection is free.
	st := q.cache.lookup(query)
	if st == nil {
		return nil
	}
	return q.tx.StmtContext(ctx, st) // closed with the transaction
}

func (q *Q) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = q.ctx(ctx)
	query = q.d.rebind(query)
	var res sql.Result
	var err error
	if st := q.stmt(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = q.db.ExecContext(ctx, query, args...)
	}
	return res, q.d.translate(err)
}

func (q *Q) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = q.ctx(ctx)
	query = q.d.rebind(query)
	var rows *sql.Rows
	var err error
	if st := q.stmt(ctx, query); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = q.db.QueryContext(ctx, query, args...)
	}
	return rows, q.d.translate(err)
}

// queryRow scans one row into dest; sql.ErrNoRows becomes ErrNotFound.
func (q *Q) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	ctx = q.ctx(ctx)
	query = q.d.rebind(query)
	var row *sql.Row
	if st := q.stmt(ctx, query); st != nil {
		row = st.QueryRowContext(ctx, args...)
	} else {
		row = q.db.QueryRowContext(ctx, query, args...)
	}
	err := row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return q.d.translate(err)
}

// insert runs an INSERT … RETURNING id and returns the id.
func (q *Q) insert(ctx context.Context, query string, args ...any) (int64, error) {
	var id int64
	err := q.queryRow(ctx, query+" RETURNING id", args, &id)
	return id, err
}

// affected runs a statement and returns how many rows it changed: the way a
// conditional UPDATE says who won a race.
func (q *Q) affected(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Errors the store reports by meaning, whatever the engine said.
var (
	ErrNotFound = errors.New("store: not found")
	// ErrConflict is a unique-constraint violation.
	ErrConflict = errors.New("store: conflict")
	// ErrForeignKey is a foreign-key violation.
	ErrForeignKey = errors.New("store: foreign key violation")
	// ErrRetry is a serialization failure or a deadlock: the transaction may be retried.
	ErrRetry = errors.New("store: retry transaction")
)

// driverError keeps the driver's error for logs while matching a store error.
type driverError struct {
	kind error
	err  error
}

func (e *driverError) Error() string        { return e.kind.Error() + ": " + e.err.Error() }
func (e *driverError) Is(target error) bool { return target == e.kind }
func (e *driverError) Unwrap() error        { return e.err }

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// valueRows repeats one VALUES row n times, for a multi-row insert.
func valueRows(row string, n int) string {
	return strings.Repeat(row+", ", n-1) + row
}

// b2i stores a boolean as the 0/1 integer both engines keep.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PoolStats returns the connection pools' statistics by name: "writer" and
// "reader" on SQLite, "main" on PostgreSQL where both are one pool.
func (s *Store) PoolStats() map[string]sql.DBStats {
	if s.r == s.w {
		return map[string]sql.DBStats{"main": s.w.Stats()}
	}
	return map[string]sql.DBStats{"writer": s.w.Stats(), "reader": s.r.Stats()}
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

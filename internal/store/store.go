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
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
)

// Store is an open database: a writer pool and a reader pool. On SQLite the
// writer is a single connection (SQLite allows one writer; queueing in Go is
// cheaper than busy-waiting in the driver) and readers are a separate pool of
// query-only connections. On PostgreSQL both are the same pool.
type Store struct {
	w, r *sql.DB
	d    *dialect
	eng  engine
	c    *caches
	now  func() time.Time // the caches' clock
	// audits is where the audit entries of reads go: committed at once,
	// or into SQLite's journal once StartReadAudits started it.
	audits auditSink
	// bus carries change events to the event streams of every process.
	bus live.Bus
	// auditKey keys the audit trail's hash chain (Options.AuditKey).
	auditKey []byte
	// statements counts every statement run through a Q (Statements).
	statements atomic.Int64
	// writes counts the write handles and transactions (Writes).
	writes atomic.Uint64
}

// Writes moves before and after every autocommit statement of this
// process (Write) and whenever one of its write transactions ends,
// committed or not. A result computed from reads that began when Writes
// was n reflects every write of this process that ended before; if Writes
// is still n, no write of this process ended since (app's availability
// cache serves its answers on that). Other processes' writes do not move
// it.
func (s *Store) Writes() uint64 { return s.writes.Load() }

// engine is what SQLite and PostgreSQL do differently beyond the text of
// their SQL, their error codes and their migrations (dialect.go): how
// statements are prepared, how writes share a commit, how a message post
// is written and where read audits wait. sqlite.go and postgres.go
// implement it; nothing else in the store asks which engine it runs on.
type engine interface {
	// stmts is the source of prepared statements of the writer or the
	// reader pool.
	stmts(write bool) stmtSource
	// keyCtx is the context of a read of one row by key outside a
	// transaction (Q.byKey).
	keyCtx(ctx context.Context) context.Context
	// grouped runs fn in a write transaction whose commit it may share
	// (Store.Grouped).
	grouped(ctx context.Context, fn func(q *Q) error) error
	// postMessage writes a message post atomically (Store.PostMessage).
	postMessage(ctx context.Context, mp *MessagePost) error
	// readAudits starts where the audit entries of reads go
	// (Store.StartReadAudits).
	readAudits(ctx context.Context) (auditSink, error)
	// poolStats are the connection pools' statistics by name.
	poolStats() map[string]sql.DBStats
	// newBus starts the bus that carries change events between the
	// processes sharing the database (live.Bus).
	newBus(dsn string, log *slog.Logger) live.Bus
	// close stops the engine's machinery and closes its pools.
	close() error
}

// stmtSource hands out a pool's prepared statements by query text.
type stmtSource interface {
	// get returns the statement, preparing it on the pool if it may; nil
	// runs the query unprepared.
	get(ctx context.Context, query string) *sql.Stmt
	// lookup returns the statement only if it is prepared already (inside
	// a transaction, where the pool's connection may be taken).
	lookup(query string) *sql.Stmt
}

// auditSink keeps the audit entries of reads until they are in the audit
// table.
type auditSink interface {
	// append returns once es would survive a crash of this process.
	append(ctx context.Context, es []*clinic.AuditEntry) error
	// flush moves what waits into the audit table.
	flush(ctx context.Context) error
	// stats says how many entries wait and how many flushes failed.
	stats() (waiting int, failedFlushes uint64)
	close() error
}

// committedAudits commits each append: the sink before StartReadAudits,
// and always on PostgreSQL, where transactions commit in parallel and
// there is no page cache to lose.
type committedAudits struct{ s *Store }

func (c committedAudits) append(ctx context.Context, es []*clinic.AuditEntry) error {
	return c.s.Tx(ctx, func(q *Q) error { return q.AppendAudits(ctx, es) })
}
func (committedAudits) flush(context.Context) error { return nil }
func (committedAudits) stats() (int, uint64)        { return 0, 0 }
func (committedAudits) close() error                { return nil }

// Open connects to dsn: a "postgres://" or "postgresql://" URL selects
// PostgreSQL, anything else is a SQLite file path. It does not migrate.
// Options, if given, set the caches.
func Open(ctx context.Context, dsn string, opts ...Options) (*Store, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := openDSN(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s.c, s.now, s.auditKey = newCaches(o), o.Now, o.AuditKey
	if s.now == nil {
		s.now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.bus = s.eng.newBus(dsn, log)
	return s, nil
}

// Live is the bus of change events (see package live): what app publishes
// after a commit reaches the event streams of every process.
func (s *Store) Live() live.Bus { return s.bus }

// Close flushes the read audits that wait and closes the pools.
func (s *Store) Close() error {
	berr := s.bus.Close()
	aerr := s.audits.close()
	return firstErr(firstErr(berr, aerr), s.eng.close())
}

// Engine names the database engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.d.name }

// Read returns a query handle on the reader pool, for reads outside a
// transaction. Writing through it fails on SQLite.
func (s *Store) Read() *Q {
	return &Q{db: s.r, d: s.d, eng: s.eng, c: s.c, stmts: s.eng.stmts(false), auditKey: s.auditKey, n: &s.statements, bus: s.bus}
}

// Write returns a query handle on the writer pool for a single autocommit
// statement that needs no transaction around it.
func (s *Store) Write() *Q {
	return &Q{db: s.w, d: s.d, eng: s.eng, c: s.c, stmts: s.eng.stmts(true), auditKey: s.auditKey, n: &s.statements, bus: s.bus, writes: &s.writes}
}

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
	defer s.writes.Add(1)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", s.d.translate(err))
	}
	var after []func()
	if err := fn(&Q{db: tx, d: s.d, eng: s.eng, c: s.c, stmts: s.eng.stmts(true), tx: tx, after: &after, auditKey: s.auditKey, n: &s.statements, bus: s.bus}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", s.d.translate(err))
	}
	for _, fn := range after {
		fn()
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
	eng   engine
	c     *caches
	stmts stmtSource // prepared statements of the pool
	after *[]func()  // inside a transaction: what runs once it commits
	tx    *sql.Tx    // set inside a transaction
	// fixed, when set, is the context every statement runs on, whatever
	// context the caller passes (a Grouped transaction's).
	fixed context.Context
	// auditKey keys the audit trail's hash chain.
	auditKey []byte
	// n is the store's statement count.
	n *atomic.Int64
	// bus announces changes (credentialsEnded).
	bus live.Bus
	// writes, on a Write handle, is the store's Writes: each statement
	// moves it before it runs and, for exec and queryRow (the ones that
	// write), after it has (wrote), so a read that saw it between the two
	// cannot be taken for one after the write.
	writes *atomic.Uint64
}

// ctx is the context a statement runs on.
func (q *Q) ctx(ctx context.Context) context.Context {
	if q.fixed != nil {
		return q.fixed
	}
	return ctx
}

// byKey is the context for a read of one row by key: the engine's
// (engine.keyCtx) outside a transaction, ctx inside one.
func (q *Q) byKey(ctx context.Context) context.Context {
	if q.tx != nil || q.fixed != nil {
		return ctx
	}
	return q.eng.keyCtx(ctx)
}

// stmt is the prepared statement of query, or nil when the engine does not
// prepare it.
func (q *Q) stmt(ctx context.Context, query string) *sql.Stmt {
	if q.tx == nil {
		return q.stmts.get(ctx, query)
	}
	// In a transaction the pool's connection may be the one the transaction
	// holds (SQLite's single writer), so a missing statement cannot be
	// prepared on the pool now: it runs unprepared and is prepared once the
	// connection is free.
	st := q.stmts.lookup(query)
	if st == nil {
		return nil
	}
	return q.tx.StmtContext(ctx, st) // closed with the transaction
}

func (q *Q) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q.counted(ctx)
	ctx = q.ctx(ctx)
	query = q.d.rebind(query)
	var res sql.Result
	var err error
	if st := q.stmt(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = q.db.ExecContext(ctx, query, args...)
	}
	q.wrote()
	return res, q.d.translate(err)
}

func (q *Q) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q.counted(ctx)
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

// int64s reads the one integer column query selects.
func (q *Q) int64s(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, n)
	}
	return out, q.d.translate(rows.Err())
}

// queryRow scans one row into dest; sql.ErrNoRows becomes ErrNotFound.
func (q *Q) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	q.counted(ctx)
	ctx = q.ctx(ctx)
	query = q.d.rebind(query)
	var row *sql.Row
	if st := q.stmt(ctx, query); st != nil {
		row = st.QueryRowContext(ctx, args...)
	} else {
		row = q.db.QueryRowContext(ctx, query, args...)
	}
	err := row.Scan(dest...)
	q.wrote()
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

// statementCount is the context key of CountStatements' counter.
type statementCount struct{}

// CountStatements returns ctx with a counter of the statements run with
// it, for tests of how many statements a request takes (testenv counts
// each request's).
func CountStatements(ctx context.Context) (context.Context, *atomic.Int64) {
	n := new(atomic.Int64)
	return context.WithValue(ctx, statementCount{}, n), n
}

// counted counts a statement: the store's, and ctx's if it counts.
func (q *Q) counted(ctx context.Context) {
	q.wrote()
	if q.n != nil {
		q.n.Add(1)
	}
	if n, ok := ctx.Value(statementCount{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

// wrote moves Writes for a statement of a Write handle.
func (q *Q) wrote() {
	if q.writes != nil {
		q.writes.Add(1)
	}
}

// credentialsEnded announces that a credential may have ended (a token
// revoked, a user's access or password changed, an admin token rotated):
// every event stream checks its caller again before its next event
// (live.Pump). On PostgreSQL the NOTIFY is a statement of q's transaction,
// delivered at its commit in commit order, so no later change's event
// reaches a stream first; outside a transaction it follows the write at
// once. On SQLite the process's own bus hears it once q commits.
func (q *Q) credentialsEnded(ctx context.Context) error {
	if q.bus == nil {
		return nil
	}
	e := live.Event{Topic: live.CredentialsTopic, Kind: live.KindCredentials}
	if n, ok := q.bus.(interface {
		NotifyStatement(live.Event) (string, []any)
	}); ok {
		query, args := n.NotifyStatement(e)
		_, err := q.exec(ctx, query, args...)
		return err
	}
	q.AfterCommit(func() { q.bus.Publish(e) })
	return nil
}

// Statements is how many statements the store has run since it opened,
// by every caller: tests compare it around a change.
func (s *Store) Statements() int64 { return s.statements.Load() }

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

// chunkSize is the rows of the next multi-row statement for n rows to
// go: the largest power of two up to n, at most 256. So a few statement
// texts serve every batch size and stay prepared.
func chunkSize(n int) int {
	c := 1
	for c*2 <= n && c < 256 {
		c *= 2
	}
	return c
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
func (s *Store) PoolStats() map[string]sql.DBStats { return s.eng.poolStats() }

// Rebind returns query, written with '?' placeholders, in the engine's
// own, for tests and tools that run SQL of their own on DB.
func (s *Store) Rebind(query string) string { return s.d.rebind(query) }

// AfterCommit runs fn once q's transaction has committed, and never if it
// rolls back; outside a transaction it runs fn at once. It is for effects
// outside the database that must not announce what may yet be undone.
func (q *Q) AfterCommit(fn func()) {
	if q.after == nil {
		fn()
		return
	}
	*q.after = append(*q.after, fn)
}

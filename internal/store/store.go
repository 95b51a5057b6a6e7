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
	"time"
)

// Store is an open database: a writer pool and a reader pool. On SQLite the
// writer is a single connection (SQLite allows one writer; queueing in Go is
// cheaper than busy-waiting in the driver) and readers are a separate pool of
// query-only connections. On PostgreSQL both are the same pool.
type Store struct {
	w, r *sql.DB
	d    *dialect
}

// Open connects to dsn: a "postgres://" or "postgresql://" URL selects
// PostgreSQL, anything else is a SQLite file path. It does not migrate.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if isPostgres(dsn) {
		return openPostgres(ctx, dsn)
	}
	return openSQLite(ctx, dsn)
}

// Close closes both pools.
func (s *Store) Close() error {
	err := s.w.Close()
	if s.r != s.w {
		if e := s.r.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Engine names the database engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.d.name }

// Read returns a query handle on the reader pool, for reads outside a
// transaction. Writing through it fails on SQLite.
func (s *Store) Read() *Q { return &Q{db: s.r, d: s.d} }

// Write returns a query handle on the writer pool for a single autocommit
// statement that needs no transaction around it.
func (s *Store) Write() *Q { return &Q{db: s.w, d: s.d} }

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
		if !errors.Is(err, ErrRetry) || attempt == maxTxAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt*attempt) * time.Duration(1+rand.IntN(5)) * time.Millisecond):
		}
	}
}

const maxTxAttempts = 5

func (s *Store) tx(ctx context.Context, fn func(q *Q) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", s.d.translate(err))
	}
	if err := fn(&Q{db: tx, d: s.d}); err != nil {
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
	db querier
	d  *dialect
}

func (q *Q) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := q.db.ExecContext(ctx, q.d.rebind(query), args...)
	return res, q.d.translate(err)
}

func (q *Q) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := q.db.QueryContext(ctx, q.d.rebind(query), args...)
	return rows, q.d.translate(err)
}

// queryRow scans one row into dest; sql.ErrNoRows becomes ErrNotFound.
func (q *Q) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	err := q.db.QueryRowContext(ctx, q.d.rebind(query), args...).Scan(dest...)
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

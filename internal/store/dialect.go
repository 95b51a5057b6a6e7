package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// This file holds what differs between SQLite and PostgreSQL in the text
// and the setup: connecting, placeholders, error codes and migrations.
// Queries elsewhere are written once, in the SQL both engines accept; what
// the engines do differently at run time is the engine interface
// (store.go), implemented in sqlite.go and postgres.go.

type dialect struct {
	name     string
	postgres bool
	cache    sync.Map // query text → rebound text
}

// openDSN connects to the engine dsn names: a "postgres://" or
// "postgresql://" URL is PostgreSQL, anything else a SQLite file path.
func openDSN(ctx context.Context, dsn string) (*Store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return openPostgres(ctx, dsn)
	}
	return openSQLite(ctx, dsn)
}

// sqlitePragmas hold under load (docs/performance.md): WAL with
// synchronous=NORMAL keeps every committed transaction across a process crash.
const sqlitePragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate&_time_format=sqlite"

func openSQLite(ctx context.Context, path string) (*Store, error) {
	path = strings.TrimPrefix(path, "sqlite://")
	path = strings.TrimPrefix(path, "file:")
	w, err := sql.Open("sqlite", "file:"+path+"?"+sqlitePragmas+"&_pragma=temp_store(MEMORY)")
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	// The writer connects first so the WAL journal mode is set before readers open.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?"+sqlitePragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	r.SetConnMaxLifetime(0)
	s := &Store{w: w, r: r, d: &dialect{name: "sqlite"}}
	if path == ":memory:" || strings.Contains(path, "mode=memory") {
		path = ""
	}
	s.eng, s.audits = newSQLiteEngine(s, path), committedAudits{s}
	return s, nil
}

func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(20)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s := &Store{w: db, r: db, d: &dialect{name: "postgres", postgres: true}}
	s.eng, s.audits = newPostgresEngine(s), committedAudits{s}
	return s, nil
}

// rebind turns '?' placeholders into PostgreSQL's $1, $2, … . Queries hold no
// literal question marks, so a plain scan suffices; results are cached because
// the set of query texts is small and fixed.
func (d *dialect) rebind(query string) string {
	if !d.postgres {
		return query
	}
	if v, ok := d.cache.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	if len(query) < 4096 { // IN (…) lists of varying length are not worth caching
		d.cache.Store(query, out)
	}
	return out
}

// translate maps driver errors to the store's errors by their codes.
func (d *dialect) translate(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			return &driverError{ErrConflict, err}
		case "23503":
			return &driverError{ErrForeignKey, err}
		case "40001", "40P01":
			return &driverError{ErrRetry, err}
		}
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return &driverError{ErrConflict, err}
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return &driverError{ErrForeignKey, err}
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return &driverError{ErrRetry, err}
		}
	}
	return err
}

// Migrate applies the embedded migrations of the store's engine. On
// PostgreSQL it holds a session advisory lock while it runs, so several
// processes starting at once migrate once; the lock id is derived from the
// schema so that test schemas on one server do not wait on each other.
func (s *Store) Migrate(ctx context.Context) error {
	dir, gd := "migrations/sqlite", goose.DialectSQLite3
	if s.d.postgres {
		dir, gd = "migrations/postgres", goose.DialectPostgres
	}
	fsys, err := fs.Sub(migrationsFS, dir)
	if err != nil {
		return err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if s.d.postgres {
		var schema string
		if err := s.w.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		id := int64(crc64.Checksum([]byte("teleclinic:"+schema), crc64.MakeTable(crc64.ECMA)) >> 1)
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(id), lock.WithLockTimeout(1, 300))
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gd, s.w, fsys, opts...)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

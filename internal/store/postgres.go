package store

import (
	"context"
	"database/sql"
	"log/slog"

	"teleclinic/internal/live"
)

// postgresEngine is PostgreSQL's machinery (engine): one pool for reads and
// writes, statements prepared by pgx itself, transactions that commit in
// parallel, and message posts that arrive together sent as one pipelined
// batch (postgres_batch.go).
type postgresEngine struct {
	s     *Store
	posts *postBatcher
}

func newPostgresEngine(s *Store) *postgresEngine {
	return &postgresEngine{s: s, posts: newPostBatcher(s.w, s.d)}
}

// stmts prepares nothing: pgx caches the statements of each connection.
func (e *postgresEngine) stmts(bool) stmtSource { return unprepared{} }

// keyCtx keeps ctx: a read crosses a network that may stall.
func (e *postgresEngine) keyCtx(ctx context.Context) context.Context { return ctx }

// grouped is Tx: every transaction commits on its own connection.
func (e *postgresEngine) grouped(ctx context.Context, fn func(q *Q) error) error {
	return e.s.Tx(ctx, fn)
}

func (e *postgresEngine) postMessage(ctx context.Context, mp *MessagePost) error {
	SealAudit(e.s.auditKey, &mp.Audit, true)
	return e.posts.post(ctx, mp)
}

// readAudits commits them: transactions commit in parallel, and there is
// no page cache of this process's to lose.
func (e *postgresEngine) readAudits(context.Context) (auditSink, error) {
	return committedAudits{e.s}, nil
}

func (e *postgresEngine) poolStats() map[string]sql.DBStats {
	return map[string]sql.DBStats{"main": e.s.w.Stats()}
}

// newBus is NOTIFY and LISTEN: every process that shares the database
// receives the events.
func (e *postgresEngine) newBus(dsn string, log *slog.Logger) live.Bus {
	return live.NewPostgres(dsn, e.s.w, log)
}

func (e *postgresEngine) close() error {
	e.posts.close()
	return e.s.w.Close()
}

// unprepared is the stmtSource of an engine that prepares nothing.
type unprepared struct{}

func (unprepared) get(context.Context, string) *sql.Stmt { return nil }
func (unprepared) lookup(string) *sql.Stmt               { return nil }

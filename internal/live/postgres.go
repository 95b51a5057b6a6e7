package live

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// channelFor is the PostgreSQL notification channel of the installation
// whose tables are in schema. Channels are the database's, not a schema's:
// installations that share a database in schemas of their own (and the
// tests, a schema each) would otherwise hear each other's events, and a
// stream that shows "something changed" would show it for another
// clinic's change. The default schema keeps the plain name.
func channelFor(schema string) string {
	if schema == "" || schema == "public" {
		return "teleclinic_live"
	}
	h := sha256.Sum256([]byte(schema))
	return "teleclinic_live_" + hex.EncodeToString(h[:8])
}

// maxPayload keeps a notification under PostgreSQL's 8,000-byte limit.
const maxPayload = 7000

// Postgres is the bus of processes that share a PostgreSQL database: an
// event is a line of a NOTIFY on the installation's channel (channelFor),
// and each process LISTENs on one
// connection of its own and delivers what arrives to its hub. Payloads
// carry topics, kinds and ids only — never patient data, since any role
// that may LISTEN on the database sees them.
type Postgres struct {
	*Hub
	dsn     string
	channel string
	db      *sql.DB
	log     *slog.Logger
	out     chan Event
	cancel  context.CancelFunc
	done    chan struct{}
	// ready is closed once the first LISTEN is in place.
	ready chan struct{}
}

// NewPostgres starts listening on dsn; it publishes through db.
func NewPostgres(dsn string, db *sql.DB, log *slog.Logger) *Postgres {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Postgres{Hub: NewHub(), dsn: dsn, db: db, log: log, out: make(chan Event, 4096), cancel: cancel,
		done: make(chan struct{}), ready: make(chan struct{})}
	// The schema the store's tables are in names the channel; the store
	// has just reached the database, so this answers at once.
	var schema string
	qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
	if err := db.QueryRowContext(qctx, "SELECT current_schema()").Scan(&schema); err != nil {
		log.Warn("live: the schema is unknown; using the default channel", "err", err)
	}
	qcancel()
	p.channel = channelFor(schema)
	go func() {
		defer close(p.done)
		sent := make(chan struct{})
		go func() { defer close(sent); p.send(ctx) }()
		p.listen(ctx)
		<-sent
	}()
	return p
}

// Ready is closed once this process listens: events published after it
// reach this process's subscribers.
func (p *Postgres) Ready() <-chan struct{} { return p.ready }

// Publish queues e for the next NOTIFY. A full queue drops e (the
// database is unreachable or far behind; streams resync when it is back).
func (p *Postgres) Publish(e Event) {
	select {
	case p.out <- e:
	default:
		p.log.Warn("live: event dropped, the notification queue is full", "topic", e.Topic)
	}
}

// NotifyStatement is the statement that publishes e from inside a
// transaction, with '?' placeholders: PostgreSQL delivers it when the
// transaction commits, in commit order with every other notification, so
// a credential event reaches the listeners before the events of any
// change committed after it (Publish sends after the commit, from a
// queue).
func (p *Postgres) NotifyStatement(e Event) (string, []any) {
	var b strings.Builder
	writeEvent(&b, e)
	return "SELECT pg_notify(?, ?)", []any{p.channel, b.String()}
}

// Close stops listening and sending.
func (p *Postgres) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// send writes the queued events as NOTIFYs, as many to a payload as fit:
// under a burst of messages that is one statement for many events.
func (p *Postgres) send(ctx context.Context) {
	var b strings.Builder
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-p.out:
			b.Reset()
			writeEvent(&b, e)
		more:
			for b.Len() < maxPayload {
				select {
				case e := <-p.out:
					writeEvent(&b, e)
				default:
					break more
				}
			}
			if _, err := p.db.ExecContext(ctx, "SELECT pg_notify($1, $2)", p.channel, b.String()); err != nil && ctx.Err() == nil {
				p.log.Warn("live: notify failed", "err", err)
			}
		}
	}
}

func writeEvent(b *strings.Builder, e Event) {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(e.Topic)
	b.WriteByte(' ')
	b.WriteString(e.Kind)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(e.ID, 10))
}

// listen holds the LISTEN connection, reconnecting after a failure; after
// a reconnection every subscriber gets a Resync for what it may have
// missed.
func (p *Postgres) listen(ctx context.Context) {
	first := true
	for wait := 100 * time.Millisecond; ctx.Err() == nil; {
		err := p.listenOnce(ctx, func() {
			wait = 100 * time.Millisecond
			if first {
				close(p.ready)
				first = false
				return
			}
			p.Deliver(Event{Kind: KindResync})
		})
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("live: listening failed; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

func (p *Postgres) listenOnce(ctx context.Context, listening func()) error {
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+p.channel); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(n.Payload, "\n") {
			if e, ok := parseEvent(line); ok {
				p.Deliver(e)
			}
		}
	}
}

func parseEvent(line string) (Event, bool) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return Event{}, false
	}
	id, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return Event{}, false
	}
	return Event{Topic: f[0], Kind: f[1], ID: id}, true
}

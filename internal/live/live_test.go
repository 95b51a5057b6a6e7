package live_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"teleclinic/internal/live"
	"teleclinic/internal/testenv"
)

// wait waits up to d for an event of s and takes what is pending.
func wait(s *live.Sub, d time.Duration) (map[string]bool, time.Time) {
	ready := make(chan struct{}, 1)
	s.OnEvent(func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	select {
	case <-ready:
	case <-time.After(d):
	}
	return s.Take()
}

// next waits for what s has pending.
func next(t *testing.T, s *live.Sub) map[string]bool {
	t.Helper()
	kinds, _ := wait(s, 5*time.Second)
	if kinds == nil {
		t.Fatal("no event within 5 s")
	}
	return kinds
}

func none(t *testing.T, s *live.Sub) {
	t.Helper()
	if kinds, _ := wait(s, 50*time.Millisecond); kinds != nil {
		t.Fatalf("unexpected events %v", kinds)
	}
}

// TestLocal_Delivers: a subscriber gets its topics' events and no other's,
// as one pending set (the kinds, and when the last came); a closed
// subscription gets nothing; a thousand events never block the publisher
// and leave one set; OnEvent is called at each event.
func TestLocal_Delivers(t *testing.T) {
	b := live.NewLocal()
	room, visit := live.RoomTopic(1, 2), live.VisitTopic(1, 3)
	s := b.Subscribe(room, visit)
	other := b.Subscribe(live.RoomTopic(2, 2))
	before := time.Now()
	b.Publish(live.Event{Topic: room, Kind: live.KindVisit, ID: 7})
	b.Publish(live.Event{Topic: visit, Kind: live.KindMessage, ID: 8})
	kinds, since := wait(s, 5*time.Second)
	if !maps.Equal(kinds, map[string]bool{live.KindVisit: true, live.KindMessage: true}) || since.Before(before) {
		t.Fatalf("pending: %v at %v", kinds, since)
	}
	none(t, s)
	none(t, other)
	for range 1000 { // must not block
		b.Publish(live.Event{Topic: room, Kind: live.KindVisit})
	}
	if kinds := next(t, s); len(kinds) != 1 || !kinds[live.KindVisit] {
		t.Fatalf("after 1000 events: %v", kinds)
	}
	none(t, s)
	calls := 0
	s.OnEvent(func() { calls++ })
	b.Publish(live.Event{Topic: room, Kind: live.KindVisit})
	b.Publish(live.Event{Topic: visit, Kind: live.KindMessage})
	if kinds, _ := s.Take(); calls != 2 || len(kinds) != 2 {
		t.Fatalf("OnEvent: %d calls, %v pending", calls, kinds)
	}
	s.Close()
	if n := b.Subscribers(room); n != 0 {
		t.Fatalf("%d subscribers after Close", n)
	}
	b.Publish(live.Event{Topic: live.RoomTopic(2, 2), Kind: live.KindResync})
	if kinds := next(t, other); !kinds[live.KindResync] {
		t.Fatalf("resync reached other as %v", kinds)
	}
}

// TestPostgres_AcrossProcesses: two buses on one database stand for two
// processes; an event published on one reaches the other's subscribers
// and not the subscribers of other topics.
func TestPostgres_AcrossProcesses(t *testing.T) {
	dsn := os.Getenv("TELECLINIC_TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TELECLINIC_TEST_DATABASE_URL is not set: PostgreSQL tests skip")
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, b := live.NewPostgres(dsn, db, log), live.NewPostgres(dsn, db, log)
	defer a.Close()
	defer b.Close()
	for _, bus := range []*live.Postgres{a, b} {
		select {
		case <-bus.Ready():
		case <-time.After(10 * time.Second):
			t.Fatal("not listening within 10 s")
		}
	}
	topic := live.VisitTopic(9, time.Now().UnixNano())
	s := b.Subscribe(topic)
	quiet := b.Subscribe(live.VisitTopic(9, 1))
	defer s.Close()
	defer quiet.Close()
	for i := range 3 {
		a.Publish(live.Event{Topic: topic, Kind: live.KindMessage, ID: int64(i + 1)})
		if kinds := next(t, s); !kinds[live.KindMessage] {
			t.Fatalf("event %d: %v", i, kinds)
		}
	}
	none(t, quiet)
}

// TestPostgres_SchemasApart: installations in schemas of their own in one
// database (as the tests are) do not hear each other: an event reaches
// the buses of its schema only.
func TestPostgres_SchemasApart(t *testing.T) {
	if os.Getenv("TELECLINIC_TEST_DATABASE_URL") == "" {
		t.Skip("TELECLINIC_TEST_DATABASE_URL is not set: PostgreSQL tests skip")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := func(dsn string) *live.Postgres {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		p := live.NewPostgres(dsn, db, log)
		t.Cleanup(func() { p.Close(); db.Close() })
		select {
		case <-p.Ready():
		case <-time.After(10 * time.Second):
			t.Fatal("not listening within 10 s")
		}
		return p
	}
	one, other := testenv.DSN(t), testenv.DSN(t)
	a, sameSchema, otherSchema := bus(one), bus(one), bus(other)
	topic := live.RoomTopic(1, 1) // the same ids in both installations
	heard, apart := sameSchema.Subscribe(topic), otherSchema.Subscribe(topic)
	defer heard.Close()
	defer apart.Close()
	a.Publish(live.Event{Topic: topic, Kind: live.KindVisit, ID: 7})
	if kinds := next(t, heard); !kinds[live.KindVisit] {
		t.Fatalf("the same schema's bus: %v", kinds)
	}
	none(t, apart)
}

// TestPump_EndsOnClosing: a stream that waits for events ends as soon as
// the server starts shutting down (Closing is done), without an end event,
// and one that ends on its own leaves Closing to end nothing more.
func TestPump_EndsOnClosing(t *testing.T) {
	closing, shutDown := context.WithCancel(context.Background())
	defer shutDown()
	ended := false
	p := live.Pump{Closing: closing, KeepAlive: time.Hour,
		Check: func(context.Context) (int64, error) { return 0, nil },
		End:   func(error) live.Frame { ended = true; return live.Frame{Name: "end", Data: []byte("{}")} }}
	quiet := func(ctx context.Context, d time.Duration) ([]live.Frame, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
			return nil, nil
		}
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { p.Run(context.Background(), rec, quiet); close(done) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("the stream ended before the shutdown")
	default:
	}
	shutDown()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived the shutdown")
	}
	if ended || !strings.HasPrefix(rec.Body.String(), "retry: 3000") || strings.Contains(rec.Body.String(), "event: end") {
		t.Fatalf("ended %v, body %q", ended, rec.Body.String())
	}
}

// TestPump_FramesBeforeTheTick: a stream served by its own goroutine
// (Run) sends the frames it read before a keep-alive's Tick that ends it,
// then the end event; a credential that ended sends none of them.
func TestPump_FramesBeforeTheTick(t *testing.T) {
	for _, c := range []struct {
		name      string
		check     error
		want, not string
	}{
		{"TickEnds", nil, "event: signal\ndata: {\"type\":\"replaced\"}\n\nevent: end", ""},
		{"CredentialEnded", errors.New("signed out"), "event: end", "replaced"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checks := 0
			p := live.Pump{KeepAlive: 10 * time.Millisecond,
				Check: func(context.Context) (int64, error) {
					if checks++; checks > 1 {
						return 0, c.check
					}
					return 0, nil
				},
				Tick: func(context.Context) error { return errors.New("peer gone") },
				End:  func(error) live.Frame { return live.Frame{Name: "end", Data: []byte("{}")} }}
			// The source's frames come as the keep-alive is due.
			src := func(ctx context.Context, d time.Duration) ([]live.Frame, error) {
				time.Sleep(d + time.Millisecond)
				return []live.Frame{{Name: "signal", Data: []byte(`{"type":"replaced"}`)}}, nil
			}
			rec := httptest.NewRecorder()
			p.Run(context.Background(), rec, src)
			body := rec.Body.String()
			if !strings.Contains(body, c.want) || (c.not != "" && strings.Contains(body, c.not)) {
				t.Fatalf("the stream: %q", body)
			}
		})
	}
}

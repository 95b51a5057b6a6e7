package httpapi_test

import (
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

// TestStreams_OneReadPerChange: a change costs the database the same
// statements whether 1 or 30 streams watch it: the streams woken by one
// message on a thread, or by one arrival in a room's queue, share one read
// of it, and a delivery is not audited again (the stream's open was). Each
// stream still gets the change, and the queue's before_me is each
// caller's own.
func TestStreams_OneReadPerChange(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.withVisit(t)
	// Each change is measured with the streams settled, then its statements
	// counted from before the change until every stream has it.
	change := func(streams []*testenv.Stream, do func(), check func(ev testenv.Event)) int64 {
		t.Helper()
		var wg sync.WaitGroup
		for _, st := range streams {
			wg.Go(func() { st.Settle(300 * time.Millisecond) })
		}
		wg.Wait()
		e.FlushAudits()
		before := e.Store.Statements()
		do()
		for _, st := range streams {
			check(st.Next(t))
		}
		time.Sleep(100 * time.Millisecond) // a stray read would be counted
		return e.Store.Statements() - before
	}
	tokens := []string{s.pat.Token, s.doc.Token}
	sent := 0
	thread := func(n int) int64 {
		var streams []*testenv.Stream
		for i := range n {
			streams = append(streams, openStream(t, e, msgPath(visit)+"/events", map[string]string{"X-ApiToken": tokens[i%2], "Last-Event-ID": fmt.Sprint(sent)}))
		}
		defer func() {
			for _, st := range streams {
				st.Close()
			}
		}()
		return change(streams, func() {
			sent++
			mustPost(t, e, s.pat.Token, visit, fmt.Sprint("message ", sent))
		}, func(ev testenv.Event) {
			if ev.Name != "message" || ev.ID != fmt.Sprint(sent) {
				t.Fatalf("want message %d: %+v", sent, ev)
			}
		})
	}
	thread(1) // the first change warms the caches (the room, the names)
	one, thirty := thread(1), thread(30)
	if one != thirty {
		t.Errorf("a message: %d statements with 1 stream, %d with 30", one, thirty)
	}
	t.Logf("a message: %d statements with 1 stream or 30", one)

	// The queue: the admin's streams and the provider's; each arrival is
	// a walk-in of the second patient.
	queueStreams := func(n int) []*testenv.Stream {
		var streams []*testenv.Stream
		for i := range n {
			h := adminHeaders(s.c)
			if i%2 == 1 {
				h = userHeaders(s.c, s.doc.Token)
			}
			streams = append(streams, openStream(t, e, "/api_v3/rooms/main/queue/events", h))
		}
		return streams
	}
	waiting := 0
	queue := func(n int) int64 {
		streams := queueStreams(n)
		defer func() {
			for _, st := range streams {
				st.Close()
			}
		}()
		return change(streams, func() {
			it := s.intake(t, s.pat2, "reason_for_visit", "Fever")
			if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_walkin", Header: userHeaders(s.c, s.pat2.Token),
				Form: url.Values{"intake_id": {it}, "room_code": {"main"}}}); res.Status != 200 {
				t.Fatalf("walk-in: %d %s", res.Status, res.Raw)
			}
			waiting++
		}, func(ev testenv.Event) {
			if ev.Name != "queue" || eventData[queueInfo](t, ev).Length != waiting {
				t.Fatalf("want a queue of %d: %+v", waiting, ev)
			}
		})
	}
	queue(1)
	one, thirty = queue(1), queue(30)
	if one != thirty {
		t.Errorf("an arrival: %d statements with 1 stream, %d with 30", one, thirty)
	}
	t.Logf("an arrival: %d statements with 1 stream or 30", one)
}

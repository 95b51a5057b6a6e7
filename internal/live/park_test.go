package live_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"teleclinic/internal/live"
)

// TestParker_Streams: a stream served by a Parker gets its first frames at
// once and one per change after (each poll sees the changes' kinds), holds
// no goroutine while it waits, ends when its client hangs up (done runs,
// told by the kernel), and at the shutdown ends without an end event.
func TestParker_Streams(t *testing.T) {
	closing, shutDown := context.WithCancel(context.Background())
	defer shutDown()
	bus := live.NewLocal()
	pk := live.NewParker(closing)
	var done atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := bus.Subscribe("topic")
		first := true
		src := live.Polled{Subs: []*live.Sub{sub}, Ahead: func() bool { return first },
			Poll: func(_ context.Context, ch live.Changes) ([]live.Frame, error) {
				if first {
					first = false
					return []live.Frame{{Name: "hello", Data: []byte(`{}`)}}, nil
				}
				return []live.Frame{{Name: "change", Data: []byte(`{"message":` + strconv.FormatBool(ch.Kinds[live.KindMessage]) + `}`)}}, nil
			}}
		p := live.Pump{Parker: pk, Closing: closing, KeepAlive: time.Hour,
			Check: func(context.Context) (int64, error) { return 0, nil },
			End:   func(error) live.Frame { return live.Frame{Name: "end", Data: []byte("{}")} }}
		p.Serve(w, r, src, func() { sub.Close(); done.Add(1) })
	}))
	defer srv.Close()
	open := func() (*http.Response, *bufio.Reader) {
		t.Helper()
		res, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("head: %d %v", res.StatusCode, res.Header)
		}
		return res, bufio.NewReader(res.Body)
	}
	event := func(r *bufio.Reader) string {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream: %v", err)
			}
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				data, _ := r.ReadString('\n')
				return strings.TrimSpace(name) + " " + strings.TrimSpace(strings.TrimPrefix(data, "data: "))
			}
		}
	}
	res, r := open()
	if ev := event(r); ev != "hello {}" {
		t.Fatalf("first: %q", ev)
	}
	base := runtime.NumGoroutine()
	res2, r2 := open()
	event(r2)
	var now int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if now = runtime.NumGoroutine(); now <= base+2 { // the client's own two
			break
		}
	}
	if now > base+2 {
		t.Fatalf("a parked stream added %d goroutines", now-base-2)
	}
	bus.Publish(live.Event{Topic: "topic", Kind: live.KindMessage})
	if ev := event(r); ev != `change {"message":true}` {
		t.Fatalf("after a message: %q", ev)
	}
	event(r2)
	bus.Publish(live.Event{Topic: "topic", Kind: live.KindVisit})
	if ev := event(r); ev != `change {"message":false}` {
		t.Fatalf("after a visit change: %q", ev)
	}
	event(r2)

	res2.Body.Close() // the client hangs up
	for end := time.Now().Add(5 * time.Second); done.Load() == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if done.Load() != 1 {
		t.Fatal("a hung-up stream was not ended within 5 s")
	}
	shutDown()
	rest, err := io.ReadAll(r)
	if err != nil || strings.Contains(string(rest), "event: end") {
		t.Fatalf("at the shutdown: %q %v", rest, err)
	}
	res.Body.Close()
	for end := time.Now().Add(5 * time.Second); done.Load() != 2 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if done.Load() != 2 {
		t.Fatalf("%d streams ended, want 2", done.Load())
	}
}

package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Event is one server-sent event as a stream's client reads it.
type Event struct{ Name, ID, Data string }

// Decode decodes the event's data into v, failing t when it is not JSON.
func (ev Event) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(ev.Data), v); err != nil {
		t.Fatalf("event %s %q: %v", ev.Name, ev.Data, err)
	}
}

// Stream is an open event stream (text/event-stream) whose events a
// goroutine reads as they come.
type Stream struct {
	Status int
	Header http.Header
	events chan Event
	close  func()
}

// Close hangs up (the test's end does too).
func (s *Stream) Close() { s.close() }

// EventWait is how long Next waits for an event: long enough for a loaded
// machine, short enough that a stream that never answers fails the test.
const EventWait = 10 * time.Second

// OpenStream GETs url with header through c (nil: the tests' Transport) and
// reads its events until the test ends.
func OpenStream(t testing.TB, c *http.Client, url string, header map[string]string) *Stream {
	t.Helper()
	if c == nil {
		c = &http.Client{Transport: Transport}
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &Stream{Status: res.StatusCode, Header: res.Header, events: make(chan Event, 100), close: func() { cancel(); res.Body.Close() }}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		var ev Event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Data != "" || ev.Name != "" {
					s.events <- ev
				}
				ev = Event{}
			case strings.HasPrefix(line, "event: "):
				ev.Name = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.Data += line[6:]
			}
		}
	}()
	return s
}

// Next is the stream's next event; it fails t when the stream ends or
// EventWait passes without one.
func (s *Stream) Next(t testing.TB) Event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(EventWait):
		t.Fatalf("no event within %v", EventWait)
	}
	return Event{}
}

// Quiet fails t when an event comes within d.
func (s *Stream) Quiet(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
	case <-time.After(d):
	}
}

// Settle reads and drops events until none has come for quiet: the
// announcements of what a test did before it opened the stream, which on
// PostgreSQL may arrive after (LISTEN/NOTIFY is asynchronous).
func (s *Stream) Settle(quiet time.Duration) {
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-time.After(quiet):
			return
		}
	}
}

// Closed fails t unless the server ends the stream within EventWait after
// the events read so far, with none in between.
func (s *Stream) Closed(t testing.TB) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("an event after the end: %+v", ev)
		}
	case <-time.After(EventWait):
		t.Fatalf("the stream is still open %v after its end event", EventWait)
	}
}

// End reads the next event and fails t unless it is the door's end event
// name with code in its data ({"code": …}), and the stream then closes
// with nothing more.
func (s *Stream) End(t testing.TB, name, code string) Event {
	t.Helper()
	ev := s.Next(t)
	var got struct{ Code string }
	if ev.Name == name {
		ev.Decode(t, &got)
	}
	if ev.Name != name || got.Code != code {
		t.Fatalf("got %q %s; want the end event %s with code %s", ev.Name, ev.Data, name, code)
	}
	s.Closed(t)
	return ev
}

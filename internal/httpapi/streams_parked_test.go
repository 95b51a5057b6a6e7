package httpapi_test

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/live"
	"teleclinic/internal/testenv"
)

// rawStream is an event stream read over a connection of the test's own,
// so that the test process's goroutines are the server's alone (an
// http.Client holds two a connection).
type rawStream struct {
	conn net.Conn
	res  *http.Response
	body *bufio.Reader
}

func dialStream(t *testing.T, e *testenv.Env, path string, h map[string]string) *rawStream {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	b.WriteString("GET " + path + " HTTP/1.1\r\nHost: teleclinic.test\r\nAccept: text/event-stream\r\n")
	for k, v := range h {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &rawStream{conn: conn, res: res, body: bufio.NewReader(res.Body)}
}

// next is the stream's next event: its name and data.
func (s *rawStream) next(t *testing.T) (name, data string) {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		l, err := s.body.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream: %v", err)
		}
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimSpace(strings.TrimPrefix(l, "event: "))
		case strings.HasPrefix(l, "data: "):
			data = strings.TrimSpace(strings.TrimPrefix(l, "data: "))
		case l == "\n" && name != "":
			return name, data
		}
	}
}

// TestStreams_Parked: a stream that waits holds none of the server's
// goroutines (live.Parker): 40 queue streams leave the process's
// goroutines where they were, yet an arrival reaches all 40, each with
// its own answer. A client that hangs up frees its place in the stream
// limits at once, told by the kernel, not at the next keep-alive (20 s
// here): with the admin's 40 places taken, the 41st is refused, and
// after 10 hang-ups 10 more open.
func TestStreams_Parked(t *testing.T) {
	// Not parallel: the goroutines counted are the process's, and the
	// parallel tests' servers would move the count.
	const n = 40
	e := testenv.New(t, testenv.Options{Streams: live.NewLimits(n, -1, -1)})
	s := newClinicSetup(t, e, "alpha")
	path := "/api_v3/rooms/main/queue/events"
	first := dialStream(t, e, path, adminHeaders(s.c))
	if first.res.StatusCode != 200 || first.res.Header.Get("Content-Type") != "text/event-stream" || first.res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the stream's head: %d %v", first.res.StatusCode, first.res.Header)
	}
	if name, data := first.next(t); name != "queue" || !strings.Contains(data, `"length":0`) {
		t.Fatalf("the first event: %s %s", name, data)
	}
	base := runtime.NumGoroutine()
	streams := []*rawStream{first}
	for range n - 1 {
		st := dialStream(t, e, path, adminHeaders(s.c))
		if name, _ := st.next(t); st.res.StatusCode != 200 || name != "queue" {
			t.Fatalf("a stream: %d %s", st.res.StatusCode, name)
		}
		streams = append(streams, st)
	}
	// The requests' goroutines end as their streams park.
	var now int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if now = runtime.NumGoroutine(); now-base <= 5 {
			break
		}
	}
	if now-base > 5 {
		t.Fatalf("%d streams added %d goroutines", n-1, now-base)
	}
	if st := dialStream(t, e, path, adminHeaders(s.c)); st.res.StatusCode != 429 {
		t.Fatalf("the stream past the credential's bound: %d", st.res.StatusCode)
	}

	it := s.intake(t, s.pat2, "reason_for_visit", "Fever")
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_walkin", Header: userHeaders(s.c, s.pat2.Token),
		Form: url.Values{"intake_id": {it}, "room_code": {"main"}}}); res.Status != 200 {
		t.Fatalf("walk-in: %d %s", res.Status, res.Raw)
	}
	for i, st := range streams {
		if name, data := st.next(t); name != "queue" || !strings.Contains(data, `"length":1`) {
			t.Fatalf("stream %d after the arrival: %s %s", i, name, data)
		}
	}

	for _, st := range streams[:10] {
		st.conn.Close()
	}
	opened := 0
	for end := time.Now().Add(5 * time.Second); opened < 10 && time.Now().Before(end); {
		st := dialStream(t, e, path, adminHeaders(s.c))
		switch st.res.StatusCode {
		case 200:
			opened++
		case 429:
			st.conn.Close()
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("a stream after the hang-ups: %d", st.res.StatusCode)
		}
	}
	if opened != 10 {
		t.Fatalf("after 10 hang-ups, %d streams opened within 5 s", opened)
	}
}

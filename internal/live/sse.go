package live

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"
)

// KeepAlive is how often a quiet stream sends a comment: proxies close
// idle connections after a minute or so, and the stream checks at each
// one that its caller is still signed in.
const KeepAlive = 20 * time.Second

// Stream writes server-sent events (text/event-stream) to one client.
type Stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	b  []byte
}

// OpenStream answers the request with an event stream. The server's write
// timeout, which bounds an ordinary answer, is lifted for it: a stream
// lasts until its client goes or its caller's session ends.
func OpenStream(w http.ResponseWriter) (*Stream, error) {
	streamHeader(w.Header())
	rc := http.NewResponseController(w)
	// Not every writer has deadlines. The read deadline matters too: when
	// it passes, the server cancels the request's context.
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	w.WriteHeader(http.StatusOK)
	s := &Stream{w: w, rc: rc}
	s.b = append(s.b, streamStart...)
	return s, s.flush()
}

// streamHeader sets an event stream's headers.
func streamHeader(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on as they come
}

// streamStart opens every stream. retry: how long a browser's
// EventSource waits before reconnecting.
const streamStart = "retry: 3000\n\n"

// Event writes one event. id, when not empty, is what the client sends
// back as Last-Event-ID when it reconnects. data is one line (JSON).
func (s *Stream) Event(name, id string, data []byte) error {
	s.b = appendEvent(s.b, name, id, data)
	return s.flush()
}

// Comment writes a comment line, which clients ignore: the keep-alive.
func (s *Stream) Comment(text string) error {
	s.b = appendComment(s.b, text)
	return s.flush()
}

func (s *Stream) flush() error {
	_, err := s.w.Write(s.b)
	s.b = s.b[:0]
	if err != nil {
		return err
	}
	return s.rc.Flush()
}

// appendEvent is an event as the stream sends it.
func appendEvent(b []byte, name, id string, data []byte) []byte {
	if name != "" {
		b = append(append(append(b, "event: "...), name...), '\n')
	}
	if id != "" {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	b = append(b, "data: "...)
	b = append(b, bytes.ReplaceAll(data, []byte("\n"), []byte("\ndata: "))...)
	return append(b, "\n\n"...)
}

// appendComment is a comment line, which clients ignore.
func appendComment(b []byte, text string) []byte {
	return append(append(append(b, ": "...), text...), "\n\n"...)
}

// Until is ctx, also cancelled when closing is done: the server is
// shutting down, and a stream, which would otherwise hold the shutdown
// until its client leaves, ends (its client reconnects to a server that
// is up). A nil closing never ends. It starts no goroutine (AfterFunc):
// a goroutine that waited on closing was one of a stream's three, about
// 4 KB of stack per open stream.
func Until(ctx, closing context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if closing == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// LastEventID is the place a reconnecting client has seen up to: the
// Last-Event-ID header a browser sends, or the last_event_id parameter of
// a client that cannot set headers. It is -1 when the value is not a
// number.
func LastEventID(r *http.Request) int {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("last_event_id")
	}
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

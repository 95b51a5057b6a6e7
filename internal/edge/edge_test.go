package edge_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
)

// served runs h behind the edge over a real server and returns the
// answer, its body and the edge's log.
func served(t *testing.T, h http.HandlerFunc, header map[string]string) (*http.Response, string, string) {
	t.Helper()
	var log bytes.Buffer
	srv := httptest.NewServer(edge.New(h, slog.New(slog.NewJSONHandler(&log, nil)), nil))
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL+"/visits/7?token=secret-in-query", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	srv.Close() // the log line is written once the handler has returned
	return res, body.String(), log.String()
}

// logLine is the access-log line's fields a test reads.
type logLine struct {
	Msg       string `json:"msg"`
	RequestID string `json:"request_id"`
	Route     string `json:"route"`
	Status    int    `json:"status"`
	Path      string `json:"path"`
}

func lines(t *testing.T, log string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		out = append(out, ll)
	}
	return out
}

// TestEdge_Request: every answer carries its request id and no-store; a
// caller's plain X-Request-Id is kept, one that is not is replaced; the
// door's route is the log line's, and the line never holds the query.
func TestEdge_Request(t *testing.T) {
	for _, tc := range []struct {
		name, sent string
		keep       bool
	}{
		{"OKOwnID", "lb-1234.abc_x", true},
		{"OKNoID", "", false},
		{"ErrIDWithSpaces", "two words", false},
		{"ErrIDTooLong", strings.Repeat("a", 65), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen string
			res, _, log := served(t, func(w http.ResponseWriter, r *http.Request) {
				info := edge.From(r.Context())
				info.SetRoute("GET /visits/{id}")
				seen = edge.RequestID(r.Context())
				w.WriteHeader(http.StatusTeapot)
			}, map[string]string{"X-Request-Id": tc.sent})
			id := res.Header.Get("X-Request-Id")
			if id == "" || id != seen || (tc.keep && id != tc.sent) || (!tc.keep && id == tc.sent) {
				t.Fatalf("sent %q, answered %q, the door saw %q", tc.sent, id, seen)
			}
			if res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", res.Header.Get("Cache-Control"))
			}
			want := []logLine{{Msg: "request", RequestID: id, Route: "GET /visits/{id}", Status: http.StatusTeapot}}
			if diff := cmp.Diff(want, lines(t, log)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if strings.Contains(log, "secret-in-query") {
				t.Errorf("the log holds the query: %s", log)
			}
		})
	}
}

// TestEdge_Panic: a panicking door answers 500 in its own shape, naming
// the request id to quote; the panic is logged with it; a request no door
// matched is logged with its path.
func TestEdge_Panic(t *testing.T) {
	res, body, log := served(t, func(w http.ResponseWriter, r *http.Request) {
		edge.From(r.Context()).SetReply(func(w http.ResponseWriter, r *http.Request, status int, msg string) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte("door: " + msg))
		})
		panic("broken")
	}, nil)
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != 500 || body != "door: Internal error. If it persists, report request "+id+"." {
		t.Fatalf("%d %q", res.StatusCode, body)
	}
	ls := lines(t, log)
	if len(ls) != 2 || ls[0].Msg != "panic" || ls[0].RequestID != id || ls[1].Status != 500 || ls[1].Route != "" || ls[1].Path != "/visits/7" {
		t.Fatalf("log %+v", ls)
	}
	// No door's shape: the API's plain error body.
	res, body, _ = served(t, func(http.ResponseWriter, *http.Request) { panic("broken") }, nil)
	var got struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || res.StatusCode != 500 || got.Code != 500 || !strings.Contains(got.Message, res.Header.Get("X-Request-Id")) {
		t.Fatalf("%d %s (%v)", res.StatusCode, body, err)
	}
}

// TestEdge_Problems: each product error code has its status and back; an
// error that is not the product's is internal and shows nothing of
// itself; a throttle's wait is Retry-After.
func TestEdge_Problems(t *testing.T) {
	seen := map[int]bool{}
	for _, code := range edge.Codes {
		st := edge.Status(code)
		if seen[st] && code != clinic.EInternal {
			t.Errorf("%s shares status %d", code, st)
		}
		seen[st] = true
		if back := edge.Code(st); back != code {
			t.Errorf("%s → %d → %s", code, st, back)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	p := edge.ProblemOf(r, clinic.Errorf(clinic.ETooMany, "Slow down."))
	if p.Status != 429 || p.Message != "Slow down." {
		t.Fatalf("%+v", p)
	}
	wait := &clinic.Error{Code: clinic.ETooMany, Message: "Wait.", RetryAfter: 30}
	w := httptest.NewRecorder()
	edge.ProblemOf(r, wait).SetHeaders(w)
	if w.Header().Get("Retry-After") != "30" {
		t.Errorf("Retry-After %q", w.Header().Get("Retry-After"))
	}
	p = edge.ProblemOf(r, errors.New("pq: password authentication failed for user clinic"))
	if p.Status != 500 || p.Code != clinic.EInternal || strings.Contains(p.Message, "password") {
		t.Fatalf("%+v", p)
	}
}

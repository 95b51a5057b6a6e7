package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
)

// TestHTTP_PanicIsA500WithoutInternals registers a handler that panics on the
// real middleware chain: the client gets a plain 500, the log gets the stack.
func TestHTTP_PanicIsA500WithoutInternals(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil)), mux: http.NewServeMux()}
	s.handle("GET", "/boom", app.NeedNone, famCode, func(w http.ResponseWriter, r *http.Request, c *call) error {
		panic("secret internal detail")
	})
	s.handler = http.HandlerFunc(s.serve)
	srv := httptest.NewServer(edge.New(s, s.log, nil))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/boom")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != 500 || body.Code != 500 || strings.Contains(body.Message, "secret") {
		t.Fatalf("%d %+v", res.StatusCode, body)
	}
	id := res.Header.Get("X-Request-Id")
	if id == "" || !strings.Contains(body.Message, id) {
		t.Fatalf("the 500 does not name its request id %q: %v", id, body)
	}
	if !strings.Contains(logs.String(), "secret internal detail") || !strings.Contains(logs.String(), "status=500") || !strings.Contains(logs.String(), "request_id="+id) {
		t.Fatalf("log: %s", logs.String())
	}
}

// TestHTTP_ErrorCodesAsTheEdge: the API answers each error code with the
// status the edge maps it to, the one the portal gives too (the portal's
// TestPortal_Edge holds it to the same table), with Retry-After when the
// error carries one.
func TestHTTP_ErrorCodesAsTheEdge(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler), mux: http.NewServeMux()}
	s.handle("GET", "/fail/{code}", app.NeedNone, famCode, func(w http.ResponseWriter, r *http.Request, c *call) error {
		code := r.PathValue("code")
		if code == clinic.EInternal {
			return errors.New("not the product's error")
		}
		return &clinic.Error{Code: code, Message: "Refused.", RetryAfter: map[bool]int64{true: 7}[code == clinic.ETooMany]}
	})
	s.handler = http.HandlerFunc(s.serve)
	srv := httptest.NewServer(edge.New(s, s.log, nil))
	defer srv.Close()
	for _, code := range edge.Codes {
		res, err := http.Get(srv.URL + "/fail/" + code)
		if err != nil {
			t.Fatal(err)
		}
		var body codeError
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if want := edge.Status(code); res.StatusCode != want || body.Code != want {
			t.Errorf("%s: %d %+v, want %d", code, res.StatusCode, body, want)
		}
		if got := res.Header.Get("Retry-After"); (code == clinic.ETooMany) != (got == "7") {
			t.Errorf("%s: Retry-After %q", code, got)
		}
	}
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"teleclinic/internal/app"
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
	srv := httptest.NewServer(s)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/boom")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != 500 || body["code"] != 500.0 || strings.Contains(body["message"].(string), "secret") {
		t.Fatalf("%d %v", res.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "secret internal detail") || !strings.Contains(logs.String(), "status=500") {
		t.Fatalf("log: %s", logs.String())
	}
}

package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/testenv"
)

// TestPortal_Edge: the portal sits behind the same edge as the API: a
// request id on every answer, in the log line and in the audit entry; a
// panic is a 500 page that names the id and is logged with it; pages are
// counted in /metrics by their route pattern; and every error code gets
// the API's status.
func TestPortal_Edge(t *testing.T) {
	t.Parallel()
	logs := &testenv.SyncBuffer{}
	f := newFixture(t, testenv.Options{Log: logs})
	portal := f.e.Portal()

	t.Run("PanicIs500WithTheRequestID", func(t *testing.T) {
		portal.AddPage("GET /test/panic", func(http.ResponseWriter, *http.Request) error { panic("a secret detail") })
		pg := newBrowser(t, f.e).get("/test/panic")
		id := pg.Header.Get("X-Request-Id")
		if pg.Status != 500 || id == "" || !strings.Contains(pg.Body, id) || strings.Contains(pg.Body, "secret") {
			t.Fatalf("panic: %d id %q\n%s", pg.Status, id, pg.Body)
		}
		if !strings.HasPrefix(pg.Header.Get("Content-Type"), "text/html") {
			t.Errorf("the 500 is not a page: %s", pg.Header.Get("Content-Type"))
		}
		var panicLine, requestLine bool
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, "request_id="+id) {
				continue
			}
			panicLine = panicLine || (strings.Contains(line, "msg=panic") && strings.Contains(line, "a secret detail"))
			requestLine = requestLine || (strings.Contains(line, "msg=request") && strings.Contains(line, `route="GET /test/panic"`) && strings.Contains(line, "status=500"))
		}
		if !panicLine || !requestLine {
			t.Fatalf("the log lacks the panic (%v) or the request line (%v) with id %s:\n%s", panicLine, requestLine, id, logs.String())
		}
	})

	// The call's routes answer JSON, a panic too.
	t.Run("PanicOnACallRouteIsJSON", func(t *testing.T) {
		portal.AddCallRoute("POST /test/call-panic", func(http.ResponseWriter, *http.Request) error { panic("a secret detail") })
		pg := newBrowser(t, f.e).postJSON("/test/call-panic", "{}")
		var body struct{ Code, Message string }
		if err := json.Unmarshal([]byte(pg.Body), &body); err != nil || pg.Status != 500 || body.Code != clinic.EInternal ||
			!strings.Contains(body.Message, pg.Header.Get("X-Request-Id")) || strings.Contains(pg.Body, "secret") {
			t.Fatalf("%d %s (%v)", pg.Status, pg.Body, err)
		}
	})

	t.Run("RequestIDInTheAuditEntry", func(t *testing.T) {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, f.p1Token, "/visits", nil)
		pg := b.send("GET", f.visitPath(), nil, map[string]string{"X-Request-Id": "portal-read-42"})
		if pg.Status != 200 || pg.Header.Get("X-Request-Id") != "portal-read-42" {
			t.Fatalf("visit page: %d %q", pg.Status, pg.Header.Get("X-Request-Id"))
		}
		f.e.FlushAudits()
		entries, _, err := f.e.App.ListAudit(context.Background(), f.admin(t), app.AuditQuery{Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries.Items {
			if e.RequestID == "portal-read-42" {
				return
			}
		}
		t.Fatalf("no audit entry carries the page's request id among %d", len(entries.Items))
	})

	t.Run("MetricsByRoutePattern", func(t *testing.T) {
		b := newBrowser(t, f.e)
		b.get("/signin")
		b.get("/c/acme/main")
		req, _ := http.NewRequest("GET", f.e.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+testenv.MetricsToken)
		res, err := testenv.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, want := range []string{
			`teleclinic_http_requests_total{route="GET /signin",status="200"} 1`,
			`teleclinic_http_requests_total{route="GET /c/{account_code}/{room_code}",status="200"} 1`,
			`teleclinic_http_requests_total{route="GET /test/panic",status="500"} 1`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})

	t.Run("ErrorCodesAsTheAPI", func(t *testing.T) {
		portal.AddPage("POST /test/fail/{code}", func(_ http.ResponseWriter, r *http.Request) error {
			code := r.PathValue("code")
			if code == clinic.EInternal {
				return errors.New("not the product's error")
			}
			ce := &clinic.Error{Code: code, Message: "Refused: " + code}
			if code == clinic.ETooMany || code == clinic.EBusy {
				ce.RetryAfter = 7
			}
			return ce
		})
		b := newBrowser(t, f.e)
		for _, code := range edge.Codes {
			pg := b.post("/test/fail/"+code, nil)
			if want := edge.Status(code); pg.Status != want {
				t.Errorf("%s: %d, want %d (the API's)", code, pg.Status, want)
			}
			if got := pg.Header.Get("Retry-After"); (code == clinic.ETooMany || code == clinic.EBusy) != (got == "7") {
				t.Errorf("%s: Retry-After %q", code, got)
			}
		}
	})
}

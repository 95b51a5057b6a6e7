package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"teleclinic/internal/testenv"
)

func TestMetrics_Endpoint(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	for range 3 {
		e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c)})
	}
	e.Do(testenv.Req{Path: "/api_v3/nothing-here", Header: acctHeaders(c), NoValidate: true})
	wantErr(t, e.Do(testenv.Req{Path: "/metrics", Header: acctHeaders(c)}), 401, 401)
	// A clinic's admin token describes one clinic; the metrics describe
	// the server, and take the operator's token.
	if res := e.Do(testenv.Req{Path: "/metrics", Header: adminHeaders(c)}); res.Status != 401 || res.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("metrics with a clinic's admin token: %d %s", res.Status, res.Raw)
	}
	if res := e.Do(testenv.Req{Path: "/metrics", Header: map[string]string{"Authorization": "Bearer not-the-token"}}); res.Status != 401 {
		t.Fatalf("metrics with a wrong operator token: %d", res.Status)
	}

	req, _ := http.NewRequest("GET", e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testenv.MetricsToken)
	res, err := testenv.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	text := string(body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("%d %s", res.StatusCode, text)
	}
	for _, want := range []string{
		`teleclinic_http_requests_total{route="GET /api_v3/rooms",status="200"} 3`,
		`teleclinic_http_requests_total{route="unmatched",status="404"} 1`,
		`teleclinic_http_request_duration_seconds_bucket{route="GET /api_v3/rooms",status="200",le="+Inf"} 3`,
		`teleclinic_http_request_duration_seconds_count{route="GET /api_v3/rooms",status="200"} 3`,
		`teleclinic_outbox_backlog{topic="webhook"} 0`,
		`# TYPE teleclinic_db_pool_wait_total counter`,
		`# TYPE teleclinic_audit_journal_waiting gauge`,
		`teleclinic_audit_journal_failed_flushes_total 0`,
		`teleclinic_db_pool_connections{pool=`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
	// The scrape passes promtool's checks (its linter), and carries the
	// runtime's, the process's and the build's families.
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	for _, want := range []string{"# TYPE go_goroutines gauge", "# TYPE process_resident_memory_bytes gauge", "# TYPE go_build_info gauge"} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Each family is written once, in one block.
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ = strings.Cut(name, " ")
			if seen[name] {
				t.Errorf("family %s is written twice", name)
			}
			seen[name] = true
		}
	}
}

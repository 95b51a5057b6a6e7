package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics_Registry(t *testing.T) {
	r := New()
	r.ObserveRequest("GET /x", 200, 3*time.Millisecond)
	r.ObserveRequest("GET /x", 200, 20*time.Second)
	r.CountDelivery("webhook", "delivered")
	r.CountDelivery("webhook", "delivered")
	r.CountDelivery("webhook", "retry")
	r.AddCollector(func(_ context.Context, w *Writer) {
		w.Help("teleclinic_test_backlog", "gauge", "A computed gauge.")
		w.Sample("teleclinic_test_backlog", 1.5, "topic", `q"uote`)
		w.Help("teleclinic_test_waits_total", "counter", "A computed counter.")
		w.Sample("teleclinic_test_waits_total", 4)
	})
	var nilReg *Registry
	nilReg.ObserveRequest("GET /x", 200, time.Second) // ignored, no panic

	if n := testutil.ToFloat64(r.requests.WithLabelValues("GET /x", "200")); n != 2 {
		t.Errorf("requests %v", n)
	}
	if n := testutil.ToFloat64(r.deliveries.WithLabelValues("webhook", "delivered")); n != 2 {
		t.Errorf("deliveries %v", n)
	}
	// The exposition, as a scraper reads it.
	want := `
# HELP teleclinic_http_request_duration_seconds HTTP request durations by route and status.
# TYPE teleclinic_http_request_duration_seconds histogram
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.0005"} 0
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.001"} 0
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.0025"} 0
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.005"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.01"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.025"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.05"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.1"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.25"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.5"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="1"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="2.5"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="5"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="10"} 1
teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="+Inf"} 2
teleclinic_http_request_duration_seconds_sum{route="GET /x",status="200"} 20.003
teleclinic_http_request_duration_seconds_count{route="GET /x",status="200"} 2
# HELP teleclinic_outbox_deliveries_total Outbox delivery attempts (webhook, push, mail, eligibility) by outcome.
# TYPE teleclinic_outbox_deliveries_total counter
teleclinic_outbox_deliveries_total{outcome="delivered",topic="webhook"} 2
teleclinic_outbox_deliveries_total{outcome="retry",topic="webhook"} 1
# HELP teleclinic_test_backlog A computed gauge.
# TYPE teleclinic_test_backlog gauge
teleclinic_test_backlog{topic="q\"uote"} 1.5
# HELP teleclinic_test_waits_total A computed counter.
# TYPE teleclinic_test_waits_total counter
teleclinic_test_waits_total 4
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), "teleclinic_http_request_duration_seconds",
		"teleclinic_outbox_deliveries_total", "teleclinic_test_backlog", "teleclinic_test_waits_total"); err != nil {
		t.Error(err)
	}
	// The families pass the linter promtool uses.
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func BenchmarkObserveRequest(b *testing.B) {
	r := New()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.ObserveRequest("GET /api_v3/rooms", 200, time.Millisecond)
		}
	})
}

package metrics

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMetrics_Registry(t *testing.T) {
	r := New()
	r.ObserveRequest("GET /x", 200, 3*time.Millisecond)
	r.ObserveRequest("GET /x", 200, 20*time.Second)
	r.CountDelivery("webhook", "delivered")
	r.CountDelivery("webhook", "delivered")
	r.CountDelivery("webhook", "retry")
	r.AddCollector(func(_ context.Context, w *Writer) { w.Sample("teleclinic_test", 1.5, "a", `q"uote`) })
	var nilReg *Registry
	nilReg.ObserveRequest("GET /x", 200, time.Second) // ignored, no panic
	var b strings.Builder
	if err := r.Write(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`teleclinic_http_requests_total{route="GET /x",status="200"} 2`,
		`teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.0025"} 0`,
		`teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="0.005"} 1`,
		`teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="10"} 1`,
		`teleclinic_http_request_duration_seconds_bucket{route="GET /x",status="200",le="+Inf"} 2`,
		`teleclinic_http_request_duration_seconds_sum{route="GET /x",status="200"} 20.003`,
		`teleclinic_outbox_deliveries_total{topic="webhook",outcome="delivered"} 2`,
		`teleclinic_outbox_deliveries_total{topic="webhook",outcome="retry"} 1`,
		`teleclinic_test{a="q\"uote"} 1.5`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s:\n%s", want, out)
		}
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

// Package metrics keeps the server's counters and writes them in the
// Prometheus text exposition format (version 0.0.4). It is small on
// purpose: a few fixed families, no client library.
package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// buckets are the request duration histogram's upper bounds, in seconds.
var buckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Registry holds the counters. The zero value is not usable; use New. A nil
// *Registry ignores every observation, so callers need not check.
type Registry struct {
	mu         sync.RWMutex
	requests   map[reqKey]*histogram
	deliveries map[[2]string]*atomic.Int64
	collectors []Collector
}

// Collector writes families computed at scrape time (gauges read from the
// database, pool statistics).
type Collector func(ctx context.Context, w *Writer)

type reqKey struct {
	route  string
	status int
}

type histogram struct {
	counts [len(buckets) + 1]atomic.Int64 // the last is +Inf
	sumNS  atomic.Int64
}

// New makes an empty registry.
func New() *Registry {
	return &Registry{requests: map[reqKey]*histogram{}, deliveries: map[[2]string]*atomic.Int64{}}
}

// ObserveRequest counts one request of a route ("GET /api_v3/rooms") with
// its status and duration.
func (r *Registry) ObserveRequest(route string, status int, d time.Duration) {
	if r == nil {
		return
	}
	k := reqKey{route, status}
	r.mu.RLock()
	h := r.requests[k]
	r.mu.RUnlock()
	if h == nil {
		r.mu.Lock()
		if h = r.requests[k]; h == nil {
			h = &histogram{}
			r.requests[k] = h
		}
		r.mu.Unlock()
	}
	sec := d.Seconds()
	i := sort.SearchFloat64s(buckets[:], sec)
	h.counts[i].Add(1)
	h.sumNS.Add(int64(d))
}

// CountDelivery counts one outbox delivery attempt of a topic (webhook,
// push, mail, eligibility) by outcome (delivered, retry, gave_up, skipped).
func (r *Registry) CountDelivery(topic, outcome string) {
	if r == nil {
		return
	}
	k := [2]string{topic, outcome}
	r.mu.RLock()
	c := r.deliveries[k]
	r.mu.RUnlock()
	if c == nil {
		r.mu.Lock()
		if c = r.deliveries[k]; c == nil {
			c = &atomic.Int64{}
			r.deliveries[k] = c
		}
		r.mu.Unlock()
	}
	c.Add(1)
}

// AddCollector adds families computed at each scrape.
func (r *Registry) AddCollector(c Collector) {
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
}

// Write writes every family.
func (r *Registry) Write(ctx context.Context, out io.Writer) error {
	w := &Writer{w: out}
	r.mu.RLock()
	reqs := make([]reqKey, 0, len(r.requests))
	for k := range r.requests {
		reqs = append(reqs, k)
	}
	dels := make([][2]string, 0, len(r.deliveries))
	for k := range r.deliveries {
		dels = append(dels, k)
	}
	collectors := append([]Collector(nil), r.collectors...)
	r.mu.RUnlock()
	sort.Slice(reqs, func(i, j int) bool {
		if reqs[i].route != reqs[j].route {
			return reqs[i].route < reqs[j].route
		}
		return reqs[i].status < reqs[j].status
	})
	sort.Slice(dels, func(i, j int) bool { return dels[i][0]+dels[i][1] < dels[j][0]+dels[j][1] })

	w.Help("teleclinic_http_requests_total", "counter", "HTTP requests by route and status.")
	r.mu.RLock()
	for _, k := range reqs {
		h := r.requests[k]
		var n int64
		for i := range h.counts {
			n += h.counts[i].Load()
		}
		w.Sample("teleclinic_http_requests_total", float64(n), "route", k.route, "status", strconv.Itoa(k.status))
	}
	w.Help("teleclinic_http_request_duration_seconds", "histogram", "HTTP request durations by route and status.")
	for _, k := range reqs {
		h := r.requests[k]
		var cum int64
		st := strconv.Itoa(k.status)
		for i, b := range buckets {
			cum += h.counts[i].Load()
			w.Sample("teleclinic_http_request_duration_seconds_bucket", float64(cum), "route", k.route, "status", st, "le", formatFloat(b))
		}
		cum += h.counts[len(buckets)].Load()
		w.Sample("teleclinic_http_request_duration_seconds_bucket", float64(cum), "route", k.route, "status", st, "le", "+Inf")
		w.Sample("teleclinic_http_request_duration_seconds_sum", float64(h.sumNS.Load())/1e9, "route", k.route, "status", st)
		w.Sample("teleclinic_http_request_duration_seconds_count", float64(cum), "route", k.route, "status", st)
	}
	w.Help("teleclinic_outbox_deliveries_total", "counter", "Outbox delivery attempts (webhook, push, mail, eligibility) by outcome.")
	for _, k := range dels {
		w.Sample("teleclinic_outbox_deliveries_total", float64(r.deliveries[k].Load()), "topic", k[0], "outcome", k[1])
	}
	r.mu.RUnlock()
	for _, c := range collectors {
		c(ctx, w)
	}
	return w.err
}

// Writer writes families in the text format.
type Writer struct {
	w   io.Writer
	err error
}

// Help writes a family's HELP and TYPE lines.
func (w *Writer) Help(name, typ, help string) {
	w.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// Sample writes one sample with label name-value pairs.
func (w *Writer) Sample(name string, v float64, labels ...string) {
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(labels[i])
			b.WriteString(`="`)
			b.WriteString(escape(labels[i+1]))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
	w.printf("%s", b.String())
}

func (w *Writer) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

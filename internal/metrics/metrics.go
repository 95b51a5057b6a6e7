// Package metrics keeps the server's metrics in a Prometheus registry
// (github.com/prometheus/client_golang) and serves them in the exposition
// format: the request and delivery counters, the Go runtime's and the
// process's families, the build's, and the families the app computes at
// each scrape (outbox backlog, database pools).
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// buckets are the request duration histogram's upper bounds, in seconds.
var buckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// scrapeTimeout bounds the database reads of one scrape's computed families.
const scrapeTimeout = 5 * time.Second

// Registry holds the server's metrics. The zero value is not usable; use
// New. A nil *Registry ignores every observation, so callers need not check.
type Registry struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	deliveries *prometheus.CounterVec
	computed   *computed
}

// Collector writes families computed at scrape time (gauges read from the
// database, pool statistics).
type Collector func(ctx context.Context, w *Writer)

// New makes a registry with the server's families and the runtime's.
func New() *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "teleclinic_http_requests_total",
			Help: "HTTP requests by route and status."}, []string{"route", "status"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "teleclinic_http_request_duration_seconds",
			Help: "HTTP request durations by route and status.", Buckets: buckets}, []string{"route", "status"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "teleclinic_outbox_deliveries_total",
			Help: "Outbox delivery attempts (webhook, push, mail, eligibility) by outcome."}, []string{"topic", "outcome"}),
		computed: &computed{},
	}
	r.reg.MustRegister(r.requests, r.durations, r.deliveries, r.computed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewBuildInfoCollector())
	return r
}

// ObserveRequest counts one request of a route ("GET /api_v3/rooms") with
// its status and duration.
func (r *Registry) ObserveRequest(route string, status int, d time.Duration) {
	if r == nil {
		return
	}
	st := strconv.Itoa(status)
	r.requests.WithLabelValues(route, st).Inc()
	r.durations.WithLabelValues(route, st).Observe(d.Seconds())
}

// CountDelivery counts one outbox delivery attempt of a topic (webhook,
// push, mail, eligibility) by outcome (delivered, retry, gave_up, skipped).
func (r *Registry) CountDelivery(topic, outcome string) {
	if r == nil {
		return
	}
	r.deliveries.WithLabelValues(topic, outcome).Inc()
}

// AddCollector adds families computed at each scrape.
func (r *Registry) AddCollector(c Collector) {
	r.computed.mu.Lock()
	r.computed.fns = append(r.computed.fns, c)
	r.computed.mu.Unlock()
}

// Gatherer is the registry, for tests and other exporters.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the metrics in the format the scraper asks for.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}

// computed is the collector of the families computed at scrape time. It
// is unchecked (it describes nothing in advance): its families are what
// the Collector functions write.
type computed struct {
	mu  sync.Mutex
	fns []Collector
}

func (c *computed) Describe(chan<- *prometheus.Desc) {}

func (c *computed) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	fns := append([]Collector(nil), c.fns...)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	w := &Writer{ch: ch, families: map[string]family{}}
	for _, fn := range fns {
		fn(ctx, w)
	}
}

type family struct {
	help string
	typ  prometheus.ValueType
}

// Writer takes the samples of the computed families.
type Writer struct {
	ch       chan<- prometheus.Metric
	families map[string]family
}

// Help declares a family: its type ("counter" or "gauge") and help text.
func (w *Writer) Help(name, typ, help string) {
	vt := prometheus.GaugeValue
	if typ == "counter" {
		vt = prometheus.CounterValue
	}
	w.families[name] = family{help: help, typ: vt}
}

// Sample writes one sample of a declared family with label name-value
// pairs.
func (w *Writer) Sample(name string, v float64, labels ...string) {
	f, ok := w.families[name]
	if !ok {
		f = family{help: name, typ: prometheus.GaugeValue}
	}
	var names, values []string
	for i := 0; i+1 < len(labels); i += 2 {
		names, values = append(names, labels[i]), append(values, labels[i+1])
	}
	w.ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, f.help, names, nil), f.typ, v, values...)
}

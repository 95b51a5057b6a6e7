package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// streamsScenario opens o.Streams event streams on one room's queue
// (GET /api_v3/rooms/{code}/queue/events), then makes o.StreamChanges
// queue changes one after another (a patient joins the waiting room) and
// measures, for every stream, the time from the change's request to the
// stream's queue event. It reports the latencies' percentiles, how many
// deliveries took over a second, and the server's RSS before the streams
// and with them open.
func (c *clinic) streamsScenario(ctx context.Context, o *options, s *seeded, srv *serverProc, progress func(string, ...any)) (Result, error) {
	var rssBefore float64
	var goBefore goMemory
	if srv != nil {
		rssBefore, _ = srv.rss()
		goBefore = srv.goMemory()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Each stream is a connection of its own, as each browser's is.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}}
	type stream struct{ events chan time.Time }
	streams := make([]*stream, o.Streams)
	var opened sync.WaitGroup
	var failMu sync.Mutex
	var openErr error
	progress("  opening %d streams… ", o.Streams)
	// A place to open: the stream takes one until its first event. The
	// server's memory with the streams open is what they hold, not what
	// 10,000 requests in flight at once took (which Go returns to the
	// system only over minutes): that is a reconnect storm, --stream-opens 0.
	atOnce := o.StreamOpens
	if atOnce <= 0 {
		atOnce = o.Streams
	}
	opens := make(chan struct{}, atOnce)
	for i := range streams {
		st := &stream{events: make(chan time.Time, 64)}
		streams[i] = st
		opened.Add(1)
		opens <- struct{}{}
		go func() {
			first := true
			fail := func(err error) {
				failMu.Lock()
				if openErr == nil {
					openErr = err
				}
				failMu.Unlock()
				if first {
					<-opens
					opened.Done()
				}
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api_v3/rooms/"+s.room+"/queue/events", nil)
			c.headers(req, c.admin) // a queue's stream takes a credential with a part in it
			res, err := client.Do(req)
			if err != nil {
				fail(err)
				return
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				fail(fmt.Errorf("stream: %d", res.StatusCode))
				return
			}
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if !strings.HasPrefix(sc.Text(), "event: queue") {
					continue
				}
				if first { // the queue as it is when the stream opens
					first = false
					<-opens
					opened.Done()
					continue
				}
				st.events <- time.Now()
			}
			if first {
				fail(fmt.Errorf("stream ended before its first event: %v", sc.Err()))
			}
		}()
	}
	opened.Wait()
	if openErr != nil {
		return Result{}, openErr
	}
	progress("open\n")
	var rssWith float64
	var goWith goMemory
	if srv != nil {
		rssWith, _ = srv.rss()
		goWith = srv.goMemory()
		if o.Profile != "" { // what the open streams hold, for go tool pprof
			_ = os.MkdirAll(o.Profile, 0o755)
			srv.saveProfile("/debug/pprof/heap", filepath.Join(o.Profile, fmt.Sprintf("streams-%d-heap.pprof", o.Streams)))
			srv.saveProfile("/debug/pprof/goroutine", filepath.Join(o.Profile, fmt.Sprintf("streams-%d-goroutine.pprof", o.Streams)))
		}
	}
	// A stream's share of the runtime: goroutines, stack and heap.
	n := float64(o.Streams)
	perStream := fmt.Sprintf("a stream: %.0f KB of RSS, %.1f goroutines, %.1f KB of stack, %.1f KB of heap",
		(rssWith-rssBefore)*1024/n, float64(goWith.goroutines-goBefore.goroutines)/n, (goWith.stackKB-goBefore.stackKB)/n, (goWith.heapKB-goBefore.heapKB)/n)
	progress("%s\n", perStream)

	var lat []time.Duration
	late, missing := 0, 0
	t0 := time.Now()
	for i := range o.StreamChanges {
		p := s.patients[i%len(s.patients)]
		it, err := c.call(ctx, "POST", "/api_v3/intakes", p.token, url.Values{"room_code": {s.room}, "reason_for_visit": {"Stream load."}, "type": {"1"}})
		if err != nil {
			return Result{}, err
		}
		start := time.Now()
		if _, err := c.call(ctx, "POST", "/api_v3/visits/add_walkin", p.token, url.Values{"intake_id": {fmt.Sprint(data(it)["id"])}, "room_code": {s.room}}); err != nil {
			return Result{}, err
		}
		for _, st := range streams {
			select {
			case at := <-st.events:
				d := at.Sub(start)
				lat = append(lat, d)
				if d > time.Second {
					late++
				}
			case <-time.After(5*time.Second - time.Since(start)):
				missing++
			}
		}
	}
	r := summarize("streams", o.Streams, lat, time.Since(t0))
	r.Errors = late + missing
	r.RPS = 0
	r.Note = fmt.Sprintf("%d queue changes to %d open streams: latency from the change's request to each stream's event; %d over 1 s, %d not delivered in 5 s; server RSS %.0f MB before the streams, %.0f MB with them; %s",
		o.StreamChanges, o.Streams, late, missing, rssBefore, rssWith, perStream)
	progress("  streams: p50 %.1f ms, p99 %.1f ms, max %.1f ms; RSS %.0f → %.0f MB\n", r.P50ms, r.P99ms, maxMs(lat), rssBefore, rssWith)
	return r, nil
}

func maxMs(lat []time.Duration) float64 {
	var m time.Duration
	for _, d := range lat {
		m = max(m, d)
	}
	return float64(m.Microseconds()) / 1000
}

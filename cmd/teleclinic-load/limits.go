package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"teleclinic/internal/live"
)

// streamLimits are the stream bounds of the server the stream-limits
// scenario starts: the server's defaults, or small ones for --short.
type streamLimits struct{ server, address, credential int }

func defaultStreamLimits() streamLimits {
	return streamLimits{live.DefaultStreams, live.DefaultStreamsPerAddress, live.DefaultStreamsPerCredential}
}

// streamLimitsScenario starts a second server process on the same data
// with the stream bounds on (the run's own server has the per-credential
// and per-address bounds off for the streams scenario) and holds message
// streams open, from loopback addresses 127.0.0.2 and up, each credential
// a patient's token of its own: first one credential's bound, then one
// address's, then the server's. At each bound the next stream must be
// refused — 429 with Retry-After for a credential and an address, 503 with
// Retry-After for the server — and every stream below it accepted; any
// other answer is an error. It reports the server's open file descriptors
// and RSS with every stream open, against its descriptor limit.
func (c *clinic) streamLimitsScenario(ctx context.Context, o *options, s *seeded, srv *serverProc, progress func(string, ...any)) (Result, error) {
	if srv == nil {
		return Result{}, fmt.Errorf("stream-limits needs the server this tool starts (not --url): it starts a second one with the bounds on")
	}
	lim := o.StreamLimits
	var extra []string
	if lim != defaultStreamLimits() {
		extra = []string{"--max-streams", strconv.Itoa(lim.server), "--max-streams-per-address", strconv.Itoa(lim.address),
			"--max-streams-per-credential", strconv.Itoa(lim.credential)}
	}
	bounded, err := serve(ctx, srv.bin, srv.store, extra...)
	if err != nil {
		return Result{}, err
	}
	defer bounded.stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	perAddress := lim.address / lim.credential // credentials that fill an address
	addresses := lim.server / lim.address      // addresses that fill the server
	if addresses+1 > 250 {
		return Result{}, fmt.Errorf("stream-limits: %d addresses would fill the server, more than 127.0.0.2–251", addresses)
	}
	// A client per source address, so the server sees each address; one
	// more than fill the server, for the stream past its bound.
	clients := make([]*http.Client, addresses+1)
	for i := range clients {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}}
		clients[i] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	// Each credential is a fresh token of one of the seeded patients, for
	// the stream of that patient's visit.
	type cred struct{ token, visit string }
	next := 0
	credential := func() (cred, error) {
		p := s.patients[next%len(s.patients)]
		next++
		_, tok, err := c.sso(ctx, "200", p.code)
		return cred{tok, p.visit}, err
	}
	var (
		mu      sync.Mutex
		lat     []time.Duration
		bodies  []func()
		errs    int
		firstEr string
		opens   int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		errs++
		if firstEr == "" {
			firstEr = fmt.Sprintf(format, args...)
		}
	}
	// open opens one stream and returns its status and Retry-After; a
	// stream that opens stays open until the scenario ends.
	open := func(addr int, cr cred) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", bounded.base+"/api/visits/"+cr.visit+"/messages/events", nil)
		c.headers(req, cr.token)
		start := time.Now()
		res, err := clients[addr].Do(req)
		mu.Lock()
		opens++
		mu.Unlock()
		if err != nil {
			return 0, err.Error()
		}
		mu.Lock()
		lat = append(lat, time.Since(start))
		mu.Unlock()
		if res.StatusCode != 200 {
			res.Body.Close()
			return res.StatusCode, res.Header.Get("Retry-After")
		}
		mu.Lock()
		bodies = append(bodies, func() { res.Body.Close() })
		mu.Unlock()
		return 200, ""
	}
	// fill opens n streams with cr from addr, 64 at a time; each must open.
	fill := func(addr int, cr cred, n int) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for range n {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if st, why := open(addr, cr); st != 200 {
					fail("stream below the bounds refused: %d %s", st, why)
				}
			}()
		}
		wg.Wait()
	}
	refused := func(what string, addr int, cr cred, want int) string {
		st, retry := open(addr, cr)
		if st != want || retry == "" {
			fail("past the %s bound: %d (Retry-After %q), want %d with Retry-After", what, st, retry, want)
		}
		return fmt.Sprintf("%d, Retry-After %s", st, retry)
	}

	progress("  bounds %d per credential, %d per address, %d per server; %d credentials…\n", lim.credential, lim.address, lim.server, addresses*perAddress+2)
	creds := make([]cred, addresses*perAddress+2)
	for i := range creds {
		if creds[i], err = credential(); err != nil {
			return Result{}, err
		}
	}
	t0 := time.Now()
	// A credential's bound.
	fill(0, creds[0], lim.credential)
	atCredential := refused("credential", 0, creds[0], 429)
	// An address's bound: the rest of its credentials, then a new one.
	for i := 1; i < perAddress; i++ {
		fill(0, creds[i], lim.credential)
	}
	atAddress := refused("address", 0, creds[len(creds)-2], 429)
	// The server's: the other addresses, then one more.
	for a := 1; a < addresses; a++ {
		progress("\r  %d streams open…", a*lim.address)
		for i := range perAddress {
			fill(a, creds[a*perAddress+i], lim.credential)
		}
	}
	atServer := refused("server", addresses, creds[len(creds)-1], 503)
	progress("\r  %d streams open; ", len(bodies))
	fds, fdLimit := bounded.fds()
	rss, _ := bounded.rss()
	held := len(bodies)
	for _, closeBody := range bodies {
		closeBody()
	}
	// The places come back once the server sees the streams closed.
	recovered := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, _ := open(addresses, creds[len(creds)-1]); st == 200 {
			recovered = true
			break
		}
	}
	if !recovered {
		fail("no stream opens 10 s after the others closed")
	}
	for _, closeBody := range bodies[held:] {
		closeBody()
	}
	r := summarize("stream-limits", 64, lat, time.Since(t0))
	r.Requests, r.Errors, r.FirstError, r.RPS = opens, errs, firstEr, 0
	r.Note = fmt.Sprintf("%d streams held open (bounds %d per credential, %d per address, %d per server): past a credential's bound %s; past an address's %s; past the server's %s; "+
		"server with every stream open: %d of %d file descriptors, %.0f MB RSS; a stream opens again once they close: %v; latency is a stream's open",
		held, lim.credential, lim.address, lim.server, atCredential, atAddress, atServer, fds, fdLimit, rss, recovered)
	progress("%s\n", r.Note)
	return r, nil
}

// fds is how many file descriptors the server has open, and its limit.
func (s *serverProc) fds() (open, limit int) {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", s.cmd.Process.Pid))
	for _, line := range strings.Split(string(b), "\n") {
		var soft int
		if n, _ := fmt.Sscanf(line, "Max open files %d", &soft); n == 1 {
			limit = soft
		}
	}
	return len(ents), limit
}

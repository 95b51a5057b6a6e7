package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"
)

// callsScenario sets up o.Calls two-person calls at once, as the visit
// page's call.js does, over the portal's call routes: each seeded patient
// and the provider who took their visit sign in to the portal, join, follow
// their signal streams, and exchange an offer (about 5 KB, as a browser's
// with audio and video), an answer and four ICE candidates each way. It
// reports the latency from each signal's POST to its arrival on the other
// side's stream, and the server's CPU and memory: for setting the calls up,
// and while they all stay open for o.CallHold (peer to peer, the media
// never reaches the server, so only keep-alives should cost anything).
func (c *clinic) callsScenario(ctx context.Context, o *options, s *seeded, srv *serverProc, progress func(string, ...any)) (Result, error) {
	n := min(o.Calls, len(s.patients))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cpu0 time.Duration
	var rss0 float64
	if srv != nil {
		cpu0 = srv.cpu()
		rss0, _ = srv.rss()
	}
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	signals := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	progress("  setting up %d calls… ", n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.oneCall(ctx, s.patients[i])
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("call %d: %w", i, err)
			}
			lat = append(lat, l...)
			signals += len(l)
		}()
	}
	// Each call returns once it is set up and keeps its streams open
	// until ctx ends: the hold.
	wg.Wait()
	setup := time.Since(t0)
	if firstErr != nil {
		return Result{}, firstErr
	}
	progress("done in %.1f s\n", setup.Seconds())
	var cpu1, cpu2 time.Duration
	var rss1 float64
	if srv != nil {
		cpu1 = srv.cpu()
		rss1, _ = srv.rss()
	}
	time.Sleep(o.CallHold)
	if srv != nil {
		cpu2 = srv.cpu()
	}
	r := summarize("calls", n, lat, setup)
	r.RPS = 0
	r.Note = fmt.Sprintf("%d two-person calls set up at once (%d signals): latency from a signal's POST to its arrival on the other side's stream; "+
		"server CPU %.1f ms per call to set up; %.0f ms of CPU over %s with all %d calls open; RSS %.0f MB before, %.0f MB with the calls open (%.0f KB per call)",
		n, signals, ms(cpu1-cpu0)/float64(n), ms(cpu2-cpu1), o.CallHold, n, rss0, rss1, (rss1-rss0)*1024/float64(n))
	progress("  calls: signal p50 %.1f ms, p99 %.1f ms; %s\n", r.P50ms, r.P99ms, r.Note)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// callSide is one person's page in a call: their portal session, their
// peer, and the signals that reach them (by the sender's number n).
type callSide struct {
	client *http.Client
	base   string
	peer   string
	after  int64
	got    chan signalIn
}

type signalIn struct {
	Type string
	N    int
	At   time.Time
}

// oneCall sets up patient p's call with their provider and returns each
// signal's latency; its streams stay open until ctx ends.
func (c *clinic) oneCall(ctx context.Context, p patient) ([]time.Duration, error) {
	base := c.base + "/visits/start/" + p.visit + "/call"
	pat, err := c.portal(ctx, p.token, base)
	if err != nil {
		return nil, err
	}
	prov, err := c.portal(ctx, p.providerToken, base)
	if err != nil {
		return nil, err
	}
	// The patient joins and follows; the provider joins after, so the
	// patient's page makes the offer, as call.js's do.
	if err := pat.join(ctx); err != nil {
		return nil, err
	}
	if err := pat.follow(ctx); err != nil {
		return nil, err
	}
	if err := prov.join(ctx); err != nil {
		return nil, err
	}
	if err := prov.follow(ctx); err != nil {
		return nil, err
	}
	if _, err := pat.wait("join"); err != nil {
		return nil, err
	}
	var lat []time.Duration
	send := func(from, to *callSide, typ string, n, size int) error {
		start := time.Now()
		data, _ := json.Marshal(map[string]any{"n": n, "sdp": strings.Repeat("a", size)})
		body, _ := json.Marshal(map[string]any{"peer": from.peer, "to": to.peer, "type": typ, "data": json.RawMessage(data)})
		if err := from.post(ctx, "/signal", string(body)); err != nil {
			return err
		}
		in, err := to.wait(typ)
		if err != nil {
			return err
		}
		if in.N != n {
			return fmt.Errorf("%s %d arrived as %d", typ, n, in.N)
		}
		lat = append(lat, in.At.Sub(start))
		return nil
	}
	if err := send(pat, prov, "offer", 1, 5000); err != nil {
		return nil, err
	}
	if err := send(prov, pat, "answer", 2, 3000); err != nil {
		return nil, err
	}
	for k := range 4 {
		if err := send(pat, prov, "candidate", 10+k, 200); err != nil {
			return nil, err
		}
		if err := send(prov, pat, "candidate", 20+k, 200); err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// portal signs token's user in to the portal (GET /auth, the redirect
// login's landing) in a browser-like client with its own cookies.
func (c *clinic) portal(ctx context.Context, token, base string) (*callSide, error) {
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/auth?sso_token="+url.QueryEscape(token)+"&next=/visits", nil)
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("portal sign-in: %d", res.StatusCode)
	}
	return &callSide{client: client, base: base, got: make(chan signalIn, 64)}, nil
}

func (cs *callSide) post(ctx context.Context, path, body string) error {
	_, err := cs.postJSON(ctx, path, body)
	return err
}

func (cs *callSide) postJSON(ctx context.Context, path, body string) (map[string]any, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", cs.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := cs.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("POST %s: %d %s", path, res.StatusCode, b)
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out, nil
}

func (cs *callSide) join(ctx context.Context) error {
	j, err := cs.postJSON(ctx, "/join", "{}")
	if err != nil {
		return err
	}
	cs.peer, _ = j["peer"].(string)
	after, _ := j["after"].(float64)
	cs.after = int64(after)
	return nil
}

// follow opens the side's signal stream; it reads until ctx ends.
func (cs *callSide) follow(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/events?peer=%s&after=%d", cs.base, cs.peer, cs.after), nil)
	res, err := cs.client.Do(req)
	if err != nil {
		return err
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		return fmt.Errorf("stream: %d", res.StatusCode)
	}
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 256<<10)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type string `json:"type"`
				Data struct {
					N int `json:"n"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Type != "" {
				cs.got <- signalIn{Type: ev.Type, N: ev.Data.N, At: time.Now()}
			}
		}
	}()
	return nil
}

// wait returns the next signal of type typ, within 5 s.
func (cs *callSide) wait(typ string) (signalIn, error) {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case in := <-cs.got:
			if in.Type == typ {
				return in, nil
			}
		case <-timeout:
			return signalIn{}, fmt.Errorf("no %s within 5 s", typ)
		}
	}
}

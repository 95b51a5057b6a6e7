package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clinic is the clinic under load and how to call it.
type clinic struct {
	base, code, admin, key, secret string
}

// patient is a seeded patient with a visit holding 30 messages.
type patient struct {
	id, code, token, visit string
	// providerToken is the token of the provider who took the visit.
	providerToken string
}

// seeded is what the scenarios use.
type seeded struct {
	room     string
	patients []patient
	slots    [][2]int64 // open slots (start, end) for booking
	dayStart int64      // an availability window's start
	next     atomic.Int64
}

func (c *clinic) call(ctx context.Context, method, path, token string, v url.Values) (map[string]any, error) {
	var body io.Reader
	if v != nil && method != "GET" {
		body = strings.NewReader(v.Encode())
	} else if v != nil {
		path += "?" + v.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c.headers(req, token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return out, nil
}

func (c *clinic) headers(req *http.Request, token string) {
	req.Header.Set("X-AccountCode", c.code)
	switch token {
	case "":
	case "sso":
		req.Header.Set("X-ApiKey", c.key)
		req.Header.Set("X-ApiSecret", c.secret)
	default:
		req.Header.Set("X-ApiToken", token)
	}
}

func data(m map[string]any) map[string]any { d, _ := m["data"].(map[string]any); return d }

func (c *clinic) sso(ctx context.Context, typ, code string) (id, token string, err error) {
	res, err := c.call(ctx, "POST", "/api_v3/users/sso", "sso", url.Values{"type": {typ}, "code": {code}, "first_name": {"Load"}, "last_name": {code}})
	if err != nil {
		return "", "", err
	}
	d := data(res)
	tok, _ := d["token"].(map[string]any)
	id, _ = d["id"].(string)
	token, _ = tok["token"].(string)
	return id, token, nil
}

// seed makes a room with walk-ins and appointments, eight providers with
// 12 days of 5-minute slots each, and patients each with an e-consult of 30
// messages.
func (c *clinic) seed(ctx context.Context, patients int) (*seeded, error) {
	s := &seeded{room: "load" + randHex(2)}
	if _, err := c.call(ctx, "POST", "/api_v3/rooms", c.admin, url.Values{"code": {s.room}, "name": {"Load Room"}, "domain": {"load.example.com"}}); err != nil {
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, "PUT", c.base+"/api_v3/rooms/"+s.room, strings.NewReader(`{"visits":{"walkin":{"enabled":true},"appointment":{"enabled":true}}}`))
	req.Header.Set("Content-Type", "application/json")
	c.headers(req, c.admin)
	if res, err := http.DefaultClient.Do(req); err != nil {
		return nil, err
	} else if res.Body.Close(); res.StatusCode != 200 {
		return nil, fmt.Errorf("enable appointments: %d", res.StatusCode)
	}
	day := time.Now().UTC().Add(48 * time.Hour).Truncate(24 * time.Hour)
	s.dayStart = day.Unix()
	// Eight providers with 12 days of 5-minute slots each (about 27,000):
	// enough for a booking run at every connection count.
	var providers, providerTokens []string
	for i := range 8 {
		id, tok, err := c.sso(ctx, "400", fmt.Sprintf("prov%d-%s", i, s.room))
		if err != nil {
			return nil, err
		}
		providers = append(providers, id)
		providerTokens = append(providerTokens, tok)
		if _, err := c.call(ctx, "POST", "/api_v3/users/"+id+"/rooms", c.admin, url.Values{"code": {s.room}}); err != nil {
			return nil, err
		}
		for week := range 2 {
			from := day.Add(time.Duration(week*6) * 24 * time.Hour)
			res, err := c.call(ctx, "POST", "/api_v3/slots", tok, url.Values{"room_code": {s.room}, "date_start": {from.Format(time.DateOnly)},
				"date_end": {from.Add(5 * 24 * time.Hour).Format(time.DateOnly)}, "time_start": {"00:00"}, "time_end": {"23:55"}, "timezone": {"UTC"}, "duration": {"5"}})
			if err != nil {
				return nil, err
			}
			list, _ := res["data"].([]any)
			for _, it := range list {
				sl := it.(map[string]any)
				st, _ := sl["start"].(float64)
				en, _ := sl["end"].(float64)
				s.slots = append(s.slots, [2]int64{int64(st), int64(en)})
			}
		}
	}
	// Patients in parallel: seeding 64 threads of 30 messages one by one
	// would take longer than the runs.
	s.patients = make([]patient, patients)
	errc := make(chan error, patients)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range patients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p := patient{code: fmt.Sprintf("pat%d-%s", i, s.room)}
			var err error
			if p.id, p.token, err = c.sso(ctx, "200", p.code); err != nil {
				errc <- err
				return
			}
			res, err := c.call(ctx, "POST", "/api_v3/intakes", p.token, url.Values{"room_code": {s.room}, "reason_for_visit": {"Load"}})
			if err != nil {
				errc <- err
				return
			}
			res, err = c.call(ctx, "POST", "/api_v3/visits/add_econsult", p.token, url.Values{"room_code": {s.room}, "intake_id": {data(res)["id"].(string)}})
			if err != nil {
				errc <- err
				return
			}
			p.visit = data(res)["id"].(string)
			p.providerToken = providerTokens[i%len(providers)]
			// A provider takes the e-consult, so a message notifies one
			// provider, as in a visit between a patient and their provider.
			if _, err := c.call(ctx, "POST", "/api_v3/visits/accept", c.admin, url.Values{"id": {p.visit}, "provider_id": {providers[i%len(providers)]}}); err != nil {
				errc <- err
				return
			}
			for j := range 30 {
				if _, err := c.call(ctx, "POST", "/api/visits/"+p.visit+"/messages", p.token, url.Values{"content": {fmt.Sprintf("Seed message %d.", j)}}); err != nil {
					errc <- err
					return
				}
			}
			s.patients[i] = p
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return s, nil
}

// scenarioDef is how a scenario makes its requests and which baseline it is
// compared with.
type scenarioDef struct {
	request  func(worker, i int) (*http.Request, error)
	baseline string
	note     string
}

func (c *clinic) req(method, path, token string, v url.Values) (*http.Request, error) {
	var req *http.Request
	var err error
	if method == "GET" {
		if v != nil {
			path += "?" + v.Encode()
		}
		req, err = http.NewRequest(method, c.base+path, nil)
	} else {
		req, err = form(method, c.base+path, v)
	}
	if err == nil {
		c.headers(req, token)
	}
	return req, err
}

func (c *clinic) scenario(name string, s *seeded) scenarioDef {
	pat := func(w, i int) patient { return s.patients[(w+i)%len(s.patients)] }
	switch name {
	case "rooms":
		return scenarioDef{baseline: "json", request: func(int, int) (*http.Request, error) { return c.req("GET", "/api_v3/rooms", "", nil) }}
	case "me":
		return scenarioDef{baseline: "json", request: func(w, i int) (*http.Request, error) { return c.req("GET", "/api_v3/me", pat(w, i).token, nil) }}
	case "messages-read":
		return scenarioDef{baseline: "point-read", request: func(w, i int) (*http.Request, error) {
			p := pat(w, i)
			return c.req("GET", "/api/visits/"+p.visit+"/messages", p.token, url.Values{"limit": {"25"}})
		}}
	case "messages-post":
		return scenarioDef{baseline: "insert", request: func(w, i int) (*http.Request, error) {
			p := s.patients[w%len(s.patients)]
			return c.req("POST", "/api/visits/"+p.visit+"/messages", p.token, url.Values{"content": {"Hello from the load tool."}})
		}}
	case "pb-post":
		// The message post against PocketBase's authenticated create of
		// a message record under the rule "the visit is the caller's".
		return scenarioDef{baseline: "pocketbase", note: "the post against PocketBase's authenticated record create (ratio: Teleclinic over PocketBase)",
			request: func(w, i int) (*http.Request, error) {
				p := s.patients[w%len(s.patients)]
				return c.req("POST", "/api/visits/"+p.visit+"/messages", p.token, url.Values{"content": {"Hello from the load tool."}})
			}}
	case "sso":
		return scenarioDef{baseline: "json", request: func(w, i int) (*http.Request, error) {
			p := pat(w, i)
			return c.req("POST", "/api_v3/users/sso", "sso", url.Values{"type": {"200"}, "code": {p.code}, "first_name": {"Load"}, "last_name": {p.code}})
		}}
	case "availability":
		return scenarioDef{baseline: "json", request: func(w, i int) (*http.Request, error) {
			return c.req("GET", "/api_v3/availability", pat(w, i).token, url.Values{"room_code": {s.room},
				"start": {fmt.Sprint(s.dayStart + int64(i%5)*86400)}, "end": {fmt.Sprint(s.dayStart + int64(i%5)*86400 + 6*3600)}})
		}}
	case "book":
		return scenarioDef{baseline: "insert", note: "each booking first files an intake (not timed, not counted), then POST /visits takes the next open slot",
			request: func(w, i int) (*http.Request, error) {
				k := s.next.Add(1) - 1
				if int(k) >= len(s.slots) {
					return nil, errExhausted
				}
				p := s.patients[w%len(s.patients)]
				sl := s.slots[k]
				res, err := c.call(context.Background(), "POST", "/api_v3/intakes", p.token, url.Values{"room_code": {s.room}, "type": {"2"}})
				if err != nil {
					return nil, err
				}
				return c.req("POST", "/api_v3/visits", p.token, url.Values{"room_code": {s.room}, "type": {"2"}, "intake_id": {data(res)["id"].(string)},
					"slot_start": {fmt.Sprint(sl[0])}, "slot_end": {fmt.Sprint(sl[1])}})
			}}
	}
	panic("unknown scenario " + name)
}

// webhookScenario posts messages at a fixed rate with a receiver inside the
// tool and measures the time from each 201 to the delivery's receipt; then
// posts a burst and measures how long after it the backlog is delivered.
func (c *clinic) webhookScenario(ctx context.Context, o *options, s *seeded, progress func(string, ...any)) ([]Result, error) {
	var mu sync.Mutex
	sent := map[string]time.Time{}
	got := map[string]time.Time{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Data struct {
				MessageID string `json:"message_id"`
			} `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		now := time.Now()
		mu.Lock()
		if _, seen := got[ev.Data.MessageID]; !seen {
			got[ev.Data.MessageID] = now
		}
		mu.Unlock()
		w.WriteHeader(204)
	})}
	go func() { _ = recv.Serve(ln) }()
	defer recv.Close()
	if _, err := c.call(ctx, "POST", "/api_v3/account/settings", c.admin, url.Values{"webhook_url": {"http://" + ln.Addr().String() + "/hook"}}); err != nil {
		return nil, err
	}
	defer c.call(context.Background(), "POST", "/api_v3/account/settings", c.admin, url.Values{"webhook_url": {""}})

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	// paced posts messages at rate per second for dur, at most 256 in
	// flight, and returns the ids posted and the posting errors.
	paced := func(rate int, dur time.Duration) ([]string, int, string) {
		var ids []string
		var errs atomic.Int64
		var first atomic.Value
		var wg sync.WaitGroup
		sem := make(chan struct{}, 256)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		end := time.Now().Add(dur)
		for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
			<-tick.C
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				p := s.patients[i%len(s.patients)]
				req, _ := c.req("POST", "/api/visits/"+p.visit+"/messages", p.token, url.Values{"content": {"Webhook load."}})
				res, err := client.Do(req)
				if err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err.Error())
					return
				}
				defer res.Body.Close()
				var m struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				_ = json.NewDecoder(res.Body).Decode(&m)
				at := time.Now()
				if res.StatusCode != 201 {
					errs.Add(1)
					first.CompareAndSwap(nil, fmt.Sprint(res.StatusCode))
					return
				}
				mu.Lock()
				sent[m.Data.ID] = at
				ids = append(ids, m.Data.ID)
				mu.Unlock()
			}()
		}
		wg.Wait()
		f, _ := first.Load().(string)
		return ids, int(errs.Load()), f
	}
	waitAll := func(ids []string, limit time.Duration) (time.Duration, int) {
		start := time.Now()
		for {
			mu.Lock()
			missing := 0
			for _, id := range ids {
				if _, ok := got[id]; !ok {
					missing++
				}
			}
			mu.Unlock()
			if missing == 0 || time.Since(start) > limit {
				return time.Since(start), missing
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	progress("  webhook at %d msg/s for %s ", o.WebhookRate, o.Duration)
	t0 := time.Now()
	ids, errs, first := paced(o.WebhookRate, o.Duration)
	_, missing := waitAll(ids, 15*time.Second)
	var lat []time.Duration
	mu.Lock()
	for _, id := range ids {
		if g, ok := got[id]; ok {
			lat = append(lat, max(g.Sub(sent[id]), 0))
		}
	}
	mu.Unlock()
	steady := summarize("webhook", o.WebhookRate, lat, time.Since(t0))
	steady.RPS = float64(len(ids)) / o.Duration.Seconds()
	steady.Errors = errs + missing
	steady.Note = fmt.Sprintf("latency from the 201 to receipt at %d msg/s (conns column: the rate); %d not delivered", o.WebhookRate, missing)
	if first != "" {
		steady.FirstError = "first error: " + first
	}
	progress("p50 %.1f ms, p99 %.1f ms\n", steady.P50ms, steady.P99ms)

	progress("  webhook burst at %d msg/s for %s ", o.BurstRate, o.BurstFor)
	t0 = time.Now()
	ids, errs, first = paced(o.BurstRate, o.BurstFor)
	posted := time.Since(t0)
	drain, missing := waitAll(ids, 60*time.Second)
	burst := Result{Scenario: "webhook-burst", Connections: o.BurstRate, Requests: len(ids), RPS: float64(len(ids)) / posted.Seconds(), Errors: errs + missing,
		DrainSeconds: drain.Seconds(),
		Note: fmt.Sprintf("%d messages posted in %.1f s (conns column: the rate asked); backlog delivered %.2f s after the last post; %d not delivered",
			len(ids), posted.Seconds(), drain.Seconds(), missing)}
	if first != "" {
		burst.FirstError = "first error: " + first
	}
	progress("drained %.2f s after the burst\n", drain.Seconds())
	return []Result{steady, burst}, nil
}

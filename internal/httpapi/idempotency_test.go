package httpapi_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// TestIdempotency: a POST with an Idempotency-Key runs once; a retry with
// the same parameters replays the answer (Idempotent-Replayed: true), on
// this process or another on the same database; the same key with other
// parameters answers 422; a retry while the first is in flight 409; keys
// are the caller's own, and kept 24 hours.
func TestIdempotency(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	second := testenv.New(t, testenv.Options{DSN: e.DSN, ServerKey: e.Key, Clock: e.Clock})
	intake := func(base, token, key, reason string) *testenv.Resp {
		h := userHeaders(s.c, token)
		if key != "" {
			h["Idempotency-Key"] = key
		}
		return testenv.Do(t, base, testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: h,
			Form: q("room_code", "main", "reason_for_visit", reason)})
	}
	intakes := func() int { return count(t, e, "SELECT COUNT(*) FROM intakes") }

	first := intake(e.URL, s.pat.Token, "k-1", "cough")
	if first.Status != 200 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s %v", first.Status, first.Raw, first.Header)
	}
	n := intakes()
	for _, base := range []string{e.URL, second.URL} {
		again := intake(base, s.pat.Token, "k-1", "cough")
		if again.Status != 200 || string(again.Raw) != string(first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay on %s: %d %s %v", base, again.Status, again.Raw, again.Header)
		}
	}
	if intakes() != n {
		t.Fatalf("a replay made an intake")
	}

	t.Run("OtherParameters422", func(t *testing.T) {
		res := intake(e.URL, s.pat.Token, "k-1", "fever")
		wantErr(t, res, 422, 422)
	})
	t.Run("AnotherCallersKeyIsTheirOwn", func(t *testing.T) {
		res := intake(e.URL, s.pat2.Token, "k-1", "cough")
		if res.Header.Get("Idempotent-Replayed") != "" || dataOf[client.Intake](t, res).Id == dataOf[client.Intake](t, first).Id {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("ErrorsAreReplayedToo", func(t *testing.T) {
		h := userHeaders(s.c, s.pat.Token)
		h["Idempotency-Key"] = "k-err"
		req := testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: h, Form: q("room_code", "nope")}
		a, b := e.Do(req), e.Do(req)
		if a.Status != 404 || b.Status != 404 || string(a.Raw) != string(b.Raw) || b.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%d %s / %d %s %v", a.Status, a.Raw, b.Status, b.Raw, b.Header)
		}
	})
	t.Run("InFlight409ThenStaleRunsAgain", func(t *testing.T) {
		res := intake(e.URL, s.pat.Token, "k-2", "rash")
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		// As if the first request were still running (or its process had
		// died before answering).
		if _, err := e.Store.DB().Exec("UPDATE idempotency_keys SET status = 0 WHERE idem_key = 'k-2'"); err != nil {
			t.Fatal(err)
		}
		wantErr(t, intake(second.URL, s.pat.Token, "k-2", "rash"), 409, 409)
		e.Clock.Advance(6 * time.Minute)
		before := intakes()
		if res := intake(second.URL, s.pat.Token, "k-2", "rash"); res.Status != 200 || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("after the in-flight claim went stale: %d %s", res.Status, res.Raw)
		}
		if intakes() != before+1 {
			t.Fatal("the retry after a stale claim did not run")
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[string]int{}
		bodies := map[string]bool{}
		before := intakes()
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				base := e.URL
				if i%2 == 1 {
					base = second.URL
				}
				res := intake(base, s.pat.Token, "k-3", "headache")
				mu.Lock()
				defer mu.Unlock()
				got[fmt.Sprintf("%d replayed=%s", res.Status, res.Header.Get("Idempotent-Replayed"))]++
				if res.Status == 200 {
					bodies[string(res.Raw)] = true
				}
			}()
		}
		wg.Wait()
		if got["200 replayed="] != 1 || got["200 replayed="]+got["200 replayed=true"]+got["409 replayed="] != 10 || len(bodies) != 1 {
			t.Fatalf("answers %v, %d bodies", got, len(bodies))
		}
		if intakes() != before+1 {
			t.Fatalf("%d intakes made", intakes()-before)
		}
	})
	t.Run("Kept24Hours", func(t *testing.T) {
		e.Clock.Advance(25 * time.Hour)
		s.pat = mustSSO(t, e, s.c, "200", "pat", "Pat", "One") // the old login has expired
		before := intakes()
		res := intake(e.URL, s.pat.Token, "k-1", "fever") // once 422, now a new request
		if res.Status != 200 || res.Header.Get("Idempotent-Replayed") != "" || intakes() != before+1 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("GETIgnoresKeys", func(t *testing.T) {
		h := userHeaders(s.c, s.pat.Token)
		h["Idempotency-Key"] = "k-get"
		if res := e.Do(testenv.Req{Path: "/api_v3/me", Header: h}); res.Status != 200 || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d %v", res.Status, res.Header)
		}
	})
	// A caller with only the clinic's code has no key space of its own:
	// its key is ignored, so one anonymous client neither replays
	// another's answer nor learns (422) what another sent.
	t.Run("AnonymousKeysIgnored", func(t *testing.T) {
		login := func(user string) *testenv.Resp {
			h := acctHeaders(s.c)
			h["Idempotency-Key"] = "k-anon"
			return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: h, Form: q("username", user, "password", "wrong password")})
		}
		first, other := login("alice"), login("mallory")
		if first.Status != 401 || other.Status != 401 || other.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("two anonymous logins with one key: %d, then %d %s", first.Status, other.Status, other.Raw)
		}
		if n := count(t, e, "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = 'k-anon'"); n != 0 {
			t.Fatalf("anonymous keys kept: %d", n)
		}
	})
	// One caller holds at most app.MaxIdempotencyKeys keys at a time.
	t.Run("KeysPerCallerBounded", func(t *testing.T) {
		var caller string
		if err := e.Store.DB().QueryRow("SELECT caller FROM idempotency_keys WHERE idem_key = 'k-1' ORDER BY created DESC LIMIT 1").Scan(&caller); err != nil {
			t.Fatal(err)
		}
		held := count(t, e, "SELECT COUNT(*) FROM idempotency_keys WHERE caller = ?", caller)
		now := e.Clock.Now().Unix()
		for i := held; i < app.MaxIdempotencyKeys; i++ {
			if _, err := e.Store.DB().Exec(e.Store.Rebind("INSERT INTO idempotency_keys (account_id, caller, idem_key, fingerprint, created) SELECT account_id, caller, ?, 'f', ? FROM idempotency_keys WHERE caller = ? AND idem_key = 'k-1'"),
				fmt.Sprintf("filler-%d", i), now, caller); err != nil {
				t.Fatal(err)
			}
		}
		res := intake(e.URL, s.pat.Token, "k-one-more", "cough")
		if res.Status != 429 || res.Header.Get("Retry-After") == "" {
			t.Fatalf("a key past the bound: %d %s", res.Status, res.Raw)
		}
		if res := intake(e.URL, s.pat.Token, "", "cough"); res.Status != 200 {
			t.Fatalf("a request without a key past the bound: %d %s", res.Status, res.Raw)
		}
	})
}

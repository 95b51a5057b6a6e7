package httpapi_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// TestThrottle_Login: past 10 attempts of a clinic's user name in the
// window, even the right password answers 429 with Retry-After, on this
// process and another on the same database; another user name is not
// held back; the window's end lets the user in; concurrent guesses do not
// get past the limit.
func TestThrottle_Login(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	second := testenv.New(t, testenv.Options{DSN: e.DSN, ServerKey: e.Key, Clock: e.Clock})
	for _, code := range []string{"p1", "p2", "p3"} {
		tok := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Multipart: map[string]string{"first_name": "Lo", "last_name": "Gin", "type": "200", "code": code, "username": code + ".user"}})).Token.Token
		if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(c, tok), Form: q("password", "correct horse")}); r.Status != 200 {
			t.Fatalf("set password: %d %s", r.Status, r.Raw)
		}
	}
	login := func(base, user, pw string) *testenv.Resp {
		return testenv.Do(t, base, testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: acctHeaders(c),
			Form: q("username", user, "password", pw)})
	}
	if r := login(e.URL, "p1.user", "correct horse"); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	for i := range 10 {
		base := e.URL
		if i%2 == 1 {
			base = second.URL // the count is the database's, not a process's
		}
		if r := login(base, "p1.user", "wrong horse"); r.Status != 401 {
			t.Fatalf("attempt %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	for _, base := range []string{e.URL, second.URL} {
		r := login(base, "p1.user", "correct horse")
		if r.Status != 429 {
			t.Fatalf("the right password past the limit: %d %s", r.Status, r.Raw)
		}
		if secs, _ := strconv.Atoi(r.Header.Get("Retry-After")); secs <= 0 || secs > 900 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	}
	if r := login(e.URL, "p2.user", "correct horse"); r.Status != 200 {
		t.Fatalf("another user name: %d %s", r.Status, r.Raw)
	}
	e.Clock.Advance(15*time.Minute + time.Second)
	if r := login(e.URL, "p1.user", "correct horse"); r.Status != 200 {
		t.Fatalf("after the window: %d %s", r.Status, r.Raw)
	}

	// Thirty guesses at once: ten are judged, the rest refused unjudged.
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := login(e.URL, "p3.user", "wrong horse")
			mu.Lock()
			got[r.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got[401] != 10 || got[429] != 20 {
		t.Fatalf("concurrent guesses: %v", got)
	}
}

// TestThrottle_AddressAndSSO: a client address is held to its own limit
// across user names and clinics, and wrong API secrets to the clinic's;
// the links of activation and reset count too. API key checks count only
// failures, so a burst of good ones from one server is never held back.
func TestThrottle_AddressAndSSO(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Config: func(c *app.Config) { c.AddressAttempts = 25 }})
	c := e.NewClinic("alpha", true)
	other := e.NewClinic("beta", true)
	sso := func(cl *testenv.Clinic, secret string) *testenv.Resp {
		h := ssoHeaders(cl)
		h["X-ApiSecret"] = secret
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: h,
			Multipart: map[string]string{"first_name": "A", "last_name": "B", "type": "200", "code": "x"}})
	}
	for i := range 10 {
		if r := sso(c, "wrong"); r.Status != 401 {
			t.Fatalf("wrong secret %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	if r := sso(c, c.APISecret); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the right secret past the limit: %d %s", r.Status, r.Raw)
	}
	for range 30 {
		if r := sso(other, other.APISecret); r.Status != 200 {
			t.Fatalf("another clinic's SSO: %d %s", r.Status, r.Raw)
		}
	}
	// The address has 10 failures against it (a refused check is not
	// counted); wrong links and logins of other names take it to 25, then
	// it is refused even for a new name.
	for i := range 7 {
		r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/activate", Header: acctHeaders(c), Form: q("token", "guess", "password", "a long password")})
		if r.Status != 400 {
			t.Fatalf("link %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	for i := range 8 {
		r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: acctHeaders(other), Form: q("username", fmt.Sprint("name", i), "password", "wrong horse")})
		if r.Status != 401 {
			t.Fatalf("login %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: acctHeaders(other), Form: q("username", "fresh", "password", "wrong horse")})
	if r.Status != 429 {
		t.Fatalf("past the address limit: %d %s", r.Status, r.Raw)
	}
}

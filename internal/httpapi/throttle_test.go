package httpapi_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
// across user names and clinics, and wrong API secrets to the clinic's
// from it (the right one still passes); the links of activation and reset
// count too. API key checks count only failures, so a burst of good ones
// from one server is never held back.
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
	if r := sso(c, "wrong"); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a wrong secret past the limit: %d %s", r.Status, r.Raw)
	}
	// A random secret cannot be guessed: the right one passes whatever
	// failed before it.
	if r := sso(c, c.APISecret); r.Status != 200 {
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

// TestThrottle_StrangerCannotLockOut: a stranger's failures from their
// address hold back only their own guesses there. After ten wrong
// passwords, API secrets, admin tokens and reset links from one address,
// from another address the user's right password, the integrator's key,
// the admin's token and the user's reset link all work; from the
// stranger's address a wrong guess is a 429, the right password too
// (guessing it cannot go on by luck), but a random secret that is right
// passes. Two IPv6 addresses of one /64 count as one.
func TestThrottle_StrangerCannotLockOut(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{ClientIPHeader: "X-Forwarded-For"})
	c := e.NewClinic("alpha", true)
	const stranger, patient = "203.0.113.7", "198.51.100.9"
	from := func(addr string, h map[string]string) map[string]string {
		out := map[string]string{"X-Forwarded-For": addr}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	for _, code := range []string{"p1", "p2"} {
		tok := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Multipart: map[string]string{"first_name": "Lo", "last_name": "Gin", "type": "200", "code": code, "username": code + ".user", "email": code + "@example.com"}})).Token.Token
		mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(c, tok), Form: q("password", "correct horse")}))
	}
	login := func(addr, user, pw string) int {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: from(addr, acctHeaders(c)), Form: q("username", user, "password", pw)}).Status
	}
	sso := func(addr, secret string) int {
		h := ssoHeaders(c)
		h["X-ApiSecret"] = secret
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: from(addr, h),
			Multipart: map[string]string{"first_name": "A", "last_name": "B", "type": "200", "code": "x"}}).Status
	}
	admin := func(addr, token string) int {
		return e.Do(testenv.Req{Method: "POST", Path: "/admin/signin", Header: from(addr, map[string]string{"Sec-Fetch-Site": "same-origin"}), NoValidate: true,
			Form: q("clinic", "alpha", "token", token)}).Status
	}
	reset := func(addr, token, pw string) int {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/password/reset/confirm", Header: from(addr, acctHeaders(c)), Form: q("token", token, "password", pw)}).Status
	}
	// The patient asks for a reset link, from their address.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/password/reset", Header: from(patient, acctHeaders(c)), Form: q("username", "p2.user")}))
	box := &outbox{}
	if n := e.App.DeliverMail(context.Background(), box); n != 1 {
		t.Fatalf("reset mails: %d", n)
	}
	link := box.lastToken(t)

	// Ten of each from the stranger.
	for i := range 10 {
		if s := login(stranger, "p1.user", "wrong horse"); s != 401 {
			t.Fatalf("wrong password %d: %d", i+1, s)
		}
		if s := sso(stranger, "wrong"); s != 401 {
			t.Fatalf("wrong secret %d: %d", i+1, s)
		}
		if s := admin(stranger, "wrong-token"); s != 401 {
			t.Fatalf("wrong admin token %d: %d", i+1, s)
		}
		if s := reset(stranger, "guess", "a long password"); s != 400 {
			t.Fatalf("wrong link %d: %d", i+1, s)
		}
	}
	// The stranger is held back…
	for what, s := range map[string]int{"password": login(stranger, "p1.user", "wrong horse"), "secret": sso(stranger, "wrong"),
		"admin token": admin(stranger, "wrong-token"), "link": reset(stranger, "guess", "a long password"),
		"the right password": login(stranger, "p1.user", "correct horse")} {
		if s != 429 {
			t.Errorf("the stranger's %s past the limit: %d, want 429", what, s)
		}
	}
	// …but not the people they aimed at, nor a right random secret.
	for what, s := range map[string]int{"password": login(patient, "p1.user", "correct horse"), "secret": sso(patient, c.APISecret),
		"secret from the stranger's address": sso(stranger, c.APISecret), "admin token": admin(patient, c.AdminToken),
		"admin token from the stranger's address": admin(stranger, c.AdminToken), "reset link": reset(patient, link, "a brand new password")} {
		if want := map[bool]int{true: 303, false: 200}[strings.HasPrefix(what, "admin")]; s != want {
			t.Errorf("the right %s after the stranger's failures: %d, want %d", what, s, want)
		}
	}

	// IPv6: one /64 is one client.
	for range 10 {
		login("2001:db8:1:2::1", "p2.user", "wrong horse")
	}
	if s := login("2001:db8:1:2::ffff", "p2.user", "a brand new password"); s != 429 {
		t.Errorf("another address of the stranger's /64: %d, want 429", s)
	}
	if s := login("2001:db8:1:3::1", "p2.user", "a brand new password"); s != 200 {
		t.Errorf("an address of another /64: %d, want 200", s)
	}
}

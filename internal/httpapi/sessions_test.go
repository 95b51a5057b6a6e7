package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

func TestSessions_AuthRedirect(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)

	// OK keeps the SSO token and passes next; the address carries a link
	// token of the same login instead, good once at the portal and never
	// as an API credential.
	t.Run("OKKeepsToken", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		res := e.Do(testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "next", "/visits/1", "disable_navigation", "1")})
		if res.Status != 302 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		loc, _ := url.Parse(res.Header.Get("Location"))
		if loc.Scheme != "https" || loc.Host != "portal.teleclinic.test" || loc.Path != "/auth" {
			t.Fatalf("location %s", loc)
		}
		link := loc.Query().Get("sso_token")
		if link == "" || link == s.Token || loc.Query().Get("next") != "/visits/1" || loc.Query().Get("disable_navigation") != "1" {
			t.Fatalf("location query %v", loc.Query())
		}
		if res.Header.Get("Cache-Control") != "no-store" {
			t.Fatal("redirect carrying a token must not be cached")
		}
		if res := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)}); res.Status != 200 {
			t.Fatalf("the SSO token after a redirect without one_time_token: %d", res.Status)
		}
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, link)}), 401)
		portalAuth(t, e, link, 303)
		portalAuth(t, e, link, 401) // once
		au := e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(c), Query: q("action", "user.portal_login", "object_id", s.UserID)})
		if decode[auditPage](t, au).TotalCount != 1 {
			t.Fatalf("portal login not audited once: %s", au.Raw)
		}
	})
	// One_time_token consumes the SSO token; the address's link token is
	// good once.
	t.Run("OKOneTimeToken", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
		res := e.Do(testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "one_time_token", "1")})
		if res.Status != 302 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		loc, _ := url.Parse(res.Header.Get("Location"))
		portal := loc.Query().Get("sso_token")
		if portal == "" || portal == s.Token {
			t.Fatalf("the portal gets a fresh token, got %q", portal)
		}
		again := e.Do(testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "one_time_token", "1")})
		wantUsersErr(t, again, 401)
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)}), 401)
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, portal)}), 401)
		// The address without its one_time_token flag is still good once.
		portalAuth(t, e, portal, 303)
		portalAuth(t, e, portal, 401)
	})
	// The link token lives two minutes.
	t.Run("ErrLinkExpired", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p5", "Pat", "Five")
		res := e.Do(testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token)})
		loc, _ := url.Parse(res.Header.Get("Location"))
		e.Clock.Advance(3 * time.Minute)
		portalAuth(t, e, loc.Query().Get("sso_token"), 401)
	})
	// One_time_token under concurrent use: exactly one succeeds.
	t.Run("ErrOneTimeTokenConcurrent", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p3", "Pat", "Three")
		const n = 16
		got := raceStatuses(t, []string{e.URL}, n, testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "one_time_token", "1")})
		if got[302] != 1 || got[401] != n-1 {
			t.Fatalf("statuses %v, want one 302 and %d 401", got, n-1)
		}
	})
	t.Run("ErrMissingToken", func(t *testing.T) {
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/auth"}), 400)
	})
	t.Run("ErrInvalidToken", func(t *testing.T) {
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", "forged")}), 401)
	})
	t.Run("ErrOpenRedirect", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p4", "Pat", "Four")
		for _, next := range []string{"https://evil.example", "//evil.example/x", "evil"} {
			wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "next", next)}), 400)
		}
	})
}

// portalAuth follows a sign-in address to the portal's /auth and wants
// status: 303 (signed in, a session cookie set) or 401.
func portalAuth(t *testing.T, e *testenv.Env, token string, status int) {
	t.Helper()
	// A portal page, not the API: a browser's request, outside openapi.yaml.
	noFollow := &http.Client{Transport: testenv.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(e.URL + "/auth?sso_token=" + url.QueryEscape(token))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != status {
		t.Fatalf("/auth: %d, want %d", res.StatusCode, status)
	}
	if status == 303 && res.Header.Get("Set-Cookie") == "" {
		t.Fatal("/auth set no session cookie")
	}
}

func TestSessions_Refresh(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)

	// OK rotates both tokens.
	t.Run("OKRotates", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		tok := dataOf[ssoProfile](t, refresh(e, c, s.Refresh)).Token
		access, rt := tok.Token, tok.RefreshToken.Token
		if access == s.Token || rt == s.Refresh || tok.UserId != s.UserID {
			t.Fatalf("rotation must give new tokens: %+v", tok)
		}
		if r := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, access)}); r.Status != 200 {
			t.Fatalf("new access token: %d", r.Status)
		}
		// The alias path rotates the same way.
		mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/token/refresh.json", Header: acctHeaders(c), JSON: client.RefreshBody{RefreshToken: rt}}))
	})
	// Reuse revokes the whole login, newest tokens included.
	t.Run("ErrReuseRevokesFamily", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
		tok := dataOf[ssoProfile](t, refresh(e, c, s.Refresh)).Token
		newAccess, newRefresh := tok.Token, tok.RefreshToken.Token
		wantUsersErr(t, refresh(e, c, s.Refresh), 401) // reuse
		for _, at := range []string{s.Token, newAccess} {
			wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, at)}), 401)
		}
		wantUsersErr(t, refresh(e, c, newRefresh), 401)
		// Another login of the same user is untouched.
		s2 := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
		if r := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s2.Token)}); r.Status != 200 {
			t.Fatalf("other login: %d", r.Status)
		}
	})
	// Concurrent refresh of one token: exactly one wins.
	t.Run("ErrConcurrentRefresh", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p3", "Pat", "Three")
		const n = 10
		got := raceStatuses(t, []string{e.URL}, n, testenv.Req{Method: "POST", Path: "/api_v3/tokens/refresh", Header: acctHeaders(c), Form: q("refresh_token", s.Refresh)})
		if got[200] != 1 || got[401] != n-1 {
			t.Fatalf("statuses %v", got)
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		wantUsersErr(t, refresh(e, c, ""), 400)
	})
	t.Run("ErrAccessTokenIsNotARefreshToken", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p4", "Pat", "Four")
		wantUsersErr(t, refresh(e, c, s.Token), 401)
	})
	t.Run("ErrExpired", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p5", "Pat", "Five")
		e.Clock.Advance(30*24*time.Hour + time.Second)
		wantUsersErr(t, refresh(e, c, s.Refresh), 401)
	})
}

func TestSessions_Expiry(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	me := func(tok string) int { return e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, tok)}).Status }

	// Idle period slides with use.
	t.Run("OKIdleSlides", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		for i := 0; i < 4; i++ { // 4 × 20 min: always within 30 min of the last use
			e.Clock.Advance(20 * time.Minute)
			if got := me(s.Token); got != 200 {
				t.Fatalf("after %d uses: %d", i, got)
			}
		}
		e.Clock.Advance(31 * time.Minute)
		if got := me(s.Token); got != 401 {
			t.Fatalf("idle-expired token: %d", got)
		}
	})
	// Absolute lifetime ends a busy token.
	t.Run("ErrAbsoluteLifetime", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
		for elapsed := time.Duration(0); elapsed < 12*time.Hour-20*time.Minute; elapsed += 20 * time.Minute {
			e.Clock.Advance(20 * time.Minute)
			if got := me(s.Token); got != 200 {
				t.Fatalf("at %v: %d", elapsed, got)
			}
		}
		e.Clock.Advance(20 * time.Minute)
		if got := me(s.Token); got != 401 {
			t.Fatalf("past 12h: %d", got)
		}
		// The refresh token still starts a new pair.
		if res := refresh(e, c, s.Refresh); res.Status != 200 {
			t.Fatalf("refresh after expiry: %d", res.Status)
		}
	})
	// The admin token does not expire.
	t.Run("OKAdminTokenLasts", func(t *testing.T) {
		e.Clock.Advance(400 * 24 * time.Hour)
		if res := e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(c)}); res.Status != 200 {
			t.Fatalf("%d", res.Status)
		}
	})
}

func TestSessions_Logout(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	me := func(tok string) int { return e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, tok)}).Status }

	// OK ends the caller's login.
	t.Run("OKEndsLogin", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		other := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: userHeaders(c, s.Token)})
		if !dataOf[bool](t, res) {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		if me(s.Token) != 401 || refresh(e, c, s.Refresh).Status != 401 {
			t.Fatal("logout must end the access and the refresh token")
		}
		if me(other.Token) != 200 {
			t.Fatal("another login of the same user survives")
		}
	})
	// OK destroys the listed tokens, only the caller's.
	t.Run("OKListedTokensOnlyOwn", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
		s2 := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
		victim := mustSSO(t, e, c, "200", "p3", "Pat", "Three")
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: userHeaders(c, s.Token),
			Form: q("tokens", s2.Token+","+victim.Token+",unknown")})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		if me(s2.Token) != 401 || me(s.Token) != 200 || me(victim.Token) != 200 {
			t.Fatal("only the caller's listed tokens are destroyed")
		}
		// The admin token may destroy any of the clinic's tokens.
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: adminHeaders(c), Form: q("tokens", victim.Token)})
		if res.Status != 200 || me(victim.Token) != 401 {
			t.Fatalf("admin logout of a user token: %d", res.Status)
		}
	})
	t.Run("ErrAdminTokenCannotLogOut", func(t *testing.T) {
		wantUsersErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: adminHeaders(c)}), 400)
	})
	t.Run("ErrNoToken", func(t *testing.T) {
		wantUsersErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: acctHeaders(c)}), 401)
	})
}

func TestSessions_Login(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	p := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": "Lo", "last_name": "Gin", "type": "200", "code": "p1", "username": "login.user", "email": "Login@Example.com"}}))
	s := &session{Token: p.Token.Token, UserID: p.Id, Profile: p}
	login := func(f ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: acctHeaders(c), Form: q(f...)})
	}
	t.Run("ErrNoPasswordYet", func(t *testing.T) {
		wantUsersErr(t, login("username", "login.user", "password", "anything-at-all"), 401)
	})
	if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(c, s.Token), Form: q("password", "correct horse")}); r.Status != 200 {
		t.Fatalf("set password: %d %s", r.Status, r.Raw)
	}
	// OK by username and by email.
	t.Run("OKUsernameOrEmail", func(t *testing.T) {
		for _, f := range [][]string{{"username", "login.user"}, {"email", "login@example.com"}, {"username", "LOGIN@example.com"}} {
			p := dataOf[ssoProfile](t, login(f[0], f[1], "password", "correct horse"))
			if p.Id != s.UserID || p.Token.Token == "" {
				t.Fatalf("%v: %+v", f, p)
			}
			if p.LastLogin == 0 {
				t.Fatal("last_login not recorded")
			}
		}
	})
	t.Run("ErrWrongPassword", func(t *testing.T) {
		wantUsersErr(t, login("username", "login.user", "password", "wrong horse"), 401)
	})
	t.Run("ErrUnknownUser", func(t *testing.T) {
		wantUsersErr(t, login("username", "nobody", "password", "correct horse"), 401)
	})
	t.Run("ErrMissing", func(t *testing.T) {
		wantUsersErr(t, login("username", "login.user"), 400)
	})
	t.Run("ErrOtherClinic", func(t *testing.T) {
		other := e.NewClinic("beta", true)
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: acctHeaders(other), Form: q("username", "login.user", "password", "correct horse")})
		wantUsersErr(t, res, 401)
	})
}

var linkToken = regexp.MustCompile(`token=([A-Za-z0-9_%-]+)`)

func TestSessions_ActivationAndReset(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	uid := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": "Ac", "last_name": "Tive", "type": "200", "code": "p1", "email": "active@example.com"}})).Id
	box := &outbox{}
	post := func(path string, f ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: path, Header: acctHeaders(c), Form: q(f...)})
	}

	// Unknown names answer the same and send nothing.
	t.Run("ErrUnknownNameSilent", func(t *testing.T) {
		if r := post("/api_v3/users/activate/request", "email", "nobody@example.com"); r.Status != 200 || r.Body["data"] != true {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if n := e.App.DeliverMail(context.Background(), box); n != 0 {
			t.Fatalf("sent %d", n)
		}
	})
	// Activation sets the first password and logs in.
	t.Run("OKActivation", func(t *testing.T) {
		if r := post("/api_v3/users/activate/request", "email", "active@example.com"); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if n := e.App.DeliverMail(context.Background(), box); n != 1 {
			t.Fatalf("delivered %d mails", n)
		}
		if box.msgs[0].To != "active@example.com" || !strings.Contains(box.msgs[0].Subject, "Activate") {
			t.Fatalf("mail %+v", box.msgs[0])
		}
		tok := box.lastToken(t)
		wantUsersErr(t, post("/api_v3/users/activate", "token", tok, "password", "short"), 400)
		if p := dataOf[ssoProfile](t, post("/api_v3/users/activate", "token", tok, "password", "a long password")); p.Id != uid || !p.EmailVerified || p.Token.Token == "" {
			t.Fatalf("%+v", p)
		}
		wantUsersErr(t, post("/api_v3/users/activate", "token", tok, "password", "another password"), 400)
		if r := post("/api_v3/users/login", "email", "active@example.com", "password", "a long password"); r.Status != 200 {
			t.Fatalf("login after activation: %d", r.Status)
		}
	})
	// Reset sets a new password and ends every login.
	t.Run("OKReset", func(t *testing.T) {
		login := dataOf[ssoProfile](t, post("/api_v3/users/login", "email", "active@example.com", "password", "a long password"))
		old := login.Token.Token
		mustOK(t, post("/api_v3/users/password/reset", "username", login.Username))
		if n := e.App.DeliverMail(context.Background(), box); n != 1 {
			t.Fatalf("delivered %d", n)
		}
		tok := box.lastToken(t)
		if r := post("/api_v3/users/password/reset/confirm", "token", tok, "password", "a brand new password"); r.Status != 200 || r.Body["data"] != true {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, old)}), 401)
		wantUsersErr(t, post("/api_v3/users/login", "email", "active@example.com", "password", "a long password"), 401)
		if r := post("/api_v3/users/login", "email", "active@example.com", "password", "a brand new password"); r.Status != 200 {
			t.Fatalf("login with the new password: %d", r.Status)
		}
		wantUsersErr(t, post("/api_v3/users/password/reset/confirm", "token", tok, "password", "yet another one"), 400)
	})
	t.Run("ErrExpiredLink", func(t *testing.T) {
		post("/api_v3/users/password/reset", "email", "active@example.com")
		e.App.DeliverMail(context.Background(), box)
		tok := box.lastToken(t)
		e.Clock.Advance(25 * time.Hour)
		wantUsersErr(t, post("/api_v3/users/password/reset/confirm", "token", tok, "password", "too late now"), 400)
	})
}

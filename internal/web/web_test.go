package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// browser is a client with its own cookies that, like a browser, does not
// follow redirects by itself here: each test looks at where it is sent.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	// lang, when set, is the browser's Accept-Language.
	lang string
}

func newBrowser(t *testing.T, e *testenv.Env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: e.URL, c: &http.Client{Transport: testenv.Transport, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	Status   int
	Location string
	Header   http.Header
	Body     string
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) *page {
	b.t.Helper()
	if form == nil {
		return b.send(method, path, nil, header)
	}
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range header {
		h[k] = v
	}
	return b.send(method, path, strings.NewReader(form.Encode()), h)
}

// send makes one request with body and header (Host sets the request's
// host).
func (b *browser) send(method, path string, body io.Reader, header map[string]string) *page {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if b.lang != "" {
		req.Header.Set("Accept-Language", b.lang)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return &page{Status: res.StatusCode, Location: res.Header.Get("Location"), Header: res.Header, Body: string(raw)}
}

func (b *browser) get(path string) *page { b.t.Helper(); return b.do("GET", path, nil, nil) }

// sameOrigin is what a browser sends with a form posted from the portal.
var sameOrigin = map[string]string{"Sec-Fetch-Site": "same-origin"}

func (b *browser) post(path string, form url.Values) *page {
	b.t.Helper()
	return b.do("POST", path, form, sameOrigin)
}

// fixture is a clinic with a room, a provider and two patients, the first
// with an e-consult that holds one message.
type fixture struct {
	e                *testenv.Env
	clinic           *testenv.Clinic
	key              *clinic.Principal
	visitID          int64
	p1Token, p2Token string
	providerToken    string
}

func newFixture(t *testing.T, opts ...testenv.Options) *fixture {
	t.Helper()
	e := testenv.New(t, opts...)
	ctx := context.Background()
	a := e.App
	f := &fixture{e: e, clinic: e.NewClinic("acme", true)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	f.key, err = a.Authenticate(ctx, app.Credentials{AccountCode: "acme", APIKey: f.clinic.APIKey, APISecret: f.clinic.APISecret}, app.NeedAPIKey)
	must(err)
	admin, err := a.Authenticate(ctx, app.Credentials{AccountCode: "acme", APIToken: f.clinic.AdminToken}, app.NeedAdmin)
	must(err)
	_, err = a.CreateRoom(ctx, admin, app.NewRoom{Code: "main", Name: "Main Room", Domain: "acme.clinic.test"})
	must(err)
	f.p1Token = f.sso(t, clinic.UserMember, "pat-1", "Ada", "Lovelace")
	f.p2Token = f.sso(t, clinic.UserMember, "pat-2", "Mallory", "Other")
	f.providerToken = f.sso(t, clinic.UserProvider, "dr-1", "Grace", "Hopper")
	_, err = a.LinkRoom(ctx, admin, f.user(t, f.providerToken).User.ID, "main", true)
	must(err)
	p1 := f.user(t, f.p1Token)
	reason := "A cough for a week"
	it, err := a.CreateIntake(ctx, p1, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	must(err)
	v, err := a.AddEconsult(ctx, p1, it.ID, "main")
	must(err)
	f.visitID = v.Visit.ID
	msg := "It is worse at night."
	_, err = a.PostMessage(ctx, p1, f.visitID, app.NewMessage{Content: &msg})
	must(err)
	return f
}

func (f *fixture) sso(t *testing.T, typ int, code, first, last string) string {
	t.Helper()
	res, err := f.e.App.SSO(context.Background(), f.key, app.SSOInput{FirstName: first, LastName: last, Type: typ, Code: code, Username: code})
	if err != nil {
		t.Fatal(err)
	}
	return res.Session.Token
}

func (f *fixture) user(t *testing.T, token string) *clinic.Principal {
	t.Helper()
	p, err := f.e.App.Authenticate(context.Background(), app.Credentials{AccountCode: "acme", APIToken: token}, app.NeedUser)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mainRoom is the id of the clinic's room "main", the fixture's visits'
// room, for tests that add visits to it by SQL.
func (f *fixture) mainRoom(t *testing.T) int64 {
	t.Helper()
	var room int64
	if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT r.id FROM rooms r JOIN accounts a ON a.id = r.account_id WHERE a.code = 'acme' AND r.code = 'main'")).Scan(&room); err != nil {
		t.Fatal(err)
	}
	return room
}

// admin is the clinic's admin, as its admin token signs in.
func (f *fixture) admin(t *testing.T) *clinic.Principal {
	t.Helper()
	p, err := f.e.App.Authenticate(context.Background(), app.Credentials{AccountCode: "acme", APIToken: f.clinic.AdminToken}, app.NeedAdmin)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// walkin puts the patient of token in the main room's waiting room
// (walk-ins must be on), and returns the visit's id.
func (f *fixture) walkin(t *testing.T, token, reason string) int64 {
	t.Helper()
	bg := context.Background()
	p := f.user(t, token)
	it, err := f.e.App.CreateIntake(bg, p, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason, Type: new("1")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.e.App.AddWalkin(bg, p, app.WalkinInput{IntakeID: it.ID, RoomCode: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return d.Visit.ID
}

func (f *fixture) visitPath() string { return "/visits/start/" + strconv.FormatInt(f.visitID, 10) }

// redirectLogin follows the spec's redirect login as an integrator sends a
// patient through it: GET /api_v3/auth, then the portal address it names.
func (f *fixture) redirectLogin(t *testing.T, b *browser, token, next string, extra url.Values) *page {
	t.Helper()
	q := url.Values{"sso_token": {token}, "next": {next}}
	for k, v := range extra {
		q[k] = v
	}
	res := b.do("GET", "/api_v3/auth?"+q.Encode(), nil, map[string]string{"X-AccountCode": "acme"})
	if res.Status != http.StatusFound {
		t.Fatalf("GET /api_v3/auth: %d %s", res.Status, res.Body)
	}
	u, err := url.Parse(res.Location)
	if err != nil || u.Path != "/auth" {
		t.Fatalf("redirect login sent the browser to %q", res.Location)
	}
	return b.get(u.Path + "?" + u.RawQuery)
}

// TestPortal_RedirectLogin: the integrator's flow ends on the visit page,
// signed in, with no further login; the session is an access token of its
// own in an HttpOnly cookie.
func TestPortal_RedirectLogin(t *testing.T) {
	f := newFixture(t)

	t.Run("OK", func(t *testing.T) {
		b := newBrowser(t, f.e)
		res := f.redirectLogin(t, b, f.p1Token, f.visitPath(), nil)
		if res.Status != http.StatusSeeOther || res.Location != f.visitPath() {
			t.Fatalf("GET /auth: %d to %q: %s", res.Status, res.Location, res.Body)
		}
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: res.Header}).Cookies() {
			if c.Name == "tc_session" {
				cookie = c
			}
		}
		if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Value == f.p1Token {
			t.Fatalf("session cookie %+v: HttpOnly, SameSite=Lax and a token of its own expected", cookie)
		}
		page := b.get(f.visitPath())
		if page.Status != 200 || !strings.Contains(page.Body, "It is worse at night.") || !strings.Contains(page.Body, "Main Room") {
			t.Fatalf("visit page: %d %s", page.Status, page.Body)
		}
		for h, want := range map[string]string{"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := page.Header.Get(h); got != want {
				t.Errorf("%s: %q", h, got)
			}
		}
		if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("Content-Security-Policy: %q", csp)
		}
		// The API token the integrator holds still works: without
		// one_time_token it was not consumed.
		f.user(t, f.p1Token)
	})

	t.Run("OKSendMessage", func(t *testing.T) {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, f.p1Token, f.visitPath(), nil)
		res := b.post(f.visitPath()+"/messages", url.Values{"content": {"Now with a fever."}})
		if res.Status != http.StatusSeeOther {
			t.Fatalf("post: %d %s", res.Status, res.Body)
		}
		ms, total, err := f.e.App.ListMessages(context.Background(), f.user(t, f.p1Token), f.visitID, app.MessageQuery{})
		if err != nil || total != 2 || ms[1].Content != "Now with a fever." {
			t.Fatalf("thread after the page's post: %d, %v", total, err)
		}
	})

	t.Run("OKDisableNavigation", func(t *testing.T) {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, f.p1Token, "/visits", url.Values{"disable_navigation": {"1"}})
		if page := b.get("/visits"); page.Status != 200 || strings.Contains(page.Body, `aria-label="Portal"`) {
			t.Fatalf("visits with navigation disabled: %d %s", page.Status, page.Body)
		}
		other := newBrowser(t, f.e)
		f.redirectLogin(t, other, f.p1Token, "/visits", nil)
		if page := other.get("/visits"); !strings.Contains(page.Body, `aria-label="Portal"`) {
			t.Fatalf("visits with navigation: %s", page.Body)
		}
	})

	t.Run("ErrOneTimeTokenReused", func(t *testing.T) {
		token := f.sso(t, clinic.UserMember, "pat-1", "Ada", "Lovelace")
		b := newBrowser(t, f.e)
		q := "/auth?" + url.Values{"sso_token": {token}, "one_time_token": {"1"}, "next": {"/visits"}}.Encode()
		if res := b.get(q); res.Status != http.StatusSeeOther {
			t.Fatalf("first use: %d %s", res.Status, res.Body)
		}
		if res := newBrowser(t, f.e).get(q); res.Status != http.StatusUnauthorized || !strings.Contains(res.Body, "expired or was used already") {
			t.Fatalf("second use: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ErrOpenRedirect", func(t *testing.T) {
		for _, next := range []string{"//evil.example", "https://evil.example/", "/\\evil.example", "/%2F%2Fevil.example", "/%252F%252Fevil.example", "javascript:alert(1)", "%2F%2Fevil.example"} {
			res := newBrowser(t, f.e).get("/auth?" + url.Values{"sso_token": {f.p1Token}, "next": {next}}.Encode())
			if res.Status != http.StatusBadRequest || res.Location != "" {
				t.Errorf("next=%q: %d to %q", next, res.Status, res.Location)
			}
		}
	})

	t.Run("ErrOtherPatientsVisit", func(t *testing.T) {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, f.p2Token, "/visits", nil)
		// GET /api_v3/visits/{id} answers 404 for a visit that is not the
		// caller's, and so does its page.
		if res := b.get(f.visitPath()); res.Status != http.StatusNotFound || strings.Contains(res.Body, "worse at night") {
			t.Fatalf("another patient's visit page: %d %s", res.Status, res.Body)
		}
		if res := b.get("/visits"); res.Status != 200 || strings.Contains(res.Body, f.visitPath()) {
			t.Fatalf("another patient's list shows the visit: %s", res.Body)
		}
	})

	t.Run("ErrNotSignedIn", func(t *testing.T) {
		res := newBrowser(t, f.e).get(f.visitPath())
		if res.Status != http.StatusSeeOther || !strings.HasPrefix(res.Location, "/signin?next=") {
			t.Fatalf("signed out: %d to %q", res.Status, res.Location)
		}
	})

	t.Run("ErrCrossOrigin", func(t *testing.T) {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, f.p1Token, "/visits", nil)
		count := func() int {
			t.Helper()
			_, total, err := f.e.App.ListMessages(context.Background(), f.user(t, f.p1Token), f.visitID, app.MessageQuery{})
			if err != nil {
				t.Fatal(err)
			}
			return total
		}
		before := count()
		res := b.do("POST", f.visitPath()+"/messages", url.Values{"content": {"from elsewhere"}},
			map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})
		if res.Status != http.StatusForbidden {
			t.Fatalf("cross-site post: %d %s", res.Status, res.Body)
		}
		if after := count(); after != before {
			t.Fatalf("a cross-site post was written: %d messages, %d before", after, before)
		}
	})
}

// TestPortal_SignInOut: a provider signs in with a password and out again;
// signing out ends the session's token on the server, not just the cookie.
func TestPortal_SignInOut(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pw := "a long provider password"
	if _, err := f.e.App.UpdateMe(ctx, f.user(t, f.providerToken), app.ProfileUpdate{Password: &pw}); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		b := newBrowser(t, f.e)
		if res := b.get("/signin"); res.Status != 200 || !strings.Contains(res.Body, `<label for="password">`) {
			t.Fatalf("sign-in page: %d %s", res.Status, res.Body)
		}
		res := b.post("/signin", url.Values{"clinic": {"acme"}, "login": {"dr-1"}, "password": {pw}, "next": {"/visits"}})
		if res.Status != http.StatusSeeOther || res.Location != "/visits" {
			t.Fatalf("sign in: %d to %q: %s", res.Status, res.Location, res.Body)
		}
		// The room's provider sees the waiting e-consult.
		if page := b.get("/visits"); page.Status != 200 || !strings.Contains(page.Body, f.visitPath()) {
			t.Fatalf("provider's visits: %d %s", page.Status, page.Body)
		}
		var token string
		for _, c := range b.c.Jar.Cookies(mustURL(t, f.e.URL)) {
			if c.Name == "tc_session" {
				token = c.Value
			}
		}
		if res := b.post("/signout", url.Values{}); res.Status != http.StatusSeeOther {
			t.Fatalf("sign out: %d %s", res.Status, res.Body)
		}
		if _, err := f.e.App.Authenticate(ctx, app.Credentials{APIToken: token}, app.NeedUser); clinic.ErrorCode(err) != clinic.EUnauthenticated {
			t.Fatalf("the signed-out session's token still works: %v", err)
		}
	})

	t.Run("ErrWrongPassword", func(t *testing.T) {
		res := newBrowser(t, f.e).post("/signin", url.Values{"clinic": {"acme"}, "login": {"dr-1"}, "password": {"wrong"}})
		if res.Status != http.StatusUnauthorized || !strings.Contains(res.Body, "do not match") || !strings.Contains(res.Body, `value="dr-1"`) {
			t.Fatalf("wrong password: %d %s", res.Status, res.Body)
		}
	})

	// Guessing is throttled as on the API: 429 with Retry-After.
	t.Run("ErrThrottled", func(t *testing.T) {
		b := newBrowser(t, f.e)
		var res *page
		for range 12 {
			res = b.post("/signin", url.Values{"clinic": {"acme"}, "login": {"grace"}, "password": {"wrong"}})
		}
		if res.Status != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(res.Body, "try again in") {
			t.Fatalf("the 12th wrong password: %d Retry-After %q %s", res.Status, res.Header.Get("Retry-After"), res.Body)
		}
	})

	t.Run("ErrUnknownClinic", func(t *testing.T) {
		res := newBrowser(t, f.e).post("/signin", url.Values{"clinic": {"nope"}, "login": {"dr-1"}, "password": {pw}})
		if res.Status != http.StatusUnauthorized || !strings.Contains(res.Body, "No clinic has that code") {
			t.Fatalf("unknown clinic: %d %s", res.Status, res.Body)
		}
	})
}

// TestPortal_ClinicHome: /u/{account_code} lists the clinic's public
// rooms, each a link to its page; an unknown clinic is a 404 page.
func TestPortal_ClinicHome(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.admin(t)
	public := true
	if _, err := f.e.App.UpdateRoom(ctx, admin, "main", app.RoomUpdate{PublicAccess: &public}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.CreateRoom(ctx, admin, app.NewRoom{Code: "staff", Name: "Staff Only", Domain: "acme.clinic.test"}); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		res := newBrowser(t, f.e).get("/u/acme")
		if res.Status != 200 || !strings.Contains(res.Body, "Acme Clinic") || !strings.Contains(res.Body, `<a href="/c/acme/main"><strong>Main Room</strong></a>`) || strings.Contains(res.Body, "Staff Only") {
			t.Fatalf("clinic home: %d %s", res.Status, res.Body)
		}
	})
	t.Run("ErrUnknownClinic", func(t *testing.T) {
		if res := newBrowser(t, f.e).get("/u/nope"); res.Status != http.StatusNotFound {
			t.Fatalf("unknown clinic: %d %s", res.Status, res.Body)
		}
	})
	t.Run("OKStaticAndAPIUnchanged", func(t *testing.T) {
		b := newBrowser(t, f.e)
		if res := b.get("/static/portal.css"); res.Status != 200 || !strings.Contains(res.Header.Get("Content-Type"), "text/css") {
			t.Fatalf("stylesheet: %d %q", res.Status, res.Header.Get("Content-Type"))
		}
		if res := b.get("/healthz"); res.Status != 200 {
			t.Fatalf("the API behind the portal: %d %s", res.Status, res.Body)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPortal_RoomPage: the room join URL, by path and by host, shows the
// room and its closed state to anyone with the address.
func TestPortal_RoomPage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.admin(t)
	sub := "Same-day care"
	if _, err := f.e.App.UpdateRoom(ctx, admin, "main", app.RoomUpdate{Subtitle: &sub}); err != nil {
		t.Fatal(err)
	}

	t.Run("OKByPath", func(t *testing.T) {
		res := newBrowser(t, f.e).get("/c/acme/main")
		if res.Status != 200 || !strings.Contains(res.Body, "<h1>Main Room</h1>") || !strings.Contains(res.Body, "Same-day care") ||
			!strings.Contains(res.Body, "/signin?clinic=acme") {
			t.Fatalf("room page: %d %s", res.Status, res.Body)
		}
	})
	t.Run("OKByHost", func(t *testing.T) {
		res := newBrowser(t, f.e).do("GET", "/main", nil, map[string]string{"Host": "acme.acme.clinic.test"})
		if res.Status != 200 || !strings.Contains(res.Body, "<h1>Main Room</h1>") || res.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("room page by host: %d %s", res.Status, res.Body)
		}
	})
	t.Run("OKClosed", func(t *testing.T) {
		yes, msg := true, "Back on Monday."
		if _, err := f.e.App.UpdateRoom(ctx, admin, "main", app.RoomUpdate{IsClosed: &yes, CloseMsg: &msg}); err != nil {
			t.Fatal(err)
		}
		res := newBrowser(t, f.e).get("/c/acme/main")
		if res.Status != 200 || !strings.Contains(res.Body, "This room is closed now. Back on Monday.") {
			t.Fatalf("closed room: %d %s", res.Status, res.Body)
		}
	})
	t.Run("ErrUnknownRoom", func(t *testing.T) {
		if res := newBrowser(t, f.e).get("/c/acme/nope"); res.Status != http.StatusNotFound {
			t.Fatalf("unknown room: %d %s", res.Status, res.Body)
		}
		if res := newBrowser(t, f.e).get("/c/nope/main"); res.Status != http.StatusNotFound {
			t.Fatalf("unknown clinic: %d %s", res.Status, res.Body)
		}
	})
	t.Run("ErrHostOfAnotherDomain", func(t *testing.T) {
		// The room's domain must be the host's: anything else is left to
		// the API, which knows no such route.
		res := newBrowser(t, f.e).do("GET", "/main", nil, map[string]string{"Host": "acme.elsewhere.example"})
		if res.Status != http.StatusNotFound || strings.Contains(res.Body, "Main Room") {
			t.Fatalf("another domain: %d %s", res.Status, res.Body)
		}
	})
}

// TestPortal_GuestWalkin: a guest opens the room's address, joins as a
// guest, fills the intake and waits: the waiting room shows who is ahead.
func TestPortal_GuestWalkin(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A patient already waits in the room.
	p2 := f.user(t, f.p2Token)
	reason := "Sore throat"
	it, err := f.e.App.CreateIntake(ctx, p2, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.AddWalkin(ctx, p2, app.WalkinInput{IntakeID: it.ID, RoomCode: "main"}); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		b := newBrowser(t, f.e)
		if res := b.get("/c/acme/main"); res.Status != 200 || !strings.Contains(res.Body, "Join as a guest") {
			t.Fatalf("room page for a visitor: %d %s", res.Status, res.Body)
		}
		res := b.post("/c/acme/main/guest", url.Values{"first_name": {"Walk"}, "last_name": {"In"}})
		if res.Status != http.StatusSeeOther || res.Location != "/c/acme/main" {
			t.Fatalf("guest join: %d to %q: %s", res.Status, res.Location, res.Body)
		}
		if res := b.get("/c/acme/main"); !strings.Contains(res.Body, `action="/c/acme/main/intake"`) || strings.Contains(res.Body, "Join as a guest") {
			t.Fatalf("room page for the guest: %s", res.Body)
		}
		res = b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"A rash"}, "terms": {"1"}, "kind": {"walkin"}})
		if res.Status != http.StatusSeeOther || !strings.HasPrefix(res.Location, "/visits/start/") {
			t.Fatalf("walk-in: %d to %q: %s", res.Status, res.Location, res.Body)
		}
		page := b.get(res.Location)
		if page.Status != 200 || !strings.Contains(page.Body, "Waiting room") || !strings.Contains(page.Body, "1 patient before you") ||
			!strings.Contains(page.Body, "Reason for the visit: A rash") {
			t.Fatalf("waiting room: %d %s", page.Status, page.Body)
		}
	})

	t.Run("ErrTermsNotAccepted", func(t *testing.T) {
		b := newBrowser(t, f.e)
		b.post("/c/acme/main/guest", url.Values{"first_name": {"Walk"}, "last_name": {"In"}})
		res := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"A rash"}})
		if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "Accept the clinic") {
			t.Fatalf("without the terms: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ErrFormTooLarge", func(t *testing.T) {
		b := newBrowser(t, f.e)
		b.post("/c/acme/main/guest", url.Values{"first_name": {"Walk"}, "last_name": {"In"}})
		res := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {strings.Repeat("x", 100<<10)}, "terms": {"1"}})
		if res.Status != http.StatusRequestEntityTooLarge || !strings.Contains(res.Body, "shorten what you wrote") {
			t.Fatalf("a 100 KB form: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ErrNoName", func(t *testing.T) {
		res := newBrowser(t, f.e).post("/c/acme/main/guest", url.Values{"first_name": {"Walk"}})
		if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "first and last name") {
			t.Fatalf("guest without a last name: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ErrGuestsNotAllowed", func(t *testing.T) {
		admin := f.admin(t)
		no := false
		if _, err := f.e.App.UpdateRoom(ctx, admin, "main", app.RoomUpdate{GuestLogin: &no}); err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, f.e)
		if res := b.get("/c/acme/main"); strings.Contains(res.Body, "Join as a guest") {
			t.Fatalf("the room offers guests a way in: %s", res.Body)
		}
		if res := b.post("/c/acme/main/guest", url.Values{"first_name": {"Walk"}, "last_name": {"In"}}); res.Status != http.StatusForbidden {
			t.Fatalf("guest join where guests may not: %d %s", res.Status, res.Body)
		}
	})
}

// TestPortal_Dashboard: a provider takes a waiting e-consult, starts and
// completes it from the dashboard; the state machine's refusals are shown
// on the page.
func TestPortal_Dashboard(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pw := "a long provider password"
	if _, err := f.e.App.UpdateMe(ctx, f.user(t, f.providerToken), app.ProfileUpdate{Password: &pw}); err != nil {
		t.Fatal(err)
	}
	provider := newBrowser(t, f.e)
	if res := provider.post("/signin", url.Values{"clinic": {"acme"}, "login": {"dr-1"}, "password": {pw}}); res.Location != "/providers/dashboard" {
		t.Fatalf("a provider's sign-in lands on %q", res.Location)
	}
	move := func(b *browser, action string) *page {
		t.Helper()
		return b.post("/providers/visits/"+strconv.FormatInt(f.visitID, 10)+"/"+action, url.Values{})
	}
	status := func() int {
		t.Helper()
		d, err := f.e.App.GetVisit(ctx, f.user(t, f.p1Token), f.visitID, false)
		if err != nil {
			t.Fatal(err)
		}
		return d.Visit.Status
	}

	t.Run("OK", func(t *testing.T) {
		page := provider.get("/providers/dashboard")
		waiting, _, _ := strings.Cut(page.Body, `id="mine"`)
		if page.Status != 200 || !strings.Contains(waiting, "Ada Lovelace") || !strings.Contains(waiting, ">Accept</button>") {
			t.Fatalf("dashboard: %d %s", page.Status, page.Body)
		}
		if res := move(provider, "accept"); res.Status != http.StatusSeeOther {
			t.Fatalf("accept: %d %s", res.Status, res.Body)
		}
		page = provider.get("/providers/dashboard")
		_, mine, _ := strings.Cut(page.Body, `id="mine"`)
		if !strings.Contains(mine, "Ada Lovelace") || !strings.Contains(mine, ">Start</button>") || status() != clinic.VisitConfirmed {
			t.Fatalf("after accepting (status %d): %s", status(), page.Body)
		}
		if res := move(provider, "inprogress"); res.Status != http.StatusSeeOther || status() != clinic.VisitInProgress {
			t.Fatalf("start: %d, status %d", res.Status, status())
		}
		if res := move(provider, "close"); res.Status != http.StatusSeeOther || status() != clinic.VisitCompleted {
			t.Fatalf("complete: %d, status %d", res.Status, status())
		}
		if page := provider.get("/providers/dashboard"); strings.Contains(page.Body, "Ada Lovelace") {
			t.Fatalf("a completed visit is still on the dashboard: %s", page.Body)
		}
	})

	t.Run("ErrConflictShown", func(t *testing.T) {
		res := move(provider, "accept")
		if res.Status != http.StatusConflict || !strings.Contains(res.Body, `role="alert"`) || !strings.Contains(res.Body, "<h1>Dashboard</h1>") {
			t.Fatalf("accepting a completed visit: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ErrPatient", func(t *testing.T) {
		patient := newBrowser(t, f.e)
		f.redirectLogin(t, patient, f.p2Token, "/visits", nil)
		if res := patient.get("/providers/dashboard"); res.Status != http.StatusForbidden {
			t.Fatalf("a patient's dashboard: %d %s", res.Status, res.Body)
		}
		// The page offers a patient no buttons, and app refuses the move.
		if res := move(patient, "inprogress"); res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
			t.Fatalf("a patient's move on another's visit: %d %s", res.Status, res.Body)
		}
	})

	t.Run("ErrUnknownMove", func(t *testing.T) {
		if res := move(provider, "explode"); res.Status != http.StatusNotFound {
			t.Fatalf("an unknown move: %d %s", res.Status, res.Body)
		}
	})
}

// TestPortal_AuthAsksBeforeSwitching: a sign-in link of another user,
// opened by a browser that holds a provider's session (a link from
// another site, say), does not replace the session: the page names both
// people and switches only by its own form, which another site cannot
// send. A link of the same user signs in as before.
func TestPortal_AuthAsksBeforeSwitching(t *testing.T) {
	f := newFixture(t)
	prov := newBrowser(t, f.e)
	f.redirectLogin(t, prov, f.providerToken, "/providers/dashboard", nil)
	pg := prov.get("/auth?sso_token=" + url.QueryEscape(f.p2Token) + "&next=%2Fvisits")
	if pg.Status != 200 || !strings.Contains(pg.Body, "Switch account?") || !strings.Contains(pg.Body, "signed in as Grace Hopper") ||
		!strings.Contains(pg.Body, "signs in as Mallory Other") || !strings.Contains(pg.Body, `<a href="/providers/dashboard">Stay signed in as Grace Hopper</a>`) {
		t.Fatalf("another user's link: %d %s", pg.Status, pg.Body)
	}
	if d := prov.get("/providers/dashboard"); d.Status != 200 {
		t.Fatalf("the provider's session after the link: %d", d.Status)
	}
	form := url.Values{"sso_token": {f.p2Token}, "next": {"/visits"}}
	if pg := prov.do("POST", "/auth", form, map[string]string{"Sec-Fetch-Site": "cross-site"}); pg.Status != 403 {
		t.Fatalf("the switch posted from another site: %d", pg.Status)
	}
	if d := prov.get("/providers/dashboard"); d.Status != 200 {
		t.Fatalf("the provider's session after a cross-site post: %d", d.Status)
	}
	if pg := prov.post("/auth", form); pg.Status != 303 || pg.Location != "/visits" {
		t.Fatalf("the switch: %d %s", pg.Status, pg.Location)
	}
	if v := prov.get("/visits"); v.Status != 200 || !strings.Contains(v.Body, "Your visits") {
		t.Fatalf("after the switch: %d", v.Status)
	}
	if d := prov.get("/providers/dashboard"); d.Status == 200 {
		t.Fatal("the dashboard still answers after switching to the patient")
	}
	// The same user's link: no question.
	if pg := prov.get("/auth?sso_token=" + url.QueryEscape(f.p2Token) + "&next=%2Fvisits"); pg.Status != 303 {
		t.Fatalf("the same user's link: %d", pg.Status)
	}
}

// TestPortal_SignOutKeepsTheIntegratorsSession: the portal's session is a
// login of its own; signing out of the portal ends it, and the SSO
// session the integrator's app holds (whose token made the sign-in link)
// goes on working.
func TestPortal_SignOutKeepsTheIntegratorsSession(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	if pg := b.get("/visits"); pg.Status != 200 {
		t.Fatalf("signed in: %d", pg.Status)
	}
	if pg := b.post("/signout", nil); pg.Status != 303 {
		t.Fatalf("sign out: %d", pg.Status)
	}
	if pg := b.get("/visits"); pg.Status != 303 || !strings.HasPrefix(pg.Location, "/signin") {
		t.Fatalf("the portal after signing out: %d %s", pg.Status, pg.Location)
	}
	me := b.do("GET", "/api_v3/me", nil, map[string]string{"X-AccountCode": "acme", "X-ApiToken": f.p1Token})
	if me.Status != 200 {
		t.Fatalf("the integrator's SSO token after the portal's sign-out: %d %s", me.Status, me.Body)
	}
}

// TestPortal_LongThread: a visit page shows the latest 200 messages of its
// thread and says how many came before, with Earlier messages to read
// them and Latest messages to come back; the pages together are the
// thread, each message once, in order. The page used to show the latest
// 200 and nothing of the rest.
func TestPortal_LongThread(t *testing.T) {
	f := newFixture(t) // its e-consult holds one message
	p1 := f.user(t, f.p1Token)
	for i := range 259 {
		msg := fmt.Sprintf("Update %03d.", i)
		if _, err := f.e.App.PostMessage(context.Background(), p1, f.visitID, app.NewMessage{Content: &msg}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, f.visitPath(), nil)
	items := regexp.MustCompile(`<p>(It is worse at night\.|Update \d{3}\.)</p>`)
	latest := b.get(f.visitPath())
	got := items.FindAllStringSubmatch(latest.Body, -1)
	if latest.Status != 200 || len(got) != app.MessagePageMax || got[len(got)-1][1] != "Update 258." {
		t.Fatalf("the latest page: %d, %d messages", latest.Status, len(got))
	}
	m := regexp.MustCompile(`href="(/visits/start/\d+\?older=200)#thread">Earlier messages \(60\)`).FindStringSubmatch(latest.Body)
	if m == nil {
		t.Fatal("the latest page does not offer the 60 earlier messages")
	}
	earlier := b.get(m[1])
	before := items.FindAllStringSubmatch(earlier.Body, -1)
	if earlier.Status != 200 || len(before) != 60 || before[0][1] != "It is worse at night." || strings.Contains(earlier.Body, "Earlier messages") ||
		!strings.Contains(earlier.Body, `href="`+f.visitPath()+`#thread">Latest messages`) || !strings.Contains(earlier.Body, `data-live-page="`+f.visitPath()+`?older=200"`) {
		t.Fatalf("the earlier page: %d, %d messages", earlier.Status, len(before))
	}
	all := append(before, got...)
	for i := 1; i < len(all); i++ {
		if want := fmt.Sprintf("Update %03d.", i-1); all[i][1] != want {
			t.Fatalf("message %d: %q, want %q", i, all[i][1], want)
		}
	}
}

// /u/{clinic} lists the clinic's public, active rooms by name, 50 at a
// time, however many of its rooms are private or closed; a patient with
// nothing coming up sees the first 50 on /visits and a link to the rest.
func TestPortal_ClinicHomePages(t *testing.T) {
	f := newFixture(t)
	main := f.mainRoom(t)
	db := f.e.Store.DB()
	var want []string
	for i := range 150 {
		code, name := fmt.Sprintf("r-%03d", i), fmt.Sprintf("Room %03d", 149-i)
		settings, active := `{"public_access_room":true}`, 1
		switch i % 5 {
		case 1, 3:
			settings = `{}` // private
		case 2:
			active = 0 // closed
		}
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO rooms (account_id, code, slug, name, domain, active, settings, created, modified)
			SELECT account_id, ?, ?, ?, domain, ?, ?, 1, 1 FROM rooms WHERE id = ?`), code, code, name, active, settings, main); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 || i%5 == 4 {
			want = append(want, name)
		}
	}
	slices.Sort(want) // 60 public rooms, by name ("Main Room" is not public)
	seen := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<strong>(Room \d{3})</strong>`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	b := newBrowser(t, f.e)
	var got []string
	path := "/u/acme"
	for n := 0; ; n++ {
		res := b.get(path)
		if res.Status != 200 || n > 4 {
			t.Fatalf("%s: %d", path, res.Status)
		}
		rooms := seen(res.Body)
		if len(rooms) > 50 {
			t.Fatalf("%s lists %d rooms", path, len(rooms))
		}
		got = append(got, rooms...)
		more := regexp.MustCompile(`href="(/u/acme\?from=\d+)">More rooms`).FindStringSubmatch(res.Body)
		if more == nil {
			break
		}
		path = more[1]
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the clinic's home lists %v, want %v", got, want)
	}

	// Mallory has no visit: /visits offers the first 50 and the rest.
	mb := newBrowser(t, f.e)
	f.redirectLogin(t, mb, f.p2Token, "/visits", nil)
	visits := mb.get("/visits")
	if rooms := seen(visits.Body); visits.Status != 200 || strings.Join(rooms, ",") != strings.Join(want[:50], ",") {
		t.Fatalf("/visits: %d, rooms %v", visits.Status, rooms)
	}
	more := regexp.MustCompile(`href="(/u/acme\?from=\d+)">More rooms`).FindStringSubmatch(visits.Body)
	if more == nil {
		t.Fatal("/visits has no link to the clinic's other rooms")
	}
	if rest := seen(b.get(more[1]).Body); strings.Join(rest, ",") != strings.Join(want[50:], ",") {
		t.Fatalf("the link from /visits lists %v, want %v", rest, want[50:])
	}
}

// TestPortal_RootAndShortAddresses: the portal's root sends each person to
// their own start, the signed-out to the sign-in, and /c/{clinic} to the
// clinic's home: none answers the API's JSON.
func TestPortal_RootAndShortAddresses(t *testing.T) {
	f := newFixture(t)
	anon := newBrowser(t, f.e)
	if pg := anon.get("/"); pg.Status != 303 || pg.Location != "/signin" {
		t.Fatalf("the root, signed out: %d %s", pg.Status, pg.Location)
	}
	if pg := anon.get("/c/acme"); pg.Status != 303 || pg.Location != "/u/acme" {
		t.Fatalf("a clinic's short address: %d %s", pg.Status, pg.Location)
	}
	for token, want := range map[string]string{f.p1Token: "/visits", f.providerToken: "/providers/dashboard"} {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, token, "/visits", nil)
		if pg := b.get("/"); pg.Status != 303 || pg.Location != want {
			t.Fatalf("the root for %s: %d %s", want, pg.Status, pg.Location)
		}
	}
	admin := newBrowser(t, f.e)
	f.adminSignIn(t, admin)
	if pg := admin.get("/"); pg.Status != 303 || pg.Location != "/admin" {
		t.Fatalf("the root for the admin: %d %s", pg.Status, pg.Location)
	}
}

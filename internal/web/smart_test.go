package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// smartApp is a registered SMART app and what a test drives it with.
type smartApp struct {
	clientID, redirect string
}

func registerApp(t *testing.T, f *fixture, name, kind, redirect string) smartApp {
	t.Helper()
	rc, err := f.e.App.RegisterOAuthClient(context.Background(), f.admin(t), app.OAuthClientInput{Name: name, Kind: kind, RedirectURIs: []string{redirect}})
	if err != nil {
		t.Fatal(err)
	}
	return smartApp{clientID: rc.ClientID, redirect: redirect}
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	Scope        string `json:"scope"`
	Patient      string `json:"patient"`
	FHIRUser     string `json:"fhirUser"`
	ExpiresIn    int64  `json:"expires_in"`
	Error        string `json:"error"`
}

// authorize runs the SMART authorization code flow in b (signed in to
// the portal) up to the code: the app's redirect to /oauth/authorize, the
// consent page, allow. It answers the consent page and the code.
func authorize(t *testing.T, b *browser, f *fixture, a smartApp, scope, challenge string) (consent *page, code string) {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {a.clientID}, "redirect_uri": {a.redirect}, "scope": {scope},
		"state": {"st-1"}, "aud": {f.e.URL + "/fhir/R4"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	res := b.get("/oauth/authorize?" + q.Encode())
	if res.Status != http.StatusFound || !strings.HasPrefix(res.Location, "/oauth/consent/") {
		t.Fatalf("authorize: %d %q %s", res.Status, res.Location, res.Body)
	}
	consent = b.get(res.Location)
	if consent.Status != 200 {
		t.Fatalf("consent page: %d %s", consent.Status, consent.Body)
	}
	res = b.post(res.Location, url.Values{"decision": {"allow"}})
	if res.Status != http.StatusSeeOther {
		t.Fatalf("allow: %d %s", res.Status, res.Body)
	}
	cb := mustURL(t, res.Location)
	res = b.get(cb.Path + "?" + cb.RawQuery)
	back := mustURL(t, res.Location)
	if res.Status != http.StatusFound || !strings.HasPrefix(res.Location, a.redirect) || back.Query().Get("state") != "st-1" || back.Query().Get("code") == "" {
		t.Fatalf("callback: %d %q %s", res.Status, res.Location, res.Body)
	}
	return consent, back.Query().Get("code")
}

func tokenCall(t *testing.T, b *browser, form url.Values) (int, tokenAnswer) {
	t.Helper()
	res := b.do("POST", "/oauth/token", form, nil)
	var out tokenAnswer
	if err := json.Unmarshal([]byte(res.Body), &out); err != nil {
		t.Fatalf("token answer: %d %s", res.Status, res.Body)
	}
	return res.Status, out
}

// TestSMART_StandaloneLaunch: a patient launches a public app on their
// own (SMART App Launch 2, standalone): PKCE S256, the portal's sign-in,
// a consent that lists what the app will read and refuses what the
// patient's role does not hold; the token carries the patient and
// fhirUser, reads the patient's Encounters and nothing the grant lacks;
// the refresh token rotates; revoking the app ends its tokens; every step
// is audited.
func TestSMART_StandaloneLaunch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	b := newBrowser(t, f.e)
	a := registerApp(t, f, "Symptom Diary", clinic.ClientPublic, "http://127.0.0.1:9/app")
	p1 := f.user(t, f.p1Token)

	// The configuration names the authorization server.
	res := b.get("/fhir/R4/.well-known/smart-configuration")
	var conf struct {
		Issuer, AuthorizationEndpoint, TokenEndpoint string   `json:"-"`
		Authorize                                    string   `json:"authorization_endpoint"`
		Token                                        string   `json:"token_endpoint"`
		Methods                                      []string `json:"code_challenge_methods_supported"`
		Capabilities                                 []string `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(res.Body), &conf); err != nil || conf.Authorize != f.e.URL+"/oauth/authorize" || conf.Token != f.e.URL+"/oauth/token" ||
		len(conf.Methods) != 1 || conf.Methods[0] != "S256" || !strings.Contains(strings.Join(conf.Capabilities, " "), "launch-standalone") {
		t.Fatalf("smart-configuration: %s", res.Body)
	}

	// Signed in to the portal (the integrator's redirect login).
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	verifier := oauth2.GenerateVerifier()
	scope := "openid fhirUser launch/patient offline_access patient/Encounter.rs patient/Patient.rs user/Patient.c system/*.rs"
	consent, code := authorize(t, b, f, a, scope, oauth2.S256ChallengeFromVerifier(verifier))
	for _, want := range []string{"Symptom Diary", "See: your visits", "patient/Encounter.rs", "user/Patient.c", "Your account cannot do this.", "system/*.rs"} {
		if !strings.Contains(consent.Body, want) {
			t.Errorf("the consent page does not say %q", want)
		}
	}

	// A wrong verifier is refused; the right one gets the tokens.
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirect}, "client_id": {a.clientID}}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("code_verifier", oauth2.GenerateVerifier())
	if st, out := tokenCall(t, b, bad); st != 400 || out.Error != "invalid_grant" {
		t.Fatalf("a wrong verifier: %d %+v", st, out)
	}
	form.Set("code_verifier", verifier)
	st, tok := tokenCall(t, b, form)
	if st != 200 || tok.AccessToken == "" || tok.RefreshToken == "" || tok.IDToken == "" || tok.Patient != strconv.FormatInt(p1.User.ID, 10) ||
		tok.FHIRUser != f.e.URL+"/fhir/R4/Patient/"+tok.Patient || strings.Contains(tok.Scope, "user/Patient.c") || strings.Contains(tok.Scope, "system") ||
		!strings.Contains(tok.Scope, "patient/Encounter.rs") || tok.ExpiresIn <= 0 {
		t.Fatalf("the token: %d %+v", st, tok)
	}
	// A code is used once.
	if st, _ := tokenCall(t, b, form); st != 400 {
		t.Fatalf("the code used again: %d", st)
	}

	fhir := func(method, path, token, body string) *page {
		h := map[string]string{"Authorization": "Bearer " + token}
		if body != "" {
			h["Content-Type"] = "application/fhir+json"
		}
		return b.send(method, path, strings.NewReader(body), h)
	}
	enc := fhir("GET", "/fhir/R4/Encounter?patient="+tok.Patient, tok.AccessToken, "")
	var bundle struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal([]byte(enc.Body), &bundle); enc.Status != 200 || err != nil || bundle.Total != 1 {
		t.Fatalf("the patient's Encounters: %d %s", enc.Status, enc.Body)
	}
	// What the grant lacks is refused, whatever the role allows.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/fhir/R4/Observation?patient=" + tok.Patient, ""},
		{"POST", "/fhir/R4/Patient", `{"resourceType": "Patient", "name": [{"family": "X", "given": ["Y"]}]}`},
		{"GET", "/fhir/R4/Slot", ""},
	} {
		if res := fhir(c.method, c.path, tok.AccessToken, c.body); res.Status != 403 || !strings.Contains(res.Body, "OperationOutcome") {
			t.Errorf("%s %s: %d %s", c.method, c.path, res.Status, res.Body)
		}
	}
	// Who the person is, for the app (OpenID Connect userinfo).
	var info struct {
		Sub      string `json:"sub"`
		FHIRUser string `json:"fhirUser"`
	}
	if res := fhir("GET", "/oauth/userinfo", tok.AccessToken, ""); res.Status != 200 || json.Unmarshal([]byte(res.Body), &info) != nil ||
		info.Sub != tok.Patient || info.FHIRUser != tok.FHIRUser {
		t.Fatalf("userinfo: %d %s", res.Status, res.Body)
	}
	// The token opens the FHIR API only.
	if res := b.send("GET", "/api_v3/me", nil, map[string]string{"X-AccountCode": "acme", "X-ApiToken": tok.AccessToken}); res.Status != 401 {
		t.Fatalf("an app token on the API: %d", res.Status)
	}

	// The refresh token rotates: used once, then refused.
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {a.clientID}}
	st, renewed := tokenCall(t, b, refresh)
	if st != 200 || renewed.AccessToken == "" || renewed.RefreshToken == "" || renewed.RefreshToken == tok.RefreshToken || renewed.Patient != tok.Patient {
		t.Fatalf("the refresh: %d %+v", st, renewed)
	}
	if st, out := tokenCall(t, b, refresh); st != 400 || out.Error != "invalid_grant" {
		t.Fatalf("a refresh token used twice: %d %+v", st, out)
	}
	if res := fhir("GET", "/fhir/R4/Encounter", renewed.AccessToken, ""); res.Status != 200 {
		t.Fatalf("the renewed token: %d %s", res.Status, res.Body)
	}

	// Audited: the grant, each token, each read as the app's.
	var clientID string
	for _, c := range []struct {
		query string
		min   int
	}{
		{"SELECT COUNT(*) FROM audit WHERE action = 'oauth.grant' AND object_id = '" + a.clientID + "'", 1},
		{"SELECT COUNT(*) FROM audit WHERE action = 'oauth.token' AND object_id = '" + a.clientID + "'", 2},
		{"SELECT COUNT(*) FROM audit WHERE action = 'record.read' AND actor_kind = 'user_token:app:" + a.clientID + "'", 2},
	} {
		f.e.FlushAudits()
		var n int
		if err := f.e.Store.DB().QueryRow(c.query).Scan(&n); err != nil || n < c.min {
			t.Errorf("%s: %d (%v)", c.query, n, err)
		}
	}
	_ = clientID

	// Revoked by the admin: its tokens stop at once.
	cs, err := f.e.App.OAuthClients(context.Background(), f.admin(t))
	if err != nil || len(cs) != 1 {
		t.Fatal(err)
	}
	if err := f.e.App.RevokeOAuthClient(context.Background(), f.admin(t), cs[0].ID); err != nil {
		t.Fatal(err)
	}
	if res := fhir("GET", "/fhir/R4/Encounter", renewed.AccessToken, ""); res.Status != 401 {
		t.Fatalf("a revoked app's token: %d %s", res.Status, res.Body)
	}
	if st, _ := tokenCall(t, b, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {renewed.RefreshToken}, "client_id": {a.clientID}}); st == 200 {
		t.Fatal("a revoked app refreshed its token")
	}
}

// TestSMART_Refusals: what the authorization server refuses before any
// consent: no PKCE, plain PKCE, another server's aud, an address the app
// did not register, an unknown app; and a person's refusal reaches the
// app as access_denied.
func TestSMART_Refusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	b := newBrowser(t, f.e)
	a := registerApp(t, f, "Symptom Diary", clinic.ClientPublic, "http://127.0.0.1:9/app")
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	challenge := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	base := url.Values{"response_type": {"code"}, "client_id": {a.clientID}, "redirect_uri": {a.redirect}, "scope": {"openid patient/*.rs"},
		"state": {"s"}, "aud": {f.e.URL + "/fhir/R4"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	with := func(kv ...string) string {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				q.Del(kv[i])
			} else {
				q.Set(kv[i], kv[i+1])
			}
		}
		return "/oauth/authorize?" + q.Encode()
	}
	// Refused back to the app, which hears why.
	for _, c := range []struct{ name, path, want string }{
		{"no PKCE", with("code_challenge", "", "code_challenge_method", ""), "invalid_request"},
		{"plain PKCE", with("code_challenge_method", "plain"), "invalid_request"},
	} {
		res := b.get(c.path)
		if res.Status != http.StatusFound || mustURL(t, res.Location).Query().Get("error") != c.want || !strings.HasPrefix(res.Location, a.redirect) {
			t.Errorf("%s: %d %q", c.name, res.Status, res.Location)
		}
	}
	// Refused on the spot: no address to send an answer to.
	for _, c := range []struct{ name, path string }{
		{"another server's aud", with("aud", "https://elsewhere.example/fhir")},
		{"no aud", with("aud", "")},
		{"an unregistered address", with("redirect_uri", "http://127.0.0.1:9/elsewhere")},
		{"an unknown app", with("client_id", "nope")},
	} {
		if res := b.get(c.path); res.Status != http.StatusBadRequest && res.Status != http.StatusUnauthorized {
			t.Errorf("%s: %d %q", c.name, res.Status, res.Location)
		}
	}
	// The person says no: the app hears access_denied, and no code.
	res := b.get(with())
	consent := res.Location
	res = b.post(consent, url.Values{"decision": {"deny"}})
	back := mustURL(t, res.Location)
	if res.Status != http.StatusSeeOther || back.Query().Get("error") != "access_denied" || back.Query().Get("state") != "s" || back.Query().Get("code") != "" {
		t.Fatalf("deny: %d %q", res.Status, res.Location)
	}
	if again := b.get(consent); again.Status == 200 {
		t.Fatal("a refused request can still be approved")
	}
	// A provider's patient/ scopes are refused (no patient is chosen),
	// their user/ scopes granted.
	pb := newBrowser(t, f.e)
	f.redirectLogin(t, pb, f.providerToken, "/providers/dashboard", nil)
	res = pb.get(with("scope", "openid user/Encounter.rs patient/*.rs"))
	page := pb.get(res.Location)
	if !strings.Contains(page.Body, "user/Encounter.rs") || !strings.Contains(page.Body, "no patient chosen") {
		t.Fatalf("the provider's consent: %s", page.Body)
	}
	// Not signed in: the clinic's sign-in, then back here.
	anon := newBrowser(t, f.e)
	res = anon.get(with())
	res = anon.get(res.Location)
	if res.Status != http.StatusSeeOther || !strings.HasPrefix(res.Location, "/signin?clinic=acme&next=%2Foauth%2Fconsent%2F") {
		t.Fatalf("signed out: %d %q", res.Status, res.Location)
	}
}

// TestSMART_PersonTakesBack: the patient sees the app they allowed on
// their profile and takes their permission back: the app's tokens stop at
// once, its refresh token too, and the profile no longer lists it.
// Another person cannot take back what is not theirs.
func TestSMART_PersonTakesBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	b := newBrowser(t, f.e)
	a := registerApp(t, f, "Symptom Diary", clinic.ClientPublic, "http://127.0.0.1:9/app")
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	verifier := oauth2.GenerateVerifier()
	_, code := authorize(t, b, f, a, "openid offline_access patient/Encounter.rs", oauth2.S256ChallengeFromVerifier(verifier))
	st, tok := tokenCall(t, b, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirect}, "client_id": {a.clientID}, "code_verifier": {verifier}})
	if st != 200 {
		t.Fatalf("token: %d %+v", st, tok)
	}
	read := func() int {
		return b.send("GET", "/fhir/R4/Encounter", nil, map[string]string{"Authorization": "Bearer " + tok.AccessToken}).Status
	}
	if read() != 200 {
		t.Fatal("the token does not read")
	}
	if pg := b.get("/profile"); !strings.Contains(pg.Body, "Symptom Diary") || !strings.Contains(pg.Body, "Apps you allowed") {
		t.Fatalf("the profile does not list the app: %s", pg.Body)
	}
	// Another patient has nothing of the app's to take back.
	other := newBrowser(t, f.e)
	f.redirectLogin(t, other, f.p2Token, "/visits", nil)
	if pg := other.post("/profile/apps/"+a.clientID+"/disconnect", nil); pg.Status != 404 {
		t.Fatalf("another person's take-back: %d", pg.Status)
	}
	if read() != 200 {
		t.Fatal("another person's take-back reached the patient's token")
	}
	if pg := b.post("/profile/apps/"+a.clientID+"/disconnect", nil); pg.Status != 303 {
		t.Fatalf("take back: %d %s", pg.Status, pg.Body)
	}
	if read() != 401 {
		t.Fatal("the app still reads")
	}
	if st, _ := tokenCall(t, b, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {a.clientID}}); st == 200 {
		t.Fatal("the app refreshed a token it was taken back from")
	}
	if pg := b.get("/profile"); strings.Contains(pg.Body, "Symptom Diary") {
		t.Fatal("the profile still lists the app")
	}
}

// TestSMART_ConfidentialApp: an app with a server that keeps its secret
// exchanges its code with HTTP Basic authentication (and PKCE still); a
// wrong secret is invalid_client and the code is not spent.
func TestSMART_ConfidentialApp(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	b := newBrowser(t, f.e)
	rc, err := f.e.App.RegisterOAuthClient(context.Background(), f.admin(t), app.OAuthClientInput{Name: "Bridge", Kind: clinic.ClientConfidential,
		RedirectURIs: []string{"https://bridge.example.com/cb"}})
	if err != nil || rc.Secret == "" {
		t.Fatalf("register: %v", err)
	}
	a := smartApp{clientID: rc.ClientID, redirect: "https://bridge.example.com/cb"}
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	verifier := oauth2.GenerateVerifier()
	_, code := authorize(t, b, f, a, "openid fhirUser patient/Encounter.rs", oauth2.S256ChallengeFromVerifier(verifier))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirect}, "code_verifier": {verifier}}
	basic := func(secret string) (int, tokenAnswer) {
		res := b.send("POST", "/oauth/token", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded",
			"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(a.clientID)+":"+url.QueryEscape(secret)))})
		var out tokenAnswer
		_ = json.Unmarshal([]byte(res.Body), &out)
		return res.Status, out
	}
	if st, out := basic("not-the-secret"); st/100 != 4 || out.Error != "invalid_client" {
		t.Fatalf("a wrong secret: %d %+v", st, out)
	}
	st, tok := basic(rc.Secret)
	if st != 200 || tok.AccessToken == "" || tok.Patient == "" {
		t.Fatalf("the confidential exchange: %d %+v", st, tok)
	}
	if res := b.send("GET", "/fhir/R4/Encounter", nil, map[string]string{"Authorization": "Bearer " + tok.AccessToken}); res.Status != 200 {
		t.Fatalf("its token: %d %s", res.Status, res.Body)
	}
}

// TestSMART_CodeUsedOnce: one code exchanged by eight requests at once
// gives one token; the others are invalid_grant, and only one token row
// is written.
func TestSMART_CodeUsedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	b := newBrowser(t, f.e)
	a := registerApp(t, f, "Symptom Diary", clinic.ClientPublic, "http://127.0.0.1:9/app")
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	verifier := oauth2.GenerateVerifier()
	_, code := authorize(t, b, f, a, "openid offline_access patient/Encounter.rs", oauth2.S256ChallengeFromVerifier(verifier))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirect}, "client_id": {a.clientID}, "code_verifier": {verifier}}
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := http.PostForm(f.e.URL+"/oauth/token", form)
			if err != nil {
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			statuses[i] = res.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for _, s := range statuses {
		switch s {
		case 200:
			won++
		case 400:
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	var rows int
	if err := f.e.Store.DB().QueryRow("SELECT COUNT(*) FROM oauth_tokens").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if won != 1 || rows != 1 {
		t.Fatalf("%d exchanges won, %d token rows (statuses %v)", won, rows, statuses)
	}
}

package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// ehrStandIn is an EHR for the launch tests: an OpenID provider built on
// zitadel/oidc (its example storage and test user, who is signed in), that
// launches Teleclinic with a patient and an appointment in the token
// response (SMART's patient and fhirContext), names the launching user in
// its ID token's fhirUser, and serves those resources.
type ehrStandIn struct {
	srv                    *httptest.Server
	iss                    string // its FHIR base
	clientID, secret       string
	fhirUser, practitioner string // the launching user, and their email
	patient, appointment   string
}

// ehrStorage is the example storage with SMART's fhirUser in the ID token.
type ehrStorage struct {
	*storage.Storage
	ehr *ehrStandIn
}

func (s *ehrStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	info.AppendClaims("fhirUser", s.ehr.fhirUser)
	return nil
}

// ehrServer adds the launch context to the token response.
type ehrServer struct {
	*op.LegacyServer
	ehr *ehrStandIn
}

func (s *ehrServer) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	resp, err := s.LegacyServer.CodeExchange(ctx, r)
	if err != nil {
		return nil, err
	}
	resp.Data = struct {
		*oidc.AccessTokenResponse
		Patient     string              `json:"patient"`
		FHIRContext []map[string]string `json:"fhirContext,omitempty"`
	}{resp.Data.(*oidc.AccessTokenResponse), s.ehr.patient, []map[string]string{{"reference": "Appointment/" + s.ehr.appointment}}}
	return resp, nil
}

func newEHR(t *testing.T, redirect string) *ehrStandIn {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	ehr := &ehrStandIn{srv: srv, iss: issuer + "/fhir", clientID: "teleclinic", secret: "ehr-secret", fhirUser: "Practitioner/dr-9",
		practitioner: "grace@acme.example.com", patient: "p-77", appointment: "a-5"}
	users := storage.NewUserStore(issuer)
	st := &ehrStorage{Storage: storage.NewStorageWithClients(users, map[string]*storage.Client{
		ehr.clientID: storage.WebClient(ehr.clientID, ehr.secret, redirect)}), ehr: ehr}
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256([]byte("ehr")), CodeMethodS256: true, AuthMethodPost: true},
		st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	opHandler := op.RegisterLegacyServer(&ehrServer{LegacyServer: op.NewLegacyServer(provider, provider.Endpoints()), ehr: ehr}, op.AuthorizeCallbackHandler(provider))
	mux := http.NewServeMux()
	// The EHR's user is signed in already: its login step approves.
	mux.HandleFunc("/login/username", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("authRequestID")
		host, _, _ := net.SplitHostPort(srv.Listener.Addr().String())
		if err := st.CheckUsernamePassword("test-user@"+host, "verysecure", id); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, issuer+"/authorize/callback?id="+url.QueryEscape(id), http.StatusFound)
	})
	serve := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && !strings.Contains(r.URL.Path, ".well-known") {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/fhir+json")
			json.NewEncoder(w).Encode(v)
		}
	}
	mux.Handle("/fhir/.well-known/smart-configuration", serve(map[string]any{"issuer": issuer, "authorization_endpoint": issuer + "/authorize",
		"token_endpoint": issuer + "/oauth/token", "capabilities": []string{"launch-ehr", "client-confidential-symmetric"}}))
	mux.Handle("/fhir/Patient/p-77", serve(map[string]any{"resourceType": "Patient", "id": "p-77", "name": []map[string]any{{"family": "Diaz", "given": []string{"Rosa"}}},
		"gender": "female", "birthDate": "1984-05-06", "telecom": []map[string]string{{"system": "email", "value": "rosa@example.com"}}}))
	mux.Handle("/fhir/Appointment/a-5", serve(map[string]any{"resourceType": "Appointment", "id": "a-5", "status": "booked",
		"start": "2026-03-05T15:00:00Z", "end": "2026-03-05T15:30:00Z"}))
	mux.Handle("/fhir/Practitioner/dr-9", serve(map[string]any{"resourceType": "Practitioner", "id": "dr-9", "telecom": []map[string]string{{"system": "email", "value": ehr.practitioner}}}))
	mux.Handle("/fhir/Practitioner/dr-10", serve(map[string]any{"resourceType": "Practitioner", "id": "dr-10", "telecom": []map[string]string{{"system": "email", "value": "hedy@acme.example.com"}}}))
	mux.Handle("/", opHandler)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return ehr
}

// launch opens Teleclinic from the EHR in a browser (a client that
// follows redirects and keeps cookies), as the EHR's launch does.
func launch(t *testing.T, c *http.Client, base, iss, launchID string) (int, string) {
	t.Helper()
	res, err := c.Get(base + "/smart/launch?" + url.Values{"iss": {iss}, "launch": {launchID}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// TestSMART_EHRLaunch: a provider opens Teleclinic from inside the EHR
// (SMART EHR launch, Teleclinic the app, against an EHR built on the same
// library): the launch is discovered, authorized with PKCE, its ID token
// verified; the provider, once linked, lands signed in on the visit of the
// launch's patient and appointment — made the first time, the same one
// after — with the patient's link ready to send.
func TestSMART_EHRLaunch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	ehr := newEHR(t, f.e.URL+"/smart/callback")
	admin := map[string]string{"X-AccountCode": "acme", "X-ApiToken": f.clinic.AdminToken}
	res := f.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/ehrs", Header: admin,
		JSON: map[string]string{"iss": ehr.iss, "client_id": ehr.clientID, "client_secret": ehr.secret, "room_code": "main"}})
	if res.Status != 201 {
		t.Fatalf("connect: %d %s", res.Status, res.Raw)
	}
	var conn struct {
		Data struct {
			ID        string `json:"id"`
			LaunchURL string `json:"launch_url"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res.Raw, &conn); err != nil || conn.Data.LaunchURL != f.e.URL+"/smart/launch" {
		t.Fatalf("the connection: %s", res.Raw)
	}
	if again := f.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/ehrs", Header: admin,
		JSON: map[string]string{"iss": ehr.iss, "client_id": "x", "room_code": "main"}}); again.Status != 409 {
		t.Fatalf("the same EHR twice: %d", again.Status)
	}
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Transport: testenv.Transport, Jar: jar}
	}

	// Not linked, and no provider has the Practitioner's email: refused,
	// saying what to do.
	if st, body := launch(t, browser(), f.e.URL, ehr.iss, "L1"); st != 403 || !strings.Contains(body, "not linked to a provider") {
		t.Fatalf("an unlinked EHR user: %d %s", st, body)
	}
	// Linked once by the admin: the provider lands on the new visit.
	prov := f.user(t, f.providerToken).User
	if res := f.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/ehrs/" + conn.Data.ID + "/links", Header: admin,
		JSON: map[string]string{"fhir_user": ehr.fhirUser, "provider_id": fmt.Sprint(prov.ID)}}); res.Status != 200 {
		t.Fatalf("link: %d %s", res.Status, res.Raw)
	}
	b := browser()
	st, body := launch(t, b, f.e.URL, ehr.iss, "L2")
	if st != 200 || !strings.Contains(body, "Visit with Rosa Diaz") || !strings.Contains(body, f.e.URL+"/v/") || !strings.Contains(body, "made from the EHR") {
		t.Fatalf("the landing: %d %s", st, body)
	}
	var visit, patient int64
	var start int64
	if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind(`SELECT v.id, v.member_id, v.starts_at FROM visits v JOIN users u ON u.id = v.member_id
		WHERE u.code LIKE 'ehr%' AND v.provider_id = ?`), prov.ID).Scan(&visit, &patient, &start); err != nil {
		t.Fatalf("the visit: %v", err)
	}
	if start != 1772722800 { // the appointment's 2026-03-05T15:00:00Z
		t.Fatalf("the visit starts at %d", start)
	}
	// Signed in: the visit's page opens.
	page, err := b.Get(f.e.URL + fmt.Sprintf("/visits/start/%d", visit))
	if err != nil || page.StatusCode != 200 {
		t.Fatalf("the visit page: %v %v", page.StatusCode, err)
	}
	page.Body.Close()
	// The same appointment again: the same visit, and the same patient.
	if st, body := launch(t, browser(), f.e.URL, ehr.iss, "L3"); st != 200 || !strings.Contains(body, "This is the visit of the EHR") {
		t.Fatalf("the second launch: %d %s", st, body)
	}
	var visits, patients int
	f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT COUNT(*) FROM visits WHERE member_id = ?"), patient).Scan(&visits)
	f.e.Store.DB().QueryRow("SELECT COUNT(*) FROM users WHERE code LIKE 'ehr%'").Scan(&patients)
	if visits != 1 || patients != 1 {
		t.Fatalf("after two launches: %d visits, %d patients", visits, patients)
	}
	f.e.FlushAudits()
	var audits int
	f.e.Store.DB().QueryRow("SELECT COUNT(*) FROM audit WHERE action = 'ehr.launch'").Scan(&audits)
	if audits != 2 {
		t.Fatalf("%d launches audited", audits)
	}

	// Another EHR user, whose Practitioner's email is a provider's: linked
	// the first time, by it.
	key := f.key
	hedy, err := f.e.App.SSO(context.Background(), key, app.SSOInput{FirstName: "Hedy", LastName: "Lamarr", Type: clinic.UserProvider, Code: "dr-2", Email: "hedy@acme.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ehr.fhirUser = "Practitioner/dr-10"
	if st, body := launch(t, browser(), f.e.URL, ehr.iss, "L5"); st != 200 || !strings.Contains(body, "Visit with Rosa Diaz") {
		t.Fatalf("the provider matched by email: %d %s", st, body)
	}
	var linked int64
	if err := f.e.Store.DB().QueryRow("SELECT user_id FROM ehr_links WHERE fhir_user = 'Practitioner/dr-10'").Scan(&linked); err != nil || linked != hedy.Session.UserID {
		t.Fatalf("the email's provider is not linked: %d %v", linked, err)
	}
	// She launched the appointment's visit, not started yet: it is hers now.
	var holder int64
	if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT provider_id FROM visits WHERE id = ?"), visit).Scan(&holder); err != nil || holder != hedy.Session.UserID {
		t.Fatalf("the visit's provider after her launch: %d %v", holder, err)
	}

	// Refusals.
	if st, _ := launch(t, browser(), f.e.URL, "https://unknown.example/fhir", "L4"); st != 404 {
		t.Fatalf("an EHR no clinic connected: %d", st)
	}
	if st, _ := launch(t, browser(), f.e.URL, ehr.iss, ""); st != 400 {
		t.Fatalf("no launch: %d", st)
	}
	if res, err := browser().Get(f.e.URL + "/smart/callback?state=nope&code=x"); err != nil || res.StatusCode/100 != 4 {
		t.Fatalf("a state no launch made: %v %v", res.StatusCode, err)
	}
	// A launch started in one browser and finished in another (someone
	// sending their own launch's answer to sign a victim in as them) is
	// refused, and no session is made.
	starter := browser()
	starter.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res0, err := starter.Get(f.e.URL + "/smart/launch?" + url.Values{"iss": {ehr.iss}, "launch": {"L6"}}.Encode())
	if err != nil || res0.StatusCode != http.StatusFound {
		t.Fatalf("the start: %v %v", res0, err)
	}
	res0.Body.Close()
	victim, err := browser().Get(res0.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	victim.Body.Close()
	if victim.StatusCode != 403 || victim.Request.URL.Path != "/smart/callback" {
		t.Fatalf("another browser's launch finished: %d at %s", victim.StatusCode, victim.Request.URL)
	}
}

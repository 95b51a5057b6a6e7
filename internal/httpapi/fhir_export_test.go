package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"teleclinic/internal/testenv"
)

// backendService is a SMART backend service of a test: its client id and
// the key it signs its assertions with.
type backendService struct {
	clientID string
	key      *rsa.PrivateKey
	kid      string
}

// registerBackend registers a backend service with a new RSA key, as the
// admin does with the service's public keys.
func registerBackend(t *testing.T, e *testenv.Env, admin map[string]string, scopes string) *backendService {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := &backendService{key: key, kid: "k-" + strings.ReplaceAll(t.Name(), "/", "-")}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: b.kid, Algorithm: string(jose.RS384), Use: "sig"}}}
	jwks, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"name": "Warehouse", "kind": "backend", "jwks": string(jwks), "scopes": strings.Fields(scopes)})
	res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/clients", Header: admin, JSON: json.RawMessage(body)})
	if res.Status != 201 {
		t.Fatalf("register: %d %s", res.Status, res.Raw)
	}
	var out struct {
		Data struct {
			ClientID string `json:"client_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res.Raw, &out); err != nil {
		t.Fatal(err)
	}
	b.clientID = out.Data.ClientID
	return b
}

// assertion is a client assertion the service signs (SMART Backend
// Services), with claims changed by edit.
func (b *backendService) assertion(t *testing.T, e *testenv.Env, edit func(map[string]any)) string {
	t.Helper()
	claims := map[string]any{"iss": b.clientID, "sub": b.clientID, "aud": e.App.OAuthIssuer() + "/token",
		"exp": e.Clock.Now().Add(4 * time.Minute).Unix(), "jti": randHex(t)}
	if edit != nil {
		edit(claims)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS384, Key: b.key}, (&jose.SignerOptions{}).WithHeader("kid", b.kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	sig, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sig.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func randHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// token asks for a client_credentials token with an assertion.
func (b *backendService) token(e *testenv.Env, assertion, scope string) *testenv.Resp {
	return e.Do(testenv.Req{Method: "POST", Path: "/oauth/token", NoValidate: true, Form: url.Values{"grant_type": {"client_credentials"}, "scope": {scope},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}}})
}

// TestFHIR_BulkExport: a backend service authenticates by its signed
// assertion (SMART Backend Services: client_credentials, private_key_jwt)
// and exports the clinic (FHIR Bulk Data 2.0): kick-off, status, the
// manifest and NDJSON files of valid R4 resources; _type, _since, a
// Group (a room's patients); each refusal an OperationOutcome or an
// OAuth error.
func TestFHIR_BulkExport(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	admin := adminHeaders(s.c)
	s.econsult(t, s.pat)
	s.econsult(t, s.pat2)
	svc := registerBackend(t, e, admin, "system/*.rs")
	ctx := context.Background()

	// The assertion's refusals.
	for _, c := range []struct {
		name string
		edit func(map[string]any)
	}{
		{"another audience", func(m map[string]any) { m["aud"] = "https://elsewhere.example/token" }},
		{"expired", func(m map[string]any) { m["exp"] = e.Clock.Now().Add(-time.Minute).Unix() }},
		{"too long", func(m map[string]any) { m["exp"] = e.Clock.Now().Add(time.Hour).Unix() }},
		{"sub is not iss", func(m map[string]any) { m["sub"] = "someone" }},
		{"no jti", func(m map[string]any) { delete(m, "jti") }},
	} {
		if res := svc.token(e, svc.assertion(t, e, c.edit), "system/*.rs"); res.Status/100 != 4 || res.Body["error"] != "invalid_client" {
			t.Errorf("%s: %d %s", c.name, res.Status, res.Raw)
		}
	}
	once := svc.assertion(t, e, nil)
	res := svc.token(e, once, "system/*.rs")
	if res.Status != 200 || res.Body["access_token"] == nil || res.Body["scope"] != "system/*.rs" {
		t.Fatalf("the service's token: %d %s", res.Status, res.Raw)
	}
	tok := res.Body["access_token"].(string)
	if again := svc.token(e, once, "system/*.rs"); again.Status/100 != 4 {
		t.Fatalf("an assertion used twice: %d %s", again.Status, again.Raw)
	}
	if other := svc.token(e, svc.assertion(t, e, nil), "system/Patient.cruds"); other.Status/100 != 4 || other.Body["error"] != "invalid_scope" {
		t.Fatalf("a scope it was not registered for: %d %s", other.Status, other.Raw)
	}
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	async := map[string]string{"Authorization": "Bearer " + tok, "Prefer": "respond-async", "Accept": "application/fhir+json"}

	// Kick-off, status while it runs, the manifest once the worker ran.
	export := func(path string, h map[string]string, kv ...string) (status string) {
		t.Helper()
		res := e.Do(testenv.Req{Path: path, Header: h, Query: q(kv...)})
		if res.Status != 202 || res.Header.Get("Content-Location") == "" {
			t.Fatalf("kick-off %s: %d %s", path, res.Status, res.Raw)
		}
		u, err := url.Parse(res.Header.Get("Content-Location"))
		if err != nil {
			t.Fatal(err)
		}
		return u.Path
	}
	manifest := func(status string, hs ...map[string]string) map[string]int {
		t.Helper()
		bearer := bearer
		if len(hs) > 0 {
			bearer = hs[0]
		}
		if res := e.Do(testenv.Req{Path: status, Header: bearer, NoValidate: true}); res.Status != 202 || res.Header.Get("X-Progress") == "" {
			t.Fatalf("status before the worker: %d %v", res.Status, res.Header)
		}
		if n := e.App.DeliverExports(ctx); n != 1 {
			t.Fatalf("the worker ran %d jobs", n)
		}
		res := e.Do(testenv.Req{Path: status, Header: bearer})
		var m struct {
			Request             string `json:"request"`
			RequiresAccessToken bool   `json:"requiresAccessToken"`
			Output              []struct {
				Type  string `json:"type"`
				URL   string `json:"url"`
				Count int    `json:"count"`
			} `json:"output"`
		}
		if res.Status != 200 || json.Unmarshal(res.Raw, &m) != nil || !m.RequiresAccessToken || m.Request == "" {
			t.Fatalf("the manifest: %d %s", res.Status, res.Raw)
		}
		counts := map[string]int{}
		for _, o := range m.Output {
			u, err := url.Parse(o.URL)
			if err != nil {
				t.Fatal(err)
			}
			file := e.Do(testenv.Req{Path: u.Path, Header: bearer, NoValidate: true})
			if file.Status != 200 || !strings.HasPrefix(file.Header.Get("Content-Type"), "application/fhir+ndjson") {
				t.Fatalf("%s: %d %s", o.URL, file.Status, file.Raw)
			}
			lines := 0
			sc := bufio.NewScanner(bytes.NewReader(file.Raw))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines++
				checkFHIR(t, sc.Bytes())
				var r struct{ ResourceType string }
				if json.Unmarshal(sc.Bytes(), &r); r.ResourceType != o.Type {
					t.Fatalf("a %s in the %s file", r.ResourceType, o.Type)
				}
			}
			if lines != o.Count {
				t.Fatalf("%s: %d lines, the manifest says %d", o.Type, lines, o.Count)
			}
			counts[o.Type] = o.Count
		}
		return counts
	}

	all := manifest(export("/fhir/R4/$export", async))
	if all["Patient"] != 2 || all["Encounter"] != 2 || all["Practitioner"] != 0 {
		t.Fatalf("the system export: %v", all)
	}
	if got := manifest(export("/fhir/R4/$export", async, "_type", "Patient,Encounter", "_outputFormat", "application/fhir+ndjson")); len(got) != 2 || got["Patient"] != 2 {
		t.Fatalf("_type: %v", got)
	}
	if got := manifest(export("/fhir/R4/Patient/$export", async, "_type", "Patient", "_since", "2099-01-01T00:00:00Z")); len(got) != 0 {
		t.Fatalf("_since in the future: %v", got)
	}
	// The room's patients: both filed an intake in it.
	if got := manifest(export("/fhir/R4/Group/main/$export", async, "_type", "Patient")); got["Patient"] != 2 {
		t.Fatalf("the group: %v", got)
	}
	// The admin token exports too.
	adminAsync := map[string]string{"X-AccountCode": "alpha", "X-ApiToken": s.c.AdminToken, "Prefer": "respond-async"}
	if got := manifest(export("/fhir/R4/Patient/$export", adminAsync, "_type", "Patient"), adminAsync); got["Patient"] != 2 {
		t.Fatalf("the admin's export: %v", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'export.download' AND actor_kind = ?", "admin_token:app:"+svc.clientID); n == 0 {
		t.Fatal("the service's downloads are not audited as its")
	}

	// Cancelled: the status is gone.
	status := export("/fhir/R4/$export", async)
	if res := e.Do(testenv.Req{Method: "DELETE", Path: status, Header: bearer, NoValidate: true}); res.Status != 202 {
		t.Fatalf("cancel: %d %s", res.Status, res.Raw)
	}
	e.App.DeliverExports(ctx)
	wantOutcome(t, e.Do(testenv.Req{Path: status, Header: bearer}), 404, "not-found")

	// Refusals.
	other := registerBackend(t, e, admin, "system/Patient.rs")
	otherTok := other.token(e, other.assertion(t, e, nil), "")
	if otherTok.Status != 200 {
		t.Fatalf("the other service: %s", otherTok.Raw)
	}
	otherAsync := map[string]string{"Authorization": "Bearer " + otherTok.Body["access_token"].(string), "Prefer": "respond-async"}
	mine := export("/fhir/R4/$export", async)
	for _, c := range []struct {
		name   string
		req    testenv.Req
		status int
		code   string
	}{
		{"no Prefer", testenv.Req{Path: "/fhir/R4/$export", Header: bearer}, 400, "invalid"},
		{"an unknown type", testenv.Req{Path: "/fhir/R4/$export", Header: async, Query: q("_type", "Spaceship")}, 400, "invalid"},
		{"a filter not offered", testenv.Req{Path: "/fhir/R4/$export", Header: async, Query: q("_typeFilter", "Patient?gender=female")}, 400, "invalid"},
		{"another format", testenv.Req{Path: "/fhir/R4/$export", Header: async, Query: q("_outputFormat", "text/csv")}, 400, "invalid"},
		{"a type outside the compartment", testenv.Req{Path: "/fhir/R4/Patient/$export", Header: async, Query: q("_type", "Practitioner")}, 400, "invalid"},
		{"an unknown group", testenv.Req{Path: "/fhir/R4/Group/nowhere/$export", Header: async}, 404, "not-found"},
		{"a type not granted", testenv.Req{Path: "/fhir/R4/$export", Header: otherAsync, Query: q("_type", "Encounter")}, 403, "forbidden"},
		{"another service's job", testenv.Req{Path: mine, Header: otherAsync}, 404, "not-found"},
		{"a patient", testenv.Req{Path: "/fhir/R4/$export", Header: map[string]string{"X-AccountCode": "alpha", "X-ApiToken": s.pat.Token, "Prefer": "respond-async"}}, 403, "forbidden"},
		{"a provider", testenv.Req{Path: "/fhir/R4/Patient/$export", Header: map[string]string{"X-AccountCode": "alpha", "X-ApiToken": s.doc.Token, "Prefer": "respond-async"}}, 403, "forbidden"},
		{"a file of no export", testenv.Req{Path: "/fhir/R4/$export-file/nope/Patient.ndjson", Header: bearer}, 404, "not-found"},
	} {
		t.Run(c.name, func(t *testing.T) { wantOutcome(t, e.Do(c.req), c.status, c.code) })
	}
	// A backend token is for the FHIR API, and only what it was granted.
	if res := e.Do(testenv.Req{Path: "/fhir/R4/Encounter", Header: map[string]string{"Authorization": "Bearer " + otherTok.Body["access_token"].(string)}, Query: q("patient", s.pat.UserID)}); res.Status != 403 {
		t.Fatalf("a read the other service was not granted: %d %s", res.Status, res.Raw)
	}
}

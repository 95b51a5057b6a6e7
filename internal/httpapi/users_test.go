package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/media"
	"teleclinic/internal/testenv"

	"github.com/google/go-cmp/cmp"
	"github.com/livekit/protocol/auth"
)

func TestUsers_SSO(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)

	// OK creates then returns the same user.
	t.Run("OKCreateThenSame", func(t *testing.T) {
		a := mustSSO(t, e, c, "200", "pat-1", "Ada", "Lovelace")
		if p := a.Profile; p.Type != 200 || p.Code != "pat-1" || p.FullName != "Ada Lovelace" {
			t.Fatalf("profile: %+v", p)
		}
		if a.Profile.Username == "" || a.Profile.Svcid == "" {
			t.Fatalf("username and svcid are generated: %+v", a.Profile)
		}
		b := mustSSO(t, e, c, "200", "pat-1", "Someone", "Else")
		if b.UserID != a.UserID || b.Token == a.Token {
			t.Fatalf("same code must give the same user with a new token: %s/%s", a.UserID, b.UserID)
		}
		u, err := e.Store.Read().UserByCode(context.Background(), 1, "pat-1")
		if err != nil || u.FirstName != "Ada" {
			t.Fatalf("stored user: %v %v", u, err)
		}
	})
	// OK as JSON, url-encoded, query and with .json suffix.
	t.Run("OKEveryEncoding", func(t *testing.T) {
		bodies := []testenv.Req{
			{JSON: js(`{"first_name": "J", "last_name": "Son", "type": 400, "code": "prov-json"}`)},
			{Form: q("first_name", "F", "last_name", "Orm", "type", "400", "code", "prov-form")},
			{Query: q("first_name", "Q", "last_name", "Uery", "type", "400", "code", "prov-query")},
		}
		for i, r := range bodies {
			r.Method, r.Path, r.Header = "POST", "/api_v3/users/sso.json", ssoHeaders(c)
			if p := dataOf[ssoProfile](t, e.Do(r)); p.Type != 400 {
				t.Fatalf("body %d: %+v", i, p)
			}
		}
	})
	// Body wins over query.
	t.Run("OKBodyWinsOverQuery", func(t *testing.T) {
		if p := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Query: q("first_name", "Query"), Form: q("first_name", "Body", "last_name", "X", "type", "200", "code", "bw")})); p.FirstName != "Body" {
			t.Fatalf("%+v", p)
		}
	})
	// Fields=vsee adds video identity.
	t.Run("OKVideoIdentity", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Query: q("fields", "vsee"),
			Multipart: map[string]string{"first_name": "V", "last_name": "See", "type": "200", "code": "v1"}})
		// Peer to peer, Teleclinic is the media service: the token is
		// the login's own, which the visit page's sign-in takes.
		p := dataOf[ssoProfile](t, res)
		if p.Vsee == nil || p.Vsee.ID != p.Svcid || p.Vsee.Token == "" || p.Vsee.Token != p.Token.Token {
			t.Fatalf("%s", res.Raw)
		}
	})
	// With LiveKit, a LiveKit token naming the user and joining no room.
	t.Run("OKVideoIdentityLiveKit", func(t *testing.T) {
		lk := media.LiveKit{URL: "wss://sfu.example", Key: "APIvisits", Secret: "a-livekit-secret-of-32-characters!"}
		e := testenv.New(t, testenv.Options{Config: func(c *app.Config) { c.LiveKit = lk }})
		c := e.NewClinic("alpha", true)
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Query: q("fields", "vsee"),
			Multipart: map[string]string{"first_name": "V", "last_name": "See", "type": "200", "code": "v1"}})
		p := dataOf[ssoProfile](t, res)
		if p.Vsee == nil {
			t.Fatalf("no video identity: %s", res.Raw)
		}
		parsed, err := auth.ParseAPIToken(p.Vsee.Token)
		if err != nil {
			t.Fatalf("%s: %v", res.Raw, err)
		}
		claims, grants, err := parsed.Verify(lk.Secret)
		if err != nil || parsed.APIKey() != lk.Key || grants.Identity != p.Svcid || grants.Name != "V See" {
			t.Fatalf("token %+v %+v: %v", claims, grants, err)
		}
		if grants.Video == nil || grants.Video.RoomJoin || grants.Video.Room != "" {
			t.Fatalf("the SSO token joins a room: %+v", grants.Video)
		}
		if _, _, err := parsed.Verify("another secret"); err == nil {
			t.Fatal("the token verifies with another secret")
		}
	})
	// Guest is one-time with a generated code.
	t.Run("OKGuestOneTime", func(t *testing.T) {
		g1 := mustSSO(t, e, c, "600", "", "Guest", "One")
		g2 := mustSSO(t, e, c, "600", "", "Guest", "One")
		code := g1.Profile.Code
		if g1.UserID == g2.UserID || len(code) != 32 || strings.Trim(code, "0123456789abcdef") != "" {
			t.Fatalf("guests %s %s code %q", g1.UserID, g2.UserID, code)
		}
	})
	// Token object shape.
	t.Run("OKTokenShape", func(t *testing.T) {
		a := mustSSO(t, e, c, "200", "shape", "S", "Hape")
		tok := a.Profile.Token
		now := e.Clock.Now().Unix()
		if tok.UserId != a.UserID || int64(tok.Expiry) != now+30*60 {
			t.Fatalf("token: %+v", tok)
		}
		if rt := tok.RefreshToken; rt.UserId != a.UserID || int64(rt.Created) != now || int64(rt.Expiry) != now+30*24*3600 {
			t.Fatalf("refresh: %+v", rt)
		}
	})
	t.Run("ErrMissingFields", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{"type": "200", "code": "x"}})
		if d := wantUsersErr(t, res, 400); !strings.Contains(d, "first_name") || !strings.Contains(d, "last_name") {
			t.Fatalf("detail %q", d)
		}
	})
	t.Run("ErrCodeRequired", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "400"}})
		wantUsersErr(t, res, 400)
	})
	// Code of 128 characters is accepted, 129 is not.
	t.Run("ErrCodeTooLong", func(t *testing.T) {
		mustSSO(t, e, c, "200", strings.Repeat("c", 128), "Long", "Code")
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": strings.Repeat("c", 129)}})
		if d := wantUsersErr(t, res, 400); !strings.Contains(d, "128") {
			t.Fatalf("detail %q", d)
		}
	})
	t.Run("ErrBadType", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "100", "code": "adm"}})
		wantUsersErr(t, res, 400)
	})
	t.Run("ErrBadFields", func(t *testing.T) {
		for field, val := range map[string]string{"dob": "03/04/1990", "gender": "other", "state": "Texas", "email": "not-an-email"} {
			f := map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "bad-" + field, field: val}
			res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: f})
			if d := wantUsersErr(t, res, 400); !strings.Contains(d, field) {
				t.Fatalf("%s: detail %q", field, d)
			}
		}
		if _, err := e.Store.Read().UserByCode(context.Background(), 1, "bad-dob"); err == nil {
			t.Fatal("a rejected SSO must not create the user")
		}
	})
	t.Run("ErrCodeOfOtherType", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "400", "code": "pat-1"}})
		wantUsersErr(t, res, 400)
	})
	t.Run("ErrKeyWithoutSecret", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: map[string]string{"X-AccountCode": c.Code, "X-ApiKey": c.APIKey},
			Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "k"}})
		wantUsersErr(t, res, 401)
	})
	t.Run("ErrWrongSecret", func(t *testing.T) {
		h := ssoHeaders(c)
		h["X-ApiSecret"] = c.APISecret + "x"
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: h, Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "k"}})
		wantUsersErr(t, res, 401)
	})
	t.Run("ErrMissingAccountCode", func(t *testing.T) {
		h := ssoHeaders(c)
		delete(h, "X-AccountCode")
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: h, Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "k"}})
		wantUsersErr(t, res, 401)
	})
	t.Run("ErrAdminTokenIsWrongCredential", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: adminHeaders(c), Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "k"}})
		wantUsersErr(t, res, 401)
	})
	t.Run("ErrSSODisabled", func(t *testing.T) {
		off := e.NewClinic("offsso", false)
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(off), Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "k"}})
		wantErr(t, res, 403, 403)
		if !strings.Contains(messageOf(res), "disabled") {
			t.Fatalf("message: %s", res.Raw)
		}
		if err := e.App.SetSSO(context.Background(), "offsso", true); err != nil {
			t.Fatal(err)
		}
		mustSSO(t, e, off, "200", "k", "a", "b")
	})
	// E-prescribing requires the patient's details.
	t.Run("ErrERxDetails", func(t *testing.T) {
		erx := e.NewClinic("erxclinic", true)
		if err := e.App.SetFeature(context.Background(), "erxclinic", "erx", true); err != nil {
			t.Fatal(err)
		}
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(erx), Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "k", "city": "Austin"}})
		d := wantUsersErr(t, res, 400)
		for _, f := range []string{"gender", "street_addr", "state", "zip", "phone", "dob"} {
			if !strings.Contains(d, f) {
				t.Fatalf("detail %q lacks %s", d, f)
			}
		}
		p := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(erx), Multipart: map[string]string{
			"first_name": "a", "last_name": "b", "type": "200", "code": "k", "city": "Austin", "gender": "female",
			"street_addr": "1 Main St", "state": "tx", "zip": "78701", "phone": "5125550100", "dob": "1980-02-03"}}))
		if deref(p.State) != "TX" || p.Gender != 2 || p.Dob != "1980-02-03" {
			t.Fatalf("%+v", p)
		}
		// A provider needs none of it.
		mustSSO(t, e, erx, "400", "doc", "D", "Oc")
	})
}

func TestUsers_SSOConcurrentSameCode(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	const n = 12
	got := raceStatuses(t, []string{e.URL}, n, testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": "Same", "last_name": "Code", "type": "200", "code": "race"}})
	if got[200] != n {
		t.Fatalf("statuses %v, want %d × 200", got, n)
	}
	if n := decode[userPage](t, e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(c), Query: q("type", "200")})).TotalCount; n != 1 {
		t.Fatalf("one code gave %d users", n)
	}
}

func TestUsers_Get(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	pat := mustSSO(t, e, c, "200", "p1", "Pat", "One")
	other := mustSSO(t, e, c, "200", "p2", "Pat", "Two")
	prov := mustSSO(t, e, c, "400", "d1", "Doc", "One")
	prov2 := mustSSO(t, e, c, "400", "d2", "Doc", "Two")

	get := func(token, id string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/users/" + id, Header: userHeaders(c, token)})
	}
	// OK self by id, by dash, and /me.
	t.Run("OKSelf", func(t *testing.T) {
		for _, path := range []string{"/api_v3/users/" + pat.UserID, "/api_v3/users/-", "/api_v3/me", "/api_v3/me.json"} {
			d := dataOf[client.UserProfile](t, e.Do(testenv.Req{Path: path, Header: userHeaders(c, pat.Token)}))
			if d.Id != pat.UserID || d.AccountCode != "alpha" || d.Account.Name != "Alpha Clinic" {
				t.Fatalf("%s: %+v", path, d)
			}
			if diff := cmp.Diff([]string{"alpha"}, d.Clinics); diff != "" {
				t.Fatalf("clinics (-want +got):\n%s", diff)
			}
		}
	})
	// A patient reads the providers who serve them (of a visit, or of a
	// room they filed an intake in or share), not the others: a profile
	// holds an email and a phone.
	t.Run("PatientReadsTheirProviders", func(t *testing.T) {
		prov3 := mustSSO(t, e, c, "400", "d3", "Doc", "Three")
		pat3 := mustSSO(t, e, c, "200", "p3", "Pat", "Three")
		wantErr(t, get(pat3.Token, prov3.UserID), 404, 404)
		mustVisit(t, e, pat3.UserID, prov3.UserID)
		if res := get(pat3.Token, prov3.UserID); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, get(pat3.Token, prov2.UserID), 404, 404)
		if res := get(prov2.Token, prov3.UserID); res.Status != 200 {
			t.Fatalf("a provider reads a colleague: %d %s", res.Status, res.Raw)
		}
	})
	t.Run("ErrPatientReadsAnotherPatient", func(t *testing.T) {
		wantErr(t, get(pat.Token, other.UserID), 404, 404)
	})
	// Provider reads only patients they have visits with.
	t.Run("ErrProviderWithoutVisit", func(t *testing.T) {
		wantErr(t, get(prov.Token, pat.UserID), 404, 404)
		mustVisit(t, e, pat.UserID, prov.UserID)
		if res := get(prov.Token, pat.UserID); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, get(prov2.Token, pat.UserID), 404, 404)
	})
	// Admin reads everyone, and - is the admin user.
	t.Run("OKAdminReadsEveryone", func(t *testing.T) {
		for _, id := range []string{pat.UserID, other.UserID, prov.UserID} {
			if res := e.Do(testenv.Req{Path: "/api_v3/users/" + id, Header: adminHeaders(c)}); res.Status != 200 {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
		}
		if d := dataOf[client.UserProfile](t, e.Do(testenv.Req{Path: "/api_v3/users/-", Header: adminHeaders(c)})); d.Type != 100 || d.IsAdmin == nil || !*d.IsAdmin {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantErr(t, get(pat.Token, "999999"), 404, 404)
		wantErr(t, get(pat.Token, "abc"), 404, 404)
	})
	t.Run("ErrBadPhotoSize", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/me", Query: q("user_photo_size", "big"), Header: userHeaders(c, pat.Token)})
		wantUsersErr(t, res, 400)
	})
	t.Run("ErrNoToken", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/me", Header: acctHeaders(c)})
		wantUsersErr(t, res, 401)
	})
	t.Run("ErrBadToken", func(t *testing.T) {
		wantUsersErr(t, get("nope", pat.UserID), 401)
	})
	// Reads are audited.
	t.Run("OKAudited", func(t *testing.T) {
		entries := dataOf[[]client.AuditEntry](t, e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(c), Query: q("object_type", "user", "object_id", other.UserID, "action", "user.read")}))
		outcomes := map[client.AuditEntryOutcome]int{}
		for _, en := range entries {
			outcomes[en.Outcome]++
			if en.RequestId == "" {
				t.Fatalf("no request id: %+v", en)
			}
		}
		// The patient's denied read and the admin's read above.
		if outcomes["not_found"] < 1 || outcomes["ok"] < 1 {
			t.Fatalf("audit outcomes %v", outcomes)
		}
	})
}

func accountOf(t *testing.T, e *testenv.Env, userID int64) int64 {
	t.Helper()
	var acct int64
	if err := e.Store.DB().QueryRow(e.Store.Rebind("SELECT account_id FROM users WHERE id = ?"), userID).Scan(&acct); err != nil {
		t.Fatal(err)
	}
	return acct
}

// userPage is a page of GET /users with the list's length.
type userPage struct {
	Data       []client.UserSummary `json:"data"`
	TotalCount int                  `json:"total_count"`
}

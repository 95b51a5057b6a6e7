package httpapi_test

import (
	"strings"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

func TestHTTP_Conventions(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{MaxBody: 4096})
	c := e.NewClinic("alpha", true)

	// Unknown route is a JSON 404.
	t.Run("ErrUnknownRoute", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/nowhere", NoValidate: true})
		wantErr(t, res, 404, 404)
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("content type %q", res.Header.Get("Content-Type"))
		}
	})
	// Wrong method is a JSON 405 with Allow.
	t.Run("ErrWrongMethod", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/users/sso.json", NoValidate: true})
		wantErr(t, res, 405, 405)
		// GET matches /users/{id} too; DELETE matches nothing.
		if allow := res.Header.Get("Allow"); !strings.Contains(allow, "POST") || strings.Contains(allow, "DELETE") {
			t.Fatalf("Allow %q", res.Header.Get("Allow"))
		}
	})
	// A body over the limit is 413 and writes nothing.
	t.Run("ErrBodyTooLarge", func(t *testing.T) {
		big := strings.Repeat("x", 5000)
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Form: q("first_name", big, "last_name", "b", "type", "200", "code", "big")})
		wantErr(t, res, 413, 413)
		if l := decode[userPage](t, e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(c), Query: q("type", "200")})).Data; len(l) != 0 {
			t.Fatal("a rejected body created a user")
		}
	})
	// Malformed JSON is 400.
	t.Run("ErrMalformedJSON", func(t *testing.T) {
		h := ssoHeaders(c)
		h["Content-Type"] = "application/json"
		wantUsersErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: h, RawBody: []byte(`{"first_name":`)}), 400)
		wantUsersErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: h, RawBody: []byte(`[1,2]`)}), 400)
	})
	// X-Request-Id is kept when plain, made when not.
	t.Run("OKRequestID", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/settings", Header: map[string]string{"X-AccountCode": "alpha", "X-Request-Id": "lb-123"}})
		if res.Header.Get("X-Request-Id") != "lb-123" {
			t.Fatalf("%q", res.Header.Get("X-Request-Id"))
		}
		res = e.Do(testenv.Req{Path: "/api_v3/settings", Header: map[string]string{"X-AccountCode": "alpha", "X-Request-Id": "bad id\twith junk"}})
		if id := res.Header.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
			t.Fatalf("%q", id)
		}
	})
	// Settings and accounts.
	t.Run("OKSettingsAndAccounts", func(t *testing.T) {
		if d := dataOf[client.Settings](t, e.Do(testenv.Req{Path: "/api_v3/settings.json", Header: acctHeaders(c)})); d.Code != "alpha" || !d.SsoEnabled || d.Name != "Alpha Clinic" {
			t.Fatalf("%+v", d)
		}
		if d := dataOf[client.AccountInfo](t, e.Do(testenv.Req{Path: "/api_v3/accounts/-", Header: acctHeaders(c)})); d.Code != "alpha" || d.Domain != "alpha.clinic.test" {
			t.Fatalf("%+v", d)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/settings", Header: map[string]string{"X-AccountCode": "nope"}}), 401, 401)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/settings"}), 401, 401)
	})
	// Rooms list.
	t.Run("OKRoomsList", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("page", "1", "limit", "5")})
		if decode[struct {
			TotalCount int `json:"total_count"`
		}](t, res).TotalCount != 0 {
			t.Fatalf("%s", res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("page", "-1")}), 400, 400)
	})
	// Audit needs the admin token and checks its filters.
	t.Run("ErrAuditNeedsAdmin", func(t *testing.T) {
		s := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/audit", Header: userHeaders(c, s.Token)}), 401, 401)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(c), Query: q("from", "10", "to", "5")}), 400, 400)
		res := e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(c), Query: q("action", "user.sso", "limit", "1")})
		if l := dataOf[[]client.AuditEntry](t, res); len(l) != 1 || l[0].Actor.Kind != "api_key" {
			t.Fatalf("%s", res.Raw)
		}
	})
	// Healthz.
	t.Run("OKHealthz", func(t *testing.T) {
		if res := e.Do(testenv.Req{Path: "/healthz"}); res.Status != 200 {
			t.Fatalf("%d", res.Status)
		}
	})
}

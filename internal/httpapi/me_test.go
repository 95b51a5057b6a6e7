package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"teleclinic/internal/testenv"
)

func TestUsers_UpdateMe(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	s := mustSSO(t, e, c, "200", "p1", "Pat", "One")
	post := func(r testenv.Req) *testenv.Resp {
		r.Method, r.Path, r.Header = "POST", "/api_v3/me", userHeaders(c, s.Token)
		return e.Do(r)
	}

	// OK every field, as a form.
	t.Run("OKEveryFieldAsForm", func(t *testing.T) {
		res := post(testenv.Req{Form: q("first_name", "Patricia", "last_name", "Oneill", "dob", "1990-05-06", "gender", "female",
			"nationality", "IE", "tos", "1", "phone", "555-0100", "street_addr", "1 Main St", "state", "ny", "zip", "10001",
			"city", "New York", "pcp_name", "Dr Who", "pcp_phone", "(212) 555-0199", "timezone", "America/New_York", "reset", "true")})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		d := res.Data()
		want := map[string]any{"first_name": "Patricia", "full_name": "Patricia Oneill", "dob": "1990-05-06", "gender": 2.0,
			"nationality": "IE", "tos": true, "state": "NY", "pcp_phone": "2125550199", "timezone": "America/New_York", "city": "New York"}
		for k, v := range want {
			if d[k] != v {
				t.Errorf("%s = %v, want %v", k, d[k], v)
			}
		}
		// The stored row, not only the answer.
		u, _ := e.Store.Read().UserByCode(context.Background(), 1, "p1")
		if u.FirstName != "Patricia" || u.PCPPhone != "2125550199" || u.State != "NY" || !u.TOS {
			t.Fatalf("stored %+v", u)
		}
	})
	// OK as JSON, absent fields unchanged.
	t.Run("OKJSONAbsentUnchanged", func(t *testing.T) {
		res := post(testenv.Req{JSON: map[string]any{"city": "Boston", "tos": 0}})
		if d := res.Data(); res.Status != 200 || d["city"] != "Boston" || d["tos"] != false || d["first_name"] != "Patricia" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	// Fields a user may not set are never changed.
	t.Run("ErrProtectedFields", func(t *testing.T) {
		res := post(testenv.Req{Form: q("type", "100", "status", "-1", "account_code", "beta", "email_verified", "1", "is_admin", "1", "code", "x", "email", "new@example.com")})
		d := res.Data()
		if res.Status != 200 || d["type"].(float64) != 200 || d["status"].(float64) != 1 || d["account_code"] != "alpha" ||
			d["email_verified"] != false || d["is_admin"] != false || d["code"] != "p1" || d["email"] != "" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("ErrInvalidFields", func(t *testing.T) {
		bad := map[string]string{"dob": "1990-13-01", "gender": "unknown", "state": "New York", "pcp_phone": "12345",
			"timezone": "Mars/Olympus", "tos": "2", "photo": "999", "first_name": " "}
		for f, v := range bad {
			res := post(testenv.Req{Form: q(f, v)})
			if d := wantUsersErr(t, res, 400); !strings.Contains(d, strings.TrimSuffix(f, "_name")) {
				t.Errorf("%s: detail %q", f, d)
			}
		}
		wantUsersErr(t, post(testenv.Req{Form: q("dob", e.Clock.Now().AddDate(0, 0, 1).Format("2006-01-02"))}), 400)
		u, _ := e.Store.Read().UserByCode(context.Background(), 1, "p1")
		if u.DOB != "1990-05-06" || u.Timezone != "America/New_York" {
			t.Fatalf("a rejected update must change nothing: %+v", u)
		}
	})
	// Password: first set alone, change needs old_password.
	t.Run("ErrPasswordChangeNeedsOld", func(t *testing.T) {
		if res := post(testenv.Req{Form: q("password", "first password")}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		other := mustSSO(t, e, c, "200", "p1", "Pat", "One") // a second login of the same user
		wantUsersErr(t, post(testenv.Req{Form: q("password", "second password")}), 400)
		wantUsersErr(t, post(testenv.Req{Form: q("password", "second password", "old_password", "wrong password")}), 400)
		wantUsersErr(t, post(testenv.Req{Form: q("password", "short", "old_password", "first password")}), 400)
		if res := post(testenv.Req{Form: q("password", "second password", "old_password", "first password")}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		// The change ends the other login and keeps this one.
		if r := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, other.Token)}); r.Status != 401 {
			t.Fatalf("other login: %d", r.Status)
		}
		if r := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)}); r.Status != 200 {
			t.Fatalf("this login: %d", r.Status)
		}
		u, _ := e.Store.Read().UserByCode(context.Background(), 1, "p1")
		if !strings.HasPrefix(u.PasswordHash, "$argon2id$") || strings.Contains(u.PasswordHash, "second password") {
			t.Fatalf("stored hash %q", u.PasswordHash)
		}
	})
	// Photo: own file sets a signed link, empty removes it.
	t.Run("OKPhoto", func(t *testing.T) {
		var uid int64
		fmt.Sscan(s.UserID, &uid)
		fid, err := e.Store.Write().CreateFileRecord(context.Background(), 1, uid, "user_avatar", "user", uid, "me.png", 1)
		if err != nil {
			t.Fatal(err)
		}
		res := post(testenv.Req{Form: q("photo", fmt.Sprint(fid))})
		photo, _ := res.Data()["photo"].(string)
		if res.Status != 200 || !strings.Contains(photo, fmt.Sprintf("/api_v3/files/view/%d?auth_code=", fid)) || !strings.Contains(photo, "&time=") {
			t.Fatalf("%d photo %q", res.Status, photo)
		}
		r := e.Do(testenv.Req{Path: "/api_v3/me", Query: q("user_photo_size", "64x64"), Header: userHeaders(c, s.Token)})
		if p := r.Data()["photo"].(string); !strings.Contains(p, "size=64x64") {
			t.Fatalf("sized photo %q", p)
		}
		other := mustSSO(t, e, c, "200", "p9", "Oth", "Er")
		var oid int64
		fmt.Sscan(other.UserID, &oid)
		theirs, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, oid, "user_avatar", "user", oid, "x.png", 1)
		wantUsersErr(t, post(testenv.Req{Form: q("photo", fmt.Sprint(theirs))}), 400)
		if res := post(testenv.Req{Form: q("photo", "")}); res.Status != 200 || res.Data()["photo"] != "" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	// Updates are audited.
	t.Run("OKAudited", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(c), Query: q("action", "user.update", "user_id", s.UserID)})
		if res.Status != 200 || res.Body["total_count"].(float64) < 5 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
}

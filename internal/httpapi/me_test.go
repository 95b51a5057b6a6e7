package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
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
		d := dataOf[client.UserProfile](t, res)
		type shown struct {
			FirstName, FullName, Dob, Nationality, State, PcpPhone, Timezone, City string
			Gender                                                                 client.UserProfileGender
			Tos                                                                    bool
		}
		want := shown{"Patricia", "Patricia Oneill", "1990-05-06", "IE", "NY", "2125550199", "America/New_York", "New York", 2, true}
		got := shown{d.FirstName, d.FullName, d.Dob, d.Nationality, deref(d.State), deref(d.PcpPhone), d.Timezone, deref(d.City), d.Gender, d.Tos}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the profile (-want +got):\n%s", diff)
		}
		// The stored row, not only the answer.
		u, _ := e.Store.Read().UserByCode(context.Background(), 1, "p1")
		if u.FirstName != "Patricia" || u.PCPPhone != "2125550199" || u.State != "NY" || !u.TOS {
			t.Fatalf("stored %+v", u)
		}
	})
	// OK as JSON, absent fields unchanged.
	t.Run("OKJSONAbsentUnchanged", func(t *testing.T) {
		if d := dataOf[client.UserProfile](t, post(testenv.Req{JSON: js(`{"city": "Boston", "tos": 0}`)})); deref(d.City) != "Boston" || d.Tos || d.FirstName != "Patricia" {
			t.Fatalf("%+v", d)
		}
	})
	// Fields a user may not set are never changed.
	t.Run("ErrProtectedFields", func(t *testing.T) {
		res := post(testenv.Req{Form: q("type", "100", "status", "-1", "account_code", "beta", "email_verified", "1", "is_admin", "1", "code", "x", "email", "new@example.com")})
		d := dataOf[client.UserProfile](t, res)
		if d.Type != 200 || d.Status != 1 || d.AccountCode != "alpha" || d.EmailVerified || d.IsAdmin == nil || *d.IsAdmin || d.Code != "p1" || d.Email != "" {
			t.Fatalf("%s", res.Raw)
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
		photo := dataOf[client.UserProfile](t, post(testenv.Req{Form: q("photo", fmt.Sprint(fid))})).Photo
		if !strings.Contains(photo, fmt.Sprintf("/api_v3/files/view/%d?auth_code=", fid)) || !strings.Contains(photo, "&time=") {
			t.Fatalf("photo %q", photo)
		}
		if p := dataOf[client.UserProfile](t, e.Do(testenv.Req{Path: "/api_v3/me", Query: q("user_photo_size", "64x64"), Header: userHeaders(c, s.Token)})).Photo; !strings.Contains(p, "size=64x64") {
			t.Fatalf("sized photo %q", p)
		}
		other := mustSSO(t, e, c, "200", "p9", "Oth", "Er")
		var oid int64
		fmt.Sscan(other.UserID, &oid)
		theirs, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, oid, "user_avatar", "user", oid, "x.png", 1)
		wantUsersErr(t, post(testenv.Req{Form: q("photo", fmt.Sprint(theirs))}), 400)
		if p := dataOf[client.UserProfile](t, post(testenv.Req{Form: q("photo", "")})).Photo; p != "" {
			t.Fatalf("photo %q after removing it", p)
		}
	})
	// Updates are audited.
	t.Run("OKAudited", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(c), Query: q("action", "user.update", "user_id", s.UserID)})
		if n := decode[auditPage](t, res).TotalCount; n < 5 {
			t.Fatalf("%d user.update entries: %s", n, res.Raw)
		}
	})
}

// auditPage is a page of GET /audit with the trail's length.
type auditPage struct {
	Data       []client.AuditEntry `json:"data"`
	TotalCount int                 `json:"total_count"`
}

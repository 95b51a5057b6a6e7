package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

func TestUsers_List(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	admin := adminHeaders(c)
	var pats []*session
	for i, n := range []string{"Alice Able", "Bob Baker", "Carol Cole", "Dave Dunn", "Eve Evans"} {
		f, l, _ := strings.Cut(n, " ")
		p := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{
			"first_name": f, "last_name": l, "type": "200", "code": fmt.Sprintf("p%d", i), "email": strings.ToLower(f) + "@mail.example"}}))
		pats = append(pats, &session{UserID: p.Id, Token: p.Token.Token, Profile: p})
	}
	doc := mustSSO(t, e, c, "400", "d1", "Zed", "Doctor")
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), JSON: js(`{"first_name": "Nina", "last_name": "Nurse", "type": 400, "code": "n1"}`)}))
	guest := mustSSO(t, e, c, "600", "", "Gus", "Guest")
	mustVisit(t, e, pats[1].UserID, doc.UserID)
	mustVisit(t, e, pats[3].UserID, doc.UserID)
	acct, _ := e.App.AccountByCode(context.Background(), "alpha")
	room, err := e.App.EnsureRoom(context.Background(), app.SystemPrincipal(acct), "r1", "Room One")
	if err != nil {
		t.Fatal(err)
	}
	var docID int64
	fmt.Sscan(doc.UserID, &docID)
	if err := e.Store.Write().LinkUserRoom(context.Background(), acct.ID, docID, room.ID, true, "test", 1); err != nil {
		t.Fatal(err)
	}

	list := func(kv ...string) *testenv.Resp {
		t.Helper()
		return e.Do(testenv.Req{Path: "/api_v3/users", Header: admin, Query: q(kv...)})
	}
	ids := func(res *testenv.Resp) []string {
		t.Helper()
		var out []string
		for _, u := range decode[userPage](t, res).Data {
			out = append(out, deref(u.Id))
		}
		return out
	}
	names := func(res *testenv.Resp) []string {
		t.Helper()
		var out []string
		for _, u := range decode[userPage](t, res).Data {
			out = append(out, deref(u.FullName))
		}
		return out
	}
	total := func(res *testenv.Resp) int { t.Helper(); return decode[userPage](t, res).TotalCount }

	// Default page and total.
	t.Run("OKDefaultPage", func(t *testing.T) {
		res := list()
		// 5 patients, 2 providers, 1 guest and the clinic admin user.
		if got := len(ids(res)); got != 9 || total(res) != 9 {
			t.Fatalf("got %d of %d", got, total(res))
		}
	})
	// Start and limit.
	t.Run("OKStartAndLimit", func(t *testing.T) {
		res := list("type", "200", "start", "1", "limit", "2", "sort", "full_name.asc")
		if got := names(res); strings.Join(got, ",") != "Bob Baker,Carol Cole" || total(res) != 5 {
			t.Fatalf("page %v total %d", got, total(res))
		}
	})
	// Keyset pages: after the last user of a page, by the Link header's next
	// page, in the sort's order, with the same total; a full page links the
	// next, the last page does not.
	t.Run("OKAfter", func(t *testing.T) {
		want := names(list("type", "200", "sort", "full_name.desc"))
		var got []string
		path, pages := "/api_v3/users?type=200&sort=full_name.desc&limit=2", 0
		for path != "" {
			res := e.Do(testenv.Req{Path: path, Header: admin})
			if n := total(res); n != 5 {
				t.Fatalf("total %d", n)
			}
			got = append(got, names(res)...)
			pages++
			path = ""
			if link := res.Header.Get("Link"); link != "" {
				next, _, _ := strings.Cut(strings.TrimPrefix(link, "<"), ">")
				if !strings.Contains(next, "after=") || !strings.Contains(next, "sort=full_name.desc") {
					t.Fatalf("next link %q", link)
				}
				path = next
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || want[0] != "Eve Evans" || pages != 3 {
			t.Fatalf("paged %v (%d pages), listed %v", got, pages, want)
		}
		// By id (no sort): after the second patient come the three after.
		if got := ids(list("type", "200", "after", pats[1].UserID)); strings.Join(got, ",") != strings.Join([]string{pats[2].UserID, pats[3].UserID, pats[4].UserID}, ",") {
			t.Fatalf("after %s: %v", pats[1].UserID, got)
		}
	})
	t.Run("ErrAfter", func(t *testing.T) {
		for _, kv := range [][]string{{"after", "x"}, {"after", "-1"}, {"after", pats[0].UserID, "start", "2"}, {"after", "999999"}} {
			if res := list(kv...); res.Status != 400 || !strings.Contains(string(res.Raw), "after") {
				t.Errorf("%v: %d %s", kv, res.Status, res.Raw)
			}
		}
	})
	// Limit is capped.
	t.Run("OKLimitCapped", func(t *testing.T) {
		if res := list("limit", "100000"); res.Status != 200 {
			t.Fatalf("%d", res.Status)
		}
	})
	// Id single, comma list and array.
	t.Run("OKIDs", func(t *testing.T) {
		if got := ids(list("id", pats[0].UserID)); len(got) != 1 || got[0] != pats[0].UserID {
			t.Fatalf("%v", got)
		}
		if got := ids(list("id", pats[0].UserID+","+pats[2].UserID)); len(got) != 2 {
			t.Fatalf("%v", got)
		}
		// "-" is the caller: with the admin token, the clinic's admin user.
		self := list("id", "-")
		if d := decode[userPage](t, self).Data; len(d) != 1 || deref(d[0].Type) != 100 {
			t.Fatalf("id=-: %s", self.Raw)
		}
		if got := ids(list("id", "-,"+pats[2].UserID)); len(got) != 2 {
			t.Fatalf("id=-,%s: %v", pats[2].UserID, got)
		}
		res := e.Do(testenv.Req{Path: "/api_v3/users", Header: admin, Query: q("id[]", pats[1].UserID, "id[]", pats[4].UserID)})
		if got := ids(res); len(got) != 2 {
			t.Fatalf("%v", got)
		}
		// Form body on a GET, as some clients send.
		res = e.Do(testenv.Req{Path: "/api_v3/users", Header: admin, Multipart: map[string]string{"id": pats[2].UserID}})
		if got := ids(res); len(got) != 1 || got[0] != pats[2].UserID {
			t.Fatalf("%v", got)
		}
	})
	// Full_name, email and q are case-insensitive substrings.
	t.Run("OKSearch", func(t *testing.T) {
		if got := names(list("full_name", "ROL C")); len(got) != 1 || got[0] != "Carol Cole" {
			t.Fatalf("%v", got)
		}
		if got := names(list("email", "eve@")); len(got) != 1 || got[0] != "Eve Evans" {
			t.Fatalf("%v", got)
		}
		if got := names(list("q", "dunn", "type", "200")); len(got) != 1 || got[0] != "Dave Dunn" {
			t.Fatalf("%v", got)
		}
		if got := names(list("q", "mail.example", "type", "200,400")); len(got) != 5 {
			t.Fatalf("%v", got)
		}
		if got := names(list("full_name", "100%")); len(got) != 0 {
			t.Fatalf("LIKE wildcards must be literal: %v", got)
		}
	})
	t.Run("ErrSearchShorterThan3", func(t *testing.T) {
		for _, f := range []string{"full_name", "email", "q"} {
			if d := wantUsersErr(t, list(f, "ab"), 400); !strings.Contains(d, f) || !strings.Contains(d, "3") {
				t.Fatalf("detail %q", d)
			}
		}
	})
	// Type, status, subtype lists.
	t.Run("OKTypeStatusSubtype", func(t *testing.T) {
		if got := ids(list("type", "200,600")); len(got) != 6 {
			t.Fatalf("%v", got)
		}
		if got := ids(list("type", "600")); len(got) != 1 || got[0] != guest.UserID {
			t.Fatalf("%v", got)
		}
		if got := ids(list("status", "1,0")); len(got) != 9 {
			t.Fatalf("%v", got)
		}
		if got := ids(list("status", "-1")); len(got) != 0 {
			t.Fatalf("%v", got)
		}
		if got := ids(list("subtype", "482")); len(got) != 0 {
			t.Fatalf("%v", got)
		}
	})
	// Role, is_admin, is_hidden, group.
	t.Run("OKRoleAdminHiddenGroup", func(t *testing.T) {
		res := list("role", "clinic_admin,scheduler")
		if got := decode[userPage](t, res).Data; len(got) != 1 || deref(got[0].Type) != 100 {
			t.Fatalf("%s", res.Raw)
		}
		if got := ids(list("is_admin", "true")); len(got) != 1 {
			t.Fatalf("%v", got)
		}
		if got := ids(list("is_admin", "0")); len(got) != 8 {
			t.Fatalf("%v", got)
		}
		if got := ids(list("is_hidden", "1")); len(got) != 0 {
			t.Fatalf("%v", got)
		}
		if got := ids(list("group", "none")); len(got) != 0 {
			t.Fatalf("%v", got)
		}
	})
	// Room_code and ex_filter.
	t.Run("OKRoomAndExFilter", func(t *testing.T) {
		if got := ids(list("room_code", "r1")); len(got) != 1 || got[0] != doc.UserID {
			t.Fatalf("%v", got)
		}
		if got := ids(list("ex_filter", "all")); len(got) != 1 || got[0] != doc.UserID {
			t.Fatalf("%v", got)
		}
		// The admin user has no visits; a provider's patients come from their visits.
		if got := ids(list("ex_filter", "my-patient")); len(got) != 0 {
			t.Fatalf("%v", got)
		}
		wantUsersErr(t, list("ex_filter", "everyone"), 400)
	})
	// Account_code of another clinic shows nothing.
	t.Run("ErrOtherClinic", func(t *testing.T) {
		if got := ids(list("account_code", "alpha")); len(got) != 9 {
			t.Fatalf("%v", got)
		}
		res := list("account_code", "beta")
		if got := ids(res); len(got) != 0 || total(res) != 0 {
			t.Fatalf("%v", got)
		}
	})
	// Sort.
	t.Run("OKSort", func(t *testing.T) {
		got := names(list("type", "200", "sort", "full_name.desc"))
		if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i] > got[j] }) || len(got) != 5 {
			t.Fatalf("%v", got)
		}
		wantUsersErr(t, list("sort", "password.asc"), 400)
		wantUsersErr(t, list("sort", "full_name.sideways"), 400)
	})
	// Fields.
	t.Run("OKFields", func(t *testing.T) {
		res := list("fields", "id,full_name,last_login", "limit", "1")
		users := dataOf[[]map[string]json.RawMessage](t, res)
		if len(users) != 1 {
			t.Fatalf("%s", res.Raw)
		}
		var members []string
		for k := range users[0] {
			members = append(members, k)
		}
		sort.Strings(members)
		if diff := cmp.Diff([]string{"full_name", "id", "last_login"}, members); diff != "" {
			t.Fatalf("fields (-want +got):\n%s", diff)
		}
		wantUsersErr(t, list("fields", "id,password_hash"), 400)
	})
	t.Run("ErrBadNumbers", func(t *testing.T) {
		wantUsersErr(t, list("limit", "ten"), 400)
		wantUsersErr(t, list("type", "provider"), 400)
		wantUsersErr(t, list("is_hidden", "maybe"), 400)
	})
	t.Run("ErrUserTokenOnAdminEndpoint", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/users", Header: userHeaders(c, pats[0].Token)})
		if d := wantUsersErr(t, res, 401); !strings.Contains(d, "admin token") {
			t.Fatalf("detail %q", d)
		}
	})
	t.Run("ErrAdminTokenWithoutAccountCode", func(t *testing.T) {
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/users", Header: map[string]string{"X-ApiToken": c.AdminToken}}), 401)
	})
}

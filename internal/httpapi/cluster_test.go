package httpapi_test

import (
	"context"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// TestCluster_ThreeServers runs three full server wirings, each with its own
// connection pools, on one database, as three processes behind a load
// balancer would, and checks that they behave as one server.
func TestCluster_ThreeServers(t *testing.T) {
	t.Parallel()
	first := testenv.New(t)
	servers := []*testenv.Env{first,
		testenv.New(t, testenv.Options{DSN: first.DSN, ServerKey: first.Key, Clock: first.Clock}),
		testenv.New(t, testenv.Options{DSN: first.DSN, ServerKey: first.Key, Clock: first.Clock}),
	}
	c := first.NewClinic("alpha", true)

	// A login made on one server works on the others.
	t.Run("OKLoginEverywhere", func(t *testing.T) {
		s := mustSSO(t, servers[0], c, "200", "p1", "Pat", "One")
		for i, e := range servers {
			if res := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)}); res.Status != 200 {
				t.Fatalf("server %d: %d", i, res.Status)
			}
		}
	})
	// A user changed through one server, or in the database, is seen at once by the others.
	t.Run("OKUserChangeSeenAtOnce", func(t *testing.T) {
		// Each server reuses the user it read while the row's version,
		// read with the token, is unchanged; no TTL may hide a change.
		s := mustSSO(t, servers[0], c, "200", "p-versions", "Pat", "Before")
		me := func(e *testenv.Env) *testenv.Resp {
			t.Helper()
			return e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)})
		}
		for _, e := range servers {
			if p := dataOf[client.UserProfile](t, me(e)); p.LastName != "Before" {
				t.Fatalf("%+v", p)
			}
		}
		if res := servers[0].Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(c, s.Token), Form: q("last_name", "After")}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		for i, e := range servers {
			if p := dataOf[client.UserProfile](t, me(e)); p.LastName != "After" {
				t.Fatalf("server %d: %+v", i, p)
			}
		}
		// A write no server made: another tool, or an operator.
		if _, err := first.Store.DB().Exec(first.Store.Rebind("UPDATE users SET status = -1 WHERE id = ?"), s.UserID); err != nil {
			t.Fatal(err)
		}
		for i, e := range servers {
			if res := me(e); res.Status != 401 {
				t.Fatalf("server %d still accepts a disabled user: %d %s", i, res.Status, res.Raw)
			}
		}
		if _, err := first.Store.DB().Exec(first.Store.Rebind("UPDATE users SET status = 1 WHERE id = ?"), s.UserID); err != nil {
			t.Fatal(err)
		}
		for i, e := range servers {
			if res := me(e); res.Status != 200 {
				t.Fatalf("server %d: re-enabled user refused: %d %s", i, res.Status, res.Raw)
			}
		}
	})
	urls := []string{servers[0].URL, servers[1].URL, servers[2].URL}
	race := func(t *testing.T, perServer int, req testenv.Req) map[int]int {
		t.Helper()
		return raceStatuses(t, urls, perServer, req)
	}
	// A one-time SSO token is used once across servers.
	t.Run("ErrOneTimeTokenReused", func(t *testing.T) {
		for round := 0; round < 3; round++ {
			s := mustSSO(t, servers[round], c, "200", "p2", "Pat", "Two")
			got := race(t, 4, testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "one_time_token", "1")})
			if got[302] != 1 || got[401] != 11 {
				t.Fatalf("round %d: statuses %v, want one 302", round, got)
			}
		}
	})
	// A refresh token rotates once across servers, and the reuse is detected.
	t.Run("ErrRefreshReused", func(t *testing.T) {
		for round := 0; round < 3; round++ {
			s := mustSSO(t, servers[round], c, "200", "p3", "Pat", "Three")
			got := race(t, 3, testenv.Req{Method: "POST", Path: "/api_v3/tokens/refresh", Header: acctHeaders(c), Form: q("refresh_token", s.Refresh)})
			if got[200] != 1 || got[401] != 8 {
				t.Fatalf("round %d: statuses %v, want one 200", round, got)
			}
			// The reuse revoked the login: the original access token is dead everywhere.
			for i, e := range servers {
				if res := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)}); res.Status != 401 {
					t.Fatalf("server %d still accepts the revoked login: %d", i, res.Status)
				}
			}
		}
	})
	// SSO of one new code on all servers at once makes one user.
	t.Run("OKConcurrentSSOOneUser", func(t *testing.T) {
		got := race(t, 4, testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Multipart: map[string]string{"first_name": "Once", "last_name": "Only", "type": "200", "code": "cluster-new"}})
		if got[200] != 12 {
			t.Fatalf("statuses %v", got)
		}
		res := first.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(c), Query: q("full_name", "Once Only")})
		if decode[userPage](t, res).TotalCount != 1 {
			t.Fatalf("%s", res.Raw)
		}
	})
	// Room lists and clinic settings changed on one server show on the others within the read cache TTL.
	t.Run("OKCachedReadsWithinTTL", func(t *testing.T) {
		count := func(e *testenv.Env) int {
			t.Helper()
			return decode[struct {
				TotalCount int `json:"total_count"`
			}](t, e.Do(testenv.Req{Path: "/api_v3/rooms.json", Header: acctHeaders(c)})).TotalCount
		}
		before := count(servers[1])
		mustRoom(t, servers[0], c, js(`{"domain": "alpha.clinic.test", "name": "Cached Room"}`))
		if got := count(servers[0]); got != before+1 {
			t.Fatalf("the writing server lists %v rooms, want %v at once", got, before+1)
		}
		// The other server keeps its page until the TTL passes: the clock is
		// frozen, so this is exactly the bound the design notes promise.
		if got := count(servers[1]); got != before {
			t.Fatalf("server 1 lists %v rooms before the TTL, want its cached %v", got, before)
		}
		first.Clock.Advance(time.Second)
		if got := count(servers[1]); got != before+1 {
			t.Fatalf("server 1 lists %v rooms after the TTL, want %v", got, before+1)
		}

		// SSO switched off through one process is refused by the others
		// after the TTL.
		if res := servers[2].Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Multipart: map[string]string{"first_name": "Sso", "last_name": "On", "type": "200", "code": "cache-sso"}}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		if err := first.App.SetSSO(context.Background(), c.Code, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = first.App.SetSSO(context.Background(), c.Code, true) })
		first.Clock.Advance(time.Second)
		for i, e := range servers {
			res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
				Multipart: map[string]string{"first_name": "Sso", "last_name": "On", "type": "200", "code": "cache-sso"}})
			if res.Status == 200 {
				t.Fatalf("server %d still signs in with SSO switched off", i)
			}
		}
	})
}

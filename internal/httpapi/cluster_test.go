package httpapi_test

import (
	"testing"

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

	t.Run("a login made on one server works on the others", func(t *testing.T) {
		s := mustSSO(t, servers[0], c, "200", "p1", "Pat", "One")
		for i, e := range servers {
			if res := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(c, s.Token)}); res.Status != 200 {
				t.Fatalf("server %d: %d", i, res.Status)
			}
		}
	})
	urls := []string{servers[0].URL, servers[1].URL, servers[2].URL}
	race := func(t *testing.T, perServer int, req testenv.Req) map[int]int {
		t.Helper()
		return raceStatuses(t, urls, perServer, req)
	}
	t.Run("a one-time SSO token is used once across servers", func(t *testing.T) {
		for round := 0; round < 3; round++ {
			s := mustSSO(t, servers[round], c, "200", "p2", "Pat", "Two")
			got := race(t, 4, testenv.Req{Path: "/api_v3/auth", Query: q("sso_token", s.Token, "one_time_token", "1")})
			if got[302] != 1 || got[401] != 11 {
				t.Fatalf("round %d: statuses %v, want one 302", round, got)
			}
		}
	})
	t.Run("a refresh token rotates once across servers, and the reuse is detected", func(t *testing.T) {
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
	t.Run("SSO of one new code on all servers at once makes one user", func(t *testing.T) {
		got := race(t, 4, testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
			Multipart: map[string]string{"first_name": "Once", "last_name": "Only", "type": "200", "code": "cluster-new"}})
		if got[200] != 12 {
			t.Fatalf("statuses %v", got)
		}
		res := first.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(c), Query: q("full_name", "Once Only")})
		if res.Body["total_count"].(float64) != 1 {
			t.Fatalf("%s", res.Raw)
		}
	})
}

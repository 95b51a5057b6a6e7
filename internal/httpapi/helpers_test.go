package httpapi_test

import (
	"net/url"
	"sync"
	"testing"

	"teleclinic/internal/testenv"
)

// session is a user logged in through SSO.
type session struct {
	UserID, Token, Refresh string
	Body                   map[string]any
}

func ssoHeaders(c *testenv.Clinic) map[string]string {
	return map[string]string{"X-AccountCode": c.Code, "X-ApiKey": c.APIKey, "X-ApiSecret": c.APISecret}
}

func userHeaders(c *testenv.Clinic, token string) map[string]string {
	return map[string]string{"X-AccountCode": c.Code, "X-ApiToken": token}
}

func adminHeaders(c *testenv.Clinic) map[string]string {
	return map[string]string{"X-AccountCode": c.Code, "X-ApiToken": c.AdminToken}
}

func acctHeaders(c *testenv.Clinic) map[string]string {
	return map[string]string{"X-AccountCode": c.Code}
}

// mustSSO signs a user in through SSO and fails the test unless it works.
func mustSSO(t *testing.T, e *testenv.Env, c *testenv.Clinic, typ, code, first, last string) *session {
	t.Helper()
	res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": first, "last_name": last, "type": typ, "code": code}})
	if res.Status != 200 {
		t.Fatalf("sso %s: %d %s", code, res.Status, res.Raw)
	}
	d := res.Data()
	tok := d["token"].(map[string]any)
	return &session{UserID: d["id"].(string), Token: tok["token"].(string),
		Refresh: tok["refresh_token"].(map[string]any)["token"].(string), Body: d}
}

// wantErr checks a code-shape error: status and body code.
func wantErr(t *testing.T, res *testenv.Resp, status, code int) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %d, want %d; body %s", res.Status, status, res.Raw)
	}
	if got, _ := res.Body["code"].(float64); int(got) != code {
		t.Fatalf("body code %v, want %d; body %s", res.Body["code"], code, res.Raw)
	}
	if msg, _ := res.Body["message"].(string); msg == "" {
		t.Fatalf("error without message: %s", res.Raw)
	}
}

// wantUsersErr checks the users family's 400/401 quirk: body code 404, generic
// message, and the real reason in detail.
func wantUsersErr(t *testing.T, res *testenv.Resp, status int) string {
	t.Helper()
	wantErr(t, res, status, 404)
	if res.Body["message"] != "Page not available." {
		t.Fatalf("message %q, want the generic one", res.Body["message"])
	}
	d, _ := res.Body["detail"].(string)
	if d == "" {
		t.Fatalf("no detail in %s", res.Raw)
	}
	return d
}

func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// raceStatuses sends req n times to each base URL, all at once from as many
// goroutines, and counts the answers by status.
func raceStatuses(t *testing.T, bases []string, n int, req testenv.Req) map[int]int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	start := make(chan struct{})
	for _, base := range bases {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				st := testenv.Do(t, base, req).Status
				mu.Lock()
				got[st]++
				mu.Unlock()
			}()
		}
	}
	close(start)
	wg.Wait()
	return got
}

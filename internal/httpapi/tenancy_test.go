package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"teleclinic/internal/testenv"
)

// TestTenancy_Isolation: a second clinic's admin token and users see nothing
// of the first, whatever headers they send.
func TestTenancy_Isolation(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	a := e.NewClinic("alpha", true)
	b := e.NewClinic("beta", true)
	pa := mustSSO(t, e, a, "200", "same-code", "Alpha", "Patient")
	pb := mustSSO(t, e, b, "200", "same-code", "Beta", "Patient")
	if pa.UserID == pb.UserID {
		t.Fatal("the same code in two clinics is two users")
	}

	// Admin of B lists only B.
	t.Run("OKAdminListsOwn", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(b), Query: q("limit", "200")})
		for _, u := range res.List() {
			if u["account_code"] != "beta" || u["id"] == pa.UserID {
				t.Fatalf("B sees %v", u)
			}
		}
		res = e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(b), Query: q("id", pa.UserID)})
		if len(res.List()) != 0 {
			t.Fatalf("B finds A's user by id: %s", res.Raw)
		}
	})
	// Admin of B reads no user of A.
	t.Run("ErrAdminReadsOther", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/users/" + pa.UserID, Header: adminHeaders(b)}), 404, 404)
	})
	// B's admin token with A's code is rejected.
	t.Run("ErrAdminTokenOtherCode", func(t *testing.T) {
		h := adminHeaders(b)
		h["X-AccountCode"] = "alpha"
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/users", Header: h}), 401)
	})
	// A's user token with B's code is rejected.
	t.Run("ErrUserTokenOtherCode", func(t *testing.T) {
		wantUsersErr(t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(b, pa.Token)}), 401)
	})
	// A user token without a code reads its own clinic.
	t.Run("OKUserTokenWithoutCode", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/me", Header: map[string]string{"X-ApiToken": pa.Token, "X-ApiKey": "ignored", "X-ApiSecret": "ignored"}})
		if res.Status != 200 || res.Data()["account_code"] != "alpha" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	// B's user reads no user of A.
	t.Run("ErrUserReadsOther", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/users/" + pa.UserID, Header: userHeaders(b, pb.Token)}), 404, 404)
	})
	// A's refresh token does not work at B.
	t.Run("ErrRefreshOtherClinic", func(t *testing.T) {
		wantUsersErr(t, refresh(e, b, pa.Refresh), 401)
		if res := refresh(e, a, pa.Refresh); res.Status != 200 {
			t.Fatal("the failed cross-clinic attempt must not spend the token")
		}
	})
	// A's API key does not sign in at B.
	t.Run("ErrAPIKeyOtherClinic", func(t *testing.T) {
		h := ssoHeaders(a)
		h["X-AccountCode"] = "beta"
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: h, Multipart: map[string]string{"first_name": "a", "last_name": "b", "type": "200", "code": "x"}})
		wantUsersErr(t, res, 401)
	})
	// B's logout cannot destroy A's tokens.
	t.Run("ErrLogoutOtherClinic", func(t *testing.T) {
		e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: adminHeaders(b), Form: q("tokens", pa.Token)})
		if res := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(a, pa.Token)}); res.Status != 200 {
			t.Fatal("A's token was destroyed by B")
		}
	})
	// Accounts and audit show only the caller's clinic.
	t.Run("OKAccountsAndAuditOwn", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/accounts", Header: acctHeaders(b)})
		if l := res.List(); len(l) != 1 || l[0]["code"] != "beta" {
			t.Fatalf("%s", res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/accounts/alpha", Header: acctHeaders(b)}), 404, 404)
		res = e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(b), Query: q("limit", "500")})
		for _, en := range res.List() {
			// B's trail records its own users' attempts on A's ids, as denied.
			if en["actor"].(map[string]any)["user_id"] == pa.UserID ||
				(en["object"].(map[string]any)["id"] == pa.UserID && en["outcome"] == "ok") {
				t.Fatalf("B's audit shows A: %v", en)
			}
		}
	})
}

// TestTenancy_NoSecretsAtRest: after every kind of credential has been made
// and used, no plaintext token, secret or password is in the database.
func TestTenancy_NoSecretsAtRest(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	secrets := []string{c.AdminToken, c.APIKey, c.APISecret}
	res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": "Se", "last_name": "Cret", "type": "200", "code": "p1", "email": "s@example.com"}})
	tok := res.Data()["token"].(map[string]any)
	secrets = append(secrets, tok["token"].(string), tok["refresh_token"].(map[string]any)["token"].(string))
	const password = "a password nobody should see"
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(c, tok["token"].(string)), Form: q("password", password)}))
	r := refresh(e, c, tok["refresh_token"].(map[string]any)["token"].(string))
	nt := r.Data()["token"].(map[string]any)
	secrets = append(secrets, password, nt["token"].(string), nt["refresh_token"].(map[string]any)["token"].(string))
	// Answers kept for Idempotency-Key replays carry tokens and secrets:
	// an SSO, a refresh and the webhook's signing secret, each replayed
	// once (the same answer) and never kept readable.
	withKey := func(h map[string]string, key string) map[string]string {
		out := map[string]string{"Idempotency-Key": key}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	sso := func() *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: withKey(ssoHeaders(c), "idem-sso"),
			Multipart: map[string]string{"first_name": "Idem", "last_name": "Potent", "type": "200", "code": "p2"}})
	}
	first, again := sso(), sso()
	it := first.Data()["token"].(map[string]any)
	if again.Status != 200 || string(again.Raw) != string(first.Raw) {
		t.Fatalf("the SSO's replay: %d %s", again.Status, again.Raw)
	}
	secrets = append(secrets, it["token"].(string), it["refresh_token"].(map[string]any)["token"].(string))
	rr := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/tokens/refresh", Header: withKey(acctHeaders(c), "idem-refresh"),
		Form: q("refresh_token", it["refresh_token"].(map[string]any)["token"].(string))})
	rt := rr.Data()["token"].(map[string]any)
	secrets = append(secrets, rt["token"].(string), rt["refresh_token"].(map[string]any)["token"].(string))
	wh := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: withKey(adminHeaders(c), "idem-webhook"),
		Form: q("webhook_url", "https://hooks.example.com/x", "generate_webhook_secret", "1")})
	whSecret, _ := wh.Data()["webhook_secret"].(string)
	if whSecret == "" {
		t.Fatalf("webhook settings: %d %s", wh.Status, wh.Raw)
	}
	secrets = append(secrets, whSecret)
	// A reset link sits in the outbox until delivered: it must be sealed.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/password/reset", Header: acctHeaders(c), Form: q("email", "s@example.com")}))
	box := &outbox{}
	dump := dumpDatabase(t, e)
	e.App.DeliverMail(context.Background(), box)
	secrets = append(secrets, box.lastToken(t))
	rot, err := e.App.Rotate(context.Background(), "alpha", "api_secret")
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, rot.APISecret)
	dump = append(dump, dumpDatabase(t, e)...)
	if e.Store.Engine() == "sqlite" {
		for _, suffix := range []string{"", "-wal"} {
			raw, err := os.ReadFile(e.DSN + suffix)
			if err == nil {
				dump = append(dump, raw...)
			}
		}
	}
	if len(dump) < 1000 {
		t.Fatalf("dump too small to mean anything: %d bytes", len(dump))
	}
	for _, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("weak secret %q", s)
		}
		if bytes.Contains(dump, []byte(s)) {
			t.Errorf("plaintext secret %.6s… found in the database", s)
		}
	}
}

// dumpDatabase renders every row of every table as text.
func dumpDatabase(t *testing.T, e *testenv.Env) []byte {
	t.Helper()
	db := e.Store.DB()
	var tables []string
	query := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if e.Store.Engine() == "postgres" {
		query = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
	}
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("found only tables %v", tables)
	}
	var out bytes.Buffer
	for _, tb := range tables {
		rows, err := db.Query("SELECT * FROM " + tb)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&out, "%v|", v)
			}
			out.WriteByte('\n')
		}
		rows.Close()
	}
	return out.Bytes()
}

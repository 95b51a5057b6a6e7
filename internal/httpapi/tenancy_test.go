package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"teleclinic/client"
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
		for _, u := range decode[userPage](t, e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(b), Query: q("limit", "200")})).Data {
			if deref(u.AccountCode) != "beta" || deref(u.Id) == pa.UserID {
				t.Fatalf("B sees %+v", u)
			}
		}
		if l := decode[userPage](t, e.Do(testenv.Req{Path: "/api_v3/users", Header: adminHeaders(b), Query: q("id", pa.UserID)})).Data; len(l) != 0 {
			t.Fatalf("B finds A's user by id: %+v", l)
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
		if p := dataOf[client.UserProfile](t, e.Do(testenv.Req{Path: "/api_v3/me", Header: map[string]string{"X-ApiToken": pa.Token, "X-ApiKey": "ignored", "X-ApiSecret": "ignored"}})); p.AccountCode != "alpha" {
			t.Fatalf("%+v", p)
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
		if l := dataOf[[]client.AccountInfo](t, e.Do(testenv.Req{Path: "/api_v3/accounts", Header: acctHeaders(b)})); len(l) != 1 || l[0].Code != "beta" {
			t.Fatalf("%+v", l)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/accounts/alpha", Header: acctHeaders(b)}), 404, 404)
		for _, en := range dataOf[[]client.AuditEntry](t, e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(b), Query: q("limit", "500")})) {
			// B's trail records its own users' attempts on A's ids, as denied.
			if en.Actor.UserId == pa.UserID || (en.Object.Id == pa.UserID && en.Outcome == "ok") {
				t.Fatalf("B's audit shows A: %+v", en)
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
	tok := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": "Se", "last_name": "Cret", "type": "200", "code": "p1", "email": "s@example.com"}})).Token
	secrets = append(secrets, tok.Token, tok.RefreshToken.Token)
	const password = "a password nobody should see"
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(c, tok.Token), Form: q("password", password)}))
	nt := dataOf[ssoProfile](t, refresh(e, c, tok.RefreshToken.Token)).Token
	secrets = append(secrets, password, nt.Token, nt.RefreshToken.Token)
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
	it := dataOf[ssoProfile](t, first).Token
	if again.Status != 200 || string(again.Raw) != string(first.Raw) {
		t.Fatalf("the SSO's replay: %d %s", again.Status, again.Raw)
	}
	secrets = append(secrets, it.Token, it.RefreshToken.Token)
	rt := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/tokens/refresh", Header: withKey(acctHeaders(c), "idem-refresh"),
		Form: q("refresh_token", it.RefreshToken.Token)})).Token
	secrets = append(secrets, rt.Token, rt.RefreshToken.Token)
	wh := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: withKey(adminHeaders(c), "idem-webhook"),
		Form: q("webhook_url", "https://hooks.example.com/x", "generate_webhook_secret", "1")})
	whSecret := deref(decode[client.AccountSettings](t, wh).Data.WebhookSecret)
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestCLI_Account(t *testing.T) {
	dir := t.TempDir()
	db := testenv.DSN(t)
	common := []string{"--data-dir", dir, "--database", db}

	out, _, err := runCmd(t, append([]string{"account", "create", "--code", "acme", "--name", "Acme Health", "--domain", "acme.example.com", "--json"}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	var creds app.AccountCredentials
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&creds); err != nil || dec.More() {
		t.Fatalf("want exactly one JSON object, got %q (%v)", out, err)
	}
	if creds.AccountCode != "acme" || len(creds.AdminToken) < 40 || len(creds.APIKey) < 40 || len(creds.APISecret) < 40 {
		t.Fatalf("%+v", creds)
	}
	if strings.Contains(out, "\n{") {
		t.Fatal("more than one object")
	}

	t.Run("ErrDuplicateCode", func(t *testing.T) {
		_, _, err := runCmd(t, append([]string{"account", "create", "--code", "acme", "--name", "X", "--domain", "x.example.com"}, common...)...)
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("err %v", err)
		}
		var ue usageError
		if errors.As(err, &ue) {
			t.Fatal("a duplicate is a failure (exit 1), not a usage error")
		}
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		if _, _, err := runCmd(t, append([]string{"account", "create", "--code", "Bad Code!", "--name", "X", "--domain", "x.example.com"}, common...)...); err == nil {
			t.Fatal("bad code accepted")
		}
		if _, _, err := runCmd(t, append([]string{"account", "create", "--name", "X"}, common...)...); err == nil {
			t.Fatal("missing code accepted")
		}
	})

	openApp := func() *app.App {
		st := testenv.OpenStore(t, db)
		a, err := app.New(st, app.Config{UserTokenIdle: time.Minute, UserTokenMax: time.Hour, ServerKey: bytes.Repeat([]byte{1}, 32)}, time.Now, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := openApp()
	auth := func(token string) error {
		_, err := a.Authenticate(context.Background(), app.Credentials{AccountCode: "acme", APIToken: token}, app.NeedAdmin)
		return err
	}
	if err := auth(creds.AdminToken); err != nil {
		t.Fatalf("new admin token: %v", err)
	}

	// Update --sso.
	t.Run("OKUpdateSSO", func(t *testing.T) {
		for _, v := range []string{"on", "off"} {
			if _, _, err := runCmd(t, append([]string{"account", "update", "--code", "acme", "--sso", v}, common...)...); err != nil {
				t.Fatal(err)
			}
			acct, _ := a.AccountByCode(context.Background(), "acme")
			if acct.SSOEnabled != (v == "on") {
				t.Fatalf("sso %s: %v", v, acct.SSOEnabled)
			}
		}
		if _, _, err := runCmd(t, append([]string{"account", "update", "--code", "nope", "--sso", "on"}, common...)...); err == nil {
			t.Fatal("unknown account accepted")
		}
	})
	// Update --webhook-url.
	t.Run("OKUpdateWebhookURL", func(t *testing.T) {
		if _, _, err := runCmd(t, append([]string{"account", "update", "--code", "acme", "--webhook-url", "https://hooks.acme.example/teleclinic"}, common...)...); err != nil {
			t.Fatal(err)
		}
		acct, _ := a.AccountByCode(context.Background(), "acme")
		p := &clinic.Principal{Account: acct, Kind: clinic.CredSystem}
		if ws, _ := a.WebhookSettings(context.Background(), p); ws.URL != "https://hooks.acme.example/teleclinic" {
			t.Fatalf("%+v", ws)
		}
		// A private address needs the development switch.
		if _, _, err := runCmd(t, append([]string{"account", "update", "--code", "acme", "--webhook-url", "http://127.0.0.1:9000/"}, common...)...); err == nil {
			t.Fatal("a loopback receiver was accepted")
		}
		if _, _, err := runCmd(t, append([]string{"account", "update", "--code", "acme", "--webhook-allow-private", "--webhook-url", "http://127.0.0.1:9000/"}, common...)...); err != nil {
			t.Fatal(err)
		}
		if _, _, err := runCmd(t, append([]string{"account", "update", "--code", "acme", "--webhook-url", "none"}, common...)...); err != nil {
			t.Fatal(err)
		}
		if ws, _ := a.WebhookSettings(context.Background(), p); ws.URL != "" {
			t.Fatalf("%+v", ws)
		}
	})
	// Rotate --admin-token: the old token stops working at once.
	t.Run("OKRotateAdminToken", func(t *testing.T) {
		out, _, err := runCmd(t, append([]string{"account", "rotate", "--code", "acme", "--admin-token"}, common...)...)
		if err != nil {
			t.Fatal(err)
		}
		newTok := strings.TrimSpace(out)
		if auth(creds.AdminToken) == nil || auth(newTok) != nil {
			t.Fatal("rotation did not replace the token")
		}
	})
	// Rotate --api-secret.
	t.Run("OKRotateAPISecret", func(t *testing.T) {
		out, _, err := runCmd(t, append([]string{"account", "rotate", "--code", "acme", "--api-secret"}, common...)...)
		if err != nil {
			t.Fatal(err)
		}
		sso := func(secret string) error {
			_, err := a.Authenticate(context.Background(), app.Credentials{AccountCode: "acme", APIKey: creds.APIKey, APISecret: secret}, app.NeedAPIKey)
			return err
		}
		if sso(creds.APISecret) == nil || sso(strings.TrimSpace(out)) != nil {
			t.Fatal("rotation did not replace the secret")
		}
	})
	// Environment variables set flags.
	t.Run("OKEnvironmentVariables", func(t *testing.T) {
		t.Setenv("TELECLINIC_DATABASE", db)
		t.Setenv("TELECLINIC_DATA_DIR", dir)
		if _, _, err := runCmd(t, "account", "update", "--code", "acme", "--erx", "on"); err != nil {
			t.Fatal(err)
		}
		acct, _ := a.AccountByCode(context.Background(), "acme")
		if len(acct.Features) != 1 || acct.Features[0] != "erx" {
			t.Fatalf("%v", acct.Features)
		}
	})
}

func TestCLI_VersionAndUsage(t *testing.T) {
	out, _, err := runCmd(t, "version")
	if err != nil || !strings.HasPrefix(out, "teleclinic ") {
		t.Fatalf("%q %v", out, err)
	}
	if _, _, err := runCmd(t, "frobnicate"); err == nil {
		t.Fatal("unknown command accepted")
	}
	if _, _, err := runCmd(t, "migrate", "--data-dir", t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

// TestCLI_ServeDemo starts the server with --demo, runs the three printed
// curl commands exactly as printed, restarts it, and stops it with the
// context as SIGINT would.
func TestCLI_ServeDemo(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	dir := t.TempDir()
	db := testenv.DSN(t)
	if !strings.Contains(db, "://") {
		db = filepath.Join(dir, "teleclinic.db")
	}
	start := func() (string, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		stdout, stderr := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--demo", "--addr", "127.0.0.1:0", "--data-dir", dir, "--database", db}, stdout, stderr)
		}()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(stdout.String(), "# 3.") || !strings.Contains(stderr.String(), "listening") {
			select {
			case err := <-done:
				t.Fatalf("serve exited: %v\n%s", err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no demo output: %s\n%s", stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		return stdout.String(), func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve returned %v", err)
				}
			case <-time.After(35 * time.Second):
				t.Error("serve did not shut down")
			}
			if strings.Contains(stderr.String(), "level=ERROR") {
				t.Errorf("errors logged: %s", stderr.String())
			}
		}
	}
	printed, stop := start()
	var script []string
	for _, line := range strings.Split(printed, "\n") {
		if strings.HasPrefix(line, "TOKEN=") || strings.HasPrefix(line, "curl ") {
			script = append(script, line)
		}
	}
	if len(script) != 3 {
		t.Fatalf("want 3 commands, got %q", printed)
	}
	cmd := exec.Command("bash", "-c", strings.Join(script, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("printed commands failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"code":"demo-patient"`) || !strings.Contains(lines[1], `"code":"main"`) {
		t.Fatalf("unexpected output:\n%s", out)
	}
	// The printed portal addresses answer pages; the provider's link signs
	// the browser in on the dashboard.
	for _, line := range strings.Split(printed, "\n") {
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http://") {
			jar, _ := cookiejar.New(nil)
			res, err := (&http.Client{Transport: testenv.Transport, Jar: jar}).Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(body), "<h1>") {
				t.Fatalf("%s: %d %s", u, res.StatusCode, body)
			}
			if strings.Contains(u, "next=/providers/dashboard") && !strings.Contains(string(body), "<h1>Dashboard</h1>") {
				t.Fatalf("the provider's link did not sign in: %s", body)
			}
		}
	}
	if !strings.Contains(printed, "/c/demo/main") || !strings.Contains(printed, "next=/providers/dashboard") {
		t.Fatalf("no join page address printed:\n%s", printed)
	}
	stop()

	// A second start finds the demo clinic and gives it new credentials.
	again, stop2 := start()
	defer stop2()
	if again == printed || !strings.Contains(again, `account code "demo"`) {
		t.Fatal("credentials must be new on every start")
	}
	cmd = exec.Command("bash", "-c", strings.Join(script, "\n"))
	out, _ = cmd.CombinedOutput()
	if strings.Contains(string(out), `"code":"demo-patient"`) {
		t.Fatal("the first run's API secret still works")
	}
}

// TestCLI_AuditVerify: audit verify says a clinic's trail is intact, and
// exits 1 naming the entry once a row is edited in the database.
func TestCLI_AuditVerify(t *testing.T) {
	dir := t.TempDir()
	db := testenv.DSN(t)
	common := []string{"--data-dir", dir, "--database", db}
	if _, _, err := runCmd(t, append([]string{"account", "create", "--code", "acme", "--name", "Acme Health", "--domain", "acme.example.com"}, common...)...); err != nil {
		t.Fatal(err)
	}
	// Rotations are audited: three entries in the chain.
	for range 3 {
		if _, _, err := runCmd(t, append([]string{"account", "rotate", "--code", "acme", "--api-secret"}, common...)...); err != nil {
			t.Fatal(err)
		}
	}
	// No server has run, so no checkpoint anchors the chain yet; the
	// command says so.
	out, _, err := runCmd(t, append([]string{"audit", "verify", "--code", "acme"}, common...)...)
	if err != nil || !strings.Contains(out, "intact") || !strings.Contains(out, "No checkpoint in the blob store yet") {
		t.Fatalf("%q %v", out, err)
	}
	st := testenv.OpenStore(t, db)
	if _, err := st.DB().Exec(st.Rebind("UPDATE audit SET outcome = 'denied' WHERE seq = 2")); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCmd(t, append([]string{"audit", "verify", "--code", "acme"}, common...)...)
	if !errors.Is(err, errAuditBroken) || !strings.Contains(out, "BROKEN at entry 2") {
		t.Fatalf("%q %v", out, err)
	}
	if _, _, err := runCmd(t, append([]string{"audit", "verify"}, common...)...); err == nil {
		t.Fatal("no --code accepted")
	}
}

// TestCLI_HelpExitsZero: -h on every command prints its flags and is not an
// error, so the process exits 0.
func TestCLI_HelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"serve", "-h"}, {"migrate", "-h"}, {"account", "create", "-h"}, {"account", "update", "-h"},
		{"account", "rotate", "-h"}, {"audit", "verify", "-h"}, {"help"}, {"-h"}} {
		_, stderr, err := runCmd(t, args...)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%v: %v", args, err)
		}
		var ue usageError
		if errors.As(err, &ue) {
			t.Fatalf("%v is a usage error", args)
		}
		if args[0] != "help" && args[0] != "-h" && !strings.Contains(stderr, "-") {
			t.Fatalf("%v printed no flags: %q", args, stderr)
		}
	}
}

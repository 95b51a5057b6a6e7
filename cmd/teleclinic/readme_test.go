package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"teleclinic/internal/testenv"
)

// TestREADME_Walkthrough runs the README's walk-through as printed. Only the
// port and where the binary is written change, so the test neither collides
// with a server on :8080 nor writes into the checkout; the data dir and, for
// the PostgreSQL suite, the database come from TELECLINIC_* variables, which
// the walk-through's commands read like their flags.
func TestREADME_Walkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- walkthrough -->\n```sh\n")
	if !ok {
		t.Fatal("README has no walkthrough block")
	}
	script, _, _ := strings.Cut(rest, "```")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "teleclinic")
	script = strings.ReplaceAll(script, "8080", port)
	script = strings.ReplaceAll(script, "go build -o teleclinic", "go build -o "+bin)
	script = strings.ReplaceAll(script, "./teleclinic ", bin+" ")

	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "TELECLINIC_DATA_DIR="+filepath.Join(tmp, "data"), "TELECLINIC_ADDR=127.0.0.1:"+port)
	if testenv.Engine() == "postgres" {
		cmd.Env = append(cmd.Env, "TELECLINIC_DATABASE="+testenv.DSN(t))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		`"timezone":"Europe/London"`, `"dob":"1985-12-10"`, `"full_name":"Ada Lovelace"`,
		`{"data":{"token":{"user_id"`, `"total_count":1`, `"action":"token.refresh"`, "shutting down",
		`"webhook_secret":"whsec_`, `"type":"patient_message"`, `"total_count":1`, `"event":"visit.message.created"`,
		`"title":"Rash, day 1"`, `"fullpath":"http://`, `"substance":"Penicillin"`, `"subscriber_number":"W1234560"`,
		`"status":"pending"`, `"status":"active"`, `"sandbox":true`, `"last4":"4242"`, `"amount_due":22.5`, `"status":"paid"`,
		"The rash is spreading.\n", `1 "resourceType":"Bundle"`, `1 "resourceType":"Communication"`, `1 "resourceType":"Coverage"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"code":404`) || strings.Contains(string(out), "level=ERROR") {
		t.Errorf("an error in the walkthrough:\n%s", out)
	}
}

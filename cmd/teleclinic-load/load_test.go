package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as its own baseline process, as the
// built tool does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "baseline" {
		if err := serveBaseline(context.Background(), os.Args[2:]); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestLoad_Smoke runs every scenario briefly against a freshly built server:
// the tool works end to end. It asserts nothing about speed.
func TestLoad_Smoke(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "teleclinic")
	build := exec.Command("go", "build", "-o", bin, "teleclinic/cmd/teleclinic")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	report := filepath.Join(dir, "report.json")
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"--short", "--quiet", "--bin", bin, "--duration", "300ms", "--burst-for", "300ms", "--json", report}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep Report
	b, _ := os.ReadFile(report)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Scenario] = true
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors %s", r.Scenario, r.Requests, r.Errors, r.FirstError)
		}
		if r.Baseline != "" && r.BaselineRPS <= 0 {
			t.Errorf("%s: no baseline figure", r.Scenario)
		}
	}
	for _, s := range append(allScenarios, "webhook-burst") {
		if !seen[s] {
			t.Errorf("no result for %s", s)
		}
	}
	if rep.ServerHWMMB <= 0 || !strings.Contains(stdout.String(), "messages-post") {
		t.Errorf("report:\n%s", stdout.String())
	}
}

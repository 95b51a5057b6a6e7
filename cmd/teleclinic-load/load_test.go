package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"teleclinic/internal/testenv"
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
	bin := buildServer(t, dir)
	if testing.Short() {
		// Every scenario and a compare run take about two minutes on two
		// cores: -short runs two scenarios in rounds, the tool's path
		// from a build to a report.
		rep, _ := runTool(t, dir, "--short", "--quiet", "--bin", bin, "--duration", "300ms", "--scenarios", "rooms,messages-post", "--rounds", "2")
		if len(rep.Results) != 2 || rep.ServerHWMMB <= 0 {
			t.Fatalf("-short: %+v", rep)
		}
		for _, r := range rep.Results {
			if r.Requests == 0 || r.Errors != 0 || !strings.HasPrefix(r.Note, "median of 2 rounds") {
				t.Errorf("%s: %+v", r.Scenario, r)
			}
		}
		return
	}
	rep, stdout := runTool(t, dir, "--short", "--quiet", "--bin", bin, "--duration", "300ms", "--burst-for", "300ms")
	seen := map[string]bool{}
	for _, r := range rep.Results {
		scenario, _, _ := strings.Cut(r.Scenario, ":") // lists: clinic, lists: patient, …
		seen[scenario] = true
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
	if rep.ServerHWMMB <= 0 || !strings.Contains(stdout, "messages-post") {
		t.Errorf("report:\n%s", stdout)
	}

	// Rounds: one result per scenario and connection count, the median
	// round's, with every round's requests.
	rep, _ = runTool(t, dir, "--short", "--quiet", "--bin", bin, "--duration", "300ms", "--scenarios", "rooms,me", "--rounds", "3")
	if len(rep.Results) != 2 {
		t.Fatalf("%d results with 3 rounds, want 2", len(rep.Results))
	}
	for _, r := range rep.Results {
		if !strings.HasPrefix(r.Note, "median of 3 rounds") || r.Ratio <= 0 || r.Errors != 0 {
			t.Errorf("%s: %+v", r.Scenario, r)
		}
	}

	// Two builds compared: each round runs on A, then on B, each server
	// with its own clinic; a result per build, each with its statements.
	rep, stdout = runTool(t, dir, "--short", "--quiet", "--bin", bin, "--compare", bin, "--duration", "300ms", "--scenarios", "messages-post", "--rounds", "2")
	if len(rep.Results) != 2 || rep.Builds["A"] != bin || rep.Builds["B"] != bin || rep.CompareHWMMB <= 0 {
		t.Fatalf("compared: %+v", rep)
	}
	for i, want := range []string{"A", "B"} {
		r := rep.Results[i]
		if r.Build != want || r.Requests == 0 || r.Errors != 0 || r.Statements <= 0 || !strings.HasPrefix(r.Note, "median of 2 rounds") {
			t.Errorf("build %s: %+v", want, r)
		}
	}
	if !strings.Contains(stdout, "messages-post B") || !strings.Contains(stdout, "B: "+bin) {
		t.Errorf("report:\n%s", stdout)
	}
}

// TestLoad_MedianRound picks the round of the median ratio and counts every
// round's errors.
func TestLoad_MedianRound(t *testing.T) {
	rounds := []Result{
		{Scenario: "me", RPS: 900, Ratio: 0.30, Requests: 10, Errors: 1, FirstError: "first"},
		{Scenario: "me", RPS: 1500, Ratio: 0.50, Requests: 20},
		{Scenario: "me", RPS: 1200, Ratio: 0.40, Requests: 30, Errors: 2, Note: "scenario note"},
	}
	got := medianRound(rounds)
	if got.RPS != 1200 || got.Ratio != 0.40 || got.Requests != 60 || got.Errors != 3 || got.FirstError != "first" ||
		got.Note != "median of 3 rounds (ratios 30–50%); scenario note" {
		t.Fatalf("%+v", got)
	}
	if one := medianRound(rounds[:1]); one.RPS != 900 || one.Note != "" {
		t.Fatalf("one round: %+v", one)
	}
	two := medianRound(rounds[:2]) // the lower middle
	if two.RPS != 900 || two.Errors != 1 {
		t.Fatalf("two rounds: %+v", two)
	}
	if _, err := parseOptions([]string{"--rounds", "0"}, io.Discard); err == nil {
		t.Fatal("--rounds 0 accepted")
	}
	// pb-post runs only when named, and only against a PocketBase binary.
	if _, err := parseOptions([]string{"--scenarios", "pb-post"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--pocketbase-bin") {
		t.Fatalf("pb-post without --pocketbase-bin: %v", err)
	}
	// --compare runs the closed-loop scenarios, each build on SQLite.
	if _, err := parseOptions([]string{"--compare", "b", "--scenarios", "rooms,streams"}, io.Discard); err == nil || !strings.Contains(err.Error(), "not streams") {
		t.Fatalf("--compare with streams: %v", err)
	}
	if _, err := parseOptions([]string{"--compare", "b", "--scenarios", "rooms", "--database", "postgres://x"}, io.Discard); err == nil {
		t.Fatal("--compare with --database accepted")
	}
	if o, err := parseOptions(nil, io.Discard); err != nil || slices.Contains(o.Scenarios, "pb-post") {
		t.Fatalf("the default scenarios: %v, %v", o, err)
	}
}

// runTool runs the tool with args and --json, and returns its report and
// what it printed.
func runTool(t *testing.T, dir string, args ...string) (Report, string) {
	t.Helper()
	report := filepath.Join(dir, "report.json")
	var stdout, stderr strings.Builder
	if err := run(context.Background(), append(args, "--json", report), &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep Report
	b, _ := os.ReadFile(report)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, stdout.String()
}

func buildServer(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "teleclinic")
	build := exec.Command("go", "build", "-o", bin, "teleclinic/cmd/teleclinic")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestLoad_Postgres runs the thread scenarios on a fresh PostgreSQL
// database (a schema of the test database), which the tool analyzes after
// seeding: the tables of that schema, and only those, have statistics.
func TestLoad_Postgres(t *testing.T) {
	if testenv.Engine() != "postgres" {
		t.Skip("PostgreSQL only: set " + testenv.EnvDatabaseURL)
	}
	dir := t.TempDir()
	bin := buildServer(t, dir)
	dsn := testenv.DSN(t)
	rep, stdout := runTool(t, dir, "--short", "--quiet", "--bin", bin, "--database", dsn, "--scenarios", "messages-read,messages-post", "--duration", "300ms")
	if rep.Engine != "postgres" || len(rep.Results) != 2 {
		t.Fatalf("engine %q, %d results:\n%s", rep.Engine, len(rep.Results), stdout)
	}
	for _, r := range rep.Results {
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors %s", r.Scenario, r.Requests, r.Errors, r.FirstError)
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// last_analyze is set by ANALYZE only, not by autovacuum.
	var analyzed int
	if err := db.QueryRow(`SELECT count(*) FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'visits' AND last_analyze IS NOT NULL`).Scan(&analyzed); err != nil {
		t.Fatal(err)
	}
	if analyzed != 1 {
		t.Errorf("visits of the load schema analyzed: %d, want 1", analyzed)
	}
}

// TestBaseline_Checkpoints: the bare insert checkpoints its WAL as the
// server's writer does. Its insert once committed without SQLite's
// automatic checkpoint (INSERT … RETURNING read through QueryRow), so the
// database file never grew and the WAL took every insert.
func TestBaseline_Checkpoints(t *testing.T) {
	dir := t.TempDir()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serveBaseline(ctx, []string{"--kind", "sqlite", "--addr", addr, "--dir", dir, "--rows", "10"})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	if err := waitHTTP(ctx, "http://"+addr+"/healthz"); err != nil {
		t.Fatal(err)
	}
	// 3,000 one-row commits write at least 3,000 WAL frames (12 MB);
	// SQLite checkpoints at 1,000.
	const inserts = 3000
	for i := range inserts {
		res, err := http.PostForm("http://"+addr+"/insert", url.Values{"visit_id": {"1"}, "content": {"A message."}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 201 || !strings.Contains(string(body), `"id":"`+strconv.Itoa(11+i)+`"`) {
			t.Fatalf("insert %d: %d %s", i, res.StatusCode, body)
		}
	}
	wal, err := os.Stat(filepath.Join(dir, "baseline.db-wal"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := os.Stat(filepath.Join(dir, "baseline.db"))
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096
	if wal.Size() > 1100*frame || db.Size() <= 4096 {
		t.Fatalf("after %d inserts: WAL %d bytes, database file %d bytes: no checkpoint", inserts, wal.Size(), db.Size())
	}
}

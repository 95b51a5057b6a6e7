// Command teleclinic-load measures how much one Teleclinic server carries.
//
// It starts the server binary as a separate process on a fresh database (or
// targets --url), seeds a clinic with rooms, providers, patients, visits,
// messages and slots, and runs each scenario for --duration at each
// --connections value of keep-alive connections. Beside every scenario it
// measures a baseline served by this tool in another process under the same
// load — a bare net/http handler answering a small JSON object, and a bare
// handler doing one SQLite insert (or point read) per request — and prints
// the ratio, so figures from noisy machines can be compared.
//
//	teleclinic-load --duration 10s --connections 8,64,256
//	teleclinic-load --database postgres://postgres@127.0.0.1/load?sslmode=disable --scenarios messages-post --connections 8
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "baseline" {
		if err := serveBaseline(ctx, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "teleclinic-load:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	Bin         string
	Database    string
	URL         string
	Account     string
	AdminToken  string
	APIKey      string
	APISecret   string
	Duration    time.Duration
	Connections []int
	Scenarios   []string
	JSON        string
	Patients    int
	WebhookRate int
	BurstRate   int
	BurstFor    time.Duration
	Short       bool
	Quiet       bool
	Profile     string
	Rounds      int
	// Streams is how many event streams the streams scenario opens, and
	// StreamChanges how many queue changes it makes; StreamOpens how
	// many it opens at once (0: all).
	Streams, StreamChanges, StreamOpens int
	// StreamLimits are the bounds of the stream-limits scenario's server.
	StreamLimits streamLimits
	// NoAuditChain starts the server with the audit chaining pass put
	// off, to measure what the chaining costs the writes beside it.
	NoAuditChain bool
	// Calls is how many two-person calls the calls scenario sets up, and
	// CallHold how long it holds them all open.
	Calls    int
	CallHold time.Duration
	// Processes is how many server processes share the PostgreSQL
	// database; the scenarios' connections are spread over them.
	Processes int
	// ListVisits are the clinic sizes, in visits, at which the lists
	// scenario reads its pages.
	ListVisits []int
	// PocketBaseBin is the PocketBase server the pb-post scenario
	// compares the message post with.
	PocketBaseBin string
	// Compare is a second teleclinic binary: each round runs the scenario
	// on both builds in turn, each on its own database and seed, so two
	// builds are compared in the same minutes of a noisy machine.
	Compare string
}

// compareScenarios are those --compare runs: the closed-loop ones, whose
// rounds alternate.
var compareScenarios = []string{"rooms", "me", "messages-read", "messages-post", "sso", "availability", "book", "pb-post"}

// otherScenarios run only when named: pb-post needs --pocketbase-bin.
var otherScenarios = []string{"pb-post"}

var allScenarios = []string{"rooms", "me", "messages-read", "messages-post", "sso", "availability", "book", "webhook", "streams", "stream-limits", "calls", "lists"}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{StreamLimits: defaultStreamLimits()}
	fs := flag.NewFlagSet("teleclinic-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Bin, "bin", "", "the teleclinic binary to start (default: build ./cmd/teleclinic with go build)")
	fs.StringVar(&o.Database, "database", "", "a postgres:// URL for the started server (default: SQLite in a temporary directory)")
	fs.StringVar(&o.URL, "url", "", "target a running server instead of starting one (needs --account, --admin-token, --api-key, --api-secret)")
	fs.StringVar(&o.Account, "account", "", "with --url: the clinic's account code (SSO on)")
	fs.StringVar(&o.AdminToken, "admin-token", "", "with --url: the clinic's admin token")
	fs.StringVar(&o.APIKey, "api-key", "", "with --url: the clinic's API key")
	fs.StringVar(&o.APISecret, "api-secret", "", "with --url: the clinic's API secret")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "how long each scenario runs at each connection count")
	conns := fs.String("connections", "8,64", "keep-alive connection counts, comma-separated")
	scen := fs.String("scenarios", strings.Join(allScenarios, ","), "scenarios to run: "+strings.Join(allScenarios, ", ")+"; also "+strings.Join(otherScenarios, ", "))
	fs.StringVar(&o.JSON, "json", "", "also write the results as JSON to this file")
	fs.IntVar(&o.Patients, "patients", 64, "patients to seed, each with a visit of 30 messages")
	fs.IntVar(&o.WebhookRate, "webhook-rate", 100, "webhook scenario: messages per second for latency")
	fs.IntVar(&o.BurstRate, "burst-rate", 1000, "webhook scenario: messages per second in the burst")
	fs.DurationVar(&o.BurstFor, "burst-for", 10*time.Second, "webhook scenario: how long the burst lasts")
	fs.BoolVar(&o.Short, "short", false, "a smoke run: 1 s per scenario, 2 connections, 8 patients, a 1 s burst")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress lines")
	fs.IntVar(&o.Processes, "processes", 1, "with --database: server processes on the one database, the scenarios' connections spread over them (CPU and statements per request are summed over all)")
	fs.BoolVar(&o.NoAuditChain, "no-audit-chain", false, "start the server with the audit chaining pass put off (--audit-chain-every 24h): the same build without the chaining, to compare with")
	fs.IntVar(&o.Streams, "streams", 1000, "streams scenario: event streams open on one room's queue")
	fs.IntVar(&o.StreamChanges, "stream-changes", 5, "streams scenario: queue changes to deliver to every stream")
	fs.IntVar(&o.StreamOpens, "stream-opens", 100, "streams scenario: streams opening at once, as clients arrive (0: all at once, a reconnect storm)")
	fs.IntVar(&o.Calls, "calls", 64, "calls scenario: two-person calls set up at once (at most --patients)")
	fs.DurationVar(&o.CallHold, "call-hold", 10*time.Second, "calls scenario: how long all the calls stay open after set-up")
	fs.StringVar(&o.PocketBaseBin, "pocketbase-bin", "", "pb-post scenario: a PocketBase server binary (built from its public source) whose authenticated record create the message post is compared with")
	listVisits := fs.String("list-visits", "1000,100000", "lists scenario: the clinic sizes, in visits, to read the visit lists at (grown through the store)")
	fs.IntVar(&o.Rounds, "rounds", 1, "measure each scenario and its baseline this many times, alternating, and report the round with the median ratio")
	fs.StringVar(&o.Compare, "compare", "", "a second teleclinic binary to compare --bin with: each round runs the scenario on one build, then the other (SQLite, closed-loop scenarios only); results say which build (A: --bin, B: --compare)")
	fs.StringVar(&o.Profile, "profile", "", "write the started server's CPU profile of each run to this directory (<scenario>-<conns>.pprof)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("--connections: %q is not a count from 1 to 4096", s)
		}
		o.Connections = append(o.Connections, n)
	}
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allScenarios, s) && !slices.Contains(otherScenarios, s) {
			return nil, fmt.Errorf("--scenarios: unknown scenario %q", s)
		}
		if s == "pb-post" && o.PocketBaseBin == "" {
			return nil, errors.New("--scenarios pb-post needs --pocketbase-bin")
		}
		o.Scenarios = append(o.Scenarios, s)
	}
	for _, s := range strings.Split(*listVisits, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 100 || n > 10_000_000 || (len(o.ListVisits) > 0 && n <= o.ListVisits[len(o.ListVisits)-1]) {
			return nil, fmt.Errorf("--list-visits: %q is not a size from 100 to 10,000,000 larger than the one before", s)
		}
		o.ListVisits = append(o.ListVisits, n)
	}
	if o.Rounds < 1 || o.Rounds > 99 {
		return nil, fmt.Errorf("--rounds: %d is not a count from 1 to 99", o.Rounds)
	}
	if o.Short {
		o.Duration, o.Connections, o.Patients, o.BurstFor, o.WebhookRate, o.BurstRate = time.Second, []int{2}, 8, time.Second, 50, 200
		o.Streams, o.StreamChanges = 20, 2
		o.StreamLimits = streamLimits{server: 60, address: 30, credential: 5}
		o.Calls, o.CallHold = 2, time.Second
		o.ListVisits = []int{200, 2000}
	}
	if o.Processes < 1 || (o.Processes > 1 && o.Database == "") {
		return nil, errors.New("--processes: more than one needs --database (processes share a PostgreSQL database)")
	}
	if o.Compare != "" {
		if o.URL != "" || o.Database != "" {
			return nil, errors.New("--compare starts both builds on SQLite databases of their own: not with --url or --database")
		}
		for _, s := range o.Scenarios {
			if !slices.Contains(compareScenarios, s) {
				return nil, fmt.Errorf("--compare runs the scenarios %s, not %s", strings.Join(compareScenarios, ", "), s)
			}
		}
	}
	if o.URL != "" && (o.Account == "" || o.AdminToken == "" || o.APIKey == "" || o.APISecret == "") {
		return nil, errors.New("--url needs --account, --admin-token, --api-key and --api-secret")
	}
	return o, nil
}

// Result is one scenario at one connection count.
type Result struct {
	Scenario    string  `json:"scenario"`
	Connections int     `json:"connections"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	RPS         float64 `json:"req_per_s"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	// Build is A (--bin) or B (--compare) when two builds are compared.
	Build        string  `json:"build,omitempty"`
	Baseline     string  `json:"baseline,omitempty"`
	BaselineRPS  float64 `json:"baseline_req_per_s,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"`
	Note         string  `json:"note,omitempty"`
	FirstError   string  `json:"first_error,omitempty"`
	DrainSeconds float64 `json:"drain_s,omitempty"`
	// CPUms and Statements are the servers' CPU time and database
	// statements per request, summed over every server process (a
	// started server only).
	CPUms      float64 `json:"cpu_ms_per_req,omitempty"`
	Statements float64 `json:"statements_per_req,omitempty"`
	// DBCPUms is the CPU of this machine's PostgreSQL processes per
	// request, when the database is local (0 otherwise).
	DBCPUms float64 `json:"db_cpu_ms_per_req,omitempty"`
}

// label is the result's scenario, with its build when two are compared.
func (r Result) label() string { return strings.TrimSpace(r.Scenario + " " + r.Build) }

// Report is the whole run.
type Report struct {
	Engine      string    `json:"engine"`
	Started     time.Time `json:"started"`
	GoMaxProcs  string    `json:"machine"`
	Results     []Result  `json:"results"`
	ServerRSSMB float64   `json:"server_rss_mb"`
	ServerHWMMB float64   `json:"server_peak_rss_mb"`
	// Builds are the binaries compared (--compare), by the Build of the
	// results, and CompareHWMMB is B's peak RSS (the server figures above
	// are A's).
	Builds       map[string]string `json:"builds,omitempty"`
	CompareHWMMB float64           `json:"compare_peak_rss_mb,omitempty"`
}

// build is a server the closed-loop scenarios run on, with its clinic and
// seed; name is "" alone, A or B when two are compared.
type build struct {
	name  string
	c     *clinic
	seed  *seeded
	procs []*serverProc
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "teleclinic-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rn := &runner{o: o, tmp: tmp, baselines: map[string]float64{},
		rep: &Report{Engine: "sqlite", Started: time.Now().UTC(), GoMaxProcs: machine()}}
	rn.progress = func(format string, a ...any) {
		if !o.Quiet {
			fmt.Fprintf(stderr, format, a...)
		}
	}
	defer rn.stop()
	for _, step := range []func(context.Context) error{rn.startServers, rn.startCompare, rn.startBaselines} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	for _, name := range o.Scenarios {
		sc, ok := ownScenarios[name]
		if !ok {
			sc = (*runner).closedLoop
		}
		rs, err := sc(rn, ctx, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rn.rep.Results = append(rn.rep.Results, rs...)
	}
	rn.finish()
	printReport(stdout, rn.rep)
	if o.JSON != "" {
		b, _ := json.MarshalIndent(rn.rep, "", "  ")
		if err := os.WriteFile(o.JSON, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// runner is one run of the tool: what it started, the builds it loads,
// the baselines measured and the report.
type runner struct {
	o        *options
	tmp      string
	progress func(format string, a ...any)
	rep      *Report
	srv      *serverProc // the server the tool started (nil with --url)
	c        *clinic
	seed     *seeded
	// builds are what the closed-loop scenarios run on: this server, and
	// with --compare a second one with its own database and seed.
	builds            []*build
	jsonBase, sqlBase *baseProc
	pb                *pocketBase
	baselines         map[string]float64
	stops             []func()
}

// ownScenarios are the scenarios that measure in their own way; any other
// is a closed loop of requests at each connection count (closedLoop).
var ownScenarios = map[string]func(rn *runner, ctx context.Context, name string) ([]Result, error){
	"webhook": func(rn *runner, ctx context.Context, _ string) ([]Result, error) {
		rn.progress("scenario webhook…\n")
		return rn.c.webhookScenario(ctx, rn.o, rn.seed, rn.progress)
	},
	"calls":         one((*clinic).callsScenario),
	"stream-limits": one((*clinic).streamLimitsScenario),
	"streams":       one((*clinic).streamsScenario),
	"lists": func(rn *runner, ctx context.Context, _ string) ([]Result, error) {
		rn.progress("scenario lists…\n")
		return rn.c.listsScenario(ctx, rn.o, rn.seed, rn.srv, rn.progress)
	},
}

// one is a scenario of one result on the tool's server.
func one(sc func(*clinic, context.Context, *options, *seeded, *serverProc, func(string, ...any)) (Result, error)) func(*runner, context.Context, string) ([]Result, error) {
	return func(rn *runner, ctx context.Context, name string) ([]Result, error) {
		rn.progress("scenario %s…\n", name)
		r, err := sc(rn.c, ctx, rn.o, rn.seed, rn.srv, rn.progress)
		return []Result{r}, err
	}
}

func (rn *runner) stop() {
	for i := len(rn.stops) - 1; i >= 0; i-- {
		rn.stops[i]()
	}
}

// startServers starts the server (unless --url names one), the other
// processes --processes asks for, and seeds the clinic.
func (rn *runner) startServers(ctx context.Context) error {
	o := rn.o
	if o.URL != "" {
		rn.rep.Engine = "remote"
		rn.c = &clinic{base: strings.TrimRight(o.URL, "/"), code: o.Account, admin: o.AdminToken, key: o.APIKey, secret: o.APISecret}
	} else {
		if o.Database != "" {
			rn.rep.Engine = "postgres"
		}
		rn.progress("starting the server…\n")
		srv, c, err := startServer(ctx, o, rn.tmp)
		if err != nil {
			return err
		}
		rn.srv, rn.c = srv, c
		rn.stops = append(rn.stops, srv.stop)
	}
	procs := []*serverProc{}
	if rn.srv != nil {
		procs = append(procs, rn.srv)
		for range o.Processes - 1 {
			p, err := serve(ctx, rn.srv.bin, rn.srv.store)
			if err != nil {
				return fmt.Errorf("another server process: %w", err)
			}
			rn.stops = append(rn.stops, p.stop)
			procs = append(procs, p)
		}
		if len(procs) > 1 {
			rn.progress("%d server processes on the database\n", len(procs))
		}
	}
	rn.progress("seeding %d patients…\n", o.Patients)
	seed, err := rn.c.seed(ctx, o.Patients)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	rn.seed = seed
	rn.builds = []*build{{c: rn.c, seed: seed, procs: procs}}
	if o.Database != "" {
		rn.progress("analyzing the seeded tables…\n")
		if err := analyze(ctx, o.Database); err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
	}
	return nil
}

// startCompare starts, with --compare, the second build's server on a
// database and seed of its own.
func (rn *runner) startCompare(ctx context.Context) error {
	o := rn.o
	if o.Compare == "" {
		return nil
	}
	rn.builds[0].name = "A"
	ob := *o
	ob.Bin = o.Compare
	dir := filepath.Join(rn.tmp, "compare")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rn.progress("starting the server to compare (B)…\n")
	srvB, cB, err := startServer(ctx, &ob, dir)
	if err != nil {
		return fmt.Errorf("the server to compare: %w", err)
	}
	rn.stops = append(rn.stops, srvB.stop)
	rn.progress("seeding %d patients on B…\n", o.Patients)
	seedB, err := cB.seed(ctx, o.Patients)
	if err != nil {
		return fmt.Errorf("seed B: %w", err)
	}
	rn.builds = append(rn.builds, &build{name: "B", c: cB, seed: seedB, procs: []*serverProc{srvB}})
	rn.rep.Builds = map[string]string{"A": rn.srv.bin, "B": o.Compare} // A's is built when --bin is not given
	return nil
}

// startBaselines starts the baselines' processes, and PocketBase when
// pb-post is asked for.
func (rn *runner) startBaselines(ctx context.Context) error {
	rn.progress("starting the baselines…\n")
	var err error
	if rn.jsonBase, err = startBaseline(ctx, "json", rn.tmp); err != nil {
		return err
	}
	rn.stops = append(rn.stops, rn.jsonBase.stop)
	if rn.sqlBase, err = startBaseline(ctx, "sqlite", rn.tmp); err != nil {
		return err
	}
	rn.stops = append(rn.stops, rn.sqlBase.stop)
	if slices.Contains(rn.o.Scenarios, "pb-post") {
		rn.progress("starting PocketBase…\n")
		if rn.pb, err = startPocketBase(ctx, rn.o.PocketBaseBin, rn.tmp, rn.o.Patients); err != nil {
			return err
		}
		rn.stops = append(rn.stops, rn.pb.stop)
	}
	return nil
}

// measureBase is the baseline kind's req/s at conns. With one round a
// baseline is measured once per connection count, just before the first
// scenario that needs it. With more, or two builds, each run has its own,
// measured just before it, so a ratio compares two runs minutes apart at
// most.
func (rn *runner) measureBase(ctx context.Context, kind string, conns int) (float64, error) {
	k := fmt.Sprintf("%s/%d", kind, conns)
	if v, ok := rn.baselines[k]; ok && rn.o.Rounds == 1 && len(rn.builds) == 1 {
		return v, nil
	}
	var mk func(w, i int) (*http.Request, error)
	switch jb, sb := rn.jsonBase, rn.sqlBase; kind {
	case "json":
		mk = func(int, int) (*http.Request, error) { return http.NewRequest("GET", jb.url+"/json", nil) }
	case "insert":
		mk = func(w, i int) (*http.Request, error) {
			return form("POST", sb.url+"/insert", url.Values{"content": {"Hello from the load tool."}, "visit_id": {strconv.Itoa(w)}})
		}
	case "pocketbase":
		mk = rn.pb.post
	case "point-read":
		mk = func(w, i int) (*http.Request, error) {
			return http.NewRequest("GET", fmt.Sprintf("%s/read?id=%d", sb.url, 1+(w*7919+i)%sb.rows), nil)
		}
	}
	rn.progress("  baseline %-10s c=%-4d ", kind, conns)
	r := load(ctx, "baseline "+kind, conns, rn.o.Duration, mk, rn.progress)
	rn.progress("%8.0f req/s\n", r.RPS)
	if r.Errors > 0 { // a rate of failures is no yardstick
		return 0, fmt.Errorf("baseline %s c=%d: %d of %d requests failed: %s", kind, conns, r.Errors, r.Requests, r.FirstError)
	}
	rn.baselines[k] = r.RPS
	return r.RPS, nil
}

// closedLoop runs scenario name at each connection count, --rounds times
// on each build, and reports each build's median round.
func (rn *runner) closedLoop(ctx context.Context, name string) ([]Result, error) {
	var out []Result
	for _, conns := range rn.o.Connections {
		rounds := make([][]Result, len(rn.builds))
		for round := range rn.o.Rounds {
			for bi, b := range rn.builds {
				r, err := rn.closedRun(ctx, name, conns, b, round == 0 && bi == 0)
				if err != nil {
					return nil, err
				}
				rounds[bi] = append(rounds[bi], r)
			}
		}
		for _, rs := range rounds {
			out = append(out, medianRound(rs))
		}
	}
	return out, nil
}

// closedRun is one run of scenario name at conns on build b, with its
// server's CPU and statements a request, profiled when first (and
// --profile asks).
func (rn *runner) closedRun(ctx context.Context, name string, conns int, b *build, first bool) (Result, error) {
	o := rn.o
	sc := b.c.scenario(name, b.seed)
	base, err := rn.measureBase(ctx, sc.baseline, conns)
	if err != nil {
		return Result{}, err
	}
	rn.progress("  %-14s c=%-4d ", strings.TrimSpace(name+" "+b.name), conns)
	wait := func() {}
	if o.Profile != "" && rn.srv != nil && first {
		_ = os.MkdirAll(o.Profile, 0o755)
		wait = rn.srv.profile(filepath.Join(o.Profile, fmt.Sprintf("%s-%d.pprof", name, conns)), o.Duration-time.Second)
	}
	cpu0, st0 := usage(b.procs)
	db0 := postgresCPU()
	r := load(ctx, name, conns, o.Duration, spread(sc.request, b.procs), rn.progress)
	wait()
	if cpu1, st1 := usage(b.procs); r.Requests > 0 && len(b.procs) > 0 {
		r.CPUms = ms(cpu1-cpu0) / float64(r.Requests)
		r.Statements = float64(st1-st0) / float64(r.Requests)
		if o.Database != "" {
			r.DBCPUms = ms(postgresCPU()-db0) / float64(r.Requests)
		}
	}
	rn.progress("%8.0f req/s, p99 %.1f ms, %d errors\n", r.RPS, r.P99ms, r.Errors)
	r.Build, r.Baseline, r.BaselineRPS, r.Note = b.name, sc.baseline, base, sc.note
	if base > 0 {
		r.Ratio = r.RPS / base
	}
	return r, nil
}

// finish adds the servers' memory to the report, and PocketBase's beside
// each of its results.
func (rn *runner) finish() {
	rep := rn.rep
	if rn.srv != nil {
		rep.ServerRSSMB, rep.ServerHWMMB = rn.srv.rss()
	}
	if len(rn.builds) > 1 {
		_, rep.CompareHWMMB = rn.builds[1].procs[0].rss()
	}
	if rn.pb == nil {
		return
	}
	for i := range rep.Results {
		if r := &rep.Results[i]; r.Scenario == "pb-post" {
			tc := rep.ServerHWMMB
			if r.Build == "B" {
				tc = rep.CompareHWMMB
			}
			r.Note += fmt.Sprintf("; PocketBase peak RSS %.1f MB, Teleclinic's %.1f MB", rn.pb.peakRSS(), tc)
		}
	}
}

func machine() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return fmt.Sprintf("%d CPUs", strings.Count(string(b), "processor\t:"))
}

func printReport(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "\nTeleclinic on %s, %s, %s\n\n", rep.Engine, rep.GoMaxProcs, rep.Started.Format(time.RFC3339))
	if len(rep.Builds) > 0 {
		fmt.Fprintf(w, "A: %s\nB: %s\n\n", rep.Builds["A"], rep.Builds["B"])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tconns\treq/s\tp50 ms\tp90 ms\tp99 ms\terrors\tbaseline\tbase req/s\tratio\tCPU ms/req\tstmts/req\tDB CPU ms/req\t")
	for _, r := range rep.Results {
		ratio, base, cpu, stmts, db := "", "", "", "", ""
		if r.BaselineRPS > 0 {
			ratio, base = fmt.Sprintf("%.0f%%", 100*r.Ratio), fmt.Sprintf("%.0f", r.BaselineRPS)
		}
		if r.CPUms > 0 {
			cpu, stmts = fmt.Sprintf("%.2f", r.CPUms), fmt.Sprintf("%.1f", r.Statements)
		}
		if r.DBCPUms > 0 {
			db = fmt.Sprintf("%.2f", r.DBCPUms)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.label(), r.Connections, r.RPS, r.P50ms, r.P90ms, r.P99ms, r.Errors, r.Baseline, base, ratio, cpu, stmts, db)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Note != "" || r.FirstError != "" {
			fmt.Fprintf(w, "  %s c=%d: %s %s\n", r.label(), r.Connections, r.Note, r.FirstError)
		}
	}
	if rep.ServerRSSMB > 0 {
		fmt.Fprintf(w, "\nserver RSS at the end %.1f MB, peak %.1f MB\n", rep.ServerRSSMB, rep.ServerHWMMB)
	}
	if rep.CompareHWMMB > 0 {
		fmt.Fprintf(w, "B's server peak RSS %.1f MB\n", rep.CompareHWMMB)
	}
}

// load runs one closed-loop scenario: conns workers, each on its own
// keep-alive connection, sending the next request as soon as the last one
// answered.
// medianRound is the round whose ratio to its baseline is the median (the
// lower middle one of an even count), with every round's errors counted
// and the spread of the ratios in its note: a slow minute on a noisy
// machine moves one round, not the figure.
func medianRound(rounds []Result) Result {
	if len(rounds) == 1 {
		return rounds[0]
	}
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b Result) int { return cmp.Compare(a.Ratio, b.Ratio) })
	r := sorted[(len(sorted)-1)/2]
	r.Errors, r.Requests, r.FirstError = 0, 0, ""
	for _, x := range rounds {
		r.Errors += x.Errors
		r.Requests += x.Requests
		if r.FirstError == "" {
			r.FirstError = x.FirstError
		}
	}
	spread := fmt.Sprintf("median of %d rounds (ratios %.0f–%.0f%%)", len(rounds), 100*sorted[0].Ratio, 100*sorted[len(sorted)-1].Ratio)
	if r.Note != "" {
		spread += "; " + r.Note
	}
	r.Note = spread
	return r
}

func load(ctx context.Context, name string, conns int, dur time.Duration, mk func(worker, i int) (*http.Request, error), progress func(string, ...any)) Result {
	// The client reads with a 64 KB buffer, larger than any answer here,
	// as most HTTP clients' are (curl's is 16 KB): with Go's default of
	// 4 KB, a thread page (about 5 KB) cost the client two reads, and the
	// client shares the machine with the server, so the extra read was
	// charged to the scenario and not to its baseline's small answers.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true, IdleConnTimeout: time.Minute,
		ReadBufferSize: 64 << 10}}
	defer client.CloseIdleConnections()
	lat := make([][]time.Duration, conns)
	var errs atomic.Int64
	var done atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	stopTick := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				progress(".")
			case <-stopTick:
				return
			}
		}
	}()
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				req, err := mk(w, i)
				if errors.Is(err, errExhausted) {
					return
				}
				t0 := time.Now()
				status := 0
				if err == nil {
					var res *http.Response
					if res, err = client.Do(req.WithContext(ctx)); err == nil {
						status = res.StatusCode
						if status >= 300 {
							b, _ := io.ReadAll(io.LimitReader(res.Body, 300))
							err = fmt.Errorf("%d %s", status, b)
						} else {
							_, _ = io.Copy(io.Discard, res.Body)
						}
						res.Body.Close()
					}
				}
				lat[w] = append(lat[w], time.Since(t0))
				done.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	close(stopTick)
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	r := summarize(name, conns, all, elapsed)
	r.Errors = int(errs.Load())
	if s, ok := firstErr.Load().(string); ok {
		r.FirstError = "first error: " + s
	}
	return r
}

func summarize(name string, conns int, lat []time.Duration, elapsed time.Duration) Result {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	return Result{Scenario: name, Connections: conns, Requests: len(lat), RPS: float64(len(lat)) / elapsed.Seconds(), P50ms: pct(0.50), P90ms: pct(0.90), P99ms: pct(0.99)}
}

var errExhausted = errors.New("no more inputs")

func form(method, u string, v url.Values) (*http.Request, error) {
	req, err := http.NewRequest(method, u, strings.NewReader(v.Encode()))
	if err == nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, err
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitHTTP(ctx context.Context, u string) error {
	for i := 0; i < 300; i++ {
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer", u)
}

// serverProc is the started server.
type serverProc struct {
	cmd     *exec.Cmd
	log     *bytes.Buffer
	metrics string // the --metrics-addr base URL, with pprof
	base    string // the server's URL
	// bin and store start another process on the same data (serve);
	// addr, maddr and flags start this one again (restart).
	bin         string
	store       []string
	addr, maddr string
	flags       []string
}

// restart starts the stopped server again on its addresses and flags.
func (s *serverProc) restart(ctx context.Context) error {
	p, err := serveAt(ctx, s.addr, s.maddr, s.bin, s.store, s.flags...)
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

// profile fetches a CPU profile of the next d into file, in the background.
func (s *serverProc) profile(file string, d time.Duration) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", s.metrics, max(int(d.Seconds()), 1)))
		if err != nil {
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		_ = os.WriteFile(file, b, 0o644)
	}()
	return func() { <-done }
}

// saveProfile saves the profile at path of the metrics listener's pprof
// into file, if it can.
func (s *serverProc) saveProfile(path, file string) {
	res, err := http.Get(s.metrics + path)
	if err != nil {
		return
	}
	defer res.Body.Close()
	if b, err := io.ReadAll(res.Body); err == nil && res.StatusCode == 200 {
		_ = os.WriteFile(file, b, 0o644)
	}
}

func (s *serverProc) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}

// cpu is the CPU time the server has used, user and system.
func (s *serverProc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses:
	// utime and stime are the 12th and 13th, in clock ticks (100 a second
	// on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// rss reads the server's resident set now and at its peak, in MB.
func (s *serverProc) rss() (now, peak float64) { return procRSS(s.cmd.Process.Pid) }

// procRSS is a process's resident memory now and at its peak, in MB.
func procRSS(pid int) (now, peak float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			now = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return now, peak
}

// goMemory is what the server's Go runtime holds: its goroutines, their
// stacks and the heap in use, from the metrics listener's pprof (zero
// when it cannot be read). It tells what an open stream costs apart.
type goMemory struct {
	goroutines      int
	stackKB, heapKB float64
}

func (s *serverProc) goMemory() goMemory {
	var m goMemory
	get := func(path string) string {
		res, err := http.Get(s.metrics + path)
		if err != nil {
			return ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if g := get("/debug/pprof/goroutine?debug=1"); g != "" {
		fmt.Sscanf(g, "goroutine profile: total %d", &m.goroutines)
	}
	// The heap profile's text ends with runtime.MemStats: "# HeapInuse = N"
	// and "# Stack = inuse / sys", in bytes. gc=1 collects first; three
	// collections give what a long-lived server holds, whose collector
	// runs at least every two minutes and halves an idle goroutine's
	// grown stack at each run.
	get("/debug/pprof/heap?gc=1")
	get("/debug/pprof/heap?gc=1")
	for _, line := range strings.Split(get("/debug/pprof/heap?debug=1&gc=1"), "\n") {
		var n float64
		if _, err := fmt.Sscanf(line, "# HeapInuse = %g", &n); err == nil {
			m.heapKB = n / 1024
		}
		if _, err := fmt.Sscanf(line, "# Stack = %g", &n); err == nil {
			m.stackKB = n / 1024
		}
	}
	return m
}

// syncBuffer is a bytes.Buffer safe for the child's output goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		return len(p), nil
	}
	return s.b.Write(p)
}

// analyze gathers the planner's statistics of the seeded PostgreSQL
// database, as autovacuum does within a minute or so on a database in
// service. A fresh database has none, and its planner reads a visit
// through the clinic-wide index on (account_id, room_id, status), all of
// the clinic's visits, instead of the primary key (auto_explain): that is
// a first minute's cost, not the server's.
func analyze(ctx context.Context, dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	// The tables of the server's schema (the URL's search_path), not the
	// whole database's.
	var tables string
	err = db.QueryRowContext(ctx, `SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "ANALYZE "+tables)
	return err
}

func startServer(ctx context.Context, o *options, tmp string) (*serverProc, *clinic, error) {
	bin := o.Bin
	if bin == "" {
		bin = filepath.Join(tmp, "teleclinic")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/teleclinic")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, nil, fmt.Errorf("go build ./cmd/teleclinic (run from the repository, or give --bin): %w", err)
		}
	}
	data := filepath.Join(tmp, "data")
	store := []string{"--data-dir", data}
	if o.Database != "" {
		store = append(store, "--database", o.Database)
	}
	code := "load-" + randHex(3)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"account", "create"}, store...), "--code", code, "--name", "Load Clinic", "--domain", "load.example.com", "--sso", "--json")...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("account create: %w", err)
	}
	var creds struct {
		AccountCode, AdminToken, APIKey, APISecret string
	}
	var raw map[string]string
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		return nil, nil, fmt.Errorf("account create: %w (%s)", err, out.String())
	}
	creds.AccountCode, creds.AdminToken, creds.APIKey, creds.APISecret = raw["account_code"], raw["admin_token"], raw["api_key"], raw["api_secret"]
	// The streams scenario opens its streams with one credential from one
	// address: the per-credential and per-address bounds would stop it
	// before the server's own (--max-streams) is reached.
	flags := []string{"--max-streams-per-credential", "-1", "--max-streams-per-address", "-1"}
	if o.NoAuditChain {
		flags = append(flags, "--audit-chain-every", "24h")
	}
	p, err := serve(ctx, bin, store, flags...)
	if err != nil {
		return nil, nil, err
	}
	return p, &clinic{base: p.base, code: creds.AccountCode, admin: creds.AdminToken, key: creds.APIKey, secret: creds.APISecret}, nil
}

// serve starts `teleclinic serve` on store with the load run's settings
// and extra flags, and waits until it answers.
func serve(ctx context.Context, bin string, store []string, extra ...string) (*serverProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	maddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return serveAt(ctx, addr, maddr, bin, store, extra...)
}

func serveAt(ctx context.Context, addr, maddr, bin string, store []string, extra ...string) (*serverProc, error) {
	sb := &syncBuffer{}
	args := append(append([]string{"serve"}, store...), "--addr", addr, "--metrics-addr", maddr, "--log-level", "warn", "--webhook-allow-private",
		"--webhook-retry-interval", "1s", "--webhook-timeout", "5s")
	srv := exec.Command(bin, append(args, extra...)...)
	srv.Stdout, srv.Stderr = sb, sb
	if err := srv.Start(); err != nil {
		return nil, err
	}
	p := &serverProc{cmd: srv, log: &sb.b, metrics: "http://" + maddr, base: "http://" + addr, bin: bin, store: store, addr: addr, maddr: maddr, flags: extra}
	if err := waitHTTP(ctx, p.base+"/healthz"); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w; server output:\n%s", err, sb.b.String())
	}
	return p, nil
}

// baseProc is a baseline server: this tool, started again in baseline mode.
type baseProc struct {
	cmd  *exec.Cmd
	url  string
	rows int
}

func (b *baseProc) stop() {
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

func startBaseline(ctx context.Context, kind, tmp string) (*baseProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	const rows = 10000
	cmd := exec.Command(self, "baseline", "--kind", kind, "--addr", addr, "--dir", filepath.Join(tmp, "baseline-"+kind), "--rows", strconv.Itoa(rows))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &baseProc{cmd: cmd, url: "http://" + addr, rows: rows}
	if err := waitHTTP(ctx, b.url+"/healthz"); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// spread sends worker w's requests to server process w mod len(procs):
// the connections divide evenly, as a load balancer's would.
func spread(mk func(w, i int) (*http.Request, error), procs []*serverProc) func(w, i int) (*http.Request, error) {
	if len(procs) < 2 {
		return mk
	}
	return func(w, i int) (*http.Request, error) {
		req, err := mk(w, i)
		if err != nil {
			return req, err
		}
		u, perr := url.Parse(procs[w%len(procs)].base)
		if perr != nil {
			return nil, perr
		}
		req.URL.Host, req.Host = u.Host, ""
		return req, nil
	}
}

// usage is the CPU time and database statements of every server process
// so far, summed (statements from each one's /metrics).
func usage(procs []*serverProc) (time.Duration, int64) {
	var cpu time.Duration
	var st int64
	for _, p := range procs {
		cpu += p.cpu()
		st += p.statements()
	}
	return cpu, st
}

// statements is the server's teleclinic_db_statements_total, 0 when it
// cannot be read.
func (s *serverProc) statements() int64 {
	res, err := http.Get(s.metrics + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "teleclinic_db_statements_total "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f)
		}
	}
	return 0
}

// postgresCPU is the CPU time of this machine's PostgreSQL processes so
// far (every process named postgres in /proc): the database's share of a
// run when it is on the same machine. Processes that ended since the last
// reading are missed, so it is a lower bound.
func postgresCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || !bytes.Contains(b, []byte("(postgres)")) {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond
	}
	return total
}

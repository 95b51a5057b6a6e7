// Package testenv runs the real server wiring for tests: a fresh database on
// the engine the environment chooses, an httptest server, a clock the test
// controls, and an HTTP client that checks every response against
// openapi.yaml. It is the one place that picks the engine.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/blob"
	"teleclinic/internal/edge"
	"teleclinic/internal/httpapi"
	"teleclinic/internal/live"
	"teleclinic/internal/media"
	"teleclinic/internal/metrics"
	"teleclinic/internal/store"
	"teleclinic/internal/web"
)

// EnvDatabaseURL names the variable that switches the suite to PostgreSQL:
// a URL of a database in which each test creates and drops its own schema.
const EnvDatabaseURL = "TELECLINIC_TEST_DATABASE_URL"

// Engine is the engine this test run uses: "sqlite" or "postgres".
func Engine() string {
	if os.Getenv(EnvDatabaseURL) != "" {
		return "postgres"
	}
	return "sqlite"
}

// DSN returns a fresh, empty database for t: a SQLite file in dbDir(t),
// or a new PostgreSQL schema dropped when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvDatabaseURL)
	if base == "" {
		return filepath.Join(dbDir(t), "teleclinic.db")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	schema := "t_" + randHex(8)
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("testenv: create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("testenv: drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testenv: %s: %v", EnvDatabaseURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// dbDir is a directory for t's SQLite database, removed when t ends. Not
// t.TempDir: database/sql's Close does not wait for a connection its
// opener goroutine is still making, and SQLite creates the -wal and -shm
// files as it opens (then deletes them as it closes), so under load a
// removal right after the store's Close can meet a file that appeared
// midway and fail with "directory not empty". The removal is tried again
// once the late connection has come and gone.
func dbDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "teleclinic-test-")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		for try := 1; ; try++ {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if try == 20 {
				t.Errorf("testenv: removing %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}

// OpenStore opens and migrates the database at dsn, closed when t ends.
// opts, if given, set the store's caches.
func OpenStore(t testing.TB, dsn string, opts ...store.Options) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("testenv: open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("testenv: migrate: %v", err)
	}
	if err := st.StartReadAudits(context.Background()); err != nil {
		t.Fatalf("testenv: audit journal: %v", err)
	}
	return st
}

// Clock is a clock the test moves by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at a fixed, realistic time.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)} }

// ClockAt starts a clock at t: a test whose server talks to one on the
// wall clock (a TURN server checking credential expiry) starts it now.
func ClockAt(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Options change how a server is wired.
type Options struct {
	// Streams bounds the open event streams (default live's defaults).
	Streams   *live.Limits
	DSN       string // default: a fresh database
	ServerKey []byte // default: random; servers sharing a database share it
	Clock     *Clock // default: a new clock
	Config    func(*app.Config)
	MaxBody   int64
	MaxUpload int64
	MaxFile   int64      // POST /files limit
	BlobDir   string     // default: a new temporary directory
	BlobStore blob.Store // instead of the disk store under BlobDir
	// CORSOrigins are the origins the API answers cross-origin requests of.
	CORSOrigins []string
	Log         io.Writer // default: discarded
	// Workers runs the outbox delivery loops (mail, push, webhooks) for the
	// server's lifetime, polling every 20 ms.
	Workers bool
	// PortalHere makes the server's own address its base and portal URL,
	// so that a browser following GET /api_v3/auth lands on this server's
	// portal (the browser tests).
	PortalHere bool
	// KeepAlive is the event streams' keep-alive (default: the server's).
	KeepAlive time.Duration
	// StripeJS is where the payment page loads Stripe.js from.
	StripeJS string
	// LiveKit, when set, is called with the server's address before it
	// starts and gives its LiveKit setting: a LiveKit server started for
	// the test reports to the server's webhook (StartLiveKit).
	LiveKit func(serverURL string) media.LiveKit
	// ClientIPHeader is serve's --client-ip-header: a test sends a
	// client's address in it, as a proxy would.
	ClientIPHeader string
}

// Env is one running server.
// MetricsToken is the operator's metrics token of every test server.
const MetricsToken = "test-operator-metrics-token"

type Env struct {
	T     testing.TB
	URL   string
	App   *app.App
	Store *store.Store
	Clock *Clock
	DSN   string
	Key   []byte
	Blobs string // the blob directory; servers sharing a database share it
	// statements is the last request's statement count (Statements).
	statements atomic.Int64
	api        *httpapi.Server
	web        *web.Server
}

// CheapArgon2 keeps password hashing fast under the race detector; the hash
// format records its parameters, so the code path is the production one.
var CheapArgon2 = app.Argon2Params{Time: 1, MemoryKiB: 1024, Threads: 1}

// New starts a server with the real wiring on a fresh database.
func New(t testing.TB, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.DSN == "" {
		o.DSN = DSN(t)
	}
	if o.ServerKey == nil {
		o.ServerKey = []byte(randHex(32))
	}
	if o.Clock == nil {
		o.Clock = NewClock()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.BlobDir == "" {
		o.BlobDir = filepath.Join(t.TempDir(), "blobs")
	}
	var blobs blob.Store = o.BlobStore
	if blobs == nil {
		disk, err := blob.NewDisk(o.BlobDir)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		blobs = disk
	}
	st := OpenStore(t, o.DSN, store.Options{Now: o.Clock.Now, AuditKey: app.AuditChainKey(o.ServerKey)})
	cfg := app.Config{
		BaseURL: "http://teleclinic.test", PortalURL: "portal.teleclinic.test",
		UserTokenIdle: 30 * time.Minute, UserTokenMax: 12 * time.Hour, RefreshTokenMax: 30 * 24 * time.Hour,
		ServerKey: o.ServerKey, Argon2: CheapArgon2, Blobs: blobs,
		// Test receivers listen on 127.0.0.1; the guard itself is tested
		// with AllowPrivate off.
		Webhooks:   app.WebhookConfig{AllowPrivate: true},
		OutboxPoll: 20 * time.Millisecond,
	}
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	// Cleanups run last first: the event streams end before Close waits
	// for the connections, as they do when the real server shuts down.
	closing, closeStreams := context.WithCancel(context.Background())
	t.Cleanup(closeStreams)
	if o.PortalHere {
		cfg.BaseURL = "http://" + srv.Listener.Addr().String()
		cfg.PortalURL = cfg.BaseURL
	}
	if o.LiveKit != nil {
		cfg.LiveKit = o.LiveKit("http://" + srv.Listener.Addr().String())
	}
	reg := metrics.New()
	cfg.Metrics = reg
	if o.Config != nil {
		o.Config(&cfg)
	}
	log := slog.New(slog.NewTextHandler(o.Log, nil))
	a, err := app.New(st, cfg, o.Clock.Now, log)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	reg.AddCollector(a.WriteMetrics)
	streams := o.Streams
	if streams == nil {
		streams = live.NewLimits(0, 0, 0)
	}
	// One parker for both doors' streams, as in serve.
	parker := live.NewParker(closing)
	api := httpapi.New(a, log, httpapi.Config{Streams: streams, MaxBodyBytes: o.MaxBody, MaxUploadBytes: o.MaxUpload, MaxFileBytes: o.MaxFile, Metrics: reg, KeepAlive: o.KeepAlive, Closing: closing, Parker: parker,
		CORSOrigins: o.CORSOrigins, MetricsToken: MetricsToken})
	portal, err := web.New(a, log, web.Config{Streams: streams, SessionMax: cfg.UserTokenMax, KeepAlive: o.KeepAlive, Closing: closing, Parker: parker, MaxFileBytes: o.MaxFile, StripeJS: o.StripeJS}, api)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	env := &Env{T: t, App: a, Store: st, Clock: o.Clock, DSN: o.DSN, Key: o.ServerKey, Blobs: o.BlobDir, api: api, web: portal}
	h := edge.ClientIP(o.ClientIPHeader, edge.New(portal, log, reg))
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, n := store.CountStatements(r.Context())
		h.ServeHTTP(w, r.WithContext(ctx))
		env.statements.Store(n.Load())
	})
	srv.Start()
	env.URL = srv.URL
	if o.Workers {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); a.Run(ctx, billing.New(a.Core()).ChargeFees) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return env
}

// Statements is how many database statements the last request this
// server answered ran (its own, not the background loops').
func (e *Env) Statements() int64 { return e.statements.Load() }

// API is the server's handler, for checks on its route table.
func (e *Env) API() *httpapi.Server { return e.api }

// Portal is the portal's handler, for checks on its route table.
func (e *Env) Portal() *web.Server { return e.web }

// FlushAudits moves the journaled audit entries of reads into the audit
// table, for tests that count them there.
func (e *Env) FlushAudits() {
	e.T.Helper()
	if err := e.Store.FlushAudits(context.Background()); err != nil {
		e.T.Fatalf("flush audits: %v", err)
	}
}

// Clinic is an account created for a test, with its plain credentials.
type Clinic struct {
	Code, AdminToken, APIKey, APISecret string
}

// NewClinic creates a clinic account with SSO on or off.
func (e *Env) NewClinic(code string, sso bool) *Clinic {
	e.T.Helper()
	cr, err := e.App.CreateAccount(context.Background(), app.NewAccount{Code: code, Name: strings.ToUpper(code[:1]) + code[1:] + " Clinic", Domain: code + ".clinic.test", SSO: sso})
	if err != nil {
		e.T.Fatalf("testenv: create clinic: %v", err)
	}
	return &Clinic{Code: code, AdminToken: cr.AdminToken, APIKey: cr.APIKey, APISecret: cr.APISecret}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Fatalf is a helper's failure with the caller's line.
func (e *Env) Fatalf(format string, args ...any) { e.T.Helper(); e.T.Fatalf(format, args...) }

// SyncBuffer is a bytes.Buffer safe to read while a server writes to it
// (a log, a command's output).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Step is one named step of a test's script.
type Step struct {
	Name string
	Run  func(*testing.T)
}

// Steps runs a script's steps in order as subtests, stopping t at the first
// that fails: each step stands on the ones before.
func Steps(t *testing.T, steps []Step) {
	t.Helper()
	for _, s := range steps {
		if !t.Run(s.Name, s.Run) {
			t.FailNow()
		}
	}
}

// ICD10OrderFile is the shared ICD-10-CM FY2026 order file (gzipped) the
// tests of a package two levels below the repository read: beside the
// repository in ../shared/data/icd10cm, or where TELECLINIC_ICD10CM_ORDER
// says. Without it the test is skipped, saying where it looked.
func ICD10OrderFile(t testing.TB) string {
	t.Helper()
	path := os.Getenv("TELECLINIC_ICD10CM_ORDER")
	if path == "" {
		path = filepath.Join("..", "..", "..", "shared", "data", "icd10cm", "icd10cm_order_2026.txt.gz")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no ICD-10-CM order file at %s (set TELECLINIC_ICD10CM_ORDER): %v", path, err)
	}
	return path
}

// Command teleclinic is the Teleclinic server and its operator commands.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/blob"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/httpapi"
	"teleclinic/internal/live"
	"teleclinic/internal/locale"
	"teleclinic/internal/media"
	"teleclinic/internal/metrics"
	"teleclinic/internal/reference"
	"teleclinic/internal/store"
	"teleclinic/internal/web"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		// -h printed the command's flags, as asked: a success.
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "teleclinic:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "teleclinic:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

// flagsErr is a command's answer to flags that did not parse: -h is no
// error (the flags were printed, and the command exits 0); the rest is a
// usage error.
func flagsErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err.Error()}
}

func (e usageError) Error() string { return e.msg }

const usage = `usage: teleclinic <command> [flags]

commands:
  serve             run the server (--demo also seeds a demo clinic)
  migrate           apply database migrations and exit
  account create    create a clinic account and print its credentials
  account update    change a clinic's settings (--sso on|off, --erx on|off)
  account rotate    replace a clinic's admin token or API secret
  audit verify      check a clinic's audit trail (its hash chain); exits 1 at a break
  codes import FILE load a year's ICD-10-CM release (CMS's order file or zip) for every clinic
  move              move a stopped SQLite server's data into an empty PostgreSQL database
  version           print the version

Run "teleclinic <command> -h" for a command's flags.`

// run is the whole program, with its environment passed in so tests can
// drive it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return usageError{"no command"}
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, args[1:], stdout, stderr)
	case "account":
		return cmdAccount(ctx, args[1:], stdout, stderr)
	case "audit":
		return cmdAudit(ctx, args[1:], stdout, stderr)
	case "codes":
		return cmdCodes(ctx, args[1:], stdout, stderr)
	case "move":
		return cmdMove(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "teleclinic", buildVersion())
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// open opens and migrates the database and builds the app.
func open(ctx context.Context, c *config, stderr io.Writer) (*app.App, *slog.Logger, func(), error) {
	if err := c.validate(); err != nil {
		return nil, nil, nil, usageError{err.Error()}
	}
	log := c.logger(stderr)
	key, err := c.serverKey()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := store.Open(ctx, c.Database, store.Options{CacheTTL: c.ReadCacheTTL, Logger: log, AuditKey: app.AuditChainKey(key)})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	if err := st.CheckAuditKey(ctx); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	if err := st.StartReadAudits(ctx); err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	blobs, err := blob.Open(ctx, c.BlobURL, filepath.Join(c.DataDir, "blobs"))
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	ref, err := reference.Load(c.ReferenceDir)
	if err != nil {
		st.Close()
		return nil, nil, nil, usageError{err.Error()}
	}
	mailer, apns, fcm, err := c.senders()
	if err != nil {
		st.Close()
		return nil, nil, nil, usageError{err.Error()}
	}
	locales, err := locale.Load(c.LocaleDir)
	if err != nil {
		st.Close()
		return nil, nil, nil, usageError{err.Error()}
	}
	a, err := app.New(st, app.Config{
		BaseURL: c.BaseURL, PortalURL: c.PortalURL, UserTokenIdle: c.UserTokenIdle, UserTokenMax: c.UserTokenMax,
		RefreshTokenMax: c.RefreshMax, AuditChainEvery: c.AuditChainEvery, ServerKey: key, Blobs: blobs, Mail: mailer, APNs: apns, FCM: fcm,
		MaxImagePixels: c.MaxPixels, EligibilityWindow: c.EligibilityWindow,
		ResizeMemory: c.ResizeMemory, LoginAttempts: c.LoginAttempts, AddressAttempts: c.AddressAttempts, ThrottleWindow: c.AttemptWindow, Reference: ref, Metrics: c.Metrics, Locales: locales,
		Webhooks: app.WebhookConfig{RetryInterval: c.WebhookRetryInterval, Timeout: c.WebhookTimeout, AllowPrivate: c.WebhookAllowPrivate},
		ICE:      media.Config{STUN: urlList(c.STUNURLs), TURN: urlList(c.TURNURLs), Secret: c.TURNSecret, RelayOnly: c.TURNRelayOnly, TTL: c.TURNTTL},
		LiveKit:  media.LiveKit{URL: c.LiveKitURL, Key: c.LiveKitAPIKey, Secret: c.LiveKitAPISecret},
	}, time.Now, log)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return a, log, func() { st.Close() }, nil
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeFlags(fs, &c)
	if err := parseFlags(fs, args); err != nil {
		return flagsErr(err)
	}
	c.UserTokenIdle, c.UserTokenMax = time.Minute, time.Minute
	_, _, closeFn, err := open(ctx, &c, stderr)
	if err != nil {
		return err
	}
	closeFn()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serveFlags(fs, &c)
	if err := parseFlags(fs, args); err != nil {
		return flagsErr(err)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if c.BaseURL == "" {
		c.BaseURL = baseURLFor(ln.Addr().(*net.TCPAddr))
	}
	if c.Demo {
		c.WebhookAllowPrivate = true // the demo's receiver is usually on this machine
	}
	c.Metrics = metrics.New()
	a, log, closeFn, err := open(ctx, &c, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	c.Metrics.AddCollector(a.WriteMetrics)
	if c.Demo {
		d, err := a.SeedDemo(ctx)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		printDemo(stdout, c.BaseURL, d)
	}
	// closing ends the event streams when shutdown begins: they would hold
	// it for as long as their clients stay.
	closing, closeStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer closeStreams()
	// One bound of open event streams for both doors.
	streams := live.NewLimits(c.MaxStreamsPerCredential, c.MaxStreamsPerAddress, c.MaxStreams)
	// The streams of both doors wait in one parker (live.Parker).
	parker := live.NewParker(closing)
	api := httpapi.New(a, log, httpapi.Config{Streams: streams, MaxBodyBytes: c.MaxBody, MaxUploadBytes: c.MaxUpload, MaxFileBytes: c.MaxFile, Metrics: c.Metrics, MetricsToken: c.MetricsToken, Closing: closing, Parker: parker,
		CORSOrigins: splitList(c.CORSOrigins)})
	if c.MetricsAddr != "" {
		mln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer mln.Close()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", api.MetricsHandler())
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		go func() { _ = http.Serve(mln, mux) }()
		log.Info("metrics and pprof listening", "addr", mln.Addr().String())
	}
	// The portal's pages answer their own paths and hand the rest to the
	// API; the edge in front of both gives every request its id, log line,
	// metrics and panic recovery.
	portal, err := web.New(a, log, web.Config{Secure: strings.HasPrefix(c.BaseURL, "https://"), SessionMax: c.UserTokenMax, Closing: closing, Parker: parker, MaxFileBytes: c.MaxFile,
		Locales: a.Locales(), Streams: streams}, api)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           edge.ClientIP(c.ClientIPHeader, edge.New(portal, log, c.Metrics)),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(closeStreams)
	workers, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	go a.Run(workers, billing.New(a.Core()).ChargeFees)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("teleclinic listening", "addr", ln.Addr().String(), "base_url", c.BaseURL, "database", a.Store().Engine(), "version", buildVersion())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	stopWorkers()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// urlList splits a comma-separated flag value, dropping empty entries.
func urlList(v string) []string {
	var out []string
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func baseURLFor(addr *net.TCPAddr) string {
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "localhost"
	} else if addr.IP.To4() == nil {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("http://%s:%d", host, addr.Port)
}

// printDemo prints the demo clinic's credentials and three calls that work
// exactly as printed in a POSIX shell.
func printDemo(w io.Writer, base string, d *app.Demo) {
	cr := d.Credentials
	fmt.Fprintf(w, `Demo clinic ready (account code %q). Credentials are new on every start:
  admin token: %s
  API key:     %s
  API secret:  %s
  patient login: username %s, password %s

Try it:

# 1. Sign a patient in with SSO and keep the access token
TOKEN=$(curl -s -X POST %s/api_v3/users/sso -H 'X-AccountCode: %s' -H 'X-ApiKey: %s' -H 'X-ApiSecret: %s' -F first_name=Pat -F last_name=Patient -F type=200 -F code=%s | grep -o '"token":"[^"]*"' | head -n 1 | cut -d '"' -f 4)

# 2. Read the patient's profile with that token
curl -s %s/api_v3/me -H 'X-AccountCode: %s' -H "X-ApiToken: $TOKEN"

# 3. List the clinic's rooms (the account code is enough)
curl -s %s/api_v3/rooms -H 'X-AccountCode: %s'

In a browser: the room's join page, where a patient (the login above, or
a guest) joins the waiting room, books one of the week's open times, or
sends the clinic a message:
  %s/c/%s/%s
the provider's dashboard, signed in (the link carries the provider's
access token: treat it as a password):
  %s/auth?sso_token=%s&next=/providers/dashboard
the clinic admin's pages (sign in with the admin token above):
  %s/admin/signin?clinic=%s
and the sign-in page (the patient login above works there):
  %s/signin?clinic=%s

`, cr.AccountCode, cr.AdminToken, cr.APIKey, cr.APISecret, d.PatientUsername, d.PatientPassword,
		base, cr.AccountCode, cr.APIKey, cr.APISecret, d.PatientCode,
		base, cr.AccountCode,
		base, cr.AccountCode,
		base, cr.AccountCode, d.RoomCode,
		base, d.ProviderToken,
		base, cr.AccountCode,
		base, cr.AccountCode)
}

func cmdAccount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"account: name a subcommand: create, update or rotate"}
	}
	var c config
	fs := flag.NewFlagSet("account "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeFlags(fs, &c)
	code := fs.String("code", "", "account code")
	var name, domain, ssoOnOff, erxOnOff, webhookURL *string
	var sso, asJSON, rotAdmin, rotSecret *bool
	switch args[0] {
	case "create":
		name = fs.String("name", "", "clinic name")
		domain = fs.String("domain", "", "clinic domain, e.g. clinic.example.com")
		sso = fs.Bool("sso", false, "enable single sign-on")
		asJSON = fs.Bool("json", false, "print one JSON object with the credentials")
	case "update":
		ssoOnOff = fs.String("sso", "", "single sign-on: on or off")
		erxOnOff = fs.String("erx", "", "e-prescribing requirements for patients: on or off")
		webhookURL = fs.String("webhook-url", "", `where visit.message.created is delivered ("none" removes it)`)
		webhookPrivateFlag(fs, &c)
	case "rotate":
		rotAdmin = fs.Bool("admin-token", false, "replace the admin token")
		rotSecret = fs.Bool("api-secret", false, "replace the API secret")
	default:
		return usageError{fmt.Sprintf("account: unknown subcommand %q", args[0])}
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsErr(err)
	}
	if *code == "" {
		return usageError{"account: --code is required"}
	}
	c.UserTokenIdle, c.UserTokenMax = time.Minute, time.Minute
	a, _, closeFn, err := open(ctx, &c, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	switch args[0] {
	case "create":
		creds, err := a.CreateAccount(ctx, app.NewAccount{Code: *code, Name: *name, Domain: *domain, SSO: *sso})
		if err != nil {
			return cliErr(err)
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(creds)
		}
		fmt.Fprintf(stdout, "Created account %s. Store these now; they are shown only once:\n  admin token: %s\n  API key:     %s\n  API secret:  %s\n",
			creds.AccountCode, creds.AdminToken, creds.APIKey, creds.APISecret)
	case "update":
		if *ssoOnOff == "" && *erxOnOff == "" && *webhookURL == "" {
			return usageError{"account update: give --sso on|off, --erx on|off or --webhook-url URL"}
		}
		if *webhookURL != "" {
			u := *webhookURL
			if u == "none" {
				u = ""
			}
			if err := a.SetWebhookURL(ctx, *code, u); err != nil {
				return cliErr(err)
			}
		}
		for _, set := range []struct {
			val *string
			do  func(bool) error
		}{
			{ssoOnOff, func(on bool) error { return a.SetSSO(ctx, *code, on) }},
			{erxOnOff, func(on bool) error { return a.SetFeature(ctx, *code, app.FeatureERx, on) }},
		} {
			if *set.val == "" {
				continue
			}
			on, err := onOff(*set.val)
			if err != nil {
				return err
			}
			if err := set.do(on); err != nil {
				return cliErr(err)
			}
		}
		fmt.Fprintf(stdout, "Updated account %s.\n", *code)
	case "rotate":
		if *rotAdmin == *rotSecret {
			return usageError{"account rotate: give exactly one of --admin-token or --api-secret"}
		}
		what := app.RotateAdminToken
		if *rotSecret {
			what = app.RotateAPISecret
		}
		creds, err := a.Rotate(ctx, *code, what)
		if err != nil {
			return cliErr(err)
		}
		fmt.Fprintln(stdout, creds.AdminToken+creds.APISecret)
	}
	return nil
}

func onOff(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, usageError{fmt.Sprintf("%q: want on or off", s)}
}

// cliErr shows a client error's message without its code.
func cliErr(err error) error {
	if clinic.ErrorCode(err) != clinic.EInternal {
		return errors.New(clinic.ErrorMessage(err))
	}
	return err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// errAuditBroken is audit verify's answer when the chain is broken: the
// command has said where, and exits 1.
var errAuditBroken = errors.New("the audit trail's hash chain is broken")

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError{"audit: the subcommand is verify"}
	}
	var c config
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeFlags(fs, &c)
	code := fs.String("code", "", "account code of the clinic whose trail to check")
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsErr(err)
	}
	if *code == "" {
		return usageError{"audit verify: --code is required"}
	}
	c.UserTokenIdle, c.UserTokenMax = time.Minute, time.Minute
	a, _, closeFn, err := open(ctx, &c, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	acct, err := a.AccountByCode(ctx, *code)
	if err != nil {
		return cliErr(err)
	}
	v, err := a.VerifyAudit(ctx, app.SystemPrincipal(acct))
	if err != nil {
		return cliErr(err)
	}
	if b := v.Broken; b != nil {
		fmt.Fprintf(stdout, "Audit trail of %s: BROKEN at entry %d (row %d) after %d intact entries: %s\n", *code, b.Seq, b.ID, v.Entries, b.Reason)
		return errAuditBroken
	}
	fmt.Fprintf(stdout, "Audit trail of %s: intact, %d entries, head %s\n", *code, v.Entries, v.Head)
	if c := v.Checkpoint; c != nil {
		fmt.Fprintf(stdout, "Matches its checkpoint of %s (entry %d), signed with %s\n", time.Unix(c.Time, 0).UTC().Format(time.RFC3339), c.Seq, a.AuditCheckpointPublicKey())
	} else {
		fmt.Fprintf(stdout, "No checkpoint in the blob store yet: a running server writes one within %s of an entry\n", app.AuditCheckpointEvery)
	}
	return nil
}

// splitList is a comma-separated flag's values, trimmed, without empties.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

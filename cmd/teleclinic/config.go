package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"teleclinic/internal/live"
	"teleclinic/internal/mail"
	"teleclinic/internal/media"
	"teleclinic/internal/metrics"
	"teleclinic/internal/push"
)

// config is every setting of the binary. Each flag is also read from the
// environment variable named after it: --data-dir ↔ TELECLINIC_DATA_DIR.
// A flag given on the command line wins over the variable.
type config struct {
	Addr          string
	DataDir       string
	Database      string
	BaseURL       string
	PortalURL     string
	UserTokenIdle time.Duration
	UserTokenMax  time.Duration
	RefreshMax    time.Duration
	LogFormat     string
	LogLevel      string
	MetricsAddr   string
	MetricsToken  string
	// Event streams open at once: per credential, per client address, in all.
	MaxStreamsPerCredential, MaxStreamsPerAddress, MaxStreams int
	Metrics                                                   *metrics.Registry // made by serve; not a flag
	ServerKey                                                 string
	MaxBody                                                   int64
	MaxUpload                                                 int64
	MaxFile                                                   int64
	MaxPixels                                                 int64
	BlobURL                                                   string
	Demo                                                      bool

	EligibilityWindow time.Duration
	LoginAttempts     int
	ResizeMemory      int64
	AddressAttempts   int
	AttemptWindow     time.Duration
	ClientIPHeader    string
	CORSOrigins       string
	ReadCacheTTL      time.Duration
	ReferenceDir      string
	LocaleDir         string

	WebhookRetryInterval time.Duration
	WebhookTimeout       time.Duration
	WebhookAllowPrivate  bool

	SMTPAddr, SMTPFrom, SMTPUsername, SMTPPassword, SMTPTLS string

	APNsKeyFile, APNsKeyID, APNsTeamID, APNsTopic, APNsURL string
	FCMCredentialsFile, FCMURL                             string
	// The call's ICE servers: comma-separated STUN and TURN URLs, and the
	// TURN servers' shared secret.
	STUNURLs, TURNURLs, TURNSecret string
	TURNRelayOnly                  bool
	TURNTTL                        time.Duration
	AuditChainEvery                time.Duration
	// LiveKit, when its URL is set, carries calls instead of the
	// peer-to-peer mesh.
	LiveKitURL, LiveKitAPIKey, LiveKitAPISecret string
}

// storeFlags are the settings every subcommand that opens the database takes.
func storeFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory for the SQLite database and local files")
	fs.StringVar(&c.Database, "database", "", "database: a postgres:// URL, or a SQLite file path (default: teleclinic.db in the data dir)")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.LogLevel, "log-level", "info", "least severe log level written: debug, info (one line per request), warn or error")
	fs.StringVar(&c.BlobURL, "blob-url", "", "where file bytes live: empty for blobs/ in the data dir, or s3://bucket?region=…&endpoint=…&use_path_style=true (credentials from the AWS_* environment)")
	fs.StringVar(&c.ServerKey, "server-key", "", "hex key (32+ bytes) signing links and sealing outbox mail; default: server.key in the data dir, created on first start. Processes sharing a database must share it")
}

func serveFlags(fs *flag.FlagSet, c *config) {
	storeFlags(fs, c)
	fs.StringVar(&c.Addr, "addr", ":8080", "address to listen on")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "also serve /metrics (no token) and /debug/pprof/ on this address, e.g. 127.0.0.1:9090; keep it private")
	fs.IntVar(&c.MaxStreams, "max-streams", live.DefaultStreams, "event streams (the API's and the portal's) this process holds open at once; past it 503 with Retry-After (-1: no bound)")
	fs.IntVar(&c.MaxStreamsPerAddress, "max-streams-per-address", live.DefaultStreamsPerAddress, "event streams open at once from one client address; past it 429 (-1: no bound)")
	fs.IntVar(&c.MaxStreamsPerCredential, "max-streams-per-credential", live.DefaultStreamsPerCredential, "event streams open at once with one token or session; past it 429 (-1: no bound)")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "the server operator's token for GET /metrics on --addr (Authorization: Bearer …); no clinic's credential opens the metrics; empty: /metrics only on --metrics-addr. Prefer TELECLINIC_METRICS_TOKEN")
	fs.StringVar(&c.BaseURL, "base-url", "", "public URL of this server, used in links (default: from --addr)")
	fs.StringVar(&c.PortalURL, "portal-url", "", "patient portal address GET /auth redirects to (default: the base URL)")
	fs.DurationVar(&c.UserTokenIdle, "user-token-idle", 30*time.Minute, "a user access token unused this long expires")
	fs.DurationVar(&c.UserTokenMax, "user-token-max", 12*time.Hour, "a user access token expires this long after it was issued")
	fs.DurationVar(&c.RefreshMax, "refresh-token-max", 30*24*time.Hour, "a refresh token expires this long after it was issued")
	fs.Int64Var(&c.MaxBody, "max-body", 1<<20, "largest JSON or form request body, in bytes")
	fs.Int64Var(&c.MaxUpload, "max-upload", 2<<30, "largest recording upload, in bytes")
	fs.Int64Var(&c.MaxFile, "max-file-upload", 50<<20, "largest POST /files upload, in bytes (413 past it)")
	fs.Int64Var(&c.MaxPixels, "max-image-pixels", 40_000_000, "largest image (width × height) GET /files/view resizes; larger ones are refused from their header")
	fs.StringVar(&c.ReferenceDir, "reference-dir", "", "directory of newer reference lists (icd10cm-codes.txt from the CMS/CDC release, procedures.tsv, billing_modifiers.tsv, payers.tsv) replacing the embedded ones")
	fs.StringVar(&c.LocaleDir, "locale-dir", "", "directory of the portal's message catalogs (fr.json, or es.json to reword the embedded Spanish; the format of internal/locale/catalogs/en.json) added to the embedded English and Spanish")
	fs.Int64Var(&c.ResizeMemory, "resize-memory", 256<<20, "bytes all image resizes (GET /files/view?size=) may hold at once; a resize that cannot get its share within 10 s answers 503 with Retry-After")
	fs.IntVar(&c.LoginAttempts, "login-attempts", 10, "failed sign-in attempts per clinic, user name and client address (password logins, link requests; API key checks, admin sign-ins and links per clinic and address) in each --attempt-window; past it 429 with Retry-After (-1: no limit)")
	fs.IntVar(&c.AddressAttempts, "address-attempts", 100, "sign-in attempts per client address in each --attempt-window, across clinics (-1: no limit)")
	fs.DurationVar(&c.AttemptWindow, "attempt-window", 15*time.Minute, "the window of --login-attempts and --address-attempts")
	fs.StringVar(&c.CORSOrigins, "cors-origins", "", "web origins whose browser apps may call the API, comma-separated (https://app.example.com), or * for any; empty: none")
	fs.StringVar(&c.ClientIPHeader, "client-ip-header", "", "behind a reverse proxy: the header it puts the client's address in (X-Forwarded-For: its last address; X-Real-IP); empty uses the connection's address. Never set it without a proxy that sets the header: clients could choose their address")
	fs.DurationVar(&c.EligibilityWindow, "eligibility-window", 60*time.Second, "another eligibility check of the same card within this time of the last one's start answers 429")
	fs.DurationVar(&c.ReadCacheTTL, "read-cache-ttl", time.Second, "how long a process keeps clinic settings, public room lists and messages' authors' names it read; another process's change shows within it (negative: no cache)")
	fs.BoolVar(&c.Demo, "demo", false, "create the demo clinic and print its credentials and example calls (implies --webhook-allow-private)")
	fs.DurationVar(&c.WebhookRetryInterval, "webhook-retry-interval", 60*time.Second, "time between webhook delivery attempts (whole seconds; 5 attempts in all)")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", 30*time.Second, "how long a webhook receiver has to answer 2xx")
	webhookPrivateFlag(fs, c)
	fs.StringVar(&c.SMTPAddr, "smtp-addr", "", "mail server host:port for outgoing email (default: log mail instead of sending it)")
	fs.StringVar(&c.SMTPFrom, "smtp-from", "", "sender address of outgoing email")
	fs.StringVar(&c.SMTPUsername, "smtp-username", "", "mail server user name (optional)")
	fs.StringVar(&c.SMTPPassword, "smtp-password", "", "mail server password; prefer TELECLINIC_SMTP_PASSWORD")
	fs.StringVar(&c.SMTPTLS, "smtp-tls", "", "encryption to the mail server: starttls (required, the default), tls (implicit, the default on port 465) or none (clear text: a relay on this host only)")
	fs.StringVar(&c.APNsKeyFile, "apns-key-file", "", "Apple push: the .p8 key file (enables Apple push with the three flags below)")
	fs.StringVar(&c.APNsKeyID, "apns-key-id", "", "Apple push: the key's id")
	fs.StringVar(&c.APNsTeamID, "apns-team-id", "", "Apple push: the developer team id")
	fs.StringVar(&c.APNsTopic, "apns-topic", "", "Apple push: the app's bundle id")
	fs.StringVar(&c.APNsURL, "apns-url", "https://api.push.apple.com", "Apple push service (https://api.sandbox.push.apple.com for development builds)")
	fs.StringVar(&c.FCMCredentialsFile, "fcm-credentials-file", "", "Google push: the Firebase service account JSON key file (enables Google push)")
	fs.StringVar(&c.FCMURL, "fcm-url", "https://fcm.googleapis.com", "Google push: the messaging service")
	fs.StringVar(&c.STUNURLs, "stun-url", "", "video calls: STUN server URLs, comma-separated (stun:host:3478)")
	fs.StringVar(&c.TURNURLs, "turn-url", "", "video calls: TURN server URLs, comma-separated (turn:host:3478?transport=udp, turns:host:5349)")
	fs.StringVar(&c.TURNSecret, "turn-secret", "", "video calls: the TURN servers' static-auth-secret (coturn use-auth-secret); prefer TELECLINIC_TURN_SECRET")
	fs.DurationVar(&c.AuditChainEvery, "audit-chain-every", time.Second, "how often pending audit entries are chained (audit verify chains first whatever it is; a long one delays the chain and its checkpoints)")
	fs.DurationVar(&c.TURNTTL, "turn-ttl", media.DefaultTURNTTL, "video calls: how long a TURN credential works (a relayed call lasts at most this long; at most 12h)")
	fs.BoolVar(&c.TURNRelayOnly, "turn-relay-only", false, "video calls: connect through the TURN servers only, so no participant learns another's network address")
	fs.StringVar(&c.LiveKitURL, "livekit-url", "", "video calls through a LiveKit server (wss://host) instead of peer to peer; needs the two flags below")
	fs.StringVar(&c.LiveKitAPIKey, "livekit-api-key", "", "video calls: the LiveKit server's API key")
	fs.StringVar(&c.LiveKitAPISecret, "livekit-api-secret", "", "video calls: the LiveKit API key's secret; prefer TELECLINIC_LIVEKIT_API_SECRET")
}

func webhookPrivateFlag(fs *flag.FlagSet, c *config) {
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", false, "let webhook URLs point at loopback and private addresses (development and tests only)")
}

// parseFlags parses args, then fills unset flags from the environment.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		env := "TELECLINIC_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
		}
	})
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	return errors.Join(errs...)
}

// validate checks the settings and fills derived defaults.
func (c *config) validate() error {
	if _, ok := logLevels[c.LogLevel]; !ok {
		return errors.New("--log-level must be debug, info, warn or error")
	}
	if c.BaseURL != "" {
		// Links, mails and the SMART authorization server's issuer are
		// made from it: an absolute http(s) address, no query.
		u, err := url.Parse(c.BaseURL)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
			return errors.New("--base-url must be this server's absolute address, such as https://clinic.example.com")
		}
	}
	if (c.TURNURLs == "") != (c.TURNSecret == "") {
		return errors.New("--turn-url and --turn-secret go together: the TURN servers' credentials are made with the secret")
	}
	if c.TURNTTL != 0 && (c.TURNTTL < time.Minute || c.TURNTTL > 12*time.Hour) {
		return errors.New("--turn-ttl must be between 1m and 12h")
	}
	if c.TURNRelayOnly && c.TURNURLs == "" {
		return errors.New("--turn-relay-only needs --turn-url: a relay-only call connects through TURN")
	}
	if c.LiveKitURL != "" || c.LiveKitAPIKey != "" || c.LiveKitAPISecret != "" {
		u, err := url.Parse(c.LiveKitURL)
		if err != nil || u.Host == "" || (u.Scheme != "wss" && u.Scheme != "ws" && u.Scheme != "https" && u.Scheme != "http") {
			return errors.New("--livekit-url must be the LiveKit server's wss:// (or https://) address")
		}
		if c.LiveKitAPIKey == "" || c.LiveKitAPISecret == "" {
			return errors.New("--livekit-url, --livekit-api-key and --livekit-api-secret go together: the server signs the calls' tokens with the key")
		}
	}
	for _, u := range append(urlList(c.STUNURLs), urlList(c.TURNURLs)...) {
		if !strings.HasPrefix(u, "stun:") && !strings.HasPrefix(u, "stuns:") && !strings.HasPrefix(u, "turn:") && !strings.HasPrefix(u, "turns:") {
			return fmt.Errorf("%q is not a STUN or TURN URL (stun:, stuns:, turn: or turns:)", u)
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format must be text or json")
	}
	if c.Database == "" {
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		c.Database = filepath.Join(c.DataDir, "teleclinic.db")
	}
	if c.UserTokenIdle < 0 || c.UserTokenMax < 0 || (c.UserTokenIdle == 0 && c.Addr != "") {
		return fmt.Errorf("--user-token-idle and --user-token-max must be positive")
	}
	if c.WebhookRetryInterval < 0 || c.WebhookTimeout < 0 {
		return fmt.Errorf("--webhook-retry-interval and --webhook-timeout must be positive")
	}
	if (c.SMTPAddr == "") != (c.SMTPFrom == "") {
		return fmt.Errorf("--smtp-addr and --smtp-from go together")
	}
	if c.SMTPAddr != "" {
		if err := c.smtp().Check(); err != nil {
			return fmt.Errorf("--smtp-addr, --smtp-from, --smtp-tls: %w", err)
		}
	}
	return nil
}

// senders builds the configured mail and push senders; nil where a channel
// is not configured.
func (c *config) senders() (mail.Sender, push.Sender, push.Sender, error) {
	var m mail.Sender
	var apns, fcm push.Sender
	if c.SMTPAddr != "" {
		m = c.smtp()
	}
	if c.APNsKeyFile != "" {
		key, err := os.ReadFile(c.APNsKeyFile)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--apns-key-file: %w", err)
		}
		s, err := push.NewAPNs(push.APNsConfig{KeyPEM: key, KeyID: c.APNsKeyID, TeamID: c.APNsTeamID, Topic: c.APNsTopic, URL: c.APNsURL})
		if err != nil {
			return nil, nil, nil, err
		}
		apns = s
	}
	if c.FCMCredentialsFile != "" {
		creds, err := os.ReadFile(c.FCMCredentialsFile)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--fcm-credentials-file: %w", err)
		}
		s, err := push.NewFCM(push.FCMConfig{CredentialsJSON: creds, URL: c.FCMURL})
		if err != nil {
			return nil, nil, nil, err
		}
		fcm = s
	}
	return m, apns, fcm, nil
}

var logLevels = map[string]slog.Level{"": slog.LevelInfo, "debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func (c *config) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[c.LogLevel]}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serverKey returns the configured key, or the data dir's key file, made on
// first use with 0600 permissions.
func (c *config) serverKey() ([]byte, error) {
	if c.ServerKey != "" {
		k, err := hex.DecodeString(strings.TrimSpace(c.ServerKey))
		if err != nil || len(k) < 32 {
			return nil, errors.New("--server-key must be at least 32 bytes written in hex (64 hex digits)")
		}
		return k, nil
	}
	path := filepath.Join(c.DataDir, "server.key")
	if b, err := os.ReadFile(path); err == nil {
		k, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) < 32 {
			return nil, fmt.Errorf("%s: not a hex key of 32 or more bytes", path)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	k := randomBytes(32)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return c.serverKey()
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.WriteString(hex.EncodeToString(k) + "\n"); err != nil {
		return nil, err
	}
	return k, f.Sync()
}

// smtp is the mail server the flags name.
func (c *config) smtp() *mail.SMTP {
	return &mail.SMTP{Addr: c.SMTPAddr, From: c.SMTPFrom, Username: c.SMTPUsername, Password: c.SMTPPassword, TLS: c.SMTPTLS}
}

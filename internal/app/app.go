// Package app holds Teleclinic's rules: who may do what, validation, state
// machines, and the transactions that write a change together with its audit
// and outbox rows. It knows nothing of HTTP; handlers call it with a
// clinic.Principal and get domain values or *clinic.Error back.
package app

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"teleclinic/internal/blob"
	"teleclinic/internal/clinic"
	"teleclinic/internal/eligibility"
	"teleclinic/internal/locale"
	"teleclinic/internal/mail"
	"teleclinic/internal/media"
	"teleclinic/internal/metrics"
	"teleclinic/internal/payments"
	"teleclinic/internal/push"
	"teleclinic/internal/reference"
	"teleclinic/internal/store"
	"teleclinic/internal/webhook"
)

// Config holds the settings the rules depend on.
type Config struct {
	BaseURL         string        // public URL of this server, for links
	PortalURL       string        // where GET /auth sends the browser
	UserTokenIdle   time.Duration // an access token unused this long expires
	UserTokenMax    time.Duration // an access token expires this long after issue
	RefreshTokenMax time.Duration // a refresh token expires this long after issue
	SecretTTL       time.Duration // activation and reset links
	// ServerKey signs links and seals outbox payloads that carry secrets. All
	// processes sharing a database must share it.
	ServerKey []byte
	Argon2    Argon2Params
	// Blobs keeps file bytes (recordings and files).
	Blobs blob.Store
	// MaxImagePixels is the largest image (width × height) a view link
	// resizes (default 40 MP).
	MaxImagePixels int64
	// Mail sends email; nil logs each message's envelope instead.
	Mail mail.Sender
	// APNs and FCM send push notifications; nil leaves the channel off, and
	// nothing is queued for it.
	APNs, FCM push.Sender
	// Webhooks says how visit.message.created deliveries are made.
	Webhooks WebhookConfig
	// Eligibility answers insurance eligibility inquiries (default: the
	// sandbox); EligibilityWindow is how soon after a check of a card
	// started another may start (default 60 s).
	Eligibility       eligibility.Checker
	EligibilityWindow time.Duration
	// Reference holds the diagnosis, procedure, modifier and payer lists
	// (default: the embedded ones).
	Reference *reference.Lists
	// Locales are the languages the clinic writes in: the portal's pages
	// and the emails to each person, in the language of their profile
	// (default: the embedded English and Spanish).
	Locales *locale.Set
	// Sandbox is the card processor of clinics that have not saved Stripe
	// keys (default: a new sandbox on the app's clock). StripeAPIURL is
	// where the Stripe adapter sends requests; empty is Stripe itself.
	Sandbox      *payments.Sandbox
	StripeAPIURL string
	// TwilioAPIURL is where the Twilio adapter sends texts; empty is
	// Twilio itself (tests point it at a mock).
	TwilioAPIURL string
	// ICE are the STUN and TURN servers a visit's call is handed.
	ICE media.Config
	// LiveKit, when its URL is set, carries calls instead of the
	// peer-to-peer mesh.
	LiveKit media.LiveKit
	// Metrics counts outbox deliveries (nil: not counted).
	Metrics *metrics.Registry
	// OutboxPoll is how often delivery loops look for items due from other
	// processes or for retries (default 1 s); this process's own new items
	// wake them at once.
	OutboxPoll time.Duration
	// AuditChainEvery is how often the background pass chains pending
	// audit entries (default OutboxPoll). A verification chains first
	// whatever it is, so a long one only delays the chain and its
	// checkpoints: the load tool sets one to measure writes without the
	// chaining beside them.
	AuditChainEvery time.Duration
	// LoginAttempts and AddressAttempts bound the sign-in attempts of a
	// clinic's user name (or of a clinic's API key checks) and of a client
	// address in each ThrottleWindow (defaults 10, 100 and 15 minutes;
	// negative turns a limit off).
	LoginAttempts, AddressAttempts int
	ThrottleWindow                 time.Duration
	// GuestUploadBytes and GuestDailyUploadBytes are the guests' upload
	// quotas: each guest's stored files, and all of a clinic's guests'
	// in a day (defaults DefaultGuestUploadBytes, DefaultGuestDailyUploadBytes).
	GuestUploadBytes, GuestDailyUploadBytes int64
	// ResizeMemory bounds the memory all image resizes hold at once, and
	// ResizeCacheBytes the resized images kept (defaults 256 MiB, 32 MiB).
	ResizeMemory, ResizeCacheBytes int64
	// ResizeWait is how long a resize waits for its share of ResizeMemory
	// before it is refused with 503 (default 10 s).
	ResizeWait time.Duration
}

// App is the rule layer. It is safe for concurrent use.
type App struct {
	// lastSignalSweep is when SweepCallSignals last ran (unix seconds).
	lastSignalSweep atomic.Int64
	// loadedDx is when the diagnosis release in use was imported (unix
	// seconds; 0: the built-in list), so a re-import of a year reloads.
	loadedDx atomic.Int64
	store    *store.Store
	cfg      Config
	now      func() time.Time
	log      *slog.Logger
	hashSem  chan struct{} // bounds concurrent password hashing (64 MiB each)
	audits   *auditWriter
	sealKey  [32]byte
	// checkpointKey signs the audit chains' checkpoints; anchored is how
	// far this process has anchored each clinic's chain (CheckpointAudits).
	checkpointKey  ed25519.PrivateKey
	checkpointMu   sync.Mutex
	anchored       map[int64]int64
	lastCheckpoint atomic.Int64
	// reads are the event streams' shared reads (shared.go).
	reads sharedReads
	// avail holds availability answers for their second (availcache.go).
	avail availCache
	// oauthKey is the SMART token signing key, once read (smart.go).
	oauthKey oauthKey
	// exporter is the FHIR door's mapping, for bulk exports (export.go).
	exporter   exporterBox
	exportKick chan struct{}
	// ehrHTTP calls the EHRs a clinic launches Teleclinic from (ehrlaunch.go).
	ehrHTTP *http.Client
	// smsHTTP calls Twilio; smsKick wakes the texts' loop (sms.go).
	smsHTTP *http.Client
	smsKick chan struct{}

	webhooks        *webhook.Client
	webhookKick     chan struct{}
	pushKick        chan struct{}
	eligibilityKick chan struct{}
	// resizes is the memory budget of image resizes, resized their
	// results (resize.go).
	resizes *semaphore.Weighted
	resized *resizeCache
}

// New returns an App over st. now is the clock; tests pass one they control.
func New(st *store.Store, cfg Config, now func() time.Time, log *slog.Logger) (*App, error) {
	if len(cfg.ServerKey) < 32 {
		return nil, errors.New("app: server key must be at least 32 bytes")
	}
	if cfg.Argon2.Time == 0 {
		cfg.Argon2 = DefaultArgon2
	}
	if cfg.Eligibility == nil {
		cfg.Eligibility = eligibility.Sandbox{}
	}
	if cfg.Sandbox == nil {
		cfg.Sandbox = payments.NewSandbox(now)
	}
	if cfg.EligibilityWindow <= 0 {
		cfg.EligibilityWindow = 60 * time.Second
	}
	if cfg.Locales == nil {
		l, err := locale.Load("")
		if err != nil {
			return nil, err
		}
		cfg.Locales = l
	}
	if cfg.Reference == nil {
		ref, err := reference.Load("")
		if err != nil {
			return nil, err
		}
		cfg.Reference = ref
	}
	if cfg.MaxImagePixels <= 0 {
		cfg.MaxImagePixels = 40_000_000
	}
	if cfg.SecretTTL == 0 {
		cfg.SecretTTL = 24 * time.Hour
	}
	if cfg.RefreshTokenMax == 0 {
		cfg.RefreshTokenMax = 30 * 24 * time.Hour
	}
	if cfg.Webhooks.RetryInterval <= 0 {
		cfg.Webhooks.RetryInterval = 60 * time.Second
	}
	if cfg.Webhooks.Timeout <= 0 {
		cfg.Webhooks.Timeout = 30 * time.Second
	}
	if cfg.Mail == nil {
		cfg.Mail = mail.LogSender{Log: log}
	}
	if cfg.OutboxPoll <= 0 {
		cfg.OutboxPoll = time.Second
	}
	if cfg.AuditChainEvery <= 0 {
		cfg.AuditChainEvery = cfg.OutboxPoll
	}
	if cfg.LoginAttempts == 0 {
		cfg.LoginAttempts = defaultLoginAttempts
	}
	if cfg.AddressAttempts == 0 {
		cfg.AddressAttempts = defaultAddressAttempts
	}
	if cfg.ThrottleWindow <= 0 {
		cfg.ThrottleWindow = defaultThrottleWindow
	}
	if cfg.GuestUploadBytes <= 0 {
		cfg.GuestUploadBytes = DefaultGuestUploadBytes
	}
	if cfg.GuestDailyUploadBytes <= 0 {
		cfg.GuestDailyUploadBytes = DefaultGuestDailyUploadBytes
	}
	if cfg.ResizeMemory <= 0 {
		cfg.ResizeMemory = defaultResizeMemory
	}
	if cfg.ResizeWait <= 0 {
		cfg.ResizeWait = defaultResizeWait
	}
	if cfg.ResizeCacheBytes <= 0 {
		cfg.ResizeCacheBytes = defaultResizeCacheBytes
	}
	a := &App{store: st, cfg: cfg, now: now, log: log, hashSem: make(chan struct{}, max(1, runtime.NumCPU())),
		resizes: semaphore.NewWeighted(cfg.ResizeMemory), resized: newResizeCache(cfg.ResizeCacheBytes),
		webhooks:    webhook.NewClient(webhook.Options{AllowPrivate: cfg.Webhooks.AllowPrivate, Timeout: cfg.Webhooks.Timeout}),
		webhookKick: make(chan struct{}, 1), pushKick: make(chan struct{}, 1), eligibilityKick: make(chan struct{}, 1), exportKick: make(chan struct{}, 1), ehrHTTP: &http.Client{Timeout: 15 * time.Second},
		smsHTTP: newSMSHTTP(), smsKick: make(chan struct{}, 1), audits: newAuditWriter(st)}
	a.sealKey = sha256.Sum256(append([]byte("teleclinic-seal:"), cfg.ServerKey...))
	a.checkpointKey, a.anchored = auditCheckpointKey(cfg.ServerKey), map[int64]int64{}
	if err := a.loadDiagnoses(context.Background()); err != nil {
		return nil, err
	}
	return a, nil
}

// Store exposes the store to the commands that wire the server.
func (a *App) Store() *store.Store { return a.store }

// Log is the app's logger, for the families built on it (app/billing).
func (a *App) Log() *slog.Logger { return a.log }

// Config is the app's configuration as it was started.
func (a *App) Config() Config { return a.cfg }

// ReferenceLists returns the insurance reference lists (GET
// /insurances/list/…): public code lists, the same for every caller.
func (a *App) ReferenceLists() *reference.Lists { return a.cfg.Reference }

// Now is the app's clock.
func (a *App) Now() time.Time { return a.now() }

// Unix is the app's clock in unix seconds, as rows store time.
func (a *App) Unix() int64 { return a.now().Unix() }

// StoreErr turns store errors into client errors where they have a meaning
// of their own, and wraps the rest as internal.
func StoreErr(op string, err error, notFound string) error {
	var ce *clinic.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return err
	case errors.Is(err, store.ErrNotFound) && notFound != "":
		return clinic.Errorf(clinic.ENotFound, "%s", notFound)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Audit appends an audit entry outside any transaction, for reads. A failure
// to audit fails the request: health data is not served unaudited.
func (a *App) Audit(ctx context.Context, p *clinic.Principal, action, objType, objID, outcome string) error {
	if err := a.audits.write(ctx, a.auditEntry(p, action, objType, objID, outcome)); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

func (a *App) auditEntry(p *clinic.Principal, action, objType, objID, outcome string) *clinic.AuditEntry {
	return &clinic.AuditEntry{
		AccountID: p.Account.ID, ActorKind: actorKind(p), ActorUserID: p.UserID(),
		Action: action, ObjectType: objType, ObjectID: objID, Outcome: outcome,
		RequestID: p.RequestID, Created: a.Unix(),
	}
}

// actorKind is the credential an audit entry names: with an app's
// token, the app too (every use of a SMART grant is audited as the app's).
func actorKind(p *clinic.Principal) string {
	if p.Grant != nil {
		return p.Kind.String() + ":app:" + p.Grant.ClientID
	}
	return p.Kind.String()
}

// AuditIn appends an audit entry through q, inside the caller's transaction.
func (a *App) AuditIn(ctx context.Context, q *store.Q, p *clinic.Principal, action, objType, objID, outcome string) error {
	if err := q.AppendAudit(ctx, a.auditEntry(p, action, objType, objID, outcome)); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Audit outcomes.
const (
	OutcomeOK       = "ok"
	outcomeDenied   = "denied"
	outcomeNotFound = "not_found"
	outcomeInvalid  = "invalid"
)

// OutcomeOf names the audit outcome of an operation's error.
func OutcomeOf(err error) string {
	switch clinic.ErrorCode(err) {
	case clinic.EForbidden, clinic.EUnauthenticated:
		return outcomeDenied
	case clinic.ENotFound:
		return outcomeNotFound
	case clinic.EInvalid:
		return outcomeInvalid
	}
	if err == nil {
		return OutcomeOK
	}
	return "error"
}

// Ping checks that the database answers.
func (a *App) Ping(ctx context.Context) error {
	if err := a.store.DB().PingContext(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// BaseURL is the server's public URL, for the absolute links some formats
// require (FHIR's fullUrl).
func (a *App) BaseURL() string { return a.cfg.BaseURL }

// PageSize is how many items a page of a list holds when its caller asks
// for limit: def when it asks none (0 or less), at most most.
func PageSize(limit, def, most int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, most)
}

// Locales are the languages the clinic writes in (Config.Locales).
func (a *App) Locales() *locale.Set { return a.cfg.Locales }

// localeOf is the language to write to u in: their profile's, else the
// default.
func (a *App) localeOf(u *clinic.User) *locale.Locale {
	if tag, _ := u.Extra["language"].(string); tag != "" {
		if l := a.cfg.Locales.Get(tag); l != nil {
			return l
		}
	}
	return a.cfg.Locales.Default()
}

// UserLanguage is the language tag of u's profile ("" for the default).
func UserLanguage(u *clinic.User) string {
	tag, _ := u.Extra["language"].(string)
	return tag
}

package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/store"
)

// Core is what a family of operations built outside app is given
// (app/billing), in gotosocial's processing/<family> form: the store's
// reads, writes and transactions, the live bus, the clock, the
// configuration and log, audit, sealing, the throttle, and the lookups
// and steps of other families that check the caller. A family reaches
// app through its Core only, so what the families share is this one
// list; nothing in app calls back into a family (app/billing,
// app/calls). The commands that wire
// the server use App.Store instead.
type Core struct{ a *App }

// Core is a's core, for the families built on it.
func (a *App) Core() Core { return Core{a} }

// Read is the store's reader; Write its writer outside a transaction; Tx
// runs fn in a write transaction (store.Store.Tx).
func (c Core) Read() *store.Q  { return c.a.store.Read() }
func (c Core) Write() *store.Q { return c.a.store.Write() }
func (c Core) Tx(ctx context.Context, fn func(q *store.Q) error) error {
	return c.a.store.Tx(ctx, fn)
}

// Live is the bus the store publishes its changes on, for what a family
// publishes after its commits.
func (c Core) Live() live.Bus { return c.a.store.Live() }

// Now and Unix are now on app's clock.
func (c Core) Now() time.Time { return c.a.now() }
func (c Core) Unix() int64    { return c.a.Unix() }

// PortalBase is the portal's address, for links a family hands out.
func (c Core) PortalBase() string { return c.a.portalBase() }

// CountAttempt counts an attempt against each key and refuses it (429)
// past a key's limit (the sign-in throttle's counters and window).
func (c Core) CountAttempt(ctx context.Context, keys ...ThrottleKey) error {
	_, err := c.a.countAttempt(ctx, keys)
	return err
}

// SignIn signs a user in as SSO does (a new user if in names none),
// with also run in the same transaction (App.signInUser).
func (c Core) SignIn(ctx context.Context, p *clinic.Principal, in SSOInput, action string, also func(q *store.Q, u *clinic.User) error) (*SSOResult, error) {
	return c.a.signInUser(ctx, p, in, action, also)
}

// SaveRecording keeps a recording of visit visitID as POST
// /visits/{id}/recordings does, once the family has checked p's right.
func (c Core) SaveRecording(ctx context.Context, p *clinic.Principal, visitID int64, in RecordingInput) (*clinic.Recording, error) {
	return c.a.saveRecording(ctx, p, visitID, in)
}

// Emit writes a webhook event of the clinic in q's transaction
// (App.Emit).
func (c Core) Emit(ctx context.Context, q *store.Q, accountID int64, typ string, data any) error {
	return c.a.Emit(ctx, q, accountID, typ, data)
}

// Config and Log are app's.
func (c Core) Config() Config    { return c.a.cfg }
func (c Core) Log() *slog.Logger { return c.a.log }

// Audit, AuditIn and AuditOutcome write an entry of the trail as app's
// operations do (App.Audit, App.AuditIn, App.AuditOutcome).
func (c Core) Audit(ctx context.Context, p *clinic.Principal, action, objType, objID, outcome string) error {
	return c.a.Audit(ctx, p, action, objType, objID, outcome)
}

func (c Core) AuditIn(ctx context.Context, q *store.Q, p *clinic.Principal, action, objType, objID, outcome string) error {
	return c.a.AuditIn(ctx, q, p, action, objType, objID, outcome)
}

func (c Core) AuditOutcome(ctx context.Context, p *clinic.Principal, action, objType, objID string, err error) error {
	return c.a.AuditOutcome(ctx, p, action, objType, objID, err)
}

// Seal and Unseal keep a secret at rest under the server key.
func (c Core) Seal(plain []byte) (string, error) { return c.a.Seal(plain) }
func (c Core) Unseal(s string) ([]byte, error)   { return c.a.Unseal(s) }

// VisitFor, RoomByCode and ProviderByID find what p names, as p may see
// it; GetVisit reads a visit as GET /visits/{id} does (audited);
// MoveVisit moves a visit as the API's lifecycle does.
func (c Core) VisitFor(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Visit, error) {
	return c.a.VisitFor(ctx, p, id)
}

func (c Core) GetVisit(ctx context.Context, p *clinic.Principal, id int64) (*VisitDetail, error) {
	return c.a.GetVisit(ctx, p, id, false)
}

func (c Core) RoomByCode(ctx context.Context, p *clinic.Principal, code string) (*clinic.Room, error) {
	return c.a.RoomByCode(ctx, p, code)
}

func (c Core) ProviderByID(ctx context.Context, p *clinic.Principal, id int64) (*clinic.User, error) {
	return c.a.ProviderByID(ctx, p, id)
}

func (c Core) MoveVisit(ctx context.Context, p *clinic.Principal, id int64, action string, in MoveInput) (*VisitDetail, error) {
	return c.a.MoveVisit(ctx, p, id, action, in)
}

// DeliverTopic makes one delivery pass of a family's outbox topic: each
// due item is claimed by this process alone and handed to do; an error
// retries it later (backing off, up to eight attempts), a SkipError ends
// it for good with its reason. It answers how many items it claimed.
func (c Core) DeliverTopic(ctx context.Context, topic string, do func(context.Context, store.OutboxItem) error) int {
	a := c.a
	items, err := a.store.Write().ClaimOutbox(ctx, []string{topic}, a.Unix(), mailLease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error(topic+": claim", "err", err)
		}
		return 0
	}
	for _, it := range items {
		err := do(ctx, it)
		var skip SkipError
		if errors.As(err, &skip) {
			err = errSkip(skip)
		}
		a.settle(ctx, topic, it, 0, err, mailMaxAttempts, int64(30)<<min(it.Attempts, 8))
	}
	return len(items)
}

// SkipError ends an outbox item without another attempt: what it was to
// do is not to be done (or was refused for good); its text is kept.
type SkipError string

func (e SkipError) Error() string { return string(e) }

// AccountByID is the clinic id, for a family's background work (which
// has no caller to take it from).
func (c Core) AccountByID(ctx context.Context, id int64) (*clinic.Account, error) {
	return c.a.accountByID(ctx, id)
}

// CallJoined records, for the visit's claim, that p joined visit
// visitID's call as role (audio only, or with video), an interpreter
// with their language (visitfacts.go).
func (c Core) CallJoined(ctx context.Context, p *clinic.Principal, visitID int64, role, language string, audioOnly bool) error {
	return c.a.callJoined(ctx, p, visitID, role, language, audioOnly)
}

// CallLeft records, in transaction q, that a patient or provider left
// visit visitID's call (visitfacts.go).
func (c Core) CallLeft(ctx context.Context, q *store.Q, accountID, visitID int64) error {
	return c.a.callLeft(ctx, q, accountID, visitID, false)
}

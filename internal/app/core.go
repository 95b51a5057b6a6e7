package app

import (
	"context"
	"log/slog"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Core is what a family of operations built outside app is given
// (app/billing), in gotosocial's processing/<family> form: the store's
// reads, writes and transactions, the clock, the configuration and log,
// audit, sealing, and the lookups that check the caller. A family reaches
// app through its Core only, so what the families share is this one
// list; nothing in app calls back into a family. The commands that wire
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

// Unix is now, in unix seconds, on app's clock.
func (c Core) Unix() int64 { return c.a.Unix() }

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
// it; MoveVisit moves a visit as the API's lifecycle does.
func (c Core) VisitFor(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Visit, error) {
	return c.a.VisitFor(ctx, p, id)
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

// Package billing is the clinic's payments and claims: the card processor
// and its settings, saved cards, coupons, invoices and refunds (billing.go),
// and the codes of a visit's claim and the claims report (claims.go).
//
// It is a family built on app's core (app.Core), in gotosocial's
// processing/<family> form: every operation checks its caller with app's
// permission checks (app.RequireUser, app.RequireAdmin), finds visits and
// rooms through the core (VisitFor, RoomByCode, ProviderByID), audits
// through it (Audit, AuditIn, AuditOutcome) and reads and writes through
// its store, in the same transactions and outbox as the rest. Nothing in
// app calls back into it.
package billing

import (
	"log/slog"
	"strconv"

	"teleclinic/internal/app"
)

// Service is the billing family's operations over app's core.
type Service struct {
	core app.Core
	cfg  app.Config
	log  *slog.Logger
}

// New is the billing family over core.
func New(core app.Core) *Service { return &Service{core: core, cfg: core.Config(), log: core.Log()} }

// i64s is an id as audit entries and messages write it.
func i64s(n int64) string { return strconv.FormatInt(n, 10) }

// Package billing is the clinic's payments and claims: the card processor
// and its settings, saved cards, coupons, invoices and refunds (billing.go),
// and the codes of a visit's claim and the claims report (claims.go).
//
// It is a family built on app's core, in gotosocial's processing/<family>
// form: every operation checks its caller with app's permission checks
// (app.RequireUser, app.RequireAdmin), finds visits and rooms through app
// (VisitFor, RoomByCode, ProviderByID), audits through app (Audit, AuditIn,
// AuditOutcome) and writes through app's store, in the same transactions
// and outbox as the rest. Nothing in app calls back into it.
package billing

import (
	"log/slog"
	"strconv"

	"teleclinic/internal/app"
)

// Service is the billing family's operations over a.
type Service struct {
	app *app.App
	cfg app.Config
	log *slog.Logger
}

// New is the billing family over a.
func New(a *app.App) *Service { return &Service{app: a, cfg: a.Config(), log: a.Log()} }

// i64s is an id as audit entries and messages write it.
func i64s(n int64) string { return strconv.FormatInt(n, 10) }

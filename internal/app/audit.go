package app

import (
	"context"
	"fmt"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// AuditQuery is GET /audit.
type AuditQuery struct {
	UserID     int64
	ObjectType string
	ObjectID   string
	Action     string
	From, To   int64
	Start      int
	Limit      int
}

// ListAudit is GET /audit, for the clinic admin: the clinic's trail, newest first.
func (a *App) ListAudit(ctx context.Context, p *clinic.Principal, in AuditQuery) ([]clinic.AuditEntry, int, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	if in.Start < 0 || in.Limit < 0 || (in.To != 0 && in.From > in.To) {
		return nil, 0, clinic.Errorf(clinic.EInvalid, "start and limit must not be negative, and from must not be after to.")
	}
	if in.Limit == 0 {
		in.Limit = 50
	}
	in.Limit = min(in.Limit, 500)
	// Reads' entries may still be in the journal (store/journal.go).
	if err := a.store.FlushAudits(ctx); err != nil {
		return nil, 0, fmt.Errorf("list audit: %w", err)
	}
	list, total, err := a.store.Read().ListAudit(ctx, store.AuditFilter{AccountID: p.Account.ID, UserID: in.UserID,
		ObjectType: in.ObjectType, ObjectID: in.ObjectID, Action: in.Action, From: in.From, To: in.To, Start: in.Start, Limit: in.Limit})
	if err != nil {
		return nil, 0, fmt.Errorf("list audit: %w", err)
	}
	return list, total, nil
}

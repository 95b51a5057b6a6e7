package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
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
	if err := RequireAdmin(p); err != nil {
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

// AuditChainKey is the key of the audit trail's hash chain, derived from
// the server key (store.Options.AuditKey): whoever can write the database
// but does not hold server.key cannot forge the chain over an edit.
func AuditChainKey(serverKey []byte) []byte {
	m := hmac.New(sha256.New, serverKey)
	m.Write([]byte("teleclinic audit chain v1"))
	return m.Sum(nil)
}

// AuditBreak is where a clinic's audit chain is first broken.
type AuditBreak struct {
	Seq    int64  // the place in the chain
	ID     int64  // the entry's row, 0 when the entry is missing
	Reason string // what is wrong there
}

// AuditVerification is the outcome of checking a clinic's audit chain.
type AuditVerification struct {
	Entries int64       // chained entries checked
	Head    string      // the chain's recorded last hash
	Broken  *AuditBreak // nil when the chain holds
}

// VerifyAudit checks the clinic's audit chain from its first entry:
// every place present once, in order, each hash recomputed from the entry
// and the one before, and the end matching the chain's recorded head. It
// reports the first broken entry. Admin only; audited as audit.verify.
func (a *App) VerifyAudit(ctx context.Context, p *clinic.Principal) (*AuditVerification, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := a.store.FlushAudits(ctx); err != nil {
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	if err := a.store.ChainPendingAudits(ctx, p.Account.ID); err != nil {
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	v, err := a.store.VerifyAuditChain(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	out := &AuditVerification{Entries: v.Entries, Head: v.Head}
	if v.BrokenSeq != 0 {
		out.Broken = &AuditBreak{Seq: v.BrokenSeq, ID: v.BrokenID, Reason: v.Reason}
	}
	if err := a.Audit(ctx, p, "audit.verify", "account", i64s(p.Account.ID), OutcomeOK); err != nil {
		return nil, err
	}
	return out, nil
}

// AccessLog is GET /users/{id}/access-log: the accesses of others to a
// patient's record (their profile, records and visits), who, when and
// what, never the content — the accounting of disclosures a patient may
// ask for. The user themself and the clinic admin may read it. Audited as
// user.access_log.read.
func (a *App) AccessLog(ctx context.Context, p *clinic.Principal, userID int64, start, limit int) ([]clinic.AccessEntry, int, error) {
	if err := RequireUser(p); err != nil {
		return nil, 0, err
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, 0, clinic.Errorf(clinic.ENotFound, "User not found.")
	case err != nil:
		return nil, 0, fmt.Errorf("access log: %w", err)
	case u.ID != p.UserID() && !p.IsAdmin():
		return nil, 0, a.AuditOutcome(ctx, p, "user.access_log.read", "user", i64s(userID),
			clinic.Errorf(clinic.EForbidden, "Only the user and the clinic admin may read the accesses to a user's record."))
	}
	if start < 0 || limit < 0 {
		return nil, 0, clinic.Errorf(clinic.EInvalid, "start and limit must not be negative.")
	}
	if limit == 0 {
		limit = 50
	}
	limit = min(limit, 500)
	if err := a.store.FlushAudits(ctx); err != nil {
		return nil, 0, fmt.Errorf("access log: %w", err)
	}
	list, total, err := a.store.Read().AccessLog(ctx, p.Account.ID, u.ID, start, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("access log: %w", err)
	}
	if err := a.Audit(ctx, p, "user.access_log.read", "user", i64s(u.ID), OutcomeOK); err != nil {
		return nil, 0, err
	}
	// The patient learns who of the clinic's staff read their record; a
	// patient or guest who tried to (and was refused) is listed without
	// a name or an id: the log must not tell one patient of another.
	if !p.IsAdmin() {
		for i := range list {
			if e := &list[i]; e.ActorType != clinic.UserProvider && e.ActorType != clinic.UserAdmin {
				e.ActorName, e.ActorUserID = "", 0
			}
		}
	}
	return list, total, nil
}

// ChainAudits is one pass of the background chaining of pending audit
// entries (a PostgreSQL message post writes its entry pending, in its one
// statement): it chains the pending entries of up to batchSize clinics
// and returns how many it chained. Left to the next audited write, a
// burst of messages would make that write chain them all while it holds
// the clinic's chain lock; measured with the load tool on PostgreSQL, the
// bookings that followed a 15 s message burst ran at 74/s instead of
// about 260/s.
func (a *App) ChainAudits(ctx context.Context) int {
	ids, err := a.store.Read().PendingAuditClinics(ctx, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("audit chain: pending clinics", "err", err)
		}
		return 0
	}
	for _, id := range ids {
		if err := a.store.ChainPendingAudits(ctx, id); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("audit chain: chaining pending entries", "account_id", id, "err", err)
			}
			return 0
		}
	}
	return len(ids)
}

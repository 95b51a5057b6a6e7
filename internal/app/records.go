package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Who may touch a patient's records (files, EMR, devices, insurance,
// prescriptions): the patient, the clinic admin, and providers who have a
// visit with the patient. Another patient is told the user does not exist;
// a provider without a visit is refused.
type recordRule struct {
	// providerWrite lets providers with a visit change the records, not
	// only read them.
	providerWrite bool
}

var (
	readRecords  = recordRule{}
	writeRecords = recordRule{providerWrite: true}
	// ownRecords: the patient and the admin change them; providers read.
	ownRecords = recordRule{providerWrite: false}
)

// recordOwner resolves the {id} of a records path ("-" is the caller) and
// checks the caller may act on that user's records; write asks for change.
func (a *App) recordOwner(ctx context.Context, p *clinic.Principal, idStr string, rule recordRule, write bool) (*clinic.User, error) {
	var id int64
	if idStr == "-" || idStr == "" {
		id = p.UserID()
	} else {
		n, err := strconv.ParseInt(idStr, 10, 64)
		if err != nil || n <= 0 {
			return nil, errUserNotFound
		}
		id = n
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUserNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	switch {
	case p.IsAdmin(), u.ID == p.UserID():
		return u, nil
	case p.User != nil && p.User.Type == clinic.UserProvider:
		ok, err := a.store.Read().HasVisitWith(ctx, p.Account.ID, p.User.ID, u.ID)
		if err != nil {
			return nil, fmt.Errorf("records: %w", err)
		}
		if !ok {
			return nil, clinic.Errorf(clinic.EForbidden, "Only providers who have a visit with this patient may see their records.")
		}
		if write && !rule.providerWrite {
			return nil, clinic.Errorf(clinic.EForbidden, "Only the patient or the clinic admin may change these records.")
		}
		return u, nil
	}
	return nil, errUserNotFound
}

// auditRecord writes the audit entry of an access to a patient's records,
// whatever its outcome, and returns err (or the audit's own failure).
func (a *App) auditRecord(ctx context.Context, p *clinic.Principal, action, objType, objID string, err error) error {
	if aerr := a.audit(ctx, p, action, objType, objID, outcomeOf(err)); aerr != nil && err == nil {
		return aerr
	}
	return err
}

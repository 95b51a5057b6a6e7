package app

import (
	"context"
	"errors"
	"fmt"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Who may touch a patient's records (files, EMR, devices, prescriptions):
// the patient, the clinic admin, and providers who have a visit with the
// patient. Insurance is the patient's and the admin's only, as the
// specification has it ("a patient token or a Clinic Admin token").
// Another patient is told the user does not exist; a provider without a
// visit, or with one where the rule lets no provider in, is refused.
type recordRule struct {
	// providerRead lets providers with a visit read the records;
	// providerWrite lets them change them too.
	providerRead, providerWrite bool
}

var (
	readRecords  = recordRule{providerRead: true}
	writeRecords = recordRule{providerRead: true, providerWrite: true}
	// ownRecords: the patient and the admin change them; providers read.
	ownRecords = recordRule{providerRead: true}
	// patientRecords: the patient and the admin only (insurance).
	patientRecords = recordRule{}
)

// recordOwner finds the user whose records a path names and checks the caller may act on that user's records; write asks for change.
func (a *App) recordOwner(ctx context.Context, p *clinic.Principal, id int64, rule recordRule, write bool) (*clinic.User, error) {
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
	case p.User != nil && p.User.Type == clinic.UserProvider && !rule.providerRead:
		return nil, clinic.Errorf(clinic.EForbidden, "Only the patient or the clinic admin may see or change a patient's insurance.")
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

// AuditOutcome writes the audit entry of an operation on a patient's data,
// whatever its outcome, and returns err, or the audit's own failure when
// the operation succeeded: health data is not served unaudited. It is the
// one way an operation audits a failure.
func (a *App) AuditOutcome(ctx context.Context, p *clinic.Principal, action, objType, objID string, err error) error {
	if aerr := a.Audit(ctx, p, action, objType, objID, OutcomeOf(err)); aerr != nil && err == nil {
		return aerr
	}
	return err
}

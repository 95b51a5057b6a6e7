package app

import (
	"context"
	"errors"
	"fmt"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Deactivation is what deactivating a user did: their logins ended, the
// open slots ahead they had removed, and how many of their visits are
// still open (the admin hands them to another provider).
type Deactivation struct {
	User         *clinic.User
	SlotsRemoved int64
	OpenVisits   int
}

// DeactivateUser is the admin's "deactivate" of a provider (or any user
// but the clinic's admin user) who leaves the clinic: they can no longer
// sign in and every login of theirs ends at once (their pages' streams
// end at their next check), their open slots ahead are removed so nobody
// books them, and their history — visits, notes, messages, the audit
// trail — stays as it was. Deactivating twice is not an error.
func (a *App) DeactivateUser(ctx context.Context, p *clinic.Principal, id int64) (*Deactivation, error) {
	u, err := a.staffChange(ctx, p, id)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "user.deactivate", "user", i64s(id), err)
	}
	out := &Deactivation{User: u}
	now := a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.SetUserStatus(ctx, p.Account.ID, u.ID, clinic.StatusDisabled, false, now); err != nil {
			return err
		}
		if err := q.RevokeUserTokens(ctx, p.Account.ID, u.ID, now); err != nil {
			return err
		}
		var err error
		if out.SlotsRemoved, err = q.DeleteProviderOpenSlots(ctx, p.Account.ID, u.ID, now); err != nil {
			return err
		}
		if out.OpenVisits, err = q.CountProviderOpenVisits(ctx, p.Account.ID, u.ID); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "user.deactivate", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("deactivate: %w", err)
	}
	u.Status, u.Active = clinic.StatusDisabled, false
	return out, nil
}

// ReactivateUser lets a deactivated user sign in again: active once more,
// or pending when they never chose a password (their invitation's link,
// or a new one, activates them).
func (a *App) ReactivateUser(ctx context.Context, p *clinic.Principal, id int64) (*clinic.User, error) {
	u, err := a.staffChange(ctx, p, id)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "user.reactivate", "user", i64s(id), err)
	}
	status := clinic.StatusActive
	if u.PasswordHash == "" && u.Type == clinic.UserProvider && u.LastLogin == 0 {
		status = clinic.StatusPending
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.SetUserStatus(ctx, p.Account.ID, u.ID, status, true, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "user.reactivate", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("reactivate: %w", err)
	}
	u.Status, u.Active = status, true
	return u, nil
}

// staffChange is user id of p's clinic, for the admin's change of their
// standing; the clinic's admin user is not deactivated (the admin token
// acts as it).
func (a *App) staffChange(ctx context.Context, p *clinic.Principal, id int64) (*clinic.User, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, clinic.Errorf(clinic.ENotFound, "User not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	if u.IsAdmin || u.Type == clinic.UserAdmin {
		return nil, clinic.Errorf(clinic.EInvalid, "The clinic's admin user stays active: rotate the admin token instead.")
	}
	return u, nil
}

package calls

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// InviteTTL is how long a guest's invitation link works.
const InviteTTL = 2 * time.Hour

// Invite is an invitation: its link (which holds its secret, shown
// this once) and when it lapses.
type Invite struct {
	URL     string
	Expires int64
}

// InviteGuest makes a one-time invitation into visit id's call. Only
// the visit's provider invites; the token is shown once and kept hashed.
func (s *Service) InviteGuest(ctx context.Context, p *clinic.Principal, id int64) (*Invite, error) {
	v, role, err := s.callVisit(ctx, p, id)
	if err == nil && role != RoleProvider {
		err = clinic.Errorf(clinic.EForbidden, "Only the visit's provider invites guests to its call.")
	}
	if err != nil {
		return nil, s.core.AuditOutcome(ctx, p, "visit.call.invite", "visit", i64s(id), err)
	}
	token := app.RandomHex(24)
	inv := &Invite{Expires: s.core.Unix() + int64(InviteTTL/time.Second)}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.AddCallInvite(ctx, p.Account.ID, v.ID, p.UserID(), app.HashSecret(token), s.core.Unix(), inv.Expires); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "visit.call.invite", "visit", i64s(v.ID), app.OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("invite guest: %w", err)
	}
	inv.URL = s.core.PortalBase() + "/invite/" + url.PathEscape(p.Account.Code) + "/" + token
	return inv, nil
}

var errInviteUsed = clinic.Errorf(clinic.ENotFound, "This invitation has been used or has expired. Ask the provider for a new link.")

// InviteOpen checks an invitation link of the caller's clinic before
// its page asks the guest's name.
func (s *Service) InviteOpen(ctx context.Context, p *clinic.Principal, token string) error {
	if err := app.RequireAccount(p); err != nil {
		return err
	}
	open, err := s.core.Read().CallInviteOpen(ctx, p.Account.ID, app.HashSecret(token), s.core.Unix())
	if err != nil {
		return fmt.Errorf("call invite: %w", err)
	}
	if !open {
		return errInviteUsed
	}
	return nil
}

// AcceptInvite signs a guest in with an invitation: a new guest user,
// a guest of the visit's call, with a login; the invitation is used up in
// the same transaction, so of two people with one link only one gets in.
// It returns the login and the visit.
func (s *Service) AcceptInvite(ctx context.Context, p *clinic.Principal, token, firstName, lastName string) (*app.Session, int64, error) {
	if err := app.RequireAccount(p); err != nil {
		return nil, 0, err
	}
	in := app.SSOInput{FirstName: strings.TrimSpace(firstName), LastName: strings.TrimSpace(lastName), Type: clinic.UserGuest}
	if in.FirstName == "" || in.LastName == "" {
		return nil, 0, clinic.Errorf(clinic.EInvalid, "Give your first and last name, so the others in the call know who joins.")
	}
	var visitID int64
	res, err := s.core.SignIn(ctx, p, in, "visit.call.guest_join", func(q *store.Q, u *clinic.User) error {
		var by int64
		var err error
		visitID, by, err = q.UseCallInvite(ctx, p.Account.ID, app.HashSecret(token), s.core.Unix())
		if errors.Is(err, store.ErrNotFound) {
			return errInviteUsed
		}
		if err != nil {
			return err
		}
		return q.AddCallGuest(ctx, p.Account.ID, visitID, u.ID, by, s.core.Unix())
	})
	if err != nil {
		return nil, 0, err
	}
	return res.Session, visitID, nil
}

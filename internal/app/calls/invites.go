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
	const action = "visit.call.invite"
	v, err := s.inviter(ctx, p, id, "Only the visit's provider invites guests to its call.")
	if err != nil {
		return nil, s.core.AuditOutcome(ctx, p, action, "visit", i64s(id), err)
	}
	return s.invite(ctx, p, v, action, nil, "")
}

// InviteInterpreter sends one of the clinic's interpreters (interpreterID)
// a one-time invitation into visit id's call, by email or text (via). The
// visit's provider asks; the interpreter joins as a guest the call and the
// visit's facts name as its interpreter, with their language.
func (s *Service) InviteInterpreter(ctx context.Context, p *clinic.Principal, id, interpreterID int64, via string) (*Invite, *clinic.Interpreter, error) {
	const action = "visit.call.interpreter"
	// The visit's provider asks (checked first: the visit is not theirs
	// to learn about otherwise), for an active interpreter of the clinic
	// who can be reached the way asked.
	v, err := s.inviter(ctx, p, id, "Only the visit's provider brings an interpreter into its call.")
	var it *clinic.Interpreter
	if err == nil {
		it, err = s.reachable(ctx, p, interpreterID, via)
	}
	if err != nil {
		return nil, nil, s.core.AuditOutcome(ctx, p, action, "visit", i64s(id), err)
	}
	inv, err := s.invite(ctx, p, v, action, it, via)
	return inv, it, err
}

// inviter is visit id when p is its provider, who invites into its call;
// refused says why anyone else in the call may not.
func (s *Service) inviter(ctx context.Context, p *clinic.Principal, id int64, refused string) (*clinic.ThreadVisit, error) {
	v, role, err := s.callVisit(ctx, p, id)
	if err == nil && role != RoleProvider {
		err = clinic.Errorf(clinic.EForbidden, "%s", refused)
	}
	return v, err
}

// reachable is the clinic's active interpreter interpreterID, when the
// link can go to them by via.
func (s *Service) reachable(ctx context.Context, p *clinic.Principal, interpreterID int64, via string) (*clinic.Interpreter, error) {
	it, err := s.core.Interpreter(ctx, p, interpreterID)
	if err != nil {
		return nil, err
	}
	switch via {
	case app.InterpreterByEmail:
		if it.Email == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "%s has no email: send the link by text.", it.Name)
		}
	case app.InterpreterByText:
		if it.Phone == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "%s has no mobile number: send the link by email.", it.Name)
		}
		on, err := s.core.TextsOn(ctx, p.Account.ID)
		if err != nil {
			return nil, err
		}
		if !on {
			return nil, clinic.Errorf(clinic.EConflict, "The clinic sends no texts (the admin sets them up): send the link by email.")
		}
	default:
		return nil, clinic.Errorf(clinic.EInvalid, "via must be email or text.")
	}
	return it, nil
}

// invite writes an invitation into visit v's call, audited as action: a
// guest's, or (it set) an interpreter's, whose link goes by via in the
// same transaction.
func (s *Service) invite(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, action string, it *clinic.Interpreter, via string) (*Invite, error) {
	token := app.RandomHex(24)
	now := s.core.Unix()
	row := store.CallInvite{AccountID: p.Account.ID, VisitID: v.ID, InvitedBy: p.UserID(), TokenHash: app.HashSecret(token),
		Created: now, Expires: now + int64(InviteTTL/time.Second)}
	inv := &Invite{Expires: row.Expires, URL: s.core.PortalBase() + "/invite/" + url.PathEscape(p.Account.Code) + "/" + token}
	if it != nil {
		row.InterpreterID = it.ID
	}
	err := s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.AddCallInvite(ctx, row); err != nil {
			return err
		}
		if it != nil {
			if err := s.core.SendInterpreterLink(ctx, q, it, via, inv.URL, p.User.FullName()); err != nil {
				return err
			}
		}
		return s.core.AuditIn(ctx, q, p, action, "visit", i64s(v.ID), app.OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("invite guest: %w", err)
	}
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
		inv, err := q.UseCallInvite(ctx, p.Account.ID, app.HashSecret(token), s.core.Unix())
		if errors.Is(err, store.ErrNotFound) {
			return errInviteUsed
		}
		if err != nil {
			return err
		}
		visitID = inv.VisitID
		return q.AddCallGuest(ctx, inv, u.ID, s.core.Unix())
	})
	if err != nil {
		return nil, 0, err
	}
	return res.Session, visitID, nil
}

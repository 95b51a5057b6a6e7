package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Onboarding a provider (extension): the clinic admin invites them by
// name and email, into rooms; the provider receives an activation link
// (the activation flow of POST /users/activate/request), sets a password
// on the portal's /activate page and signs in.

// InviteInput is a provider the admin invites.
type InviteInput struct {
	FirstName, LastName, Email string
	Title                      string // e.g. "MD", shown after the name
	Rooms                      []string
}

// InviteProvider is POST /users/invite (admin): it creates the provider
// (no password, so no way in until they activate), links them to the
// rooms named, and mails the activation link. An email address the
// clinic already has is a 409.
func (a *App) InviteProvider(ctx context.Context, p *clinic.Principal, in InviteInput) (*clinic.User, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	u, err := a.inviteProvider(ctx, p, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "user.invite", "account", p.Account.Code, err)
	}
	return u, nil
}

func (a *App) inviteProvider(ctx context.Context, p *clinic.Principal, in InviteInput) (*clinic.User, error) {
	in.FirstName, in.LastName, in.Email = strings.TrimSpace(in.FirstName), strings.TrimSpace(in.LastName), strings.TrimSpace(in.Email)
	if err := CheckFields(Line("first_name", in.FirstName, MaxNameChars), Line("last_name", in.LastName, MaxNameChars),
		Line("email", in.Email, MaxLineChars), Line("title", in.Title, 32)); err != nil {
		return nil, err
	}
	if in.FirstName == "" || in.LastName == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "first_name and last_name are required.")
	}
	if !mailable(in.Email) {
		return nil, clinic.Errorf(clinic.EInvalid, "email must be an address the activation link can go to (name@example.com).")
	}
	if _, err := a.store.Read().UserByLogin(ctx, p.Account.ID, in.Email); err == nil {
		return nil, clinic.Errorf(clinic.EConflict, "The clinic already has a user with the email %s.", in.Email)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("invite: %w", err)
	}
	var rooms []*clinic.Room
	for _, code := range in.Rooms {
		r, err := a.store.Read().RoomByCode(ctx, p.Account.ID, code)
		if errors.Is(err, store.ErrNotFound) {
			return nil, clinic.Errorf(clinic.EInvalid, "Room '%s' does not exist.", code)
		}
		if err != nil {
			return nil, fmt.Errorf("invite: %w", err)
		}
		rooms = append(rooms, r)
	}
	now := a.Unix()
	u := &clinic.User{AccountID: p.Account.ID, Code: "prov-" + RandomHex(6), FirstName: in.FirstName, LastName: in.LastName, Email: in.Email,
		Type: clinic.UserProvider, Status: clinic.StatusPending, Active: true, Extra: map[string]any{}, Created: now, Modified: now}
	if in.Title != "" {
		u.Extra["suffix"] = in.Title
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		if err := a.createUser(ctx, q, u, false); err != nil {
			return err
		}
		for i, r := range rooms {
			if err := q.LinkUserRoom(ctx, p.Account.ID, u.ID, r.ID, i == 0, "invite", now); err != nil {
				return err
			}
		}
		return a.AuditIn(ctx, q, p, "user.invite", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("invite", err, "")
	}
	// The activation link, as POST /users/activate/request sends it, in
	// an invitation that names who sent it.
	by := p.Account.Name + "'s administrator"
	if p.User != nil && p.User.FullName() != "" && !p.IsAdmin() {
		by = p.User.FullName()
	}
	if err := a.mailSecret(ctx, p, purposeActivate, u.Email, by); err != nil {
		return nil, err
	}
	return u, nil
}

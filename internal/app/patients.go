package app

import (
	"context"
	"errors"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Patients written the FHIR way (POST and PUT /fhir/R4/Patient): an
// integrator whose own system holds the person creates them once, by
// their identifier, and keeps their demographics current, with the
// version it read (If-Match) so two writers do not undo each other.

// PatientInput is a patient as a FHIR Patient gives one: Code is the
// clinic's identifier of them (the SSO code); the rest their profile.
type PatientInput struct {
	Code                             string
	FirstName, LastName, DOB, Gender string
	Email, Phone                     string
	StreetAddr, City, State, Zip     string
}

// CreatePatient creates a patient (the clinic admin). With ifNoneExist,
// the code of the identifier the request's If-None-Exist names, a
// patient already holding it is answered instead, created false: the
// same person is never made twice by a retried or repeated create. A
// patient without an identifier gets one.
func (a *App) CreatePatient(ctx context.Context, p *clinic.Principal, in PatientInput, ifNoneExist string) (*clinic.User, bool, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, false, err
	}
	if ifNoneExist != "" {
		u, err := a.store.Read().UserByCode(ctx, p.Account.ID, ifNoneExist)
		switch {
		case err == nil && u.Type == clinic.UserMember:
			return u, false, nil
		case err == nil:
			return nil, false, clinic.Errorf(clinic.EConflict, "The identifier %q names a user who is not a patient.", ifNoneExist)
		case !errors.Is(err, store.ErrNotFound):
			return nil, false, StoreErr("patient", err, "")
		}
		if in.Code == "" {
			in.Code = ifNoneExist
		}
	}
	if in.Code == "" {
		in.Code = "fhir-" + RandomHex(8)
	}
	u, err := a.validateSSO(p.Account, SSOInput{FirstName: in.FirstName, LastName: in.LastName, Type: clinic.UserMember, Code: in.Code,
		DOB: in.DOB, Email: in.Email, Gender: in.Gender, StreetAddr: in.StreetAddr, City: in.City, State: in.State, Zip: in.Zip, Phone: in.Phone})
	if err != nil {
		return nil, false, err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if _, err := q.UserByCode(ctx, p.Account.ID, u.Code); err == nil {
			return clinic.Errorf(clinic.EConflict, "A user with the identifier %q exists already: read it, or create with If-None-Exist.", u.Code)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := a.createUser(ctx, q, u, false); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "user.create", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, false, StoreErr("patient", err, "")
	}
	u, err = a.store.Read().UserByID(ctx, p.Account.ID, u.ID)
	return u, err == nil, err
}

// UpdatePatient replaces patient id's demographics (the clinic admin, or
// the patient themself), as a FHIR PUT replaces a resource: what the
// input leaves empty is emptied. ifMatch, when not negative, is the
// version the writer read: a patient changed since is refused (EStale),
// and nothing is written.
func (a *App) UpdatePatient(ctx context.Context, p *clinic.Principal, id int64, in PatientInput, ifMatch int64) (*clinic.User, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, id)
	if err != nil || u.Type != clinic.UserMember {
		return nil, clinic.Errorf(clinic.ENotFound, "Patient/%d not found.", id)
	}
	if !p.IsAdmin() && p.UserID() != u.ID {
		return nil, a.AuditOutcome(ctx, p, "user.update", "user", i64s(id), clinic.Errorf(clinic.EForbidden, "Only the clinic admin, or the patient, changes a patient's record."))
	}
	if in.Code != "" && in.Code != u.Code {
		return nil, clinic.Errorf(clinic.EInvalid, "identifier: a patient's identifier does not change (%q, not %q).", u.Code, in.Code)
	}
	check, err := a.validateSSO(p.Account, SSOInput{FirstName: in.FirstName, LastName: in.LastName, Type: clinic.UserMember, Code: u.Code,
		DOB: in.DOB, Email: in.Email, Gender: in.Gender, StreetAddr: in.StreetAddr, City: in.City, State: in.State, Zip: in.Zip, Phone: in.Phone})
	if err != nil {
		return nil, err
	}
	if ifMatch >= 0 && ifMatch != u.Version {
		return nil, clinic.Errorf(clinic.EStale, "Patient/%d is at version %d, not %d: read it again, then change it.", id, u.Version, ifMatch)
	}
	next := *u
	next.FirstName, next.LastName, next.DOB, next.Gender = check.FirstName, check.LastName, check.DOB, check.Gender
	next.Email, next.Phone = check.Email, strings.TrimSpace(check.Phone)
	next.StreetAddr, next.City, next.State, next.Zip = check.StreetAddr, check.City, check.State, check.Zip
	next.Modified = a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		ok, err := q.UpdateProfileAt(ctx, &next, u.Version)
		if err != nil {
			return err
		}
		if !ok { // a write came between the read and this one
			return clinic.Errorf(clinic.EStale, "Patient/%d changed meanwhile: read it again, then change it.", id)
		}
		return a.AuditIn(ctx, q, p, "user.update", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("patient", err, "")
	}
	return a.store.Read().UserByID(ctx, p.Account.ID, id)
}

package app

import (
	"context"
	"errors"
	"fmt"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Demo is what serve --demo prints.
type Demo struct {
	Credentials     *AccountCredentials
	RoomCode        string
	ProviderCode    string
	PatientCode     string
	PatientUsername string
	PatientPassword string
	// ProviderToken is an access token of the demo provider: the demo's
	// signed-in link to the dashboard carries it.
	ProviderToken string
}

// Demo clinic names.
const (
	DemoAccount  = "demo"
	demoRoom     = "main"
	demoProvider = "demo-provider"
	demoPatient  = "demo-patient"
)

// SeedDemo creates, or finds, the demo clinic with one room, one provider
// and one patient with a password. The clinic's credentials are stored only
// hashed, so each run rotates them and returns the new ones, and gives the
// patient a new password.
func (a *App) SeedDemo(ctx context.Context) (*Demo, error) {
	creds, err := a.CreateAccount(ctx, NewAccount{Code: DemoAccount, Name: "Demo Clinic", Domain: "demo.teleclinic.test", SSO: true})
	if clinic.ErrorCode(err) == clinic.EConflict {
		if creds, err = a.Rotate(ctx, DemoAccount, RotateAll); err == nil {
			err = a.SetSSO(ctx, DemoAccount, true)
		}
	}
	if err != nil {
		return nil, err
	}
	acct, err := a.AccountByCode(ctx, DemoAccount)
	if err != nil {
		return nil, err
	}
	p := SystemPrincipal(acct)
	room, err := a.EnsureRoom(ctx, p, demoRoom, "Main Room")
	if err != nil {
		return nil, err
	}
	d := &Demo{Credentials: creds, RoomCode: room.Code, ProviderCode: demoProvider, PatientCode: demoPatient,
		PatientUsername: "demo.patient", PatientPassword: NewSecret()[:16]}
	hash, err := a.hashPassword(ctx, d.PatientPassword)
	if err != nil {
		return nil, err
	}
	now := a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		prov, err := a.ensureUser(ctx, q, &clinic.User{AccountID: acct.ID, Code: demoProvider, Username: "dr.demo",
			FirstName: "Dana", LastName: "Demo", Email: "dr.demo@demo.teleclinic.test", Type: clinic.UserProvider, Subtype: "482",
			Status: clinic.StatusActive, Active: true, Extra: map[string]any{}, Created: now, Modified: now})
		if err != nil {
			return err
		}
		if err := q.LinkUserRoom(ctx, acct.ID, prov.ID, room.ID, true, "demo", now); err != nil {
			return err
		}
		sess, err := a.issueSession(ctx, q, prov, "")
		if err != nil {
			return err
		}
		d.ProviderToken = sess.Token
		pat, err := a.ensureUser(ctx, q, &clinic.User{AccountID: acct.ID, Code: demoPatient, Username: d.PatientUsername,
			FirstName: "Pat", LastName: "Patient", Email: "patient@demo.teleclinic.test", Type: clinic.UserMember,
			Status: clinic.StatusActive, Active: true, Extra: map[string]any{}, Created: now, Modified: now})
		if err != nil {
			return err
		}
		return q.SetPassword(ctx, acct.ID, pat.ID, hash, clinic.StatusActive, true, now)
	})
	if err != nil {
		return nil, StoreErr("seed demo", err, "")
	}
	return d, a.demoReady(ctx, p, d)
}

// demoReady makes the demo room take every kind of visit at once: listed
// on the clinic's page, walk-ins and appointments on, and the demo
// provider's open times for the next seven days (09:00–17:00 UTC, 15
// minutes each). A day already published (an earlier start) is kept.
func (a *App) demoReady(ctx context.Context, p *clinic.Principal, d *Demo) error {
	on := true
	if _, err := a.UpdateRoom(ctx, p, d.RoomCode, RoomUpdate{PublicAccess: &on, WalkinEnabled: &on, AppointmentEnable: &on}); err != nil {
		return fmt.Errorf("demo room: %w", err)
	}
	prov, err := a.Authenticate(ctx, Credentials{AccountCode: DemoAccount, APIToken: d.ProviderToken}, NeedUser)
	if err != nil {
		return fmt.Errorf("demo provider: %w", err)
	}
	for i := 1; i <= 7; i++ {
		day := a.now().UTC().AddDate(0, 0, i).Format("2006-01-02")
		_, _, err := a.CreateSlots(ctx, prov, SlotGroupInput{RoomCode: d.RoomCode, DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "17:00",
			Timezone: "UTC", Duration: 15})
		if err != nil && clinic.ErrorCode(err) != clinic.EConflict {
			return fmt.Errorf("demo slots: %w", err)
		}
	}
	return nil
}

func (a *App) ensureUser(ctx context.Context, q *store.Q, u *clinic.User) (*clinic.User, error) {
	got, err := q.UserByCode(ctx, u.AccountID, u.Code)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return got, err
	}
	return u, a.createUser(ctx, q, u, true)
}

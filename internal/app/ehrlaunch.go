package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// SMART EHR launch, with Teleclinic as the app: a provider opens
// Teleclinic from inside the clinic's EHR, and lands on the visit of the
// patient (and appointment) the EHR launched with — created if none is —
// signed in, with the patient's link ready to send. The clinic admin
// connects the EHR once (its FHIR base, Teleclinic's client there, the
// room its visits are held in); a provider is known by the EHR's fhirUser,
// linked once (by the admin, or by the Practitioner's email matching the
// provider's the first time).

// ehrLaunchTTL is how long a launch may take from Teleclinic's redirect to
// the EHR's answer.
const ehrLaunchTTL = 10 * time.Minute

// EHRLaunchURL is the address an EHR opens Teleclinic at (its launch
// URL, as the EHR's app registration calls it).
func (a *App) EHRLaunchURL() string { return a.portalBase() + "/smart/launch" }

// EHRScopes are what Teleclinic asks an EHR for: the launch's context,
// who launched, and the patient's and appointment's resources.
const EHRScopes = "launch openid fhirUser patient/Patient.rs patient/Appointment.rs user/Practitioner.rs"

// EHRInput connects an EHR (admin).
type EHRInput struct {
	ISS, ClientID, Secret, RoomCode string
}

// ConnectEHR connects an EHR to the clinic: launches whose iss is its
// FHIR base are the clinic's.
func (a *App) ConnectEHR(ctx context.Context, p *clinic.Principal, in EHRInput) (*clinic.EHRConnection, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	iss := strings.TrimRight(strings.TrimSpace(in.ISS), "/")
	u, err := url.Parse(iss)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
		return nil, clinic.Errorf(clinic.EInvalid, "iss must be the EHR's FHIR base, https (http only on localhost or 127.0.0.1).")
	}
	if err := CheckFields(Line("client_id", in.ClientID, 200), Line("client_secret", in.Secret, 500)); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.ClientID) == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "client_id (Teleclinic's client id at the EHR) is required.")
	}
	r, err := a.RoomByCode(ctx, p, in.RoomCode)
	if err != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "room_code (the room the EHR's visits are held in) names no room of the clinic.")
	}
	c := &clinic.EHRConnection{AccountID: p.Account.ID, ISS: iss, ClientID: strings.TrimSpace(in.ClientID), RoomID: r.ID, Created: a.Unix()}
	if in.Secret != "" {
		if c.SealedSecret, err = a.Seal([]byte(in.Secret)); err != nil {
			return nil, err
		}
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateEHRConnection(ctx, c); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "ehr.connect", "ehr_connection", i64s(c.ID), OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, clinic.Errorf(clinic.EConflict, "This EHR is connected already.")
	}
	return c, StoreErr("ehr", err, "")
}

// EHRConnections lists the clinic's EHRs (admin).
func (a *App) EHRConnections(ctx context.Context, p *clinic.Principal) ([]*clinic.EHRConnection, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	cs, err := a.store.Read().EHRConnections(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("ehr: %w", err)
	}
	if cs == nil {
		cs = []*clinic.EHRConnection{}
	}
	return cs, nil
}

// DisconnectEHR removes an EHR (admin): its launches stop; the visits stay.
func (a *App) DisconnectEHR(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		found, err := q.DeleteEHRConnection(ctx, p.Account.ID, id)
		if err != nil {
			return err
		}
		if !found {
			return store.ErrNotFound
		}
		return a.AuditIn(ctx, q, p, "ehr.disconnect", "ehr_connection", i64s(id), OutcomeOK)
	})
	return StoreErr("ehr", err, "No such EHR.")
}

// LinkEHRUser links an EHR user (their fhirUser, as the EHR names them) to
// a provider of the clinic (admin).
func (a *App) LinkEHRUser(ctx context.Context, p *clinic.Principal, connectionID int64, fhirUser string, providerID int64) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	if _, err := a.store.Read().EHRConnectionByID(ctx, p.Account.ID, connectionID); err != nil {
		return StoreErr("ehr", err, "No such EHR.")
	}
	fhirUser = strings.TrimSpace(fhirUser)
	if err := CheckFields(Line("fhir_user", fhirUser, 500)); err != nil || fhirUser == "" {
		return clinic.Errorf(clinic.EInvalid, "fhir_user (the EHR's Practitioner, as its fhirUser names it) is required.")
	}
	prov, err := a.ProviderByID(ctx, p, providerID)
	if err != nil {
		return err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.LinkEHRUser(ctx, p.Account.ID, connectionID, fhirUser, prov.ID, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "ehr.link", "user", i64s(prov.ID), OutcomeOK)
	})
	return StoreErr("ehr", err, "")
}

// smartConfig is what of an EHR's .well-known/smart-configuration the
// launch uses.
type smartConfig struct {
	Issuer    string `json:"issuer"`
	Authorize string `json:"authorization_endpoint"`
	Token     string `json:"token_endpoint"`
}

// ehrGet reads a JSON document of the EHR into v (a bearer token when
// given).
func (a *App) ehrGet(ctx context.Context, addr, token string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json, application/fhir+json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := a.ehrHTTP.Do(req)
	if err != nil {
		return clinic.Errorf(clinic.EUnavailable, "The EHR did not answer: %s.", err.Error())
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return clinic.Errorf(clinic.EUnavailable, "The EHR answered %s for %s.", res.Status, addr)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(v)
}

// StartEHRLaunch is the start of an EHR launch (GET /smart/launch): the
// connection of iss, the EHR's endpoints, and the address of the EHR's
// authorize endpoint to send the browser to, with the launch and a PKCE
// challenge whose verifier is kept (sealed) with the state.
func (a *App) StartEHRLaunch(ctx context.Context, iss, launch string) (to, state string, err error) {
	iss = strings.TrimRight(strings.TrimSpace(iss), "/")
	if launch == "" || len(launch) > 2000 {
		return "", "", clinic.Errorf(clinic.EInvalid, "An EHR launch names its launch: open Teleclinic from the EHR.")
	}
	conn, err := a.store.Read().EHRConnectionByISS(ctx, iss)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", clinic.Errorf(clinic.ENotFound, "No clinic here is connected to the EHR at %s: its admin connects it first.", iss)
	}
	if err != nil {
		return "", "", fmt.Errorf("ehr launch: %w", err)
	}
	var sc smartConfig
	if err := a.ehrGet(ctx, iss+"/.well-known/smart-configuration", "", &sc); err != nil {
		return "", "", err
	}
	if sc.Authorize == "" || sc.Token == "" {
		return "", "", clinic.Errorf(clinic.EUnavailable, "The EHR's SMART configuration names no authorize and token endpoints.")
	}
	verifier := oauth2.GenerateVerifier()
	sealed, err := a.Seal([]byte(verifier))
	if err != nil {
		return "", "", err
	}
	l := &clinic.EHRLaunch{State: RandomHex(16), AccountID: conn.AccountID, ConnectionID: conn.ID, Verifier: sealed,
		Issuer: sc.Issuer, TokenURL: sc.Token, Expires: a.Unix() + int64(ehrLaunchTTL/time.Second)}
	if err := a.store.Write().CreateEHRLaunch(ctx, l); err != nil {
		return "", "", fmt.Errorf("ehr launch: %w", err)
	}
	cfg := a.ehrOAuth(conn, sc.Authorize, sc.Token, "")
	return cfg.AuthCodeURL(l.State, oauth2.SetAuthURLParam("launch", launch), oauth2.SetAuthURLParam("aud", iss),
		oauth2.S256ChallengeOption(verifier)), l.State, nil
}

// ehrOAuth is Teleclinic's client at the EHR of conn.
func (a *App) ehrOAuth(conn *clinic.EHRConnection, authorize, token, secret string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if secret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: conn.ClientID, ClientSecret: secret, RedirectURL: a.portalBase() + "/smart/callback",
		Scopes: strings.Fields(EHRScopes), Endpoint: oauth2.Endpoint{AuthURL: authorize, TokenURL: token, AuthStyle: style}}
}

// EHRLanding is where an EHR launch lands: the visit, its patient and
// provider, the patient's link to send, and the provider's new portal
// session.
type EHRLanding struct {
	Account           *clinic.Account
	Visit             *clinic.Visit
	Patient, Provider *clinic.User
	PatientLink       string
	Session           *Session
	Created           bool // the launch made the visit
}

// ehrPatient is what of the EHR's Patient Teleclinic keeps.
type ehrPatient struct {
	Name []struct {
		Family string   `json:"family"`
		Given  []string `json:"given"`
	} `json:"name"`
	Gender    string `json:"gender"`
	BirthDate string `json:"birthDate"`
	Telecom   []struct{ System, Value string }
}

// codeSafe keeps the characters a user code may hold.
var codeSafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// FinishEHRLaunch is the EHR's answer (GET /smart/callback): the code
// exchanged (PKCE), the ID token verified against the EHR's keys, the
// provider found by fhirUser, the patient found or made from the EHR's
// Patient, the visit of the launch's appointment found or made, and the
// provider signed in. Audited as ehr.launch.
func (a *App) FinishEHRLaunch(ctx context.Context, requestID, state, code string) (*EHRLanding, error) {
	l, err := a.store.Write().TakeEHRLaunch(ctx, state, a.Unix())
	if err != nil {
		return nil, StoreErr("ehr launch", err, "This launch has ended: open Teleclinic from the EHR again.")
	}
	rd := a.store.Read()
	conn, err := rd.EHRConnectionByID(ctx, l.AccountID, l.ConnectionID)
	if err != nil {
		return nil, StoreErr("ehr launch", err, "The EHR was disconnected.")
	}
	acct, err := a.accountByID(ctx, conn.AccountID)
	if err != nil {
		return nil, err
	}
	var secret, verifier []byte
	if conn.SealedSecret != "" {
		if secret, err = a.Unseal(conn.SealedSecret); err != nil {
			return nil, err
		}
	}
	if verifier, err = a.Unseal(l.Verifier); err != nil {
		return nil, err
	}
	ctx = oidc.ClientContext(ctx, a.ehrHTTP) // oauth2 and go-oidc use it
	tok, err := a.ehrOAuth(conn, "", l.TokenURL, string(secret)).Exchange(ctx, code, oauth2.VerifierOption(string(verifier)))
	if err != nil {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "The EHR refused the launch's code: %s.", err.Error())
	}
	// Who launched: the ID token's fhirUser, its signature checked with
	// the EHR's keys. The EHR stamps its tokens with its own clock.
	raw, _ := tok.Extra("id_token").(string)
	provider, err := oidc.NewProvider(ctx, l.Issuer)
	if err != nil {
		return nil, clinic.Errorf(clinic.EUnavailable, "The EHR's OpenID configuration: %s.", err.Error())
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: conn.ClientID}).Verify(ctx, raw)
	if err != nil {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "The EHR's ID token does not verify: %s.", err.Error())
	}
	var claims struct {
		FHIRUser string `json:"fhirUser"`
	}
	if err := idt.Claims(&claims); err != nil || claims.FHIRUser == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "The EHR did not say who launched (no fhirUser in its ID token).")
	}
	patientID, _ := tok.Extra("patient").(string)
	if patientID == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "The EHR launched with no patient: open Teleclinic from a patient's chart or appointment.")
	}
	admin, err := rd.AdminUser(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	sys := &clinic.Principal{Account: acct, Kind: clinic.CredSystem, User: admin, RequestID: requestID}
	prov, err := a.ehrProvider(ctx, sys, conn, claims.FHIRUser, tok.AccessToken)
	if err != nil {
		return nil, err
	}
	var ep ehrPatient
	if err := a.ehrGet(ctx, conn.ISS+"/Patient/"+url.PathEscape(patientID), tok.AccessToken, &ep); err != nil {
		return nil, err
	}
	in := PatientInput{DOB: ep.BirthDate, Code: codeSafe.ReplaceAllString(fmt.Sprintf("ehr%d-%s", conn.ID, patientID), "")}
	if len(ep.Name) > 0 {
		in.LastName, in.FirstName = ep.Name[0].Family, strings.Join(ep.Name[0].Given, " ")
	}
	if ep.Gender == "male" || ep.Gender == "female" {
		in.Gender = ep.Gender
	}
	for _, c := range ep.Telecom {
		switch {
		case c.System == "email" && in.Email == "":
			in.Email = c.Value
		case c.System == "phone" && in.Phone == "":
			in.Phone = c.Value
		}
	}
	pat, _, err := a.CreatePatient(ctx, sys, in, in.Code)
	if err != nil {
		return nil, err
	}
	ref, start, end, err := a.ehrAppointment(ctx, conn, tok)
	if err != nil {
		return nil, err
	}
	return a.landEHRLaunch(ctx, sys, conn, prov, pat, ref, start, end, true)
}

// ehrProvider is the provider an EHR user is: linked by fhirUser, or, the
// first time, the provider whose email the EHR's Practitioner has (then
// linked).
func (a *App) ehrProvider(ctx context.Context, sys *clinic.Principal, conn *clinic.EHRConnection, fhirUser, token string) (*clinic.User, error) {
	rd := a.store.Read()
	id, err := rd.EHRUser(ctx, conn.AccountID, conn.ID, fhirUser)
	if err == nil {
		return a.ProviderByID(ctx, sys, id)
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	notLinked := clinic.Errorf(clinic.EForbidden, "Your EHR account (%s) is not linked to a provider of %s: ask the clinic admin to link it.", fhirUser, sys.Account.Name)
	addr := fhirUser
	if !strings.Contains(addr, "://") {
		addr = conn.ISS + "/" + strings.TrimPrefix(addr, "/")
	}
	var pr struct {
		ResourceType string
		Telecom      []struct{ System, Value string }
	}
	if err := a.ehrGet(ctx, addr, token, &pr); err != nil || pr.ResourceType != "Practitioner" {
		return nil, notLinked
	}
	for _, c := range pr.Telecom {
		if c.System != "email" || c.Value == "" {
			continue
		}
		u, err := rd.UserByLogin(ctx, conn.AccountID, c.Value)
		if err != nil || u.Type != clinic.UserProvider || !strings.EqualFold(u.Email, c.Value) {
			continue
		}
		if err := a.store.Write().LinkEHRUser(ctx, conn.AccountID, conn.ID, fhirUser, u.ID, a.Unix()); err != nil {
			return nil, err
		}
		return u, nil
	}
	return nil, notLinked
}

// ehrAppointment is the appointment the launch names (SMART's fhirContext,
// or an appointment parameter): its reference and times; with none, a
// visit from now for half an hour, under no reference.
func (a *App) ehrAppointment(ctx context.Context, conn *clinic.EHRConnection, tok *oauth2.Token) (ref string, start, end int64, err error) {
	if ctxs, ok := tok.Extra("fhirContext").([]any); ok {
		for _, c := range ctxs {
			if m, ok := c.(map[string]any); ok {
				if r, _ := m["reference"].(string); strings.HasPrefix(r, "Appointment/") {
					ref = r
				}
			}
		}
	}
	if id, _ := tok.Extra("appointment").(string); ref == "" && id != "" {
		ref = "Appointment/" + strings.TrimPrefix(id, "Appointment/")
	}
	now := a.Unix()
	if ref == "" {
		return "", now, now + 1800, nil
	}
	var ap struct{ Start, End string }
	if err := a.ehrGet(ctx, conn.ISS+"/"+ref, tok.AccessToken, &ap); err != nil {
		return "", 0, 0, err
	}
	s, err1 := time.Parse(time.RFC3339, ap.Start)
	e, err2 := time.Parse(time.RFC3339, ap.End)
	if err1 != nil || err2 != nil || !e.After(s) {
		return ref, now, now + 1800, nil // an appointment without times: from now
	}
	return ref, s.Unix(), e.Unix(), nil
}

// takeEHRVisit gives the visit of an EHR appointment to the provider who
// launched it from the EHR, whose appointment it now is (a colleague
// covering), while it has not started; a visit under way or over stays
// with its provider, and the launch is refused.
func (a *App) takeEHRVisit(ctx context.Context, q *store.Q, v *clinic.Visit, prov *clinic.User) error {
	if v.ProviderID == prov.ID {
		return nil
	}
	moved, err := q.MoveVisit(ctx, store.VisitMove{AccountID: v.AccountID, ID: v.ID, From: []int{clinic.VisitPending, clinic.VisitConfirmed},
		To: v.Status, ProviderID: prov.ID, Now: a.Unix()})
	if err != nil {
		return err
	}
	if !moved {
		return clinic.Errorf(clinic.EConflict, "This appointment's visit is under way or over, with another provider.")
	}
	v.ProviderID = prov.ID
	return nil
}

// landEHRLaunch finds the visit of the launch's reference, or makes it
// (its intake in the connection's room, the provider assigned, booked),
// and signs the provider in, with the patient's link made.
// Of two launches of one appointment at once, one makes the visit; the
// other (again, once) finds it.
func (a *App) landEHRLaunch(ctx context.Context, sys *clinic.Principal, conn *clinic.EHRConnection, prov, pat *clinic.User, ref string, start, end int64, again bool) (*EHRLanding, error) {
	out := &EHRLanding{Account: sys.Account, Patient: pat, Provider: prov}
	r, err := a.store.Read().RoomByID(ctx, conn.AccountID, conn.RoomID)
	if err != nil {
		return nil, StoreErr("ehr launch", err, "The EHR's room no longer exists: the clinic admin connects it again.")
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if ref != "" {
			if id, err := q.EHRVisit(ctx, conn.AccountID, conn.ID, ref); err == nil {
				if out.Visit, err = q.VisitByID(ctx, conn.AccountID, id); err != nil {
					return err
				}
				if err := a.takeEHRVisit(ctx, q, out.Visit, prov); err != nil {
					return err
				}
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if out.Visit == nil {
			now := a.Unix()
			it := &clinic.Intake{AccountID: conn.AccountID, RoomID: r.ID, MemberID: pat.ID, CreatorUserID: prov.ID, ProviderID: prov.ID,
				Type: clinic.IntakeSchedule, Custom: map[string]string{}, Created: now, Modified: now}
			if err := a.insertIntake(ctx, q, sys, it, nil); err != nil {
				return err
			}
			v := a.newVisit(sys, it, r, clinic.KindAppointment, clinic.VisitVideo, prov.ID)
			v.Status, v.Start, v.End = clinic.VisitConfirmed, start, end
			v.Meeting.Expiry = end + 3600
			if err := a.insertVisit(ctx, q, sys, v, it); err != nil {
				return err
			}
			if ref != "" {
				if err := q.AddEHRVisit(ctx, conn.AccountID, conn.ID, ref, v.ID); err != nil {
					return err // a concurrent launch made it: the retry finds it
				}
			}
			out.Visit, out.Created = v, true
		}
		var err error
		if out.PatientLink, err = a.visitLink(ctx, q, out.Visit, pat); err != nil {
			return err
		}
		if out.Session, err = a.issueSession(ctx, q, prov, ""); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, &clinic.Principal{Account: sys.Account, Kind: clinic.CredUserToken, User: prov, RequestID: sys.RequestID},
			"ehr.launch", "visit", i64s(out.Visit.ID), OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) && again {
		return a.landEHRLaunch(ctx, sys, conn, prov, pat, ref, start, end, false)
	}
	if err != nil {
		return nil, StoreErr("ehr launch", err, "")
	}
	return out, nil
}

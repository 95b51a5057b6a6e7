package web

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/locale"
)

// The consent page of SMART App Launch: the authorization server (package
// smart) sends the person here to sign in to the app's clinic, see what
// the app asks for in words, and allow or refuse it.

type consentScope struct{ Words, Scope, Why string }

type consentPage struct {
	App, Clinic, Action string
	Granted, Refused    []consentScope
}

// typeWords are the FHIR types as a person knows them: what a patient
// grants of their own record, and what a provider grants of the records
// they see.
var typeWords = map[string][2]string{
	"*":                  {tr("your whole record"), tr("the records you see")},
	"Patient":            {tr("your profile"), tr("your patients' profiles")},
	"Practitioner":       {tr("your providers"), tr("the clinic's providers")},
	"Encounter":          {tr("your visits"), tr("your patients' visits")},
	"Appointment":        {tr("your appointments"), tr("your patients' appointments")},
	"Communication":      {tr("your visit messages"), tr("your visits' messages")},
	"Observation":        {tr("your device readings"), tr("your patients' device readings")},
	"Coverage":           {tr("your insurance"), tr("your patients' insurance")},
	"MedicationRequest":  {tr("your prescriptions"), tr("your patients' prescriptions")},
	"AllergyIntolerance": {tr("your allergies"), tr("your patients' allergies")},
	"Condition":          {tr("your conditions and diagnoses"), tr("your patients' conditions and diagnoses")},
	"Composition":        {tr("your visit notes"), tr("your patients' visit notes")},
	"DocumentReference":  {tr("your files"), tr("your patients' files")},
	"Slot":               {tr("the providers' open times"), tr("the providers' open times")},
	"Schedule":           {tr("the providers' schedules"), tr("the providers' schedules")},
}

// refusedWords say why an account cannot grant a scope (app.Refused…).
var refusedWords = map[string]string{
	app.RefusedUnknown:   tr("This server does not know this permission."),
	app.RefusedSystem:    tr("Only a service the clinic registered may act for the whole clinic."),
	app.RefusedNoPatient: tr("A provider signs in with no patient chosen: an app asking for the patients you care for (user/) works instead."),
	app.RefusedWriteAll:  tr("Every part of a record can be seen through an app, not changed."),
	app.RefusedRole:      tr("Your account cannot do this."),
}

// scopeWords says what a scope lets the app do, in the person's language.
func scopeWords(loc *locale.Locale, s string, provider bool) string {
	switch s {
	case "openid", "profile":
		return loc.T("Know your name")
	case "fhirUser":
		return loc.T("Know who you are in the clinic's records")
	case "launch", "launch/patient":
		return loc.T("Open with your record")
	case "offline_access":
		return loc.T("Keep its access while you are away, until you revoke it")
	case "online_access":
		return loc.T("Keep its access while you use it")
	}
	sc, ok := app.ParseScope(s)
	if !ok {
		return s
	}
	words, known := typeWords[sc.Type]
	what := sc.Type
	if known {
		what = words[0]
		if provider {
			what = words[1]
		}
		what = loc.T(what)
	}
	var verbs []string
	if strings.ContainsAny(sc.Perms, "rs") {
		verbs = append(verbs, loc.T("see"))
	}
	if strings.Contains(sc.Perms, "c") {
		verbs = append(verbs, loc.T("add"))
	}
	if strings.Contains(sc.Perms, "u") {
		verbs = append(verbs, loc.T("change"))
	}
	if strings.Contains(sc.Perms, "d") {
		verbs = append(verbs, loc.T("delete"))
	}
	return capital(strings.Join(verbs, ", ")) + ": " + what
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// oauthConsent is GET /oauth/consent/{id}: a person not signed in signs in
// to the app's clinic first, and comes back.
func (s *Server) oauthConsent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	p, err := s.principal(r)
	if err != nil {
		acct, err := s.app.OAuthRequestClinic(r.Context(), id)
		if err != nil {
			return err
		}
		http.Redirect(w, r, "/signin?clinic="+url.QueryEscape(acct.Code)+"&next="+url.QueryEscape("/oauth/consent/"+url.PathEscape(id)), http.StatusSeeOther)
		return nil
	}
	cs, err := s.app.OAuthConsentFor(r.Context(), p, id)
	if err != nil {
		return err
	}
	loc := s.localeOf(r)
	provider := !app.IsPatient(p)
	page := consentPage{App: cs.Client.Name, Clinic: p.Account.Name, Action: "/oauth/consent/" + url.PathEscape(id)}
	for _, sc := range cs.Granted {
		page.Granted = append(page.Granted, consentScope{Words: scopeWords(loc, sc, provider), Scope: sc})
	}
	for _, sc := range cs.Params.Scopes {
		if why, refused := cs.Refused[sc]; refused {
			page.Refused = append(page.Refused, consentScope{Words: scopeWords(loc, sc, provider), Scope: sc, Why: loc.T(refusedWords[why])})
		}
	}
	// What of the record the app will have first, then who the person is.
	slices.SortStableFunc(page.Granted, func(a, b consentScope) int {
		_, ra := app.ParseScope(a.Scope)
		_, rb := app.ParseScope(b.Scope)
		switch {
		case ra == rb:
			return 0
		case ra:
			return -1
		}
		return 1
	})
	if back, err := url.Parse(cs.Params.RedirectURI); err == nil && back.Host != "" {
		// The answer goes back to the app: the form's redirects end on
		// its address, which form-action must let through.
		w.Header().Set("Content-Security-Policy", strings.Replace(pageCSP, "form-action 'self'", "form-action 'self' "+back.Scheme+"://"+back.Host, 1))
	}
	s.render(w, r, http.StatusOK, "consent", page)
	return nil
}

// oauthDecide is POST /oauth/consent/{id}: allowed, the authorization
// server issues the app its code; refused, the app hears access_denied.
func (s *Server) oauthDecide(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if r.PostFormValue("decision") == "allow" {
		if _, err := s.app.ApproveOAuthRequest(r.Context(), p, id); err != nil {
			return err
		}
		http.Redirect(w, r, s.app.OAuthIssuer()+"/authorize/callback?id="+url.QueryEscape(id), http.StatusSeeOther)
		return nil
	}
	cs, err := s.app.DenyOAuthRequest(r.Context(), p, id)
	if err != nil {
		return err
	}
	back, err := url.Parse(cs.Params.RedirectURI)
	if err != nil {
		return err
	}
	q := back.Query()
	q.Set("error", "access_denied")
	q.Set("error_description", "The person did not allow the app.")
	if cs.Params.State != "" {
		q.Set("state", cs.Params.State)
	}
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
	return nil
}

// ehrLandingPage is where a provider lands from their EHR: the visit, and
// the patient's link to send.
type ehrLandingPage struct {
	Patient, Link, Visit string
	Start                int64
	Created              bool
}

// smartLaunch is GET /smart/launch?iss=…&launch=…: an EHR opens Teleclinic
// (SMART EHR launch); the browser goes to the EHR to say who is launching.
func (s *Server) smartLaunch(w http.ResponseWriter, r *http.Request) error {
	to, state, err := s.app.StartEHRLaunch(r.Context(), r.URL.Query().Get("iss"), r.URL.Query().Get("launch"))
	if err != nil {
		return err
	}
	// The answer must come back to this browser: a callback carrying a
	// state this browser did not start (someone else's launch, sent to it
	// to sign it in as them) is refused.
	s.setCookie(w, ehrStateCookie, state, 10*time.Minute)
	http.Redirect(w, r, to, http.StatusFound)
	return nil
}

// ehrStateCookie holds the state of the EHR launch this browser started.
const ehrStateCookie = "tc_ehr_state"

// smartCallback is GET /smart/callback: the EHR's answer. The provider is
// signed in to the portal and shown the visit, with the patient's link.
func (s *Server) smartCallback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return clinic.Errorf(clinic.EForbidden, "The EHR did not let Teleclinic open: %s.", cmp.Or(q.Get("error_description"), e))
	}
	if c, err := r.Cookie(ehrStateCookie); err != nil || c.Value == "" || c.Value != q.Get("state") {
		return clinic.Errorf(clinic.EForbidden, "This launch was not started in this browser: open Teleclinic from the EHR again.")
	}
	s.setCookie(w, ehrStateCookie, "", 0)
	l, err := s.app.FinishEHRLaunch(r.Context(), edge.RequestID(r.Context()), q.Get("state"), q.Get("code"))
	if err != nil {
		return err
	}
	s.setCookie(w, s.sessionCookie(), l.Session.Token, s.cfg.SessionMax)
	s.setCookie(w, s.navCookie(), "", 0)
	// The page is the first of the new session: its navigation shows the
	// provider signed in, as the next request will.
	r.AddCookie(&http.Cookie{Name: s.sessionCookie(), Value: l.Session.Token})
	s.render(w, r, http.StatusOK, "ehrlanding", ehrLandingPage{Patient: l.Patient.FirstName + " " + l.Patient.LastName, Link: l.PatientLink,
		Visit: visitPath(l.Visit.ID), Start: l.Visit.Start, Created: l.Created})
	return nil
}

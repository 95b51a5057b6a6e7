package web

import (
	"cmp"
	"net/http"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The profile page (/profile): where a signed-in person sees and changes
// the time zone their pages, their emails and the slots they publish are
// in. A person who never chose one has their browser's (static/live.js
// sets it in a cookie); a provider's is saved to their profile the first
// time they publish slots in it (publishSlots), so what the dashboard
// said is what the schedule is in.

// commonZones are offered in the zone field's list; any IANA name may be
// typed.
var commonZones = []string{
	"America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles", "America/Anchorage",
	"Pacific/Honolulu", "America/Puerto_Rico", "America/Toronto", "America/Vancouver", "America/Mexico_City", "America/Bogota",
	"America/Lima", "America/Santiago", "America/Argentina/Buenos_Aires", "America/Sao_Paulo", "Europe/London", "Europe/Dublin",
	"Europe/Lisbon", "Europe/Madrid", "Europe/Paris", "Europe/Berlin", "Europe/Rome", "Europe/Warsaw", "Europe/Athens",
	"Europe/Istanbul", "Africa/Lagos", "Africa/Johannesburg", "Asia/Dubai", "Asia/Kolkata", "Asia/Singapore", "Asia/Manila",
	"Asia/Tokyo", "Australia/Sydney", "Pacific/Auckland", "UTC",
}

type profilePage struct {
	Name, Email string
	// Zone is the zone in use; From says where it comes from: "profile"
	// (chosen), "browser" or "default" (UTC).
	Zone, From string
	// Browser is the browser's own zone, when the page knows it.
	Browser string
	Zones   []string
	Next    string
	Notice  string
	Errors  map[string]string
	// Apps are the apps the person allowed to use their account (SMART).
	Apps []app.AppGrant
	// Texts: the clinic sends texts, and the person may say yes to them;
	// Consent is their yes (nil: none), Phone what they typed.
	Texts   bool
	Consent *clinic.SMSConsent
	Phone   string
	// A patient's own record: the consents they signed and who opened
	// their record, latest first.
	Patient  bool
	Consents []*clinic.Consent
	Accesses []accessRow
}

// accessRow is one access to the patient's record as their profile shows
// it: when, who, and what (the audit's action).
type accessRow struct {
	At          int64
	Who, Action string
	You, System bool // the patient themself; a credential without a person
}

func (s *Server) profile(w http.ResponseWriter, r *http.Request) error {
	return s.showProfile(w, r, http.StatusOK, "", nil)
}

func (s *Server) showProfile(w http.ResponseWriter, r *http.Request, status int, typed string, bad map[string]string) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	zone, from := viewerZone(r, p.User)
	page := profilePage{Name: p.User.FullName(), Email: p.User.Email, Zone: zone.String(), From: from, Zones: commonZones, Errors: bad}
	if c, err := r.Cookie(zoneCookie); err == nil {
		if z, err := time.LoadLocation(c.Value); err == nil && c.Value != "Local" {
			page.Browser = z.String()
		}
	}
	if typed != "" {
		page.Zone = typed
	}
	if next := r.FormValue("next"); app.LocalPath(next) {
		page.Next = next
	}
	switch r.URL.Query().Get("done") {
	case "saved":
		page.Notice = "Saved."
	case "app":
		page.Notice = tr("The app no longer has your permission.")
	case "texts":
		page.Notice = tr("Your choice of texts is saved.")
	}
	if page.Apps, err = s.app.MyApps(r.Context(), p); err != nil {
		return err
	}
	if p.User.Type != clinic.UserAdmin && s.app.SendsTexts(r.Context(), p.Account.ID) {
		page.Texts = true
		if page.Consent, err = s.app.MySMSConsent(r.Context(), p); err != nil {
			return err
		}
		page.Phone = cmp.Or(r.PostFormValue("phone"), p.User.Phone)
	}
	if app.IsPatient(p) {
		if err := s.patientRecord(r, p, &page); err != nil {
			return err
		}
	}
	s.render(w, r, status, "profile", page)
	return nil
}

// disconnectApp is POST /profile/apps/{client}/disconnect: the person
// takes their permission back from an app.
func (s *Server) disconnectApp(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if err := s.app.DisconnectApp(r.Context(), p, r.PathValue("client")); err != nil {
		return err
	}
	http.Redirect(w, r, "/profile?done=app#apps", http.StatusSeeOther)
	return nil
}

// saveProfile is POST /profile: the zone, checked by app.UpdateMe (an
// IANA name); a refused one is shown back beside its field.
func (s *Server) saveProfile(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	f := postFields(r)
	zone := f.str("timezone")
	if _, err := s.app.UpdateMe(r.Context(), p, app.ProfileUpdate{Timezone: &zone}); err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid); ok {
			return s.showProfile(w, r, status, zone, map[string]string{"timezone": msg})
		}
		return err
	}
	next := f.str("next")
	if !app.LocalPath(next) || next == "" {
		next = "/profile?done=saved"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// saveTexts is POST /profile/texts: the person's yes to texts at the
// number they give (texts=1), or its withdrawal; a refused number is
// shown back beside its field.
func (s *Server) saveTexts(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	f := postFields(r)
	yes := f.str("texts") == "1"
	if _, err := s.app.SetSMSConsent(r.Context(), p, f.str("phone"), &yes); err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid); ok {
			return s.showProfile(w, r, status, "", map[string]string{"phone": msg})
		}
		return err
	}
	http.Redirect(w, r, "/profile?done=texts#texts", http.StatusSeeOther)
	return nil
}

// patientRecord puts a patient's signed consents and the latest accesses
// to their record on their profile (app.Consents, app.AccessLog: each
// read is audited as the API's).
func (s *Server) patientRecord(r *http.Request, p *clinic.Principal, page *profilePage) error {
	var err error
	page.Patient = true
	if page.Consents, err = s.app.Consents(r.Context(), p, p.UserID()); err != nil {
		return err
	}
	log, _, err := s.app.AccessLog(r.Context(), p, p.UserID(), app.AccessLogQuery{Limit: 20})
	if err != nil {
		return err
	}
	for _, e := range log.Items {
		page.Accesses = append(page.Accesses, accessRow{At: e.Created, Who: e.ActorName, Action: e.Action,
			You: e.ActorUserID == p.UserID(), System: e.ActorName == ""})
	}
	return nil
}

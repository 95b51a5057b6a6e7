package web

import (
	"context"
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The admin page's text-message section: the clinic's sender, its quiet
// hours, the two addresses to give Twilio, and the latest deliveries.

// adminTexts loads the sender and the newest 20 entries of the log.
func (s *Server) adminTexts(ctx context.Context, p *clinic.Principal, _ adminQuery, page *adminPage) error {
	set, err := s.app.SMSSettings(ctx, p)
	if err != nil {
		return err
	}
	log, err := s.app.SMSLog(ctx, p, 0, 20)
	if err != nil {
		return err
	}
	page.SMS, page.SMSLog = set, log.Items
	return nil
}

// adminTextsSave is POST /admin/texts: the sender, as POST /sms/settings
// takes it.
func (s *Server) adminTextsSave(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	f := postFields(r)
	in := app.SMSSettingsInput{Provider: f.str("provider"), AccountSID: f.str("account_sid"), AuthToken: f.str("auth_token"), From: f.str("from"),
		QuietStart: f.str("quiet_start"), QuietEnd: f.str("quiet_end"), Timezone: f.str("timezone")}
	if _, err := s.app.SetSMSSettings(r.Context(), p, in); err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=texts#texts", http.StatusSeeOther)
	return nil
}

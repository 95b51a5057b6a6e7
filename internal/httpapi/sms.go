package httpapi

import (
	"encoding/xml"
	"net/http"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// Text messages (app/sms.go): the clinic's sender and delivery log
// (admin), a person's consent to texts, a visit's link by text, and the
// two addresses Twilio calls.

type smsSettingsOut struct {
	Provider   string `json:"provider"`
	AccountSID string `json:"account_sid"`
	From       string `json:"from"`
	TokenSet   bool   `json:"auth_token_set"`
	QuietStart string `json:"quiet_start"`
	QuietEnd   string `json:"quiet_end"`
	Timezone   string `json:"timezone"`
	InboundURL string `json:"inbound_url"`
	StatusURL  string `json:"status_url"`
}

func toSMSSettings(v *app.SMSSettingsView) smsSettingsOut {
	return smsSettingsOut{Provider: v.Provider, AccountSID: v.AccountSID, From: v.From, TokenSet: v.TokenSet, QuietStart: v.QuietStart,
		QuietEnd: v.QuietEnd, Timezone: v.Timezone, InboundURL: v.InboundURL, StatusURL: v.StatusURL}
}

func (s *Server) getSMSSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := s.app.SMSSettings(r.Context(), c.p)
	if err != nil {
		return err
	}
	return ok(w, toSMSSettings(v))
}

// setSMSSettings is POST /sms/settings: provider (off, sandbox, twilio),
// account_sid, auth_token, from, quiet_start, quiet_end, timezone.
func (s *Server) setSMSSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	v, err := s.app.SetSMSSettings(r.Context(), c.p, app.SMSSettingsInput{Provider: q.Str("provider"), AccountSID: q.Str("account_sid"),
		AuthToken: q.Str("auth_token"), From: q.Str("from"), QuietStart: q.Str("quiet_start"), QuietEnd: q.Str("quiet_end"), Timezone: q.Str("timezone")})
	if err != nil {
		return err
	}
	return ok(w, toSMSSettings(v))
}

type smsLogOut struct {
	ID        int64  `json:"id,string"`
	UserID    int64  `json:"user_id,string"`
	Phone     string `json:"phone"`
	Kind      string `json:"kind"`
	SID       string `json:"sid"`
	Status    string `json:"status"`
	ErrorCode int    `json:"error_code"`
	Error     string `json:"error"`
	Created   int64  `json:"created"`
	Updated   int64  `json:"updated"`
}

func (s *Server) listSMSLog(w http.ResponseWriter, r *http.Request, c *call) error {
	before, limit, err := c.params.Keyset("before")
	if err != nil {
		return err
	}
	pg, err := s.app.SMSLog(r.Context(), c.p, before, limit)
	if err != nil {
		return err
	}
	nextLink(w, r, "before", pg.Next)
	out := make([]smsLogOut, len(pg.Items))
	for i, e := range pg.Items {
		out[i] = smsLogOut{ID: e.ID, UserID: e.UserID, Phone: e.Phone, Kind: e.Kind, SID: e.SID, Status: e.Status, ErrorCode: e.ErrorCode,
			Error: e.Error, Created: e.Created, Updated: e.Updated}
	}
	return ok(w, out)
}

type smsConsentOut struct {
	Consented bool   `json:"consented"`
	Phone     string `json:"phone"`
	At        int64  `json:"consented_at"`
	Stopped   bool   `json:"stopped"`
}

func toSMSConsent(c *clinic.SMSConsent) smsConsentOut {
	if c == nil {
		return smsConsentOut{}
	}
	return smsConsentOut{Consented: true, Phone: c.Phone, At: c.Consented, Stopped: c.Stopped}
}

func (s *Server) getSMSConsent(w http.ResponseWriter, r *http.Request, c *call) error {
	cs, err := s.app.MySMSConsent(r.Context(), c.p)
	if err != nil {
		return err
	}
	return ok(w, toSMSConsent(cs))
}

// setSMSConsent is POST /sms/consent: phone, consent (1: yes, 0: withdraw).
func (s *Server) setSMSConsent(w http.ResponseWriter, r *http.Request, c *call) error {
	yes, err := c.params.Bool("consent")
	if err != nil {
		return err
	}
	cs, err := s.app.SetSMSConsent(r.Context(), c.p, c.params.Str("phone"), yes)
	if err != nil {
		return err
	}
	return ok(w, toSMSConsent(cs))
}

// textVisitLink is POST /visits/{id}/text_link.
func (s *Server) textVisitLink(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	if err := s.app.TextVisitLink(r.Context(), c.p, id); err != nil {
		return err
	}
	return ok(w, true)
}

// twilioForm reads a Twilio webhook's form (its body, form-encoded). A
// body that is not one reads as an empty form, which no signature
// matches: the signature is checked before anything else is said.
func twilioForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return clinic.Errorf(clinic.EInvalid, "The webhook's form could not be read.")
	}
	return nil
}

// twilioInbound is Twilio's incoming-message webhook of a clinic's
// number: it answers TwiML, the reply to text back (if any).
func (s *Server) twilioInbound(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := twilioForm(r); err != nil {
		return err
	}
	reply, err := s.app.SMSInbound(r.Context(), r.PathValue("clinic"), r.PostForm, r.Header.Get("X-Twilio-Signature"))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(xml.Header + "<Response>")
	if reply != "" {
		b.WriteString("<Message>")
		_ = xml.EscapeText(&b, []byte(reply))
		b.WriteString("</Message>")
	}
	b.WriteString("</Response>")
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, err = w.Write([]byte(b.String()))
	return err
}

// twilioStatus is Twilio's delivery report of a text the clinic sent.
func (s *Server) twilioStatus(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := twilioForm(r); err != nil {
		return err
	}
	if err := s.app.SMSStatus(r.Context(), r.PathValue("clinic"), r.PostForm, r.Header.Get("X-Twilio-Signature")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

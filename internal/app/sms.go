package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
	"teleclinic/internal/sms"
	"teleclinic/internal/store"
)

// Text messages. A clinic admin sets the clinic's sender in /admin (Twilio
// with the clinic's own number and credentials, or the sandbox); a person
// says yes to texts, with their number, before the first one (the
// profile, or a guest's booking), and the time of that yes is kept. A text
// is written to the outbox in the transaction of the change it tells, and
// sent after it commits, to the number of the person's consent, unless
// they withdrew it or the number texted STOP since. STOP, START and HELP
// texted to the clinic's number are obeyed at once (the inbound webhook,
// its Twilio signature checked), and Twilio's delivery reports fill the
// log the admin reads. Texts that tell of a change (bookings, moves,
// cancellations, reminders) wait for the end of the clinic's quiet hours;
// the ones a person is waiting for at that moment (their provider is
// ready, the link their provider just sent, the link they asked for
// again) go at once.

// TopicSMS is the outbox topic of outgoing texts.
const TopicSMS = "sms"

// The kinds of text, as the delivery log names them.
const (
	TextBooked    = "booked"
	TextMoved     = "moved"
	TextCancelled = "cancelled"
	TextMissed    = "missed"
	TextReminder  = "reminder"
	TextReady     = "provider_ready"
	TextVisitLink = "visit_link"
	TextLinkAgain = "link_again"
	// TextInterpreter is a call's link sent to one of the clinic's
	// interpreters (not a user: their number is on the interpreter).
	TextInterpreter = "interpreter"
)

// urgentText are the kinds quiet hours do not hold.
func urgentText(kind string) bool {
	return kind == TextReady || kind == TextVisitLink || kind == TextLinkAgain || kind == TextInterpreter
}

const (
	smsLease       = 60
	smsMaxAttempts = 6
)

// smsItem is a text's outbox payload (sealed: the body carries a link
// that signs its person in).
type smsItem struct {
	Log  int64  `json:"log"`
	User int64  `json:"user"`
	Body string `json:"body"`
	// To is the number of a text to someone who is not a user (User 0):
	// an interpreter the clinic keeps, with their number.
	To string `json:"to,omitempty"`
}

// SMSSettingsInput is what the admin sets. An empty AuthToken keeps the
// one stored; QuietStart and QuietEnd are "HH:MM" ("" both: none).
type SMSSettingsInput struct {
	Provider, AccountSID, AuthToken, From string
	QuietStart, QuietEnd, Timezone        string
}

// SMSSettingsView is the sender as the admin reads it: the token never
// leaves, only whether one is stored; the two addresses to give Twilio.
type SMSSettingsView struct {
	Provider, AccountSID, From     string
	TokenSet                       bool
	QuietStart, QuietEnd, Timezone string
	InboundURL, StatusURL          string
}

// SMSSettings is the clinic's sender (admin); "off" when none was set.
func (a *App) SMSSettings(ctx context.Context, p *clinic.Principal) (*SMSSettingsView, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	s, err := a.store.Read().SMSSettings(ctx, p.Account.ID)
	if errors.Is(err, store.ErrNotFound) {
		s, err = &clinic.SMSSettings{Provider: clinic.SMSOff, Timezone: "UTC"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sms settings: %w", err)
	}
	return a.smsView(p.Account, s), nil
}

func (a *App) smsView(acct *clinic.Account, s *clinic.SMSSettings) *SMSSettingsView {
	v := &SMSSettingsView{Provider: s.Provider, AccountSID: s.AccountSID, From: s.From, TokenSet: s.SealedToken != "", Timezone: s.Timezone,
		InboundURL: a.smsHook(acct, "inbound"), StatusURL: a.smsHook(acct, "status")}
	if s.QuietStart != s.QuietEnd {
		v.QuietStart, v.QuietEnd = hhmm(s.QuietStart), hhmm(s.QuietEnd)
	}
	return v
}

// smsHook is the address Twilio calls for a clinic: its incoming texts
// (inbound) and its delivery reports (status). The signature Twilio sends
// is of this address, so it is the server's public one.
func (a *App) smsHook(acct *clinic.Account, what string) string {
	return strings.TrimRight(a.cfg.BaseURL, "/") + "/sms/twilio/" + url.PathEscape(acct.Code) + "/" + what
}

func hhmm(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

func parseHHMM(name, s string) (int, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		return 0, clinic.Errorf(clinic.EInvalid, "%s must be a time of day as HH:MM (24-hour), like 21:00.", name)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// SetSMSSettings sets the clinic's sender (admin). Twilio needs its
// account SID, auth token (kept sealed; empty keeps the stored one) and
// the clinic's number; the sandbox sends from sms.SandboxFrom, as
// Twilio's test credentials do.
func (a *App) SetSMSSettings(ctx context.Context, p *clinic.Principal, in SMSSettingsInput) (*SMSSettingsView, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := CheckFields(Line("account_sid", in.AccountSID, 64), Line("auth_token", in.AuthToken, 128), Line("from", in.From, 32), Line("timezone", in.Timezone, 64)); err != nil {
		return nil, err
	}
	old, err := a.store.Read().SMSSettings(ctx, p.Account.ID)
	if errors.Is(err, store.ErrNotFound) {
		old, err = &clinic.SMSSettings{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sms settings: %w", err)
	}
	s := &clinic.SMSSettings{AccountID: p.Account.ID, Provider: strings.TrimSpace(in.Provider), Timezone: cmp.Or(strings.TrimSpace(in.Timezone), "UTC"), Modified: a.Unix()}
	if _, err := time.LoadLocation(s.Timezone); err != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "timezone must be an IANA zone, like America/New_York.")
	}
	if (in.QuietStart == "") != (in.QuietEnd == "") {
		return nil, clinic.Errorf(clinic.EInvalid, "Give both quiet_start and quiet_end, or neither.")
	}
	if in.QuietStart != "" {
		if s.QuietStart, err = parseHHMM("quiet_start", in.QuietStart); err != nil {
			return nil, err
		}
		if s.QuietEnd, err = parseHHMM("quiet_end", in.QuietEnd); err != nil {
			return nil, err
		}
	}
	switch s.Provider {
	case clinic.SMSOff:
	case clinic.SMSSandbox:
		s.From = sms.SandboxFrom
	case clinic.SMSTwilio:
		s.AccountSID = strings.TrimSpace(in.AccountSID)
		if len(s.AccountSID) != 34 || !strings.HasPrefix(s.AccountSID, "AC") {
			return nil, clinic.Errorf(clinic.EInvalid, "account_sid must be the Twilio account SID: AC and 32 characters, from the Twilio console.")
		}
		from, ok := sms.Normalize(in.From)
		if !ok {
			return nil, clinic.Errorf(clinic.EInvalid, "from must be the clinic's Twilio number, like +14155550100.")
		}
		s.From = from
		switch {
		case in.AuthToken != "":
			if s.SealedToken, err = a.Seal([]byte(strings.TrimSpace(in.AuthToken))); err != nil {
				return nil, err
			}
		case old.Provider == clinic.SMSTwilio && old.AccountSID == s.AccountSID:
			s.SealedToken = old.SealedToken
		default:
			return nil, clinic.Errorf(clinic.EInvalid, "auth_token (the account's auth token, from the Twilio console) is required.")
		}
	default:
		return nil, clinic.Errorf(clinic.EInvalid, "provider must be off, sandbox or twilio.")
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.PutSMSSettings(ctx, s); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "sms.settings", "account", i64s(p.Account.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("sms settings", err, "")
	}
	return a.smsView(p.Account, s), nil
}

// SendsTexts says whether clinic accountID sends texts: the forms that
// ask a person's yes to them show only then. It is no secret (the
// clinic's public forms show it).
func (a *App) SendsTexts(ctx context.Context, accountID int64) bool {
	s, err := a.store.Read().SMSSettings(ctx, accountID)
	return err == nil && s.Provider != clinic.SMSOff
}

// requireTextable admits a signed-in person: the admin's user is the
// clinic, with no phone to text.
func requireTextable(p *clinic.Principal) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	if p.User.Type == clinic.UserAdmin {
		return clinic.Errorf(clinic.EForbidden, "Only a person says yes to texts, for themselves.")
	}
	return nil
}

// textableNumber is the last four digits of the number a text to user
// would go to now: "" when the clinic sends no texts, the person said no
// yes or their number texted STOP.
func (a *App) textableNumber(ctx context.Context, accountID, userID int64) (string, error) {
	if !a.SendsTexts(ctx, accountID) {
		return "", nil
	}
	rd := a.store.Read()
	c, err := rd.SMSConsent(ctx, accountID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if out, err := rd.SMSOptedOut(ctx, accountID, c.Phone); err != nil || out {
		return "", err
	}
	return c.Phone[len(c.Phone)-4:], nil
}

// MySMSConsent is the signed-in person's consent to texts (nil: none).
func (a *App) MySMSConsent(ctx context.Context, p *clinic.Principal) (*clinic.SMSConsent, error) {
	if err := requireTextable(p); err != nil {
		return nil, err
	}
	rd := a.store.Read()
	c, err := rd.SMSConsent(ctx, p.Account.ID, p.UserID())
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err == nil {
		c.Stopped, err = rd.SMSOptedOut(ctx, p.Account.ID, c.Phone)
	}
	if err != nil {
		return nil, fmt.Errorf("sms consent: %w", err)
	}
	return c, nil
}

// SetSMSConsent records the signed-in person's yes to texts at phone,
// with its time (*yes), or withdraws it (!*yes; nil is refused). A yes
// does not lift a STOP the number texted: the number is typed, not
// proven, so only START from the phone itself lifts it.
func (a *App) SetSMSConsent(ctx context.Context, p *clinic.Principal, phone string, consent *bool) (*clinic.SMSConsent, error) {
	if err := requireTextable(p); err != nil {
		return nil, err
	}
	if consent == nil {
		return nil, clinic.Errorf(clinic.EInvalid, "consent is required: 1 to say yes to texts at phone, 0 to withdraw.")
	}
	yes := *consent
	var c *clinic.SMSConsent
	err := a.store.Tx(ctx, func(q *store.Q) error {
		if !yes {
			if _, err := q.DeleteSMSConsent(ctx, p.Account.ID, p.UserID()); err != nil {
				return err
			}
			return a.AuditIn(ctx, q, p, "sms.consent.withdraw", "user", i64s(p.UserID()), OutcomeOK)
		}
		e164, ok := sms.Normalize(phone)
		if !ok {
			return clinic.Errorf(clinic.EInvalid, "phone must be a mobile number, like +1 415 555 0134.")
		}
		c = &clinic.SMSConsent{AccountID: p.Account.ID, UserID: p.UserID(), Phone: e164, Consented: a.Unix()}
		if err := q.PutSMSConsent(ctx, c); err != nil {
			return err
		}
		var err error
		if c.Stopped, err = q.SMSOptedOut(ctx, p.Account.ID, e164); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "sms.consent", "user", i64s(p.UserID()), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("sms consent", err, "")
	}
	return c, nil
}

// SMSLog is a page of the clinic's delivery log, newest first, before id
// before (0: from the newest); limit defaults to 50, at most
// MaxDeliveryList (admin).
func (a *App) SMSLog(ctx context.Context, p *clinic.Principal, before int64, limit int) (clinic.Page[*clinic.SMSLogEntry], error) {
	if err := RequireAdmin(p); err != nil {
		return clinic.Page[*clinic.SMSLogEntry]{}, err
	}
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxDeliveryList)
	rows, err := a.store.Read().SMSLog(ctx, p.Account.ID, before, limit+1)
	if err != nil {
		return clinic.Page[*clinic.SMSLogEntry]{}, fmt.Errorf("sms log: %w", err)
	}
	return clinic.PageOf(rows, limit, func(e *clinic.SMSLogEntry) int64 { return e.ID }), nil
}

// text writes a text of kind to u in transaction q, when the clinic sends
// texts and u said yes to them; otherwise it does nothing. The body is
// made in u's language by body (which makes the text's link, when it has
// one: it is only made for a text that goes).
func (a *App) text(ctx context.Context, q *store.Q, accountID int64, u *clinic.User, kind string, body func(loc *locale.Locale) (string, error)) error {
	s, err := textSettings(ctx, q, accountID)
	if s == nil || err != nil {
		return err
	}
	c, err := q.SMSConsent(ctx, accountID, u.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return a.queueText(ctx, q, s, smsItem{User: u.ID}, c.Phone, kind, a.localeOf(u), body)
}

// textTo writes a text of kind to phone (E.164), someone the clinic keeps
// a number of who is not a user, in language loc: as text does, when the
// clinic sends texts. A STOP from the number still holds it back.
func (a *App) textTo(ctx context.Context, q *store.Q, accountID int64, phone, kind string, loc *locale.Locale, body func(loc *locale.Locale) (string, error)) error {
	s, err := textSettings(ctx, q, accountID)
	if s == nil || err != nil {
		return err
	}
	return a.queueText(ctx, q, s, smsItem{To: phone}, phone, kind, loc, body)
}

// textSettings are the clinic's text settings, nil when it sends none.
func textSettings(ctx context.Context, q *store.Q, accountID int64) (*clinic.SMSSettings, error) {
	s, err := q.SMSSettings(ctx, accountID)
	if errors.Is(err, store.ErrNotFound) || err == nil && s.Provider == clinic.SMSOff {
		return nil, nil
	}
	return s, err
}

// queueText logs text m (to phone) as pending and puts it in the outbox,
// due at once or, unless urgent, after the clinic's quiet hours.
func (a *App) queueText(ctx context.Context, q *store.Q, s *clinic.SMSSettings, m smsItem, phone, kind string, loc *locale.Locale, body func(loc *locale.Locale) (string, error)) error {
	now := a.Unix()
	e := &clinic.SMSLogEntry{AccountID: s.AccountID, UserID: m.User, Phone: sms.Masked(phone), Kind: kind, Status: "pending", Created: now, Updated: now}
	if err := q.AddSMSLog(ctx, e); err != nil {
		return err
	}
	b, err := body(loc)
	if err != nil {
		return err
	}
	m.Log, m.Body = e.ID, b
	raw, _ := json.Marshal(m)
	sealed, err := a.Seal(raw)
	if err != nil {
		return err
	}
	due := now
	if !urgentText(kind) {
		due = quietEnd(s, a.now())
	}
	if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: s.AccountID, Topic: TopicSMS, Payload: sealed, Created: now, Due: due}); err != nil {
		return err
	}
	q.AfterCommit(func() { kick(a.smsKick) })
	return nil
}

// quietEnd is when a text due at now may go: now, or the end of the
// clinic's quiet hours when now is inside them (hours that pass midnight,
// 21:00–08:00, included).
func quietEnd(s *clinic.SMSSettings, now time.Time) int64 {
	if s.QuietStart == s.QuietEnd {
		return now.Unix()
	}
	zone, err := time.LoadLocation(s.Timezone)
	if err != nil {
		zone = time.UTC
	}
	t := now.In(zone)
	m := t.Hour()*60 + t.Minute()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, zone)
	at := func(d, minute int) int64 { return day.AddDate(0, 0, d).Add(time.Duration(minute) * time.Minute).Unix() }
	switch {
	case s.QuietStart < s.QuietEnd && m >= s.QuietStart && m < s.QuietEnd:
		return at(0, s.QuietEnd)
	case s.QuietStart > s.QuietEnd && m >= s.QuietStart:
		return at(1, s.QuietEnd)
	case s.QuietStart > s.QuietEnd && m < s.QuietEnd:
		return at(0, s.QuietEnd)
	}
	return now.Unix()
}

// DeliverTexts makes one delivery pass of the texts that are due and
// returns how many it claimed.
func (a *App) DeliverTexts(ctx context.Context) int {
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicSMS}, a.Unix(), smsLease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("sms: claim", "err", err)
		}
		return 0
	}
	for _, it := range items {
		a.settle(ctx, TopicSMS, it, 0, a.sendText(ctx, it), smsMaxAttempts, int64(30)<<min(it.Attempts, 6))
	}
	return len(items)
}

// sendText sends one text, recording its fate in the delivery log; an
// errSkip ends a text that is not to go (or was refused for good).
func (a *App) sendText(ctx context.Context, it store.OutboxItem) error {
	var m smsItem
	raw, err := a.Unseal(it.Payload)
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil {
		return errSkip("unreadable: server key mismatch")
	}
	now := a.Unix()
	entry := &clinic.SMSLogEntry{ID: m.Log, AccountID: it.AccountID, Updated: now}
	w := a.store.Write()
	skip := func(why string) error {
		entry.Status, entry.Error = "skipped", why
		if err := w.UpdateSMSLog(ctx, entry); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return errSkip(why)
	}
	s, err := w.SMSSettings(ctx, it.AccountID)
	if errors.Is(err, store.ErrNotFound) || err == nil && s.Provider == clinic.SMSOff {
		return skip("the clinic turned texts off")
	}
	if err != nil {
		return err
	}
	c := &clinic.SMSConsent{Phone: m.To}
	if m.User != 0 {
		c, err = w.SMSConsent(ctx, it.AccountID, m.User)
		if errors.Is(err, store.ErrNotFound) {
			return skip("the person withdrew their consent")
		}
		if err != nil {
			return err
		}
	}
	entry.Phone = sms.Masked(c.Phone)
	if out, err := w.SMSOptedOut(ctx, it.AccountID, c.Phone); err != nil {
		return err
	} else if out {
		return skip("the number texted STOP")
	}
	acct, err := w.AccountByID(ctx, it.AccountID)
	if err != nil {
		return err
	}
	sender, callback, err := a.smsSender(acct, s)
	if err != nil {
		return skip(err.Error())
	}
	sendCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sent, err := sender.Send(sendCtx, sms.Message{To: c.Phone, From: s.From, Body: m.Body, StatusCallback: callback})
	cancel()
	var refused *sms.Error
	switch {
	case errors.As(err, &refused):
		entry.Status, entry.ErrorCode, entry.Error = "failed", refused.Code, refused.Message
		if !refused.Permanent() {
			entry.Status = "pending"
		}
		if refused.Code == 21610 {
			// Twilio holds the number's STOP (sent before this clinic
			// kept them): keep it here too.
			if err := w.SetSMSOptOut(ctx, it.AccountID, c.Phone, true, now); err != nil {
				return err
			}
		}
	case err != nil:
		entry.Status, entry.Error = "pending", errText(err)
	default:
		entry.SID, entry.Status = sent.SID, cmp.Or(sent.Status, "queued")
	}
	if uerr := w.UpdateSMSLog(ctx, entry); uerr != nil && !errors.Is(uerr, store.ErrNotFound) {
		return uerr
	}
	if refused != nil && refused.Permanent() {
		return errSkip(fmt.Sprintf("refused (%d)", refused.Code))
	}
	return err
}

// smsSender is the clinic's sender and the address of its delivery
// reports (none for the sandbox, as none come from Twilio's test
// credentials).
func (a *App) smsSender(acct *clinic.Account, s *clinic.SMSSettings) (sms.Sender, string, error) {
	if s.Provider == clinic.SMSSandbox {
		return sms.Sandbox{}, "", nil
	}
	token, err := a.Unseal(s.SealedToken)
	if err != nil {
		return nil, "", errors.New("the Twilio auth token cannot be read: set it again in /admin")
	}
	return &sms.Twilio{BaseURL: cmp.Or(a.cfg.TwilioAPIURL, sms.TwilioAPI), AccountSID: s.AccountSID, AuthToken: string(token), HTTP: a.smsHTTP},
		a.smsHook(acct, "status"), nil
}

// twilioClinic is the clinic a Twilio webhook is addressed to, with the
// form's signature checked against that clinic's auth token.
func (a *App) twilioClinic(ctx context.Context, code, what string, form url.Values, signature string) (*clinic.Account, *clinic.SMSSettings, error) {
	rd := a.store.Read()
	acct, err := rd.AccountByCode(ctx, code)
	var s *clinic.SMSSettings
	if err == nil {
		s, err = rd.SMSSettings(ctx, acct.ID)
	}
	if errors.Is(err, store.ErrNotFound) || err == nil && s.Provider != clinic.SMSTwilio {
		return nil, nil, clinic.Errorf(clinic.ENotFound, "This clinic takes no texts through Twilio.")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sms: %w", err)
	}
	token, err := a.Unseal(s.SealedToken)
	if err != nil || !sms.Verify(string(token), a.smsHook(acct, what), form, signature) {
		return nil, nil, clinic.Errorf(clinic.EForbidden, "X-Twilio-Signature does not match this request.")
	}
	return acct, s, nil
}

// SMSInbound obeys a text sent to a clinic's number (Twilio's incoming
// message webhook): STOP and its synonyms stop every text to the number
// at once, START lifts that, HELP says who is texting and how to stop.
// It answers the reply to text back ("": none), in the language of the
// person whose number it is.
func (a *App) SMSInbound(ctx context.Context, code string, form url.Values, signature string) (string, error) {
	acct, _, err := a.twilioClinic(ctx, code, "inbound", form, signature)
	if err != nil {
		return "", err
	}
	from, ok := sms.Normalize(form.Get("From"))
	if !ok {
		return "", nil
	}
	loc := a.cfg.Locales.Default()
	if u, err := a.store.Read().UserBySMSPhone(ctx, acct.ID, from); err == nil {
		loc = a.localeOf(u)
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("sms: %w", err)
	}
	sys := &clinic.Principal{Account: acct, Kind: clinic.CredSystem, RequestID: "twilio"}
	kw := sms.KeywordOf(form.Get("Body"))
	if kw == sms.Stop || kw == sms.Start {
		err := a.store.Tx(ctx, func(q *store.Q) error {
			if err := q.SetSMSOptOut(ctx, acct.ID, from, kw == sms.Stop, a.Unix()); err != nil {
				return err
			}
			action := map[sms.Keyword]string{sms.Stop: "sms.stop", sms.Start: "sms.start"}[kw]
			return a.AuditIn(ctx, q, sys, action, "phone", sms.Masked(from), OutcomeOK)
		})
		if err != nil {
			return "", StoreErr("sms", err, "")
		}
	}
	switch kw {
	case sms.Stop:
		return loc.T("%s: you will get no more texts from us. Reply START to get them again.", acct.Name), nil
	case sms.Start:
		return loc.T("%s: texts about your visits are on again. Reply STOP to stop them, HELP for help.", acct.Name), nil
	case sms.Help:
		return loc.T("%s: texts about your visits (links, bookings, reminders). Reply STOP to stop them. For anything else, contact the clinic; this number reads no messages.", acct.Name), nil
	}
	return loc.T("%s: this number reads no messages. To reach the clinic, use your visit's page. Reply STOP to stop texts.", acct.Name), nil
}

// SMSStatus records a delivery report (Twilio's status callback) in the
// clinic's log.
func (a *App) SMSStatus(ctx context.Context, code string, form url.Values, signature string) error {
	acct, _, err := a.twilioClinic(ctx, code, "status", form, signature)
	if err != nil {
		return err
	}
	sid, status := form.Get("MessageSid"), form.Get("MessageStatus")
	if sid == "" || status == "" {
		return clinic.Errorf(clinic.EInvalid, "MessageSid and MessageStatus are required.")
	}
	errCode, _ := strconv.Atoi(form.Get("ErrorCode"))
	if _, err := a.store.Write().SMSStatusBySID(ctx, acct.ID, sid, status, errCode, a.Unix()); err != nil {
		return fmt.Errorf("sms status: %w", err)
	}
	return nil
}

// TextVisitLink texts a visit's patient their link to it: the visit's
// provider or the admin asks, the patient must have said yes to texts.
func (a *App) TextVisitLink(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return err
	}
	if !p.IsAdmin() && !(IsProvider(p) && (v.ProviderID == p.UserID() || v.ProviderID == 0)) {
		return clinic.Errorf(clinic.EForbidden, "Only a provider of the visit or the clinic admin texts its link.")
	}
	if v.Status != clinic.VisitPending && v.Status != clinic.VisitConfirmed && v.Status != clinic.VisitInProgress {
		return clinic.Errorf(clinic.EConflict, "Visit %d is %s: its link opens nothing.", v.ID, StatusName(v.Status))
	}
	rd := a.store.Read()
	if c, err := rd.SMSConsent(ctx, p.Account.ID, v.MemberID); errors.Is(err, store.ErrNotFound) {
		return clinic.Errorf(clinic.EConflict, "The patient has not said yes to texts; send the link by email.")
	} else if err != nil {
		return fmt.Errorf("sms: %w", err)
	} else if out, err := rd.SMSOptedOut(ctx, p.Account.ID, c.Phone); err != nil {
		return fmt.Errorf("sms: %w", err)
	} else if out {
		return clinic.Errorf(clinic.EConflict, "The patient's number texted STOP; send the link by email.")
	}
	if s, err := rd.SMSSettings(ctx, p.Account.ID); errors.Is(err, store.ErrNotFound) || err == nil && s.Provider == clinic.SMSOff {
		return clinic.Errorf(clinic.EConflict, "The clinic sends no texts: the admin sets a sender in /admin.")
	}
	return StoreErr("sms", a.store.Tx(ctx, func(q *store.Q) error {
		u, err := q.UserByID(ctx, v.AccountID, v.MemberID)
		if err != nil {
			return err
		}
		if err := a.text(ctx, q, v.AccountID, u, TextVisitLink, func(loc *locale.Locale) (string, error) {
			link, err := a.visitLink(ctx, q, v, u)
			return loc.T("%s: your link to your video visit (it works once): %s", p.Account.Name, link), err
		}); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "visit.link.text", "visit", i64s(v.ID), OutcomeOK)
	}), "")
}

// textReady texts visit v's patient that their provider (p) is ready,
// with their link into the call, when they said yes to texts.
func (a *App) textReady(ctx context.Context, q *store.Q, p *clinic.Principal, v *clinic.Visit) error {
	u, err := q.UserByID(ctx, v.AccountID, v.MemberID)
	if err != nil {
		return err
	}
	return a.text(ctx, q, v.AccountID, u, TextReady, func(loc *locale.Locale) (string, error) {
		link, err := a.visitLink(ctx, q, v, u)
		return loc.T("%s: your provider is ready for your video visit. Join now: %s", p.Account.Name, link), err
	})
}

// newSMSHTTP is the client of Twilio's API.
func newSMSHTTP() *http.Client { return &http.Client{Timeout: 30 * time.Second} }

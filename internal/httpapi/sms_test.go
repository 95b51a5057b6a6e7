package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/sms"
	"teleclinic/internal/testenv"
)

const (
	twilioSID   = "AC0123456789abcdef0123456789abcdef"
	twilioToken = "twilio-auth-token-1"
)

// fakeTwilio is Twilio's Messages API as the adapter meets it: it checks
// the path and basic auth, keeps each text's form, and answers 201 with a
// message sid; a To of +15005550001 is refused with Twilio's 21211.
type fakeTwilio struct {
	mu   sync.Mutex
	sent []url.Values
	n    int
}

func (f *fakeTwilio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, okAuth := r.BasicAuth()
	if r.URL.Path != "/2010-04-01/Accounts/"+twilioSID+"/Messages.json" || !okAuth || user != twilioSID || pass != twilioToken {
		http.Error(w, `{"code": 20003, "message": "Authenticate", "status": 401}`, http.StatusUnauthorized)
		return
	}
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	if r.PostForm.Get("To") == "+15005550001" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"code": 21211, "message": "The 'To' number +15005550001 is not a valid phone number.", "status": 400}`)
		return
	}
	f.mu.Lock()
	f.sent = append(f.sent, r.PostForm)
	f.n++
	sid := fmt.Sprintf("SM%032d", f.n)
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"sid": %q, "status": "queued", "to": %q}`, sid, r.PostForm.Get("To"))
}

// take answers the texts sent since the last call.
func (f *fakeTwilio) take() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.sent
	f.sent = nil
	return out
}

type smsSettings struct {
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

type smsLogRow struct {
	ID        string `json:"id"`
	UserID    string `json:"user_id"`
	Phone     string `json:"phone"`
	Kind      string `json:"kind"`
	SID       string `json:"sid"`
	Status    string `json:"status"`
	ErrorCode int    `json:"error_code"`
	Error     string `json:"error"`
}

type smsConsent struct {
	Consented bool   `json:"consented"`
	Phone     string `json:"phone"`
	At        int64  `json:"consented_at"`
	Stopped   bool   `json:"stopped"`
}

// smsClinic is a clinic that texts through the fake Twilio.
func smsClinic(t *testing.T) (*testenv.Env, *clinicSetup, *fakeTwilio, smsSettings) {
	tw := &fakeTwilio{}
	srv := httptest.NewServer(tw)
	t.Cleanup(srv.Close)
	e := testenv.New(t, testenv.Options{Config: func(c *app.Config) { c.TwilioAPIURL = srv.URL }})
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	set := dataOf[smsSettings](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/settings", Header: adminHeaders(s.c),
		Form: q("provider", "twilio", "account_sid", twilioSID, "auth_token", twilioToken, "from", "(415) 555-0100")}))
	return e, s, tw, set
}

// twilioPost calls one of the clinic's Twilio addresses as Twilio does:
// form-encoded, signed with the auth token over the address it was given.
func twilioPost(e *testenv.Env, addr, token string, form url.Values) *testenv.Resp {
	u, _ := url.Parse(addr)
	h := map[string]string{"X-Twilio-Signature": sms.Signature(token, addr, form)}
	return e.Do(testenv.Req{Method: "POST", Path: u.Path, Header: h, Form: form})
}

// wantMsg checks an error's status, its body's code, and that its
// message names what was wrong.
func wantMsg(t *testing.T, res *testenv.Resp, status int, contains string) {
	t.Helper()
	wantErr(t, res, status, status)
	if m := messageOf(res); !strings.Contains(m, contains) {
		t.Fatalf("message %q, want it to name %q", m, contains)
	}
}

func smsLog(t *testing.T, e *testenv.Env, s *clinicSetup) []smsLogRow {
	t.Helper()
	return dataOf[[]smsLogRow](t, e.Do(testenv.Req{Path: "/api_v3/sms/log", Header: adminHeaders(s.c)}))
}

// TestSMS_Settings: the admin sets the clinic's sender; the auth token is
// stored sealed and never answered; bad settings are refused whole.
func TestSMS_Settings(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	get := func() smsSettings {
		return dataOf[smsSettings](t, e.Do(testenv.Req{Path: "/api_v3/sms/settings", Header: adminHeaders(c)}))
	}
	if s := get(); s.Provider != "off" || s.TokenSet || s.InboundURL != "http://teleclinic.test/sms/twilio/alpha/inbound" || s.StatusURL != "http://teleclinic.test/sms/twilio/alpha/status" {
		t.Fatalf("the default: %+v", s)
	}
	post := func(kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/settings", Header: adminHeaders(c), Form: q(kv...)})
	}
	for name, kv := range map[string][]string{
		"no token":     {"provider", "twilio", "account_sid", twilioSID, "from", "+14155550100"},
		"bad sid":      {"provider", "twilio", "account_sid", "AC12", "auth_token", "x", "from", "+14155550100"},
		"bad from":     {"provider", "twilio", "account_sid", twilioSID, "auth_token", "x", "from", "555-0100"},
		"provider":     {"provider", "carrier-pigeon"},
		"quiet half":   {"provider", "sandbox", "quiet_start", "21:00"},
		"quiet format": {"provider", "sandbox", "quiet_start", "9pm", "quiet_end", "08:00"},
		"zone":         {"provider", "sandbox", "timezone", "Mars/Olympus"},
	} {
		if res := post(kv...); res.Status != 400 {
			t.Errorf("%s: %d %s", name, res.Status, res.Raw)
		}
	}
	if count(t, e, "SELECT COUNT(*) FROM sms_settings") != 0 {
		t.Fatal("a refused setting was stored")
	}
	s := dataOf[smsSettings](t, post("provider", "twilio", "account_sid", twilioSID, "auth_token", twilioToken, "from", "+1 415 555 0100",
		"quiet_start", "21:00", "quiet_end", "08:00", "timezone", "America/New_York"))
	if s.Provider != "twilio" || !s.TokenSet || s.From != "+14155550100" || s.QuietStart != "21:00" || s.QuietEnd != "08:00" || s.Timezone != "America/New_York" {
		t.Fatalf("set: %+v", s)
	}
	res := e.Do(testenv.Req{Path: "/api_v3/sms/settings", Header: adminHeaders(c)})
	if strings.Contains(string(res.Raw), twilioToken) {
		t.Fatal("the auth token is answered")
	}
	var stored string
	if err := e.Store.DB().QueryRow("SELECT auth_token FROM sms_settings").Scan(&stored); err != nil || stored == "" || strings.Contains(stored, twilioToken) {
		t.Fatalf("the token at rest: %q %v", stored, err)
	}
	// Without a new token, the stored one stays.
	if s := dataOf[smsSettings](t, post("provider", "twilio", "account_sid", twilioSID, "from", "+14155550100")); !s.TokenSet || s.QuietStart != "" {
		t.Fatalf("kept: %+v", s)
	}
	// The sandbox sends from Twilio's test number.
	if s := dataOf[smsSettings](t, post("provider", "sandbox")); s.From != sms.SandboxFrom || s.TokenSet {
		t.Fatalf("sandbox: %+v", s)
	}
}

// TestSMS_TextsAPatient: a patient who said yes to texts gets the
// booking's, the move's, the link their provider sends and the "ready"
// text, each with its own one-time link, in their language; delivery
// reports fill the log; STOP stops them at once, START brings them back,
// HELP says how; one who never said yes gets none.
func TestSMS_TextsAPatient(t *testing.T) {
	t.Parallel()
	e, s, tw, set := smsClinic(t)
	ctx := context.Background()
	deliver := func() []url.Values {
		t.Helper()
		e.App.DeliverTexts(ctx)
		return tw.take()
	}
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30})
	at := func(i int) string { return fmt.Sprint(tue0900NY + int64(i)*1800) }
	book := func(who *session, i int) string {
		t.Helper()
		return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits", "slot_start", at(i), "slot_end", at(i+1), "room_code", "main", "type", "2", "intake_id", s.intake(t, who, "type", "2"))).Id
	}

	// No yes, no text.
	book(s.pat2, 0)
	if got := deliver(); len(got) != 0 || count(t, e, "SELECT COUNT(*) FROM sms_log") != 0 {
		t.Fatalf("texts to a patient who never said yes: %v", got)
	}

	// The yes, with its number and time; a number that is not one is refused.
	consent := func(kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/consent", Header: userHeaders(s.c, s.pat.Token), Form: q(kv...)})
	}
	wantMsg(t, consent("phone", "555-01", "consent", "1"), 400, "phone")
	wantMsg(t, consent("phone", "+14155550134"), 400, "consent")
	c := dataOf[smsConsent](t, consent("phone", "(415) 555-0134", "consent", "1"))
	if !c.Consented || c.Phone != "+14155550134" || c.At != e.Clock.Now().Unix() {
		t.Fatalf("consent: %+v", c)
	}
	// The admin is not a person who texts.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/consent", Header: adminHeaders(s.c), Form: q("phone", "+14155550135", "consent", "1")}); res.Status != 403 {
		t.Errorf("the admin's consent: %d %s", res.Status, res.Raw)
	}

	visit := book(s.pat, 2)
	got := deliver()
	linkRE := regexp.MustCompile(`https://portal\.teleclinic\.test/v/[A-Za-z0-9_-]+`)
	if len(got) != 1 || got[0].Get("To") != "+14155550134" || got[0].Get("From") != "+14155550100" ||
		got[0].Get("StatusCallback") != set.StatusURL || !strings.Contains(got[0].Get("Body"), "Alpha Clinic: your video visit is booked for Tuesday 3 March 2026, 15:00 (UTC)") ||
		!linkRE.MatchString(got[0].Get("Body")) {
		t.Fatalf("the booking's text: %v", got)
	}
	first := linkRE.FindString(got[0].Get("Body"))
	log := smsLog(t, e, s)
	if len(log) != 1 || log[0].Kind != "booked" || log[0].Status != "queued" || log[0].Phone != "••••••••0134" || log[0].SID == "" || log[0].UserID != s.pat.UserID {
		t.Fatalf("the log: %+v", log)
	}
	if count(t, e, "SELECT COUNT(*) FROM sms_log WHERE phone LIKE '%4155550134%'") != 0 {
		t.Fatal("the log keeps the whole number")
	}

	// The delivery report, signed; unsigned or signed with another token, refused.
	report := url.Values{"MessageSid": {log[0].SID}, "MessageStatus": {"delivered"}, "AccountSid": {twilioSID}}
	if res := twilioPost(e, set.StatusURL, "another-token", report); res.Status != 403 {
		t.Fatalf("a report signed with another token: %d %s", res.Status, res.Raw)
	}
	if res := e.Do(testenv.Req{Method: "POST", Path: "/sms/twilio/alpha/status", Form: report}); res.Status != 403 {
		t.Fatalf("an unsigned report: %d", res.Status)
	}
	if res := twilioPost(e, set.StatusURL, twilioToken, report); res.Status != 204 {
		t.Fatalf("the report: %d %s", res.Status, res.Raw)
	}
	if log := smsLog(t, e, s); log[0].Status != "delivered" {
		t.Fatalf("after the report: %+v", log[0])
	}

	// The provider texts the link: a new one-time link, at once.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.pat2.Token)}); res.Status != 403 && res.Status != 404 {
		t.Fatalf("another patient texts the link: %d", res.Status)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.doc.Token)}))
	got = deliver()
	if len(got) != 1 || !strings.Contains(got[0].Get("Body"), "your link to your video visit") || linkRE.FindString(got[0].Get("Body")) == first {
		t.Fatalf("the link's text: %v", got)
	}

	// In Spanish, when the profile says so: the move.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token), Form: q("language", "es")}))
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/"+visit+"/reschedule", "slot_start", at(3), "slot_end", at(4)))
	if got := deliver(); len(got) != 1 || !strings.Contains(got[0].Get("Body"), "Alpha Clinic: su videoconsulta es ahora el martes, 3 de marzo de 2026, 15:30") {
		t.Fatalf("the move's text in Spanish: %v", got)
	}

	// STOP, from the patient's phone: obeyed at once, answered in their language.
	inbound := func(body string) *testenv.Resp {
		return twilioPost(e, set.InboundURL, twilioToken, url.Values{"From": {"+14155550134"}, "To": {"+14155550100"}, "Body": {body}, "MessageSid": {"SMin"}})
	}
	res := inbound("Stop")
	if res.Status != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/xml") || !strings.Contains(string(res.Raw), "<Response><Message>Alpha Clinic: ") ||
		!strings.Contains(string(res.Raw), "START") {
		t.Fatalf("STOP: %d %s", res.Status, res.Raw)
	}
	if res := twilioPost(e, set.InboundURL, "another-token", url.Values{"From": {"+14155550134"}, "Body": {"START"}}); res.Status != 403 {
		t.Fatalf("a START signed with another token: %d", res.Status)
	}
	wantMsg(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.doc.Token)}), 409, "STOP")
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/"+visit+"/reschedule", "slot_start", at(2), "slot_end", at(3)))
	if got := deliver(); len(got) != 0 {
		t.Fatalf("a text after STOP: %v", got)
	}
	if log := smsLog(t, e, s); log[0].Status != "skipped" || !strings.Contains(log[0].Error, "STOP") {
		t.Fatalf("the log after STOP: %+v", log[0])
	}
	// A yes typed again on the profile does not lift the phone's STOP.
	if c := dataOf[smsConsent](t, consent("phone", "+14155550134", "consent", "1")); !c.Stopped {
		t.Fatalf("the consent after STOP: %+v", c)
	}
	wantMsg(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.doc.Token)}), 409, "STOP")
	if res := inbound("HELP"); !strings.Contains(string(res.Raw), "STOP") {
		t.Fatalf("HELP: %s", res.Raw)
	}
	if res := inbound("start"); res.Status != 200 {
		t.Fatalf("START: %d %s", res.Status, res.Raw)
	}
	// Started again: the provider's start of the visit is texted at once.
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", visit))
	if got := deliver(); len(got) != 1 || !strings.Contains(got[0].Get("Body"), "su profesional") {
		t.Fatalf("the ready text after START: %v", got)
	}

	// Withdrawn: nothing more, even what was already written.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.doc.Token)}))
	mustOK(t, consent("consent", "0"))
	if got := deliver(); len(got) != 0 {
		t.Fatalf("a text after the consent was withdrawn: %v", got)
	}
	if c := dataOf[smsConsent](t, e.Do(testenv.Req{Path: "/api_v3/sms/consent", Header: userHeaders(s.c, s.pat.Token)})); c.Consented {
		t.Fatalf("withdrawn: %+v", c)
	}
	e.FlushAudits()
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action IN ('sms.consent', 'sms.consent.withdraw', 'sms.stop', 'sms.start', 'visit.link.text')"); n != 7 {
		t.Fatalf("audited: %d, want 7 (two yeses, two links, STOP, START, withdrawal)", n)
	}
}

// TestSMS_QuietHoursAndRefusals: a booking's text inside the clinic's
// quiet hours waits for their end; a number the provider refuses for good
// is logged failed and not retried; a STOP Twilio held already (21610) is
// kept.
func TestSMS_QuietHoursAndRefusals(t *testing.T) {
	t.Parallel()
	e, s, tw, _ := smsClinic(t)
	ctx := context.Background()
	// The test clock is 09:00 UTC: quiet from 08:00 to 10:00 UTC.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/settings", Header: adminHeaders(s.c),
		Form: q("provider", "twilio", "account_sid", twilioSID, "from", "+14155550100", "quiet_start", "08:00", "quiet_end", "10:00", "timezone", "UTC")}))
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30})
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/consent", Header: userHeaders(s.c, s.pat.Token), Form: q("phone", "+14155550134", "consent", "1")}))
	visit := dataOf[client.Visit](t, s.post(s.pat.Token, "/api_v3/visits", "slot_start", fmt.Sprint(tue0900NY), "slot_end", fmt.Sprint(tue0900NY+1800),
		"room_code", "main", "type", "2", "intake_id", s.intake(t, s.pat, "type", "2"))).Id
	e.App.DeliverTexts(ctx)
	if got := tw.take(); len(got) != 0 {
		t.Fatalf("a text in quiet hours: %v", got)
	}
	// But the link the provider sends now goes now.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.doc.Token)}))
	e.App.DeliverTexts(ctx)
	if got := tw.take(); len(got) != 1 || !strings.Contains(got[0].Get("Body"), "link") {
		t.Fatalf("the provider's link in quiet hours: %v", got)
	}
	e.Clock.Advance(time.Hour)
	// An hour on, the sessions idled out: sign in again.
	s.pat, s.doc = mustSSO(t, e, s.c, "200", "pat", "Pat", "One"), mustSSO(t, e, s.c, "400", "doc", "Dana", "Doc")
	e.App.DeliverTexts(ctx)
	if got := tw.take(); len(got) != 1 || !strings.Contains(got[0].Get("Body"), "booked") {
		t.Fatalf("the booking's text at the end of quiet hours: %v", got)
	}

	// A number Twilio refuses for good: failed, with its code, once.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/consent", Header: userHeaders(s.c, s.pat.Token), Form: q("phone", "+15005550001", "consent", "1")}))
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/text_link", Header: userHeaders(s.c, s.doc.Token)}))
	e.App.DeliverTexts(ctx)
	log := smsLog(t, e, s)
	if log[0].Status != "failed" || log[0].ErrorCode != 21211 {
		t.Fatalf("a refused text: %+v", log[0])
	}
	if n := count(t, e, "SELECT COUNT(*) FROM outbox WHERE topic = 'sms' AND done IS NULL"); n != 0 {
		t.Fatalf("a refused text is still to be sent: %d", n)
	}
}

// TestSMS_Reminders: for a patient who said yes to texts, a booked
// visit's reminders go by text too (beside the emails, whose tests are the
// appointments'), each once; the reminder of a visit cancelled meanwhile
// is not sent.
func TestSMS_Reminders(t *testing.T) {
	t.Parallel()
	e, s, tw, _ := smsClinic(t)
	ctx := context.Background()
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30})
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/consent", Header: userHeaders(s.c, s.pat.Token), Form: q("phone", "+14155550134", "consent", "1")}))
	book := func(who *session, i int) string {
		t.Helper()
		return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits", "slot_start", fmt.Sprint(tue0900NY+int64(i)*1800), "slot_end", fmt.Sprint(tue0900NY+int64(i+1)*1800),
			"room_code", "main", "type", "2", "intake_id", s.intake(t, who, "type", "2"))).Id
	}
	book(s.pat, 0)
	gone := book(s.pat, 2)
	mustOK(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", gone))
	e.App.DeliverTexts(ctx)
	tw.take() // the booking's and the cancellation's texts

	// The day before: 24 hours ahead of 14:00 UTC on the 3rd.
	e.Clock.Advance(5 * time.Hour)
	e.App.DeliverReminders(ctx)
	e.App.DeliverTexts(ctx)
	got := tw.take()
	if len(got) != 1 || !strings.Contains(got[0].Get("Body"), "Alpha Clinic: your video visit is tomorrow, Tuesday 3 March 2026, 14:00 (UTC). Join here: https://portal.teleclinic.test/v/") {
		t.Fatalf("the reminder's text: %v", got)
	}
	// Each once.
	e.App.DeliverReminders(ctx)
	e.App.DeliverTexts(ctx)
	if got := tw.take(); len(got) != 0 {
		t.Fatalf("a reminder texted twice: %v", got)
	}
	// The cancelled visit's reminder comes due an hour later: nothing.
	e.Clock.Advance(time.Hour)
	e.App.DeliverReminders(ctx)
	e.App.DeliverTexts(ctx)
	if got := tw.take(); len(got) != 0 {
		t.Fatalf("a cancelled visit's reminder: %v", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM sms_log WHERE kind = 'reminder'"); n != 1 {
		t.Fatalf("%d reminder texts logged", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM outbox WHERE topic = 'reminder' AND done IS NOT NULL AND last_error LIKE 'the visit is %'"); n != 2 {
		t.Fatalf("the cancelled visit's reminders (email and text) ended unsent: %d", n)
	}
}

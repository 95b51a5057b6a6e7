package web_test

import (
	"net/url"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/sms"
	"teleclinic/internal/testenv"
)

// TestPortal_Texts: the admin turns texts on from /admin (the sandbox);
// a patient's profile then asks their yes with their number, refuses a
// number that is not one beside its field, keeps the yes with its day and
// takes it back; the admin page lists the sender and what was texted.
func TestPortal_Texts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	pb := newBrowser(t, f.e)
	f.redirectLogin(t, pb, f.p1Token, "/visits", nil)
	if pg := pb.get("/profile"); pg.Status != 200 || strings.Contains(pg.Body, "Text messages") {
		t.Fatalf("the profile of a clinic that sends no texts asks for texts: %d", pg.Status)
	}

	ab := newBrowser(t, f.e)
	f.adminSignIn(t, ab)
	if pg := ab.get("/admin"); !strings.Contains(pg.Body, "Off: no one is texted.") || !strings.Contains(pg.Body, "/sms/twilio/acme/inbound") {
		t.Fatalf("the admin's texts section, off: %s", pg.Body)
	}
	if pg := ab.post("/admin/texts", url.Values{"provider": {"twilio"}, "account_sid": {"AC12"}}); pg.Status != 400 || !strings.Contains(pg.Body, "account_sid") {
		t.Fatalf("a bad sender: %d", pg.Status)
	}
	if pg := ab.post("/admin/texts", url.Values{"provider": {"sandbox"}, "quiet_start": {"21:00"}, "quiet_end": {"08:00"}, "timezone": {"America/New_York"}}); pg.Status != 303 || pg.Location != "/admin?done=texts#texts" {
		t.Fatalf("the sandbox: %d %q", pg.Status, pg.Location)
	}

	pg := pb.get("/profile")
	if !strings.Contains(pg.Body, "Text me about my visits") || !strings.Contains(pg.Body, "Reply STOP") {
		t.Fatalf("the profile asks no yes: %s", pg.Body)
	}
	if pg := pb.post("/profile/texts", url.Values{"texts": {"1"}, "phone": {"555"}}); pg.Status != 400 || !strings.Contains(pg.Body, `id="phone-error"`) || !strings.Contains(pg.Body, `value="555"`) {
		t.Fatalf("a number that is not one: %d %s", pg.Status, pg.Body)
	}
	if pg := pb.post("/profile/texts", url.Values{"texts": {"1"}, "phone": {"(415) 555-0134"}}); pg.Status != 303 {
		t.Fatalf("the yes: %d", pg.Status)
	}
	pg = pb.get("/profile?done=texts")
	if !strings.Contains(pg.Body, "Texts about your visits go to &#43;14155550134; you said yes on Monday 2 March 2026.") || !strings.Contains(pg.Body, "Your choice of texts is saved.") {
		t.Fatalf("the yes, shown: %s", pg.Body)
	}
	var at int64
	if err := f.e.Store.DB().QueryRow("SELECT consented FROM sms_consents").Scan(&at); err != nil || at != f.e.Clock.Now().Unix() {
		t.Fatalf("the yes's time: %d %v", at, err)
	}

	// What the admin sees of a text: the patient's visit link, texted by
	// the admin; the sandbox takes it.
	if res := f.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + itoa(f.visitID) + "/text_link",
		Header: map[string]string{"X-AccountCode": "acme", "X-ApiToken": f.clinic.AdminToken}}); res.Status != 200 {
		t.Fatalf("text the link: %d %s", res.Status, res.Raw)
	}
	f.e.App.DeliverTexts(t.Context())
	if pg := ab.get("/admin"); !strings.Contains(pg.Body, "Sandbox: texts are answered") || !strings.Contains(pg.Body, "visit_link") || !strings.Contains(pg.Body, sms.Masked("+14155550134")) ||
		!strings.Contains(pg.Body, "queued") {
		t.Fatalf("the admin's log: %s", pg.Body)
	}

	if pg := pb.post("/profile/texts", url.Values{"texts": {"0"}}); pg.Status != 303 {
		t.Fatalf("stop: %d", pg.Status)
	}
	if pg := pb.get("/profile"); !strings.Contains(pg.Body, "Text me about my visits") {
		t.Fatal("the yes was not taken back")
	}
}

// TestPortal_GuestSaysYesToTexts: a guest booking ahead in a clinic that
// texts is offered texts under their phone; ticking it without a number
// that is one is refused and books nothing; with one, the yes is kept
// with its number and time.
func TestPortal_GuestSaysYesToTexts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	on := true
	if _, err := f.e.App.UpdateRoom(t.Context(), f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on}); err != nil {
		t.Fatal(err)
	}
	g := newBrowser(t, f.e)
	if pg := g.post("/c/acme/main/guest", url.Values{"first_name": {"Gia"}, "last_name": {"Guest"}}); pg.Status != 303 {
		t.Fatalf("guest join: %d %s", pg.Status, pg.Body)
	}
	if pg := g.get("/c/acme/main"); strings.Contains(pg.Body, `name="texts"`) {
		t.Fatal("texts offered by a clinic that sends none")
	}
	if _, err := f.e.App.SetSMSSettings(t.Context(), f.admin(t), app.SMSSettingsInput{Provider: "sandbox"}); err != nil {
		t.Fatal(err)
	}
	if pg := g.get("/c/acme/main"); !strings.Contains(pg.Body, `name="texts"`) {
		t.Fatalf("the guest's form offers no texts: %s", pg.Body)
	}
	form := url.Values{"reason_for_visit": {"A check-up"}, "terms": {"1"}, "kind": {"appointment"}, "email": {"gia@example.com"}, "texts": {"1"}}
	if pg := g.post("/c/acme/main/intake", form); pg.Status != 400 || !strings.Contains(pg.Body, "give your mobile number") {
		t.Fatalf("texts without a number: %d %s", pg.Status, pg.Body)
	}
	if n := count(t, f, "SELECT COUNT(*) FROM intakes"); n != 1 { // the fixture's e-consult's alone
		t.Fatalf("%d intakes after the refusal", n)
	}
	form.Set("phone", "+44 20 7946 0958")
	if pg := g.post("/c/acme/main/intake", form); pg.Status != 303 {
		t.Fatalf("with a number: %d %s", pg.Status, pg.Body)
	}
	var phone string
	var at int64
	if err := f.e.Store.DB().QueryRow("SELECT c.phone, c.consented FROM sms_consents c JOIN users u ON u.id = c.user_id WHERE u.email = 'gia@example.com'").Scan(&phone, &at); err != nil ||
		phone != "+442079460958" || at != f.e.Clock.Now().Unix() {
		t.Fatalf("the guest's yes: %q %d %v", phone, at, err)
	}
}

// TestPortal_LinkAgainByText: a visit link opened already offers a new
// one by text to a patient who said yes to texts (the number's last four
// digits shown), and asking sends it.
func TestPortal_LinkAgainByText(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testenv.Options{PortalHere: true})
	ctx := t.Context()
	if _, err := f.e.App.SetSMSSettings(ctx, f.admin(t), app.SMSSettingsInput{Provider: "sandbox"}); err != nil {
		t.Fatal(err)
	}
	pat := f.user(t, f.p1Token)
	if _, err := f.e.App.SetSMSConsent(ctx, pat, "+1 415 555 0134", new(true)); err != nil {
		t.Fatal(err)
	}
	link, err := f.e.App.VisitLinkFor(ctx, pat, f.visitID)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	b := newBrowser(t, f.e)
	if pg := b.post(u.Path, url.Values{}); pg.Status != 303 {
		t.Fatalf("open the link: %d %s", pg.Status, pg.Body)
	}
	other := newBrowser(t, f.e)
	pg := other.get(u.Path)
	if !strings.Contains(pg.Body, "We can text you a new one at the number ending 0134.") || !strings.Contains(pg.Body, `id="send-again"`) {
		t.Fatalf("the used link's page: %s", pg.Body)
	}
	pg = other.post(u.Path+"/again", url.Values{})
	if pg.Status != 200 || !strings.Contains(pg.Body, "on its way by text to the number ending 0134") {
		t.Fatalf("again: %d %s", pg.Status, pg.Body)
	}
	f.e.App.DeliverTexts(ctx)
	var status string
	if err := f.e.Store.DB().QueryRow("SELECT status FROM sms_log WHERE kind = 'link_again'").Scan(&status); err != nil || status != "queued" {
		t.Fatalf("the new link's text: %q %v", status, err)
	}
}

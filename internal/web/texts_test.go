package web_test

import (
	"net/url"
	"strings"
	"testing"

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

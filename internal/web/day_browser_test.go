//go:build browser

package web_test

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/media"
	"teleclinic/internal/testenv"
)

// refuseDevices makes the page's browser answer every request for the
// camera and microphone with a refusal, as a browser whose person said no.
func refuseDevices() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
			Source: `navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException("refused", "NotAllowedError"));`})
		return err
	})
}

// TestBrowser_ProviderStartsAndEnds: two walk-ins wait on phones. When the
// provider starts the first visit, that patient, whose device check found
// a camera, is in the call without pressing anything; when the provider
// ends it, the patient's page puts the call away (camera off, no Join, no
// message box), says the visit has ended, and shows the summary on top as
// the provider signs the note, all without a reload. The second patient
// refused the camera: when the provider starts their visit, they are rung
// (the tab's title, a large focused Join, an announcement).
func TestBrowser_ProviderStartsAndEnds(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	first := f.walkin(t, f.p1Token, "Fever since yesterday")
	second := f.walkin(t, f.p2Token, "A rash")

	patient := separate(t, browser)
	browserStep(t, patient, "the first patient waits",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next=/visits/start/"+strconv.FormatInt(first, 10)),
		chromedp.WaitVisible(chromedp.CSS("#waiting")))
	waitFor(t, "the device check has the camera", func() bool {
		ok, err := chromedp.Run(patient, chromedp.Evaluate[bool](`(function (v) { return !!v.srcObject && v.srcObject.getVideoTracks().length > 0; })(document.getElementById("local-video"))`))
		return err == nil && ok
	})
	markPage(t, patient)

	other := separate(t, browser)
	browserStep(t, other, "the second patient waits, camera refused", refuseDevices(),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p2Token+"&next=/visits/start/"+strconv.FormatInt(second, 10)),
		chromedp.WaitVisible(chromedp.CSS("#waiting")))
	waitText(t, other, "#call-status", "blocked")
	markPage(t, other)

	provider := separate(t, browser)
	atDesktop(t, provider)
	browserStep(t, provider, "the provider opens the dashboard",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#queue")))
	clickLive(t, provider, "provider", "#start-"+strconv.FormatInt(first, 10))
	browserStep(t, provider, "the provider's page joins", chromedp.WaitVisible(chromedp.CSS("#call-leave")))

	// The patient is in the call by themselves.
	waitFor(t, "the patient joins without a press", func() bool {
		n, err := chromedp.Run(patient, chromedp.Evaluate[int](`window.teleclinicCall.peers().length`))
		return err == nil && n == 1
	})
	receiving(t, patient, "the patient")
	stillMarked(t, patient, "the patient")
	screenshot(t, patient, "joined-by-itself")

	// The provider ends the visit.
	browserStep(t, provider, "the provider ends the visit",
		chromedp.Click(chromedp.CSS("#call-end")),
		chromedp.WaitVisible(chromedp.CSS("#end-confirm")),
		chromedp.Click(chromedp.CSS("#end-yes")))
	waitText(t, patient, "#call-status", "The visit has ended")
	waitText(t, patient, "#visit-after", "Your visit is over")
	waitText(t, patient, "#visit-compose", "closed for new messages")
	type put struct {
		Media, Join, Box bool
	}
	away, err := chromedp.Run(patient, chromedp.Evaluate[put](`({media: !!document.getElementById("local-video").srcObject,
		join: document.getElementById("call-join").offsetParent !== null, box: !!document.getElementById("content")})`))
	if err != nil || away.Media || away.Join || away.Box {
		t.Fatalf("after the end, the patient's page still has (camera, Join, message box): %+v %v", away, err)
	}
	stillMarked(t, patient, "the patient")

	// The provider signs the note: the summary comes to the top of the
	// patient's page.
	prov := f.user(t, f.providerToken)
	summary := "Rest and drink plenty; the fever should pass in three days."
	if _, err := f.e.App.SaveVisitNote(bg, prov, first, app.NoteDraft{PatientSummary: summary, Diagnoses: []string{"R50.9"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.SignVisitNote(bg, prov, first); err != nil {
		t.Fatal(err)
	}
	waitText(t, patient, "#visit-after", "the fever should pass")
	above, err := chromedp.Run(patient, chromedp.Evaluate[bool](`document.getElementById("visit-after").getBoundingClientRect().top < document.getElementById("visit-thread").getBoundingClientRect().top`))
	if err != nil || !above {
		t.Fatalf("the summary is not above the thread (%v)", err)
	}
	stillMarked(t, patient, "the patient")
	checkA11y(t, patient, "visit ended, summary")
	screenshot(t, patient, "visit-ended-summary")

	// The second patient, without a camera, is rung.
	browserStep(t, provider, "back to the dashboard",
		chromedp.Navigate(f.e.URL+"/providers/dashboard"), chromedp.WaitVisible(chromedp.CSS("#queue")))
	clickLive(t, provider, "provider", "#start-"+strconv.FormatInt(second, 10))
	browserStep(t, provider, "the provider's page joins", chromedp.WaitVisible(chromedp.CSS("#call-leave")))
	waitText(t, other, ".provider-in", "Your provider is in the call")
	type rung struct {
		Title   string
		Ring    bool
		Focused bool
		Role    string
	}
	var r rung
	waitFor(t, "the second patient is rung", func() bool {
		r, err = chromedp.Run(other, chromedp.Evaluate[rung](`(function (j) { return {title: document.title, ring: j.classList.contains("ring"),
			focused: document.activeElement === j, role: (document.querySelector(".provider-in") || {}).getAttribute ? document.querySelector(".provider-in").getAttribute("role") : ""}; })(document.getElementById("call-join"))`))
		return err == nil && r.Ring
	})
	if !strings.HasPrefix(r.Title, "● ") || !r.Focused || r.Role != "alert" {
		t.Fatalf("the ring: %+v", r)
	}
	stillMarked(t, other, "the second patient")
	checkA11y(t, other, "rung")
	screenshot(t, other, "rung")
	d, err := f.e.App.GetVisit(bg, prov, second, false)
	if err != nil || d.Visit.Status != clinic.VisitInProgress {
		t.Fatalf("the second visit: %+v %v", d, err)
	}
}

// TestBrowser_GhostPatients: of two walk-ins waiting on phones, the first
// closes the tab. Once the page has been gone for app.LeftAfter, the
// provider's open dashboard shows them apart, "Left the waiting room", out
// of the title's count, and the second patient's page says they are next,
// neither reloaded. The first patient opens the page again and is back at
// their place for both; they leave again and the provider marks the
// no-show.
func TestBrowser_GhostPatients(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t, testenv.Options{KeepAlive: 300 * time.Millisecond, Workers: true}) // the sweep tells the rooms who left
	bg := context.Background()
	first := f.walkin(t, f.p1Token, "Fever since yesterday")
	second := f.walkin(t, f.p2Token, "A rash")
	seenAt := func(id int64) int64 {
		var at sql.NullInt64
		if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT seen_at FROM visits WHERE id = ?"), id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at.Int64
	}
	// passTime moves the clock past LeftAfter for a page that is gone,
	// in two steps, so the open page's stream marks it seen in between
	// (its keep-alives run on the real clock). A closed tab's stream can
	// still deliver a last keep-alive after the close returns (seen on a
	// loaded machine): then the first step is taken again, from the time
	// that keep-alive marked.
	passTime := func() {
		t.Helper()
		for range 5 {
			f.e.Clock.Advance(app.LeftAfter - 20*time.Second)
			now := f.e.Clock.Now().Unix()
			waitFor(t, "the second patient's page is seen again", func() bool { return seenAt(second) >= now })
			time.Sleep(time.Second) // three keep-alives of a page still there
			if seenAt(first) < now {
				break
			}
		}
		f.e.Clock.Advance(30 * time.Second)
	}
	open := func(ctx context.Context, token string, id int64) {
		t.Helper()
		browserStep(t, ctx, "a patient opens the waiting room",
			chromedp.Navigate(f.e.URL+"/auth?sso_token="+token+"&next=/visits/start/"+strconv.FormatInt(id, 10)),
			chromedp.WaitVisible(chromedp.CSS("#waiting")))
	}

	provider := separate(t, browser)
	atDesktop(t, provider)
	browserStep(t, provider, "the provider opens the dashboard",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#queue")))
	markPage(t, provider)

	gone, closeTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer closeTab()
	if err := chromedp.Do(gone); err != nil {
		t.Fatal(err)
	}
	open(gone, f.p1Token, first)
	other := separate(t, browser)
	open(other, f.p2Token, second)
	waitText(t, other, `.waiting [role="status"]`, "1 patient before you")
	markPage(t, other)
	waitFor(t, "the first patient's page is seen", func() bool { return seenAt(first) != 0 })

	closeTab() // the first patient closes the tab
	passTime()
	waitText(t, provider, "#left-list", "Ada Lovelace")
	waitText(t, other, `.waiting [role="status"]`, "You are next.")
	if q, err := chromedp.Run(provider, chromedp.Text(chromedp.CSS("#queue-list"))); err != nil || strings.Contains(q, "Ada Lovelace") {
		t.Fatalf("the queue still holds the patient who left: %q %v", q, err)
	}
	waiting, err := chromedp.Run(provider, chromedp.Evaluate[string](`document.getElementById("dashboard-live").getAttribute("data-waiting")`))
	if err != nil || waiting != "2" { // the second walk-in and the fixture's e-consult
		t.Fatalf("the title's count: %q %v", waiting, err)
	}
	stillMarked(t, provider, "the provider")
	stillMarked(t, other, "the second patient")
	checkA11y(t, provider, "dashboard, a patient left")
	screenshot(t, provider, "dashboard-left")

	// The first patient comes back.
	back := separate(t, browser)
	open(back, f.p1Token, first)
	waitText(t, provider, "#queue-list", "Ada Lovelace")
	waitText(t, other, `.waiting [role="status"]`, "1 patient before you")
	waitText(t, back, `.waiting [role="status"]`, "You are next.")

	// They leave again; the provider marks the no-show.
	if err := chromedp.Do(back, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	passTime()
	waitText(t, provider, "#left-list", "Ada Lovelace")
	clickLive(t, provider, "provider", "#noshow-"+strconv.FormatInt(first, 10))
	waitFor(t, "the no-show is off the dashboard", func() bool {
		n, err := chromedp.Run(provider, chromedp.Evaluate[int](`document.querySelectorAll("#left-list").length`))
		return err == nil && n == 0
	})
	d, err := f.e.App.GetVisit(bg, f.user(t, f.providerToken), first, false)
	if err != nil || d.Visit.Status != clinic.VisitCancelled || d.Visit.CancelReason != app.ReasonNoShow || d.Visit.Outcome != clinic.OutcomeNoShow {
		t.Fatalf("the no-show: %+v %v", d, err)
	}
}

// TestBrowser_GuestBooksAhead: a guest on a phone in Madrid books a time
// two days ahead: the form asks their email, the visit page says where
// the booking went and how they come back; the mail arrives at the mail
// server with a link that, opened on another device with no session,
// asks a press and opens that visit, and nothing else of the portal.
func TestBrowser_GuestBooksAhead(t *testing.T) {
	browser := chrome(t)
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.Mail = mailer.Sender() }, Workers: true})
	bg := context.Background()
	on := true
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on}); err != nil {
		t.Fatal(err)
	}
	day := f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02")
	if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}

	guest := separate(t, browser)
	browserStep(t, guest, "the guest gives a name", inZone("Europe/Madrid"),
		chromedp.Navigate(f.e.URL+"/c/acme/main"),
		chromedp.WaitVisible(chromedp.CSS("#first_name")),
		chromedp.SendKeys(chromedp.CSS("#first_name"), "Gia"),
		chromedp.SendKeys(chromedp.CSS("#last_name"), "Guest"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Continue"]`)),
		chromedp.WaitVisible(chromedp.CSS("#guest_email")))
	checkA11y(t, guest, "guest's intake with an email")
	screenshot(t, guest, "guest-intake-email")
	browserStep(t, guest, "the guest books 10:30 Madrid time",
		chromedp.SendKeys(chromedp.CSS("#reason"), "A check-up"),
		chromedp.SendKeys(chromedp.CSS("#guest_email"), "gia@example.com"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Choose a time"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Book 10:30 AM"]`)),
		chromedp.Click(chromedp.CSS(`button[aria-label="Book 10:30 AM"]`)),
		chromedp.WaitVisible(chromedp.CSS(".booked")))
	waitText(t, guest, ".booked", "We emailed this booking to g•••@example.com")
	checkA11y(t, guest, "a guest's booked visit")
	screenshot(t, guest, "guest-booked")

	var text string
	waitFor(t, "the booking's mail reaches the guest", func() bool {
		for _, m := range mailer.Mails() {
			if m.To == "gia@example.com" && strings.Contains(m.Text(), "is booked for Wednesday 4 March 2026, 10:30 (Europe/Madrid)") {
				text = m.Text()
				return true
			}
		}
		return false
	})
	link := regexp.MustCompile(`https://portal\.teleclinic\.test(/v/[A-Za-z0-9_-]+)`).FindStringSubmatch(text)
	var cal string
	for _, m := range mailer.Mails() {
		if m.To == "gia@example.com" {
			cal = m.Calendar()
		}
	}
	if !strings.Contains(cal, "DTSTART:20260304T093000Z") || !strings.Contains(cal, "STATUS:CONFIRMED") {
		t.Errorf("the booking's calendar file:\n%s", cal)
	}
	if link == nil {
		t.Fatalf("no visit link in the booking's mail:\n%s", text)
	}

	// Two days later, on another device.
	later := separate(t, browser)
	browserStep(t, later, "the guest opens the mailed link elsewhere", inZone("Europe/Madrid"),
		chromedp.Navigate(f.e.URL+link[1]),
		chromedp.WaitVisible(chromedp.CSS("#open-visit")))
	waitText(t, later, "main", "Your visit with Acme Clinic")
	checkA11y(t, later, "a visit link")
	screenshot(t, later, "visit-link")
	browserStep(t, later, "the guest opens the visit",
		chromedp.Click(chromedp.CSS("#open-visit")),
		chromedp.WaitVisible(chromedp.CSS(".booked")))
	waitText(t, later, ".booked", "10:30")
	waitText(t, later, "header nav", "Your visit")
	screenshot(t, later, "visit-by-link")
	browserStep(t, later, "the guest tries the visits list", chromedp.Navigate(f.e.URL+"/visits"), chromedp.WaitVisible(chromedp.CSS("main")))
	waitText(t, later, "main", "one visit only")
}

// TestBrowser_DeviceCheckTriesTheRelay: the device check's connection
// test tries the clinic's TURN relay as a call would get it: with coturn
// answering, the page says the relay answers; with it stopped, it says
// the relay did not, and what to try.
func TestBrowser_DeviceCheckTriesTheRelay(t *testing.T) {
	browser := chrome(t)
	turn := startCoturn(t, "relay-secret")
	ice := media.Config{TURN: []string{"turn:" + turn.addr + "?transport=udp"}, Secret: "relay-secret"}
	// coturn checks a credential's expiry on the wall clock.
	f := newFixture(t, testenv.Options{Clock: testenv.ClockAt(time.Now()), Config: func(c *app.Config) { c.ICE = ice }})
	f.accept(t)
	patient := separate(t, browser)
	openVisit(t, patient, f.e.URL, f.p1Token, f.visitID)
	relay := func() string {
		t.Helper()
		browserStep(t, patient, "the patient tests the connection", chromedp.Click(chromedp.CSS("#call-network")))
		var got string
		waitFor(t, "the network test answers", func() bool {
			r, err := chromedp.Run(patient, chromedp.Evaluate[string](`window.teleclinicCall.check.relay`))
			got = r
			return err == nil && r != ""
		})
		_, _ = chromedp.Run(patient, chromedp.Evaluate[bool](`(window.teleclinicCall.check.relay = "", true)`)) // reset for the next press
		return got
	}
	if got := relay(); got != "ok" {
		t.Fatalf("with the relay up the check says %q", got)
	}
	waitText(t, patient, "#devcheck-result", "The clinic's relay answers")
	screenshot(t, patient, "device-check-relay")
	turn.stop()
	if got := relay(); got != "failed" {
		t.Fatalf("with the relay down the check says %q", got)
	}
	waitText(t, patient, "#devcheck-result", "try another network")
}

// TestBrowser_ProviderCancelsWithReason: a provider on a desktop cancels
// a booked visit from the dashboard: Cancel asks why before anything
// happens; confirmed, the visit is cancelled and the patient, whose
// profile is in Spanish, gets the email in Spanish with the reason, the
// clinic's phone and the calendar file that cancels the event, at the
// mail server.
func TestBrowser_ProviderCancelsWithReason(t *testing.T) {
	browser := chrome(t)
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.Mail = mailer.Sender() }, Workers: true})
	bg := context.Background()
	on := true
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on,
		Contact: &clinic.RoomContact{Phone: "+34 910 000 000"}}); err != nil {
		t.Fatal(err)
	}
	day := f.e.Clock.Now().UTC().Format("2006-01-02")
	if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "15:00", TimeEnd: "16:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Store.DB().Exec(f.e.Store.Rebind("UPDATE users SET email = ? WHERE code = ?"), "ada@example.com", "pat-1"); err != nil {
		t.Fatal(err)
	}
	pat := f.user(t, f.p1Token)
	es, zone := "es", "Europe/Madrid"
	if _, err := f.e.App.UpdateMe(bg, pat, app.ProfileUpdate{Language: &es, Timezone: &zone}); err != nil {
		t.Fatal(err)
	}
	reason := "A check-up"
	it, err := f.e.App.CreateIntake(bg, pat, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason, Type: new("2")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC).Unix()
	d, err := f.e.App.Book(bg, pat, app.BookInput{SlotStart: start, SlotEnd: start + 1800, RoomCode: "main", Type: "2", IntakeID: it.ID})
	if err != nil {
		t.Fatal(err)
	}
	visit := strconv.FormatInt(d.Visit.ID, 10)
	before := len(mailer.WaitFor(t, 1)) // the booking's confirmation

	provider := separate(t, browser)
	atDesktop(t, provider)
	browserStep(t, provider, "the provider opens the dashboard",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#cancel-"+visit)))
	browserStep(t, provider, "the provider opens Cancel", chromedp.Click(chromedp.CSS("#cancel-"+visit+" summary")),
		chromedp.WaitVisible(chromedp.CSS("#reason-"+visit)))
	// Cancel without a reason is not sent.
	browserStep(t, provider, "the provider confirms without a reason", chromedp.Click(chromedp.CSS("#cancel-yes-"+visit)))
	if d, err := f.e.App.GetVisit(bg, pat, d.Visit.ID, false); err != nil || d.Visit.Status == clinic.VisitCancelled {
		t.Fatalf("cancelled without a reason: %v", err)
	}
	checkA11y(t, provider, "dashboard, cancelling with a reason")
	screenshot(t, provider, "dashboard-cancel-reason")
	// A patient arrives while the reason is being typed: the dashboard
	// redraws, and the open Cancel keeps its reason, open.
	browserStep(t, provider, "the provider starts the reason", chromedp.SendKeys(chromedp.CSS("#reason-"+visit), "The doctor is ill"))
	f.walkin(t, f.p2Token, "Arrived meanwhile")
	waitText(t, provider, "#dashboard-live", "Mallory Other")
	type typing struct {
		Open  bool
		Value string
	}
	kept, err := chromedp.Run(provider, chromedp.Evaluate[typing](`({open: document.getElementById("cancel-`+visit+`").open, value: document.getElementById("reason-`+visit+`").value})`))
	if err != nil || !kept.Open || kept.Value != "The doctor is ill" {
		t.Fatalf("the reason being typed after a redraw: %+v %v", kept, err)
	}
	browserStep(t, provider, "the provider finishes the reason and confirms",
		chromedp.SendKeys(chromedp.CSS("#reason-"+visit), " today"),
		chromedp.Click(chromedp.CSS("#cancel-yes-"+visit)),
		chromedp.WaitVisible(chromedp.CSS("#queue")))
	got := mailer.WaitFor(t, before+1)
	m := got[len(got)-1]
	text := m.Text()
	for _, want := range []string{"Acme Clinic: su videoconsulta se canceló", "La clínica canceló la videoconsulta", "El motivo indicado: The doctor is ill today",
		"lunes, 2 de marzo de 2026, 16:00 (Europe/Madrid)", "+34 910 000 000"} {
		if !strings.Contains(text, want) {
			t.Errorf("the patient's cancellation mail has no %q:\n%s", want, text)
		}
	}
	if m.To != "ada@example.com" || !strings.Contains(m.Calendar(), "STATUS:CANCELLED") {
		t.Errorf("the mail went to %s, with the calendar file:\n%s", m.To, m.Calendar())
	}
}

// TestBrowser_SentMessageLeavesTheBox: the answer to a message sent in
// place comes after the stream has already redrawn the thread and the
// form (the answer is held back here, as a slow network does): the box
// still empties, and what the person typed after sending stays.
func TestBrowser_SentMessageLeavesTheBox(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	patient := separate(t, browser)
	browserStep(t, patient, "the patient opens the e-consult",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next="+f.visitPath()),
		chromedp.WaitVisible(chromedp.CSS("#content")))
	settled(t, patient)
	// The page's posts answer 1.5 s late; its reads, the stream's
	// redraws, do not.
	if _, err := chromedp.Run(patient, chromedp.Evaluate[bool](`(function () {
		var f = window.fetch;
		window.fetch = function (u, o) {
			var p = f(u, o);
			if (!o || o.method !== "POST") { return p; }
			return p.then(function (r) { return new Promise(function (res) { setTimeout(function () { res(r); }, 1500); }); });
		};
		return true; })()`)); err != nil {
		t.Fatal(err)
	}
	browserStep(t, patient, "the patient sends a message",
		chromedp.SendKeys(chromedp.CSS("#content"), "First question"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Send"]`)))
	waitText(t, patient, "#visit-thread", "First question") // the stream's redraw, before the answer
	waitFor(t, "the box empties once the answer comes", func() bool {
		v, err := chromedp.Run(patient, chromedp.Evaluate[string](`document.getElementById("content").value`))
		return err == nil && v == ""
	})
	// Typed on while the next one goes: kept.
	browserStep(t, patient, "the patient sends and types on",
		chromedp.SendKeys(chromedp.CSS("#content"), "Second"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Send"]`)))
	waitText(t, patient, "#visit-thread", "Second")
	browserStep(t, patient, "the patient types on", chromedp.SendKeys(chromedp.CSS("#content"), " and more"))
	time.Sleep(2 * time.Second) // past the held answer
	if v, err := chromedp.Run(patient, chromedp.Evaluate[string](`document.getElementById("content").value`)); err != nil || v != "Second and more" {
		t.Fatalf("the box after typing on: %q %v", v, err)
	}
}

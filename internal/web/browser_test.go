//go:build browser

package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// chrome starts a headless Chromium for t: Debian's /usr/bin/chromium, or
// the one TELECLINIC_CHROMIUM names. Without one the browser tests skip,
// saying so; CI installs it (.ci/run).
func chrome(t *testing.T) context.Context {
	t.Helper()
	return chromeFor(t, 90*time.Second)
}

// chromeFor is chrome with a budget of its own, for a test that drives
// many calls and would otherwise end at chrome's 90 s on a loaded machine.
func chromeFor(t *testing.T, budget time.Duration) context.Context {
	t.Helper()
	path := os.Getenv("TELECLINIC_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no Chromium at %s: the browser tests need Debian's chromium (apt install chromium) or TELECLINIC_CHROMIUM", path)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("no-first-run", true),
		// A fake camera and microphone, granted without asking, for the
		// visit's call (Chromium's flags for tests); and sound that plays without a click.
		chromedp.Flag("use-fake-device-for-media-stream", true), chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(420, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, budget)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// TestBrowser_IntegratorFlow: the integrator's flow in a real browser. A
// patient signed in by SSO through the API follows GET /api_v3/auth to the
// visit page, signed in with no further login, and writes to the thread
// with the page's form.
func TestBrowser_IntegratorFlow(t *testing.T) {
	ctx := chrome(t)
	e := testenv.New(t, testenv.Options{PortalHere: true})
	bg := context.Background()
	a := e.App
	c := e.NewClinic("acme", true)
	key, err := a.Authenticate(bg, app.Credentials{AccountCode: "acme", APIKey: c.APIKey, APISecret: c.APISecret}, app.NeedAPIKey)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := a.Authenticate(bg, app.Credentials{AccountCode: "acme", APIToken: c.AdminToken}, app.NeedAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateRoom(bg, admin, app.NewRoom{Code: "main", Name: "Main Room", Domain: "acme.clinic.test"}); err != nil {
		t.Fatal(err)
	}
	sso, err := a.SSO(bg, key, app.SSOInput{FirstName: "Ada", LastName: "Lovelace", Type: clinic.UserMember, Code: "pat-1"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(bg, app.Credentials{APIToken: sso.Session.Token}, app.NeedUser)
	if err != nil {
		t.Fatal(err)
	}
	reason := "A cough for a week"
	it, err := a.CreateIntake(bg, p, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.AddEconsult(bg, p, it.ID, "main")
	if err != nil {
		t.Fatal(err)
	}
	visitPath := "/visits/start/" + strconv.FormatInt(v.Visit.ID, 10)

	err = chromedp.Do(ctx,
		chromedp.Navigate(e.URL+"/api_v3/auth?sso_token="+sso.Session.Token+"&next="+visitPath),
		chromedp.WaitVisible(chromedp.CSS("h1")))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil {
		t.Fatal(err)
	}
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
	if err != nil {
		t.Fatal(err)
	}
	settled(t, ctx)
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`textarea[name="content"]`), "Sent from the visit page."),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Send"]`)),
		chromedp.WaitVisible(chromedp.CSS("ol.thread")))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	thread, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("ol.thread")))
	if err != nil {
		t.Fatal(err)
	}
	if path != visitPath || heading != "Visit in Main Room" {
		t.Fatalf("landed on %q with heading %q", path, heading)
	}
	checkA11y(t, ctx, "visit")
	screenshot(t, ctx, "visit")
	if !strings.Contains(thread, "Sent from the visit page.") || !strings.Contains(thread, "Ada Lovelace") {
		t.Fatalf("thread after sending: %q", thread)
	}
	ms, total, err := a.ListMessages(bg, p, v.Visit.ID, app.MessageQuery{})
	if err != nil || total != 1 || ms[0].Content != "Sent from the visit page." {
		t.Fatalf("stored thread: %d messages, %v", total, err)
	}
}

// separate is a new browser context of b's browser: its own cookies, as a
// second person's browser has.
func separate(t *testing.T, b context.Context) context.Context {
	if err := chromedp.Do(b); err != nil { // the browser starts with b's first run
		t.Fatalf("browser: %v", err)
	}
	ctx, cancel := chromedp.NewContext(b, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The tab opens now, before its first navigation: a tab that chromedp
	// opens for a navigation that redirects (the redirect login) stops
	// answering Runtime.evaluate in chromedp v0.22.1.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("tab: %v", err)
	}
	return ctx
}

// waitText waits until the text of sel contains want, and fails t with
// what it said last if it does not within stepBudget.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	var last string
	for end := time.Now().Add(stepBudget); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).innerText || ""`))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		if last = got; strings.Contains(got, want) {
			return
		}
	}
	t.Fatalf("%s says %q, not %q", sel, last, want)
}

// clickLive clicks sel inside a data-live-region. live.js replaces the
// region whenever the server announces a change, and a swap between
// chromedp finding the node and clicking it loses the node ("Could not
// find node with given id"): the click is then tried on the fresh region.
// Only that refusal is retried; it comes before any mouse event is sent.
func clickLive(t *testing.T, ctx context.Context, who, sel string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil {
			return
		}
		var cdp *cdproto.Error
		if !errors.As(err, &cdp) || !strings.Contains(strings.ToLower(cdp.Message), "node") || time.Now().After(end) {
			t.Fatalf("%s: clicking %s: %v", who, sel, err)
		}
	}
}

// markPage sets a mark on the page's window that a reload would lose.
func markPage(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
}

func stillMarked(t *testing.T, ctx context.Context, who string) {
	t.Helper()
	marked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	if err != nil || !marked {
		t.Fatalf("%s's page was reloaded (%v)", who, err)
	}
}

// TestBrowser_GuestWaitingRoom: a guest opens the room's join address,
// joins as a guest, fills the intake and waits behind the patient already
// waiting. The provider's dashboard, open all along, shows the guest
// arrive without a reload; when the provider starts the visit of the
// patient ahead, the guest's page says they are next, without a reload
// either.
func TestBrowser_GuestWaitingRoom(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	p2 := f.user(t, f.p2Token)
	reason := "Sore throat"
	it, err := f.e.App.CreateIntake(bg, p2, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := f.e.App.AddWalkin(bg, p2, app.WalkinInput{IntakeID: it.ID, RoomCode: "main"})
	if err != nil {
		t.Fatal(err)
	}

	provider := separate(t, browser)
	err = chromedp.Do(provider,
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#queue")))
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	waitText(t, provider, "#dashboard-live", "Mallory Other")
	markPage(t, provider)

	guest := separate(t, browser)
	if err := chromedp.Do(guest, chromedp.Navigate(f.e.URL+"/c/acme/main"), chromedp.WaitVisible(chromedp.CSS("#first_name"))); err != nil {
		t.Fatalf("guest: %v", err)
	}
	checkA11y(t, guest, "room")
	err = chromedp.Do(guest,
		chromedp.SendKeys(chromedp.CSS("#first_name"), "Walk"),
		chromedp.SendKeys(chromedp.CSS("#last_name"), "In"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Continue"]`)),
		chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "A rash on both arms"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Join"]`)),
		chromedp.WaitVisible(chromedp.CSS("#waiting")))
	if err != nil {
		t.Fatalf("guest: %v", err)
	}
	waitText(t, guest, `.waiting [role="status"]`, "1 patient before you")
	checkA11y(t, guest, "waiting room")
	screenshot(t, guest, "waiting-room")
	markPage(t, guest)

	// The guest appears on the open dashboard, behind the patient.
	waitText(t, provider, "#dashboard-live", "Walk In")
	queue, err := chromedp.Run(provider, chromedp.Text(chromedp.CSS("#dashboard-live ol")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Index(queue, "Mallory Other") > strings.Index(queue, "Walk In") {
		t.Fatalf("the queue is not first come, first served: %q", queue)
	}
	stillMarked(t, provider, "the provider")
	checkA11y(t, provider, "dashboard")
	screenshot(t, provider, "dashboard")

	// Start visit for the patient ahead (accepted, opened, joined): the
	// guest is next.
	clickLive(t, provider, "provider", "#start-"+strconv.FormatInt(ahead.Visit.ID, 10))
	waitText(t, guest, `.waiting [role="status"]`, "You are next.")
	stillMarked(t, guest, "the guest")
	d, err := f.e.App.GetVisit(bg, p2, ahead.Visit.ID, false)
	if err != nil || (d.Visit.Status != clinic.VisitConfirmed && d.Visit.Status != clinic.VisitInProgress) || d.Provider == nil || d.Provider.FirstName != "Grace" {
		t.Fatalf("the walk-in after Start visit: %+v, %v", d, err)
	}

	// The provider's visits: the walk-in they took is theirs, the guest
	// still waits in their room.
	if err := chromedp.Do(provider, chromedp.Navigate(f.e.URL+"/visits"), chromedp.WaitVisible(chromedp.CSS("#waiting"))); err != nil {
		t.Fatal(err)
	}
	waitText(t, provider, `section[aria-labelledby="coming"]`, "Your open visits")
	waitText(t, provider, `section[aria-labelledby="waiting"]`, "Walk In")
	checkA11y(t, provider, "provider visits")
	screenshot(t, provider, "provider-visits")
}

// hookReceiver is a webhook receiver: the bodies it receives arrive on
// the channel.
func hookReceiver(t *testing.T) (chan []byte, *httptest.Server) {
	hooks := make(chan []byte, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- b
	}))
	t.Cleanup(receiver.Close)
	return hooks, receiver
}

// TestBrowser_EconsultInbox: a patient's e-consult message appears in the
// provider's open inbox without a reload and the clinic's webhook
// announces it; the provider's reply, sent from the visit page, appears in
// the patient's open thread without a reload.
func TestBrowser_EconsultInbox(t *testing.T) {
	browser := chrome(t)
	hooks, receiver := hookReceiver(t)
	f := newFixture(t, testenv.Options{Workers: true})
	bg := context.Background()
	url := receiver.URL + "/hooks"
	if _, err := f.e.App.SetWebhookSettings(bg, f.admin(t), app.WebhookSettingsInput{URL: &url}); err != nil {
		t.Fatal(err)
	}
	visit := "/visits/start/" + strconv.FormatInt(f.visitID, 10)

	provider := separate(t, browser)
	err := chromedp.Do(provider,
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#inbox")))
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	waitText(t, provider, "#dashboard-live", "A cough for a week")
	markPage(t, provider)

	patient := separate(t, browser)
	browserStep(t, patient, "the patient opens the visit",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next="+visit),
		chromedp.WaitVisible(chromedp.CSS("#content")))
	settled(t, patient)
	err = chromedp.Do(patient,
		chromedp.SendKeys(chromedp.CSS("#content"), "Now with a fever."),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Send"]`)),
		chromedp.WaitVisible(chromedp.CSS("ol.thread")))
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	waitText(t, patient, "ol.thread", "Now with a fever.")
	markPage(t, patient)

	// The inbox shows the patient's latest message, and the webhook fires.
	waitText(t, provider, "#dashboard-live", "Now with a fever.")
	stillMarked(t, provider, "the provider")
	select {
	case b := <-hooks:
		if !strings.Contains(string(b), "visit.message.created") {
			t.Fatalf("webhook body: %s", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery within 10 s")
	}

	// The provider replies from the visit page; the patient sees it.
	browserStep(t, provider, "the provider opens the visit", chromedp.Navigate(f.e.URL+visit), chromedp.WaitVisible(chromedp.CSS("#content")))
	settled(t, provider)
	err = chromedp.Do(provider,
		chromedp.SendKeys(chromedp.CSS("#content"), "Please come in today."),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Send"]`)))
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	waitText(t, patient, "ol.thread", "Please come in today.")
	stillMarked(t, patient, "the patient")
	waitText(t, patient, "ol.thread", "Grace Hopper")

	// The provider closes the answered e-consult: the patient's page says
	// it is over and closes the thread, in place; the summary comes on
	// top as the note is signed.
	prov := f.user(t, f.providerToken)
	if _, err := f.e.App.MoveVisit(bg, prov, f.visitID, app.ActAccept, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
	browserStep(t, provider, "the provider closes the e-consult", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#close-econsult")),
		chromedp.Click(chromedp.CSS("#close-econsult")))
	waitText(t, patient, "#visit-after", "Your visit is over")
	waitText(t, patient, "#visit-compose", "closed for new messages")
	if _, err := f.e.App.SaveVisitNote(bg, prov, f.visitID, app.NoteDraft{PatientSummary: "A cold: rest and fluids.", Diagnoses: []string{"J00"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.SignVisitNote(bg, prov, f.visitID); err != nil {
		t.Fatal(err)
	}
	waitText(t, patient, "#visit-after", "A cold: rest and fluids.")
	stillMarked(t, patient, "the patient")
}

// TestBrowser_AdminWebhook: the clinic admin signs in at /admin/signin,
// sets the webhook URL on /admin, and sees the delivery of the next
// message in the delivery log, delivered.
func TestBrowser_AdminWebhook(t *testing.T) {
	browser := chrome(t)
	hooks, receiver := hookReceiver(t)
	f := newFixture(t, testenv.Options{Workers: true})
	err := chromedp.Do(browser,
		chromedp.Navigate(f.e.URL+"/admin/signin"),
		chromedp.SendKeys(chromedp.CSS("#clinic"), "acme"),
		chromedp.SendKeys(chromedp.CSS("#token"), f.clinic.AdminToken),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign in"]`)),
		chromedp.WaitVisible(chromedp.CSS("#webhook-url")),
		chromedp.SendKeys(chromedp.CSS("#webhook-url"), receiver.URL+"/hooks"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Save webhook"]`)),
		chromedp.WaitVisible(chromedp.CSS(".notice")))
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	msg := "Is the clinic open on Sunday?"
	if _, err := f.e.App.PostMessage(context.Background(), f.user(t, f.p1Token), f.visitID, app.NewMessage{Content: &msg}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hooks:
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery within 10 s")
	}
	var log string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !strings.Contains(log, "delivered"); time.Sleep(100 * time.Millisecond) {
		err := chromedp.Do(browser, chromedp.Navigate(f.e.URL+"/admin"), chromedp.WaitVisible(chromedp.CSS("#deliveries")))
		if err != nil {
			t.Fatal(err)
		}
		if log, err = chromedp.Run(browser, chromedp.Text(chromedp.CSS("#deliveries ~ .table-scroll, #deliveries ~ p:not(#deliveries-to)"))); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(log, "visit.message.created") || !strings.Contains(log, "delivered") {
		t.Fatalf("delivery log: %q", log)
	}
	checkA11y(t, browser, "admin")
	screenshot(t, browser, "admin")
	if err := chromedp.Do(browser, chromedp.Navigate(f.e.URL+"/admin/rooms/main"), chromedp.WaitVisible(chromedp.CSS("#providers"))); err != nil {
		t.Fatal(err)
	}
	checkA11y(t, browser, "admin room")
}

// TestBrowser_Refusals: what the portal refuses, in a browser. A form
// another site posts is rejected and writes nothing; a sign-in link whose
// next leaves the site is not followed; a second patient's browser cannot
// open the first patient's visit page (404, as the API answers); a
// one-time sign-in link works once.
func TestBrowser_Refusals(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t, testenv.Options{PortalHere: true})
	bg := context.Background()
	visit := "/visits/start/" + strconv.FormatInt(f.visitID, 10)
	text := func(ctx context.Context) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	patient := separate(t, browser)
	if err := chromedp.Do(patient, chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next="+visit), chromedp.WaitVisible(chromedp.CSS("#content"))); err != nil {
		t.Fatal(err)
	}
	// Another site's page posts a message form to the portal as the patient.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<form method="post" action="`+f.e.URL+visit+`/messages"><input name="content" value="posted by another site"></form><script>document.forms[0].submit()</script>`)
	}))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	if err := chromedp.Do(patient, chromedp.Navigate(evilURL), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if u, _ := chromedp.Run(patient, chromedp.Evaluate[string](`location.href`)); strings.HasPrefix(u, f.e.URL) {
			break
		}
	}
	if _, total, err := f.e.App.ListMessages(bg, f.user(t, f.p1Token), f.visitID, app.MessageQuery{}); err != nil || total != 1 {
		t.Fatalf("the thread after another site's post: %d messages, %v", total, err)
	}

	// next=//evil.example is refused, on the API's redirect and the portal's.
	for _, path := range []string{"/api_v3/auth?sso_token=" + f.p2Token + "&next=//evil.example", "/auth?sso_token=" + f.p2Token + "&next=//evil.example"} {
		other := separate(t, browser)
		if err := chromedp.Do(other, chromedp.Navigate(f.e.URL+path)); err != nil {
			t.Fatal(err)
		}
		u, _ := chromedp.Run(other, chromedp.Evaluate[string](`location.host`))
		if !strings.HasPrefix(f.e.URL, "http://"+u) {
			t.Fatalf("%s took the browser to %s", path, u)
		}
	}

	// The second patient, signed in, cannot open the first one's visit.
	second := separate(t, browser)
	if err := chromedp.Do(second, chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p2Token+"&next=/visits")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(second, chromedp.Navigate(f.e.URL+visit), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatal(err)
	}
	if body := text(second); !strings.Contains(body, "Visit not found") || strings.Contains(body, "worse at night") {
		t.Fatalf("the second patient sees: %q", body)
	}

	// A one-time link works once.
	res, err := f.e.App.SSO(bg, f.key, app.SSOInput{FirstName: "Ada", LastName: "Lovelace", Type: clinic.UserMember, Code: "pat-1"})
	if err != nil {
		t.Fatal(err)
	}
	link := f.e.URL + "/api_v3/auth?one_time_token=1&sso_token=" + res.Session.Token + "&next=" + visit
	first := separate(t, browser)
	if err := chromedp.Do(first, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#content"))); err != nil {
		t.Fatalf("first use: %v", err)
	}
	again := separate(t, browser)
	if err := chromedp.Do(again, chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatal(err)
	}
	if body := text(again); strings.Contains(body, "worse at night") || !strings.Contains(body, "Invalid or expired sso_token") {
		t.Fatalf("the one-time link worked twice: %q", body)
	}
}

// fakeStripeJS stands in for Stripe.js (js.stripe.com, which tests cannot
// reach): the part of its API the payment page uses —
// Stripe(key).elements().create("card").mount(selector) and
// createPaymentMethod({type, card}) — with the card field an input and the
// PaymentMethod one of Stripe's test ones. It records the key it was given.
const fakeStripeJS = `window.Stripe = function (key) {
  window.stripeKey = key;
  return {
    elements: function () { return { create: function (type) { return { mount: function (sel) {
      var i = document.createElement("input"); i.id = "fake-card"; i.setAttribute("aria-label", "Card number");
      document.querySelector(sel).appendChild(i); } }; } }; },
    createPaymentMethod: function (opts) {
      var n = document.getElementById("fake-card").value;
      if (n !== "4242424242424242") { return Promise.resolve({ error: { message: "Your card number is incomplete." } }); }
      return Promise.resolve({ paymentMethod: { id: "pm_card_visa" } });
    }
  };
};`

// TestBrowser_StripeElements: at a clinic that takes cards with Stripe,
// the payment page loads Stripe.js (a stand-in here), mounts the card
// field, and sends the PaymentMethod Stripe makes, never the card number;
// the server saves the card with Stripe and charges it (stripe-mock, whose
// canned PaymentIntent is not a success, so the page shows the refusal).
func TestBrowser_StripeElements(t *testing.T) {
	browser := chrome(t)
	mock := os.Getenv("TELECLINIC_STRIPE_MOCK_URL")
	if mock == "" {
		t.Skip("TELECLINIC_STRIPE_MOCK_URL is not set: the Stripe payment page test needs stripe-mock (.ci/run starts it)")
	}
	js := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, fakeStripeJS)
	}))
	defer js.Close()
	f := newFixture(t, testenv.Options{StripeJS: js.URL + "/v3/", Config: func(c *app.Config) { c.StripeAPIURL = mock }})
	bg := context.Background()
	admin := f.admin(t)
	if _, err := billing.New(f.e.App.Core()).SetProcessor(bg, admin, billing.ProcessorInput{Processor: "stripe", SecretKey: "sk_test_123", PublishableKey: "pk_test_123"}); err != nil {
		t.Fatal(err)
	}
	cons := []clinic.Consultation{{ID: "1", Description: "15-min Consultation", Duration: 15, Amount: 25, Charge: true, Slots: 1}}
	if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{Consultations: &cons}); err != nil {
		t.Fatal(err)
	}
	patient := separate(t, browser)
	err := chromedp.Do(patient,
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p2Token+"&next=/c/acme/main"),
		chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "A rash"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Join"]`)),
		chromedp.WaitVisible(chromedp.CSS("h1")))
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	if err := chromedp.Do(patient, chromedp.WaitVisible(chromedp.CSS("#fake-card"))); err != nil {
		t.Fatalf("the card field: %v", err)
	}
	key, err := chromedp.Run(patient, chromedp.Evaluate[string](`window.stripeKey`))
	if err != nil || key != "pk_test_123" {
		t.Fatalf("Stripe.js got the key %q (%v)", key, err)
	}
	checkA11y(t, patient, "payment")
	// An unfinished card stays in the page, with Stripe's message.
	err = chromedp.Do(patient,
		chromedp.SendKeys(chromedp.CSS("#fake-card"), "4242"),
		chromedp.Click(chromedp.Search(`//button[starts-with(normalize-space(), "Pay")]`)))
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, patient, "#card-errors", "incomplete")
	err = chromedp.Do(patient,
		chromedp.SendKeys(chromedp.CSS("#fake-card"), "424242424242"),
		chromedp.Click(chromedp.Search(`//button[starts-with(normalize-space(), "Pay")]`)))
	if err != nil {
		t.Fatal(err)
	}
	// stripe-mock's canned PaymentIntent is not a success: the refusal is
	// on the page, in words.
	waitText(t, patient, `main > p.error[role="alert"]`, "card")
	p2 := f.user(t, f.p2Token)
	cards, err := billing.New(f.e.App.Core()).Sources(bg, p2, billing.SourceInput{RoomCode: "main"}, "card")
	if err != nil || len(cards) != 1 || cards[0].Processor != "stripe" || !strings.HasPrefix(cards[0].PaymentMethod, "pm_") {
		t.Fatalf("the card saved with Stripe: %+v %v", cards, err)
	}
	body, _ := chromedp.Run(patient, chromedp.Text(chromedp.CSS("main")))
	if strings.Contains(body, "4242424242424242") {
		t.Fatal("the card number came back to the page")
	}
	vs, _ := f.e.App.ListVisits(bg, p2, app.VisitQuery{})
	if len(vs.Items) != 0 {
		t.Fatalf("an unpaid walk-in joined the queue: %d visits", len(vs.Items))
	}
}

// TestBrowser_PaidAppointment: a patient whose browser is in New York
// books a paid appointment — the room's form, an open time (in New York
// time, saying so), the sandbox payment while the time is held — and sees
// its time in New York time on the visit page, whose calendar file holds
// the instant in UTC; the provider opens the patient's chart from the
// dashboard; each page passes the accessibility check.
func TestBrowser_PaidAppointment(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	admin := f.admin(t)
	on := true
	cons := []clinic.Consultation{{ID: "1", Description: "15-min Consultation", Duration: 15, Amount: 25, Charge: true, Slots: 1}}
	if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{AppointmentEnable: &on, Consultations: &cons}); err != nil {
		t.Fatal(err)
	}
	day := f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02")
	if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	patient := separate(t, browser)
	browserStep(t, patient, "the patient fills the room's form in New York",
		inZone("America/New_York"),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p2Token+"&next=/c/acme/main"),
		chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "A follow-up"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Choose a time"]`)),
		// 09:30 UTC is 04:30 in New York (before its summer time).
		chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Book 4:30 AM"]`)))
	waitText(t, patient, "main", "Times are in New York time")
	checkA11y(t, patient, "open times")
	browserStep(t, patient, "the patient chooses 04:30 and sees it held",
		chromedp.Click(chromedp.CSS(`button[aria-label="Book 4:30 AM"]`)),
		chromedp.WaitVisible(chromedp.Search(`//button[normalize-space()="Pay 25.00 USD"]`)))
	waitText(t, patient, "main", "held for you for ten minutes")
	waitText(t, patient, ".facts", "Wednesday 4 March 2026, 4:30 AM")
	checkA11y(t, patient, "payment of a held time (sandbox)")
	screenshot(t, patient, "pay-held-time")
	browserStep(t, patient, "the patient pays",
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Pay 25.00 USD"]`)),
		chromedp.WaitVisible(chromedp.CSS("#content")))
	waitText(t, patient, ".booked", "Wednesday 4 March 2026, 4:30 AM")
	waitText(t, patient, ".booked", "New York time")
	waitText(t, patient, ".booked", "Paid 25.00 USD")
	checkA11y(t, patient, "a booked visit")
	screenshot(t, patient, "visit-booked")
	atDesktop(t, patient)
	checkA11y(t, patient, "a booked visit, desktop")
	browserStep(t, patient, "back to the phone", chromedp.EmulateViewport(420, 860))
	ics, err := chromedp.Run(patient, chromedp.Evaluate[string](`fetch(document.querySelector('a[href$="calendar.ics"]').href).then(function (r) { return r.text(); })`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(ics, "DTSTART:20260304T093000Z") {
		t.Fatalf("the calendar file: %v\n%s", err, ics)
	}
	browserStep(t, patient, "the patient's visits", chromedp.Navigate(f.e.URL+"/visits"), chromedp.WaitVisible(chromedp.CSS("#coming")))
	waitText(t, patient, "main", "Wed 4 Mar 2026, 4:30 AM")
	checkA11y(t, patient, "visits")
	screenshot(t, patient, "visits")
	p2 := f.user(t, f.p2Token)
	page, err := f.e.App.ListVisits(bg, p2, app.VisitQuery{})
	vs := page.Items
	if err != nil || len(vs) != 1 || vs[0].Visit.Kind != clinic.KindAppointment ||
		time.Unix(vs[0].Visit.Start, 0).UTC().Format("15:04") != "09:30" {
		t.Fatalf("the booked visit: %+v %v", vs, err)
	}

	provider := separate(t, browser)
	err = chromedp.Do(provider,
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#dashboard-live")))
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	clickLive(t, provider, "provider", `#visit-`+strconv.FormatInt(vs[0].Visit.ID, 10)+` a[href^="/providers/patient/"]`)
	if err := chromedp.Do(provider, chromedp.WaitVisible(chromedp.CSS("#emr-h"))); err != nil {
		t.Fatalf("provider: %v", err)
	}
	waitText(t, provider, "h1", "Mallory Other")
	checkA11y(t, provider, "chart")
}

// settled waits until a page with a call has started its camera preview
// (or said why it could not), as a person waits for the page to stop
// moving before they type and click; a page without a call is settled.
func settled(t *testing.T, ctx context.Context) {
	t.Helper()
	waitFor(t, "the page's camera preview starts", func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () {
			if (!document.getElementById("call")) { return true; }
			var v = document.getElementById("local-video");
			return (v && v.videoWidth > 0) || !/Asking/.test(document.getElementById("call-status").textContent) && !!window.teleclinicCall;
		})()`))
		return err == nil && ok
	})
}

// TestBrowser_AdminDay: the clinic admin, on a phone-sized screen, gives
// the room an intake question and a consent and invites a provider from
// /admin; the provider opens the emailed link, chooses a password and
// lands on the dashboard; a patient answers the question and signs the
// consent on the room's form and joins the waiting room. Each page passes
// the accessibility check.
func TestBrowser_AdminDay(t *testing.T) {
	browser := chrome(t)
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.Mail = mailer.Sender() }})
	admin := separate(t, browser)
	browserStep(t, admin, "the admin signs in",
		chromedp.Navigate(f.e.URL+"/admin/signin?clinic=acme"),
		chromedp.SendKeys(chromedp.CSS("#token"), f.clinic.AdminToken),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign in"]`)),
		chromedp.WaitVisible(chromedp.CSS("#providers")))
	browserStep(t, admin, "the admin opens the room",
		chromedp.Navigate(f.e.URL+"/admin/rooms/main"), chromedp.WaitVisible(chromedp.CSS("#q_label_0")))
	checkA11y(t, admin, "room settings")
	browserStep(t, admin, "the admin adds a question and a consent",
		chromedp.SendKeys(chromedp.CSS("#q_label_0"), "Do you have a fever?"),
		chromedp.SetValue(chromedp.CSS("#q_kind_0"), "yesno"),
		chromedp.Click(chromedp.CSS(`input[name="q_required_0"]`)),
		chromedp.SendKeys(chromedp.CSS("#consent_version"), "1"),
		chromedp.SendKeys(chromedp.CSS("#consent_text"), "I agree to be seen by video."),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Save room"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)))

	browserStep(t, admin, "the admin invites a provider",
		chromedp.Navigate(f.e.URL+"/admin"), chromedp.WaitVisible(chromedp.CSS("#providers")),
		chromedp.Click(chromedp.Search(`//summary[normalize-space()="Invite a provider"]`)),
		chromedp.SendKeys(chromedp.CSS("#inv-first"), "Maya"),
		chromedp.SendKeys(chromedp.CSS("#inv-last"), "Medic"),
		chromedp.SendKeys(chromedp.CSS("#inv-email"), "maya@clinic.example"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Send the invitation"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)))
	waitText(t, admin, `section[aria-labelledby="providers"]`, "invited")
	checkA11y(t, admin, "administration with a provider invited")

	f.e.App.DeliverMail(t.Context(), mailer.Sender())
	link := regexp.MustCompile(`https://portal\.teleclinic\.test(/activate\?[^\s]+)`).FindStringSubmatch(mailer.WaitFor(t, 1)[0].Text())
	if link == nil {
		t.Fatalf("no activation link in %s", mailer.Mails()[0].Text())
	}
	provider := separate(t, browser)
	browserStep(t, provider, "the provider opens the link", chromedp.Navigate(f.e.URL+link[1]), chromedp.WaitVisible(chromedp.CSS("#password")))
	checkA11y(t, provider, "choose your password")
	browserStep(t, provider, "the provider chooses a password",
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"),
		chromedp.SendKeys(chromedp.CSS("#password2"), "correct horse battery"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Save and sign in"]`)),
		chromedp.WaitVisible(chromedp.CSS("#queue")))

	patient := separate(t, browser)
	browserStep(t, patient, "the patient opens the room",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p2Token+"&next=/c/acme/main"),
		chromedp.WaitVisible(chromedp.CSS("#consent_name")))
	checkA11y(t, patient, "room with a question and a consent")
	browserStep(t, patient, "the patient answers, signs and joins",
		chromedp.SendKeys(chromedp.CSS("#reason"), "A rash"),
		chromedp.Click(chromedp.CSS(`input[name="q_do_you_have_a_fever"][value="no"]`)),
		chromedp.SendKeys(chromedp.CSS("#consent_name"), "Mallory Other"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Join"]`)),
		chromedp.WaitVisible(chromedp.CSS("#waiting")))
	waitText(t, provider, "#dashboard-live", "Mallory Other")
}

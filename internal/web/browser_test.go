package web_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// chrome starts a headless Chromium for t: Debian's /usr/bin/chromium, or
// the one TELECLINIC_CHROMIUM names. Without one the browser tests skip,
// saying so; CI installs it (.ci/run).
func chrome(t *testing.T) context.Context {
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
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(420, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
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
	if !strings.Contains(thread, "Sent from the visit page.") || !strings.Contains(thread, "Ada Lovelace") {
		t.Fatalf("thread after sending: %q", thread)
	}
	ms, total, err := a.ListMessages(bg, p, v.Visit.ID, app.MessageQuery{})
	if err != nil || total != 1 || ms[0].Content != "Sent from the visit page." {
		t.Fatalf("stored thread: %d messages, %v", total, err)
	}
}

// TestBrowser_GuestWaitingRoom: a guest opens the room's join address in a
// browser, joins as a guest, fills the intake and lands in the waiting
// room behind the patient already waiting; a provider takes an e-consult
// from the dashboard with its Accept button.
func TestBrowser_GuestWaitingRoom(t *testing.T) {
	guest := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	p2 := f.user(t, f.p2Token)
	reason := "Sore throat"
	it, err := f.e.App.CreateIntake(bg, p2, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.AddWalkin(bg, p2, app.WalkinInput{IntakeID: it.ID, RoomCode: "main"}); err != nil {
		t.Fatal(err)
	}

	err = chromedp.Do(guest,
		chromedp.Navigate(f.e.URL+"/c/acme/main"),
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
	status, err := chromedp.Run(guest, chromedp.Text(chromedp.CSS(`.waiting [role="status"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(status, "1 patient before you") {
		t.Fatalf("waiting room says %q", status)
	}

	// The provider's browser: signed in by a link, Accept on the dashboard.
	// A new tab of the same browser: its sign-in replaces the guest's cookie,
	// which the guest's part no longer needs.
	provider, cancel := chromedp.NewContext(guest)
	defer cancel()
	err = chromedp.Do(provider,
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Accept"]`)),
		chromedp.WaitVisible(chromedp.Search(`//button[normalize-space()="Start"]`)))
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	d, err := f.e.App.GetVisit(bg, f.user(t, f.p1Token), f.visitID, false)
	if err != nil || d.Visit.Status != clinic.VisitConfirmed || d.Provider == nil {
		t.Fatalf("the e-consult after Accept: %+v, %v", d, err)
	}
}

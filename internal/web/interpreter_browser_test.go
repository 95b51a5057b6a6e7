//go:build browser

package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// TestBrowser_Interpreter: the patient asked for Spanish on the intake; in
// the call, the provider's page says so and offers the clinic's Spanish
// interpreter first; one click mails her a link; she opens it in her own
// browser, gives her name and joins; every page's tile names her as the
// interpreter, with her language in itself; the visit's facts keep her.
func TestBrowser_Interpreter(t *testing.T) {
	browser := chrome(t)
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{PortalHere: true, Config: func(c *app.Config) { c.Mail = mailer.Sender() }})
	ctx := context.Background()
	a := f.e.App
	admin, err := a.Authenticate(ctx, app.Credentials{AccountCode: "acme", APIToken: f.clinic.AdminToken}, app.NeedAdmin)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []app.InterpreterInput{
		{Name: "Lotus Language Line", Language: "vi", Email: "desk@lotus.example.com", Agency: true},
		{Name: "Ana Ruiz", Language: "es", Email: "ana@example.com"},
	} {
		if _, err := a.AddInterpreter(ctx, admin, in); err != nil {
			t.Fatal(err)
		}
	}
	p1 := f.user(t, f.p1Token)
	v, err := f.e.Store.Read().VisitByID(ctx, p1.Account.ID, f.visitID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateIntake(ctx, p1, v.IntakeID, app.IntakeInput{PreferredLanguage: new("es-MX")}); err != nil {
		t.Fatal(err)
	}
	f.accept(t)
	patient, provider := visitPages(t, browser, f, f.e.URL)
	joinCall(t, patient)
	joinCall(t, provider)
	waitText(t, provider, "#visit-status", "in progress")
	receiving(t, provider, "the provider")

	// The provider's call: the patient's language, its interpreter first.
	waitText(t, provider, "#interpreters", "The patient prefers Mexican Spanish.")
	first, err := chromedp.Run(provider, chromedp.Evaluate[string](`document.querySelector("#interpreters li").textContent`))
	if err != nil || !strings.Contains(first, "Ana Ruiz") || !strings.Contains(first, "Spanish") {
		t.Fatalf("the first interpreter offered: %q %v", first, err)
	}
	checkA11y(t, provider, "provider's call with interpreters")
	browserStep(t, provider, "the provider emails Ana a link",
		chromedp.Click(chromedp.CSS(`#interpreters button[data-via="email"][data-name="Ana Ruiz"]`)))
	waitText(t, provider, "#call-status", "A link is on its way to Ana Ruiz by email")
	screenshot(t, provider, "interpreter-provider")

	a.DeliverMail(ctx, mailer.Sender())
	got := mailer.WaitFor(t, 1)
	link := regexp.MustCompile(`https?://\S+/invite/acme/[0-9a-f]+`).FindString(got[0].Text())
	if got[0].To != "ana@example.com" || link == "" || !strings.Contains(got[0].Text(), "Subject: An interpreter is needed now: Spanish") {
		t.Fatalf("the interpreter's mail: %s %s", got[0].To, got[0].Text())
	}
	// The link names the portal's address; this server is the test's.
	link = f.e.URL + link[strings.Index(link, "/invite/"):]

	interpreter := separate(t, browser)
	browserStep(t, interpreter, "Ana opens her link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#first_name")))
	browserStep(t, interpreter, "Ana gives her name and continues",
		chromedp.SendKeys(chromedp.CSS("#first_name"), "Ana"),
		chromedp.SendKeys(chromedp.CSS("#last_name"), "Ruiz"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Continue"]`)),
		chromedp.WaitVisible(chromedp.CSS("#call-join")))
	joinCall(t, interpreter)
	for who, c := range map[string]context.Context{"the interpreter": interpreter, "the patient": patient, "the provider": provider} {
		receivingFrom(t, c, who, 2)
	}
	waitText(t, patient, ".stage", "Ana Ruiz · español (interpreter)")
	waitText(t, provider, ".stage", "Ana Ruiz · español (interpreter)")
	screenshot(t, patient, "interpreter-patient")

	facts, _, err := a.VisitFacts(ctx, admin, f.visitID)
	if err != nil {
		t.Fatal(err)
	}
	if it := facts.Interpreter(); it == nil || it.Name != "Ana Ruiz" || it.Language != "es" {
		t.Fatalf("the visit's facts: %+v", facts.Participants)
	}
}

//go:build browser

package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/testenv"
)

// TestBrowser_Texts: the admin turns texts on (the sandbox) from /admin;
// the patient, on a phone, says yes to texts on their profile with their
// number, sees it kept, and the pages pass axe and fit the screen.
func TestBrowser_Texts(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t, testenv.Options{PortalHere: true})
	err := chromedp.Do(browser,
		chromedp.Navigate(f.e.URL+"/admin/signin"),
		chromedp.SendKeys(chromedp.CSS("#clinic"), "acme"),
		chromedp.SendKeys(chromedp.CSS("#token"), f.clinic.AdminToken),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign in"]`)),
		chromedp.WaitVisible(chromedp.CSS("#texts")),
		chromedp.Click(chromedp.Search(`//section[@aria-labelledby="texts"]//summary`)),
		chromedp.SetValue(chromedp.CSS("#sms-provider"), "sandbox"),
		chromedp.SendKeys(chromedp.CSS("#sms-quiet-start"), "21:00"),
		chromedp.SendKeys(chromedp.CSS("#sms-quiet-end"), "08:00"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Save the sender"]`)),
		chromedp.WaitVisible(chromedp.CSS(".notice")))
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	section, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(`section[aria-labelledby="texts"]`)))
	if err != nil || !strings.Contains(section, "Sandbox: texts are answered") || !strings.Contains(section, "/sms/twilio/acme/inbound") {
		t.Fatalf("the admin's texts section: %q %v", section, err)
	}

	pat := separate(t, browser)
	err = chromedp.Do(pat,
		chromedp.Navigate(f.e.URL+"/api_v3/auth?sso_token="+f.p1Token+"&next=/profile"),
		chromedp.WaitVisible(chromedp.CSS("#texts")),
		chromedp.SendKeys(chromedp.CSS("#phone"), "415 555"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Text me about my visits"]`)),
		chromedp.WaitVisible(chromedp.CSS("#phone-error")))
	if err != nil {
		t.Fatalf("a short number: %v", err)
	}
	checkA11y(t, pat, "profile texts refused")
	err = chromedp.Do(pat,
		chromedp.SetValue(chromedp.CSS("#phone"), "(415) 555-0134"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Text me about my visits"]`)),
		chromedp.WaitVisible(chromedp.CSS(".notice")))
	if err != nil {
		t.Fatalf("the yes: %v", err)
	}
	kept, err := chromedp.Run(pat, chromedp.Text(chromedp.CSS(`section[aria-labelledby="texts"]`)))
	if err != nil || !strings.Contains(kept, "Texts about your visits go to +14155550134") {
		t.Fatalf("the yes, kept: %q %v", kept, err)
	}
	checkA11y(t, pat, "profile texts")
	fitsScreen(t, pat, "profile texts")
	screenshot(t, pat, "profile-texts")
}

//go:build browser

package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// inZone makes the page's browser keep time in zone, as a person's
// computer in that place does.
func inZone(zone string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	})
}

// TestBrowser_ScheduleInTheProvidersZone: a provider in Chicago who never
// chose a zone opens the dashboard on a desktop; it says the times are in
// America/Chicago, and the 09:00–10:00 they publish is 09:00 in Chicago
// (15:00 UTC), which a patient on a phone in Madrid is offered as 16:00
// and 16:30, in Madrid time, saying so. The provider's profile page then
// holds Chicago, saved by the publishing.
func TestBrowser_ScheduleInTheProvidersZone(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	on := true
	cons := []clinic.Consultation{{ID: "1", Description: "15-min Consultation", Duration: 30, Slots: 1}}
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on, Consultations: &cons}); err != nil {
		t.Fatal(err)
	}
	// The test clock is Monday 2 March 2026, 09:00 UTC: Wednesday is
	// before either place moves its clocks.
	day := f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02")

	provider := separate(t, browser)
	atDesktop(t, provider)
	browserStep(t, provider, "the provider opens the dashboard in Chicago",
		inZone("America/Chicago"),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#slot-zone")))
	waitText(t, provider, "#slot-zone", "Times are in America/Chicago")
	browserStep(t, provider, "the provider publishes 09:00 to 10:00",
		chromedp.SetValue(chromedp.CSS("#slot-from"), day),
		chromedp.SetValue(chromedp.CSS("#slot-start"), "09:00"),
		chromedp.SetValue(chromedp.CSS("#slot-end"), "10:00"),
		chromedp.SetValue(chromedp.CSS("#slot-length"), "30"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Publish"]`)),
		chromedp.WaitVisible(chromedp.Search(`//*[contains(., "Your slots are published.")]`)))
	checkA11y(t, provider, "slots published, in the provider's zone")
	screenshot(t, provider, "slots-published-chicago")
	prov := f.user(t, f.providerToken)
	v, err := f.e.App.ListSlots(bg, prov, app.SlotQuery{RoomCode: "main", Start: f.e.Clock.Now().Unix(), End: f.e.Clock.Now().Add(7 * 24 * time.Hour).Unix()})
	if err != nil || len(v.Slots) != 2 || time.Unix(v.Slots[0].Start, 0).UTC().Format("15:04") != "15:00" {
		t.Fatalf("the published slots: %+v %v", v, err)
	}
	if prov.User.Timezone != "America/Chicago" {
		t.Fatalf("the provider's saved zone: %q", prov.User.Timezone)
	}

	patient := separate(t, browser)
	browserStep(t, patient, "the patient chooses a time in Madrid",
		inZone("Europe/Madrid"),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p2Token+"&next=/c/acme/main"),
		chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "A follow-up"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Choose a time"]`)),
		// An en-US browser: the 12-hour clock.
		chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Book 4:00 PM"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Book 4:30 PM"]`)))
	waitText(t, patient, "main", "Times are in Madrid time")
	checkA11y(t, patient, "open times in the patient's zone")
	screenshot(t, patient, "open-times-madrid")

	browserStep(t, provider, "the provider opens their profile",
		chromedp.Navigate(f.e.URL+"/profile"),
		chromedp.WaitVisible(chromedp.CSS("#timezone")))
	zone, err := chromedp.Run(provider, chromedp.Evaluate[string](`document.getElementById("timezone").value`))
	if err != nil || zone != "America/Chicago" {
		t.Fatalf("the profile's zone field: %q %v", zone, err)
	}
	checkA11y(t, provider, "profile")
	screenshot(t, provider, "profile")
	if body, err := chromedp.Run(provider, chromedp.Text(chromedp.CSS("main"))); err != nil || strings.Contains(body, "Your browser is in") {
		t.Fatalf("the profile says the browser differs from a zone it shares: %v\n%s", err, body)
	}
}

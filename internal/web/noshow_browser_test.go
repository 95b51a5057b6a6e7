//go:build browser

package web_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
)

// TestBrowser_NoShow: ten minutes after a booked visit's start, with its
// patient not come, the provider's dashboard says so and offers to mark
// the no-show; marked, the visit moves to the day's missed list, the
// room's fee is charged to the patient's saved card, and the patient's
// page (on a phone) says they missed it, what it cost and how to book
// again. The admin's numbers count it.
func TestBrowser_NoShow(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	admin := f.admin(t)
	on, fee := true, 20.0
	if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{AppointmentEnable: &on, Appointments: &app.AppointmentPatch{NoShowFee: &fee}}); err != nil {
		t.Fatal(err)
	}
	day := f.e.Clock.Now().UTC().Format("2006-01-02")
	if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "09:30", TimeEnd: "10:30", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	pat := f.user(t, f.p1Token)
	if _, err := billing.New(f.e.App.Core()).AddSource(bg, pat, billing.SourceInput{RoomCode: "main"}, "card", "tok_visa"); err != nil {
		t.Fatal(err)
	}
	reason := "A follow-up"
	it, err := f.e.App.CreateIntake(bg, pat, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason, Type: new("2")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC).Unix()
	d, err := f.e.App.Book(bg, pat, app.BookInput{SlotStart: start, SlotEnd: start + 1800, RoomCode: "main", Type: "2", IntakeID: it.ID})
	if err != nil {
		t.Fatal(err)
	}
	visit := strconv.FormatInt(d.Visit.ID, 10)
	f.e.Clock.Advance(40 * time.Minute) // 09:40: ten minutes late
	// Sign-in links of 09:00 have expired: new ones.
	f.providerToken, f.p1Token = f.sso(t, clinic.UserProvider, "dr-1", "Grace", "Hopper"), f.sso(t, clinic.UserMember, "pat-1", "Ada", "Lovelace")

	provider := separate(t, browser)
	atDesktop(t, provider)
	browserStep(t, provider, "the provider opens the dashboard",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#noshow-"+visit)))
	waitText(t, provider, "#visit-"+visit, "not arrived")
	checkA11y(t, provider, "dashboard, a patient not arrived")
	screenshot(t, provider, "dashboard-not-arrived")
	clickLive(t, provider, "provider", "#noshow-"+visit)
	browserStep(t, provider, "the no-show is in the day's missed list", chromedp.WaitVisible(chromedp.CSS("#missed-list #visit-"+visit)))
	waitText(t, provider, "#missed-list", "missed")
	if d, err := f.e.App.GetVisit(bg, admin, d.Visit.ID, false); err != nil || d.Visit.Status != clinic.VisitCancelled || d.Visit.Outcome != clinic.OutcomeNoShow {
		t.Fatalf("the marked visit: %+v %v", d, err)
	}
	if n := billing.New(f.e.App.Core()).ChargeFees(bg); n != 1 {
		t.Fatalf("%d fees charged, want 1", n)
	}

	patient := separate(t, browser)
	browserStep(t, patient, "the patient opens the visit on a phone",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next=/visits/start/"+visit),
		chromedp.WaitVisible(chromedp.CSS("#after")))
	waitText(t, patient, "#after", "You missed this visit")
	waitText(t, patient, "#visit-fee", "A no-show fee of 20.00 USD was charged to your card.")
	waitText(t, patient, "#visit-status", "missed")
	checkA11y(t, patient, "a missed visit")
	fitsScreen(t, patient, "a missed visit")
	screenshot(t, patient, "visit-missed")

	admin2 := separate(t, browser)
	atDesktop(t, admin2)
	browserStep(t, admin2, "the admin opens the clinic's numbers",
		chromedp.Navigate(f.e.URL+"/admin/signin"),
		chromedp.SendKeys(chromedp.CSS("#clinic"), "acme"),
		chromedp.SendKeys(chromedp.CSS("#token"), f.clinic.AdminToken),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign in"]`)),
		chromedp.WaitVisible(chromedp.CSS("#numbers-link")),
		chromedp.Click(chromedp.CSS("#numbers-link")),
		chromedp.WaitVisible(chromedp.CSS("#numbers-total")))
	waitText(t, admin2, "#numbers-total", "1 (100.0%)")
	checkA11y(t, admin2, "the clinic's numbers")
	screenshot(t, admin2, "admin-numbers")
}

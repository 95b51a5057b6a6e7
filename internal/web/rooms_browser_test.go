//go:build browser

package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowser_ManyRooms: a clinic of 60 public rooms, as a patient sees its
// home on a phone (the first 50 and More rooms) and as its admin sees the
// rooms and the invitation a page at a time; axe finds nothing serious.
func TestBrowser_ManyRooms(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	main := f.mainRoom(t)
	for i := range 60 {
		code := fmt.Sprintf("r-%03d", i)
		if _, err := f.e.Store.DB().Exec(f.e.Store.Rebind(`INSERT INTO rooms (account_id, code, slug, name, domain, active, settings, created, modified)
			SELECT account_id, ?, ?, ?, domain, 1, ?, 1, 1 FROM rooms WHERE id = ?`), code, code, fmt.Sprintf("Dermatology %02d", i),
			`{"public_access_room":true,"subtitle":"Skin, hair and nails"}`, main); err != nil {
			t.Fatal(err)
		}
	}
	patient := separate(t, browser)
	browserStep(t, patient, "a patient opens the clinic's home",
		chromedp.Navigate(f.e.URL+"/u/acme"), chromedp.WaitVisible(chromedp.Search(`//a[normalize-space()="More rooms"]`)))
	fitsScreen(t, patient, "the clinic's home")
	checkA11y(t, patient, "the clinic's home")
	screenshot(t, patient, "clinic-home")
	browserStep(t, patient, "the patient goes on to the other rooms",
		chromedp.Click(chromedp.Search(`//a[normalize-space()="More rooms"]`)),
		chromedp.WaitVisible(chromedp.Search(`//a[normalize-space()="The first rooms"]`)))
	waitText(t, patient, "main", "Dermatology 59")
	checkA11y(t, patient, "the clinic's home, more rooms")

	admin := separate(t, browser)
	browserStep(t, admin, "the admin signs in",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(f.e.URL+"/admin/signin?clinic=acme"),
		chromedp.SendKeys(chromedp.CSS("#token"), f.clinic.AdminToken),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign in"]`)),
		chromedp.WaitVisible(chromedp.Search(`//a[normalize-space()="More rooms"]`)),
		chromedp.Click(chromedp.Search(`//summary[normalize-space()="Invite a provider"]`)),
		chromedp.WaitVisible(chromedp.CSS("#inv-first")))
	checkA11y(t, admin, "administration with its rooms in pages")
	screenshot(t, admin, "admin-rooms")
	browserStep(t, admin, "the admin opens a room's form",
		chromedp.Navigate(f.e.URL+"/admin/rooms/main"), chromedp.WaitVisible(chromedp.CSS("#contact_phone")))
	fitsScreen(t, admin, "the room's form")
	checkA11y(t, admin, "the room's form")
	screenshot(t, admin, "admin-room-form")
	browserStep(t, admin, "the room's form on a phone", chromedp.EmulateViewport(420, 860))
	fitsScreen(t, admin, "the room's form on a phone")
}

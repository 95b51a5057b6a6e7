//go:build browser

package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
)

// TestBrowser_Superbill: after a paid video visit whose patient said at
// check-in they were at home, the patient, on a phone, follows the visit
// page's link to their superbill: the provider's NPI, place of service
// 10, the diagnosis and the service with its modifiers (the rule set's
// 95), what was paid; the page passes axe and fits the screen, and its
// PDF link answers a PDF.
func TestBrowser_Superbill(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	admin := f.admin(t)
	cons := []clinic.Consultation{{ID: "1", Description: "Video visit", Duration: 15, Amount: 40, Charge: true}}
	if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{Consultations: &cons}); err != nil {
		t.Fatal(err)
	}
	prov, pat := f.user(t, f.providerToken), f.user(t, f.p1Token)
	npi, ny := "1245319599", "NY"
	if _, err := f.e.App.UpdateMe(bg, prov, app.ProfileUpdate{NPI: &npi, State: &ny}); err != nil {
		t.Fatal(err)
	}
	prov = f.user(t, f.providerToken) // with the state the call records
	b := billing.New(f.e.App.Core())
	if _, err := b.AddSource(bg, pat, billing.SourceInput{RoomCode: "main"}, "card", "tok_visa"); err != nil {
		t.Fatal(err)
	}
	reason := "A cough"
	it, err := f.e.App.CreateIntake(bg, pat, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason, Type: new("1"), Consultation: new("1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ProcessInvoice(bg, pat, billing.InvoiceInput{IntakeID: it.ID, CreateInvoice: true}); err != nil {
		t.Fatal(err)
	}
	d, err := f.e.App.AddWalkin(bg, pat, app.WalkinInput{IntakeID: it.ID, RoomCode: "main"})
	if err != nil {
		t.Fatal(err)
	}
	id := d.Visit.ID
	if _, err := f.e.App.CheckIn(bg, pat, id, app.CheckInInput{State: "NY", AtHome: new(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.TakeVisit(bg, prov, id); err != nil {
		t.Fatal(err)
	}
	c := calls.New(f.e.App.Core())
	for _, p := range []*clinic.Principal{prov, pat} {
		if _, err := c.Join(bg, p, id, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.SetClaimCodes(bg, prov, id, billing.ClaimCodes{Diagnoses: []string{"J06.9"}, Procedures: []billing.ClaimProcedure{{Code: "G2252"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.MoveVisit(bg, prov, id, app.ActClose, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}

	patient := separate(t, browser)
	visit := strconv.FormatInt(id, 10)
	browserStep(t, patient, "the patient opens the visit on a phone",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next=/visits/start/"+visit),
		chromedp.WaitVisible(chromedp.CSS("#superbill-link")))
	browserStep(t, patient, "the patient opens the superbill",
		chromedp.Click(chromedp.CSS("#superbill-link")),
		chromedp.WaitVisible(chromedp.CSS("#superbill-h")))
	waitText(t, patient, "#sb-npi", "1245319599")
	waitText(t, patient, "#sb-pos", "10 — Telehealth provided in the patient's home")
	waitText(t, patient, "#sb-lines", "G2252")
	waitText(t, patient, "#sb-lines", "95")
	waitText(t, patient, "#sb-paid", "40.00 USD")
	checkA11y(t, patient, "superbill")
	fitsScreen(t, patient, "superbill")
	screenshot(t, patient, "superbill")
	head, err := chromedp.Run(patient, chromedp.Evaluate[string](`fetch(document.querySelector('#superbill-pdf').href).then(function (r) {
		return r.text().then(function (b) { return r.headers.get('Content-Type') + ' ' + b.slice(0, 5); }); })`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(head, "application/pdf %PDF-") {
		t.Fatalf("the PDF link: %q %v", head, err)
	}
}

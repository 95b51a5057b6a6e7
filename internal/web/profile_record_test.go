package web_test

import (
	"context"
	"html"
	"net/url"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// TestPortal_PatientReadsTheirRecord: a patient's profile shows the
// consents they signed (the text they signed) and who opened their
// record, their provider by name among them; a provider's profile shows
// neither.
func TestPortal_PatientReadsTheirRecord(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{Consent: &clinic.ConsentText{Version: "2026-1", Text: "I agree to be seen by video."}}); err != nil {
		t.Fatal(err)
	}
	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, "/c/acme/main", nil)
	form := url.Values{"reason_for_visit": {"Cough"}, "terms": {"1"}, "kind": {"econsult"}, "consent_name": {"Ada Lovelace"}, "consent_version": {"2026-1"}}
	visitFrom(t, f, pat.post("/c/acme/main/intake", form))
	// The provider takes the fixture's visit and opens the patient's chart.
	f.accept(t)
	prov := newBrowser(t, f.e)
	f.redirectLogin(t, prov, f.providerToken, "/visits", nil)
	if pg := prov.get("/providers/patient/" + itoa(f.user(t, f.p1Token).User.ID)); pg.Status != 200 {
		t.Fatalf("the chart: %d", pg.Status)
	}

	page := html.UnescapeString(pat.get("/profile").Body)
	_, consents, _ := strings.Cut(page, `<h2 id="consents">`)
	consents, _, _ = strings.Cut(consents, "</section>")
	if !strings.Contains(consents, "Version 2026-1") || !strings.Contains(consents, "as Ada Lovelace") || !strings.Contains(consents, "I agree to be seen by video.") {
		t.Fatalf("the consents: %s", consents)
	}
	_, accesses, _ := strings.Cut(page, `<h2 id="accesses">`)
	accesses, _, _ = strings.Cut(accesses, "</section>")
	if !strings.Contains(accesses, "<td>Grace Hopper</td><td><code>emr.read</code>") {
		t.Fatalf("the accesses: %s", accesses)
	}
	if pg := prov.get("/profile"); strings.Contains(pg.Body, `id="consents"`) || strings.Contains(pg.Body, `id="accesses"`) {
		t.Fatalf("a provider's profile shows a patient's record parts")
	}
}

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

// TestPortal_RoomTexts: the admin writes a room's words in Spanish on the
// room's form (a choice list of another length is refused, beside the
// rest as typed); a patient reading the portal in Spanish reads the room,
// its question and its consent in Spanish, answers with the room's own
// choice, and signs the Spanish text; once the room's consent has a new
// version, the form says its Spanish text is of the old one and patients
// sign the room's own.
func TestPortal_RoomTexts(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	admin := f.admin(t)
	setConsent := func(version, text string) {
		t.Helper()
		if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{Consent: &clinic.ConsentText{Version: version, Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	qs := []clinic.IntakeQuestion{{ID: "smoker", Label: "Do you smoke?", Kind: clinic.QuestionChoice, Choices: []string{"Never", "Former", "Current"}, Required: true}}
	if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{IntakeQuestions: &qs}); err != nil {
		t.Fatal(err)
	}
	setConsent("v1", "I agree to be seen by video.")

	adm := newBrowser(t, f.e)
	f.adminSignIn(t, adm)
	form := html.UnescapeString(adm.get("/admin/rooms/main").Body)
	if !strings.Contains(form, "<summary>In Spanish</summary>") || !strings.Contains(form, `The question “Do you smoke?”`) || !strings.Contains(form, `name="t_es_q_smoker_choices"`) {
		t.Fatalf("the Spanish part of the form: %s", form)
	}
	post := func(choices string) *page {
		return adm.post("/admin/rooms/main", url.Values{"name": {"Main Room"}, "active": {"1"}, "t_es_name": {"Sala principal"},
			"t_es_q_smoker_label": {"¿Fuma?"}, "t_es_q_smoker_choices": {choices}, "t_es_consent": {"Acepto que me atiendan por video."},
			"t_es_email_note": {"Tenga a mano su tarjeta del seguro."}})
	}
	if pg := post("Nunca, Sí"); pg.Status != 400 || !strings.Contains(pg.Body, "each of the question&#39;s 3 choices") || !strings.Contains(pg.Body, `value="Sala principal"`) {
		t.Fatalf("a short choice list: %d %s", pg.Status, pg.Body)
	}
	if pg := post("Nunca, Antes, Ahora"); pg.Status != 303 {
		t.Fatalf("save: %d %s", pg.Status, pg.Body)
	}
	d, err := f.e.App.GetRoom(bg, admin, "main")
	if err != nil {
		t.Fatal(err)
	}
	if es := d.Room.Settings.Translations["es"]; es.Name != "Sala principal" || es.ConsentVersion != "v1" || es.Questions["smoker"].Choices[1] != "Antes" {
		t.Fatalf("stored: %+v", es)
	}

	// The patient reading in Spanish.
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/c/acme/main", nil)
	if room := html.UnescapeString(b.get("/c/acme/main").Body); !strings.Contains(room, "<h1>Main Room</h1>") {
		t.Fatalf("in English: %s", room)
	}
	b.get("/lang/es?next=%2Fvisits")
	room := html.UnescapeString(b.get("/c/acme/main").Body)
	if !strings.Contains(room, "<h1>Sala principal</h1>") || !strings.Contains(room, "¿Fuma?") || !strings.Contains(room, `<option value="Former">Antes</option>`) ||
		!strings.Contains(room, "Acepto que me atiendan por video.") {
		t.Fatalf("in Spanish: %s", room)
	}
	sign := func(version string) string {
		t.Helper()
		pg := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"Tos"}, "terms": {"1"}, "kind": {"econsult"}, "q_smoker": {"Former"},
			"consent_name": {"Ada Lovelace"}, "consent_version": {version}})
		d := visitFrom(t, f, pg)
		if d.Intake.Custom[clinic.AnswerKey("smoker")] != "Former" {
			t.Fatalf("the answer kept: %v", d.Intake.Custom)
		}
		cs, err := f.e.App.Consents(bg, admin, d.Visit.MemberID)
		if err != nil || len(cs) == 0 {
			t.Fatalf("consents: %v", err)
		}
		return cs[0].Text
	}
	if got := sign("v1"); got != "Acepto que me atiendan por video." {
		t.Fatalf("signed: %q", got)
	}

	// A new version: the Spanish text of v1 is not signed for it.
	setConsent("v2", "I agree to be seen by video or phone.")
	if form := adm.get("/admin/rooms/main").Body; !strings.Contains(form, "was written for version v1") {
		t.Fatalf("the stale consent's notice: %s", form)
	}
	if room := html.UnescapeString(b.get("/c/acme/main").Body); !strings.Contains(room, "I agree to be seen by video or phone.") || strings.Contains(room, "Acepto") {
		t.Fatalf("the room's own consent in force: %s", room)
	}
	if got := sign("v2"); got != "I agree to be seen by video or phone." {
		t.Fatalf("signed: %q", got)
	}
}

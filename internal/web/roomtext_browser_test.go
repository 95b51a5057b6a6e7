//go:build browser

package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// TestBrowser_RoomInSpanish: the admin opens a room's Spanish words on its
// form; a patient on a phone reading the portal in Spanish finds the
// room's name, its question and its consent in Spanish, the languages the
// clinic has interpreters of first, sends the form, and the intake keeps
// Spanish as their language and the Spanish consent as signed.
func TestBrowser_RoomInSpanish(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	ctx := context.Background()
	admin := f.admin(t)
	qs := []clinic.IntakeQuestion{{ID: "smoker", Label: "Do you smoke?", Kind: clinic.QuestionChoice, Choices: []string{"Never", "Former", "Current"}, Required: true}}
	texts := map[string]clinic.RoomText{"es": {Name: "Sala principal", Subtitle: "Visitas por video el mismo día",
		Questions: map[string]clinic.QuestionWording{"smoker": {Label: "¿Fuma?", Choices: []string{"Nunca", "Antes", "Ahora"}}},
		Consent:   "Acepto que me atiendan por video."}}
	if _, err := f.e.App.UpdateRoom(ctx, admin, "main", app.RoomUpdate{IntakeQuestions: &qs,
		Consent: &clinic.ConsentText{Version: "v1", Text: "I agree to be seen by video."}, Translations: &texts}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.AddInterpreter(ctx, admin, app.InterpreterInput{Name: "Hmong Link", Language: "hmn", Email: "desk@hmong.example.com"}); err != nil {
		t.Fatal(err)
	}

	adm := separate(t, browser)
	browserStep(t, adm, "the admin opens the room's Spanish words",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(f.e.URL+"/admin/signin?clinic=acme"),
		chromedp.SendKeys(chromedp.CSS("#token"), f.clinic.AdminToken),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Sign in"]`)),
		chromedp.WaitVisible(chromedp.CSS("#interpreters")),
		chromedp.Navigate(f.e.URL+"/admin/rooms/main"),
		chromedp.Click(chromedp.Search(`//summary[normalize-space()="In Spanish"]`)),
		chromedp.WaitVisible(chromedp.CSS("#t_es_q_smoker_choices")))
	fitsScreen(t, adm, "the room's form with its Spanish words")
	checkA11y(t, adm, "the room's form with its Spanish words")
	screenshot(t, adm, "room-spanish-words")

	pat := separate(t, browser)
	browserStep(t, pat, "the patient opens the room in Spanish on a phone",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.p1Token+"&next=/c/acme/main"),
		chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.Navigate(f.e.URL+"/lang/es?next=%2Fc%2Facme%2Fmain"),
		chromedp.WaitVisible(chromedp.CSS("#q_smoker")))
	waitText(t, pat, "h1", "Sala principal")
	waitText(t, pat, "main", "Acepto que me atiendan por video.")
	options, err := chromedp.Run(pat, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#preferred_language option")).slice(0, 3).map(o => o.textContent)`))
	if err != nil || len(options) != 3 || options[0] != "español" || !strings.HasPrefix(options[1], "Hmong") {
		t.Fatalf("the languages offered: %q %v", options, err)
	}
	fitsScreen(t, pat, "the room in Spanish")
	checkA11y(t, pat, "the room in Spanish")
	screenshot(t, pat, "room-in-spanish")
	browserStep(t, pat, "the patient answers and sends it as a message",
		chromedp.SendKeys(chromedp.CSS("#reason"), "Tos desde hace una semana"),
		chromedp.SetValue(chromedp.CSS("#q_smoker"), "Former"),
		chromedp.SendKeys(chromedp.CSS("#consent_name"), "Ada Lovelace"),
		chromedp.Click(chromedp.CSS(`input[name="terms"]`)),
		chromedp.Click(chromedp.CSS(`button[value="econsult"]`)),
		chromedp.WaitVisible(chromedp.CSS("#visit-live")))

	p1 := f.user(t, f.p1Token)
	cs, err := f.e.App.Consents(ctx, admin, p1.User.ID)
	if err != nil || len(cs) != 1 || cs[0].Text != "Acepto que me atiendan por video." {
		t.Fatalf("the consent signed: %+v %v", cs, err)
	}
	list, err := f.e.App.ListVisits(ctx, p1, app.VisitQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var it *clinic.Intake
	for _, d := range list.Items {
		if d.Intake != nil && d.Intake.ReasonForVisit == "Tos desde hace una semana" {
			it = d.Intake
		}
	}
	if it == nil || it.Custom[app.PreferredLanguageKey] != "es" || it.Custom[clinic.AnswerKey("smoker")] != "Former" {
		t.Fatalf("the intake: %+v", it)
	}
}

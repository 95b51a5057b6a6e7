//go:build browser

package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// inSpanish makes ctx's tab a browser set to Spanish (Mexico): its
// Accept-Language and navigator.language.
func inSpanish(t *testing.T, ctx context.Context) {
	t.Helper()
	ua, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "es-MX,es"})
		return err
	})); err != nil {
		t.Fatal(err)
	}
}

// TestBrowser_Spanish: a patient whose phone is set to Spanish opens the
// visit, and everything the page and its script say is Spanish: the
// device check's result, the call's status as they join and as the
// provider (an English browser) joins, with the provider's name put into
// the sentence. No English text of the catalog is on the page; axe finds
// nothing serious. The footer's switch then draws the page in English.
func TestBrowser_Spanish(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	f.accept(t)
	english := englishTexts(t)
	patient, provider := separate(t, browser), separate(t, browser)
	inSpanish(t, patient)
	openVisit(t, patient, f.e.URL, f.p1Token, f.visitID)
	openVisit(t, provider, f.e.URL, f.providerToken, f.visitID)

	waitText(t, patient, "#call-status", "Su cámara y su micrófono funcionan")
	joinCall(t, patient)
	waitText(t, patient, "#call-status", "Está en la llamada. Su profesional aparecerá aquí cuando se una.")
	joinCall(t, provider)
	waitText(t, patient, "#call-status", "Conectado con ")
	waitText(t, provider, "#call-status", "Connected with ") // the provider's browser is English

	lang, err := chromedp.Run(patient, chromedp.Evaluate[string](`document.documentElement.lang`))
	if err != nil || lang != "es" {
		t.Fatalf("the page's lang: %q %v", lang, err)
	}
	text, err := chromedp.Run(patient, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range english {
		if strings.Contains(e, " ") && strings.Contains(text, e) {
			t.Errorf("English left on the Spanish visit page: %q", e)
		}
	}
	for _, want := range []string{"Videollamada", "Mensajes", "Salir de la llamada", "Silenciar"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Spanish visit page has no %q", want)
		}
	}
	checkA11y(t, patient, "visit in Spanish")
	screenshot(t, patient, "visit-spanish")

	browserStep(t, patient, "the patient switches to English",
		chromedp.Click(chromedp.CSS(`footer a[lang="en"]`)),
		chromedp.WaitVisible(chromedp.CSS(`footer a[lang="es"]`)))
	waitText(t, patient, "#call-title", "Video call")
	waitText(t, patient, "h1", "Visit in")
}

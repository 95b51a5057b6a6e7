package web_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"teleclinic/internal/app"
	"teleclinic/internal/locale"
)

// TestPortal_Spanish: a patient whose browser asks for Spanish goes
// through a clinic's day — the clinic's page, a room with a question and
// a consent, a refusal, the times to book, the booked visit, the list of
// visits, a guest's way in, the waiting room, an error page — and no page
// holds an English text of the catalog (nor a visible word of one in an
// attribute a screen reader reads). The language switch moves a browser
// to English and back; the provider's dashboard stays English.
func TestPortal_Spanish(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	on := true
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on}); err != nil {
		t.Fatal(err)
	}
	admin := newBrowser(t, f.e)
	f.adminSignIn(t, admin)
	if pg := admin.post("/admin/rooms/main", url.Values{"name": {"Sala principal"}, "active": {"1"}, "walkin": {"1"}, "appointments": {"1"}, "guest_login": {"1"}, "public_access": {"1"},
		"q_label_0": {"¿Tiene fiebre?"}, "q_kind_0": {"yesno"}, "q_required_0": {"1"},
		"consent_version": {"2026-1"}, "consent_text": {"Acepto ser atendido por video."}}); pg.Status != 303 {
		t.Fatalf("the room's form: %d %s", pg.Status, pg.Body)
	}
	day := f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02") // 2026-03-04, a Wednesday
	if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	english := englishTexts(t)

	guest := newBrowser(t, f.e)
	guest.lang = "es-MX,es;q=0.9,en;q=0.5"
	spanish(t, english, "signin", guest.get("/signin"), "Código de la clínica")
	spanish(t, english, "clinic", guest.get("/u/acme"), "Sala principal")
	spanish(t, english, "room as a guest", guest.get("/c/acme/main"), "Entrar como invitado")
	spanish(t, english, "an unknown invitation", guest.get("/invite/acme/not-an-invite"), "Algo no va bien")

	pat := newBrowser(t, f.e)
	pat.lang = "es-MX,es;q=0.9,en;q=0.5"
	f.redirectLogin(t, pat, f.p1Token, "/c/acme/main", nil)
	spanish(t, english, "not found", pat.get("/visits/start/999999"), "Algo no va bien", "Ir a sus consultas")
	spanish(t, english, "room", pat.get("/c/acme/main"), "Díganos por qué viene", "Consentimiento (versión 2026-1)", "Sí")
	form := url.Values{"reason_for_visit": {"Tos"}, "terms": {"1"}, "kind": {"appointment"}, "q_tiene_fiebre": {"yes"}, "consent_version": {"2026-1"}}
	refused := pat.post("/c/acme/main/intake", form)
	if refused.Status != 400 {
		t.Fatalf("an intake without the signature: %d", refused.Status)
	}
	spanish(t, english, "a refusal", refused, "Revíselo y envíelo de nuevo")
	form.Set("consent_name", "Ada Lovelace")
	pg := pat.post("/c/acme/main/intake", form)
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
		t.Fatalf("intake: %d %s", pg.Status, pg.Location)
	}
	bookPath := pg.Location
	spanish(t, english, "times", pat.get(bookPath), "miércoles, 4 de marzo de 2026", `aria-label="Reservar a las 09:00"`)
	start := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC).Unix()
	booked := pat.post(bookPath, url.Values{"slot_start": {itoa(start)}, "slot_end": {itoa(start + 1800)}})
	if booked.Status != 303 {
		t.Fatalf("book: %d %s", booked.Status, booked.Body)
	}
	visit := spanish(t, english, "the booked visit", pat.get(booked.Location), "miércoles, 4 de marzo de 2026, 09:00", "Añadir al calendario", "Cancelar esta cita", "Unirse a la llamada", "reservada")
	if !strings.Contains(visit.Body, `<script src="/i18n/es.js" defer></script>`) {
		t.Error("the visit page does not load the scripts' Spanish")
	}
	spanish(t, english, "visits", pat.get("/visits"), "Sus consultas", "Próximas", "mié 4 mar 2026, 09:00")
	if ics := pat.get(booked.Location + "/calendar.ics"); !strings.Contains(ics.Body, "SUMMARY:Consulta por video: Sala principal") {
		t.Errorf("the calendar file: %s", ics.Body)
	}

	// A guest in the waiting room.
	if pg := guest.post("/c/acme/main/guest", url.Values{"first_name": {"Gia"}, "last_name": {"Invitada"}}); pg.Status != 303 {
		t.Fatalf("guest join: %d", pg.Status)
	}
	walkin := guest.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"Dolor"}, "terms": {"1"}, "kind": {"walkin"}, "q_tiene_fiebre": {"no"},
		"consent_version": {"2026-1"}, "consent_name": {"Gia Invitada"}})
	if walkin.Status != 303 {
		t.Fatalf("walk-in: %d %s", walkin.Status, walkin.Body)
	}
	spanish(t, english, "the waiting room", guest.get(walkin.Location), "Sala de espera", "Mantenga esta página abierta")
	// A refusal of the rules, translated as the catalog holds it.
	if pg := guest.postJSON(walkin.Location+"/call/join", "{}"); pg.Status != 409 || !strings.Contains(pg.Body, "Ningún profesional ha tomado todavía esta consulta") {
		t.Errorf("a join before a provider took the visit: %d %s", pg.Status, pg.Body)
	}

	// The scripts' texts.
	js := pat.get("/i18n/es.js")
	if js.Status != 200 || !strings.HasPrefix(js.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(js.Body, `"You are in the call.":"Está en la llamada."`) {
		t.Errorf("/i18n/es.js: %d %s %.200s", js.Status, js.Header.Get("Content-Type"), js.Body)
	}
	if pg := pat.get("/i18n/xx.js"); pg.Status != 404 {
		t.Errorf("/i18n/xx.js: %d", pg.Status)
	}

	// The switch: to English and back, and nowhere but this site.
	sw := pat.get("/lang/en?next=" + url.QueryEscape("/visits"))
	if sw.Status != 303 || sw.Location != "/visits" {
		t.Fatalf("switch to English: %d %s", sw.Status, sw.Location)
	}
	en := pat.get("/visits")
	if !strings.Contains(en.Body, `<html lang="en"`) || !strings.Contains(en.Body, "Your visits") || !strings.Contains(en.Body, `<a href="/lang/es?next=%2Fvisits" lang="es" hreflang="es">Español</a>`) {
		t.Errorf("after the switch to English: %s", en.Body)
	}
	if sw := pat.get("/lang/es?next=" + url.QueryEscape("//evil.example/x")); sw.Status != 303 || sw.Location != "/visits" {
		t.Errorf("switch with an address elsewhere: %d %s", sw.Status, sw.Location)
	}
	spanish(t, english, "visits after the switch back", pat.get("/visits"), "Sus consultas")
	if pg := pat.get("/lang/xx"); pg.Status != 404 {
		t.Errorf("/lang/xx: %d", pg.Status)
	}

	// The provider's dashboard is not translated: it says so in its lang.
	prov := newBrowser(t, f.e)
	prov.lang = "es"
	f.redirectLogin(t, prov, f.providerToken, "/providers/dashboard", nil)
	if pg := prov.get("/providers/dashboard"); !strings.Contains(pg.Body, `<html lang="en"`) || strings.Contains(pg.Body, `hreflang`) {
		t.Errorf("the dashboard in a Spanish browser: %.300s", pg.Body)
	}
}

// englishTexts are the English catalog's texts that Spanish says
// otherwise: the words a Spanish page must not hold.
func englishTexts(t *testing.T) []string {
	t.Helper()
	read := func(tag string) locale.File {
		b, err := os.ReadFile(filepath.Join("..", "locale", "catalogs", tag+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f locale.File
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	en, es := read("en"), read("es")
	var out []string
	for k, v := range en.Messages {
		if es.Messages[k] == v {
			continue // "No", "Plan", "Portal": the same word
		}
		// The parts between verbs: "Times are in %s." is "Times are in".
		for _, part := range verbParts.Split(v, -1) {
			if part = strings.Trim(part, " .,:;()…?"); strings.Contains(part, " ") || len(part) > 3 {
				out = append(out, part)
			}
		}
	}
	return out
}

var verbParts = regexp.MustCompile(`%(\[\d+\])?[sd%]`)

// spanish checks pg is a Spanish page holding each of wants (in its
// markup), and that none of its texts — text nodes, and the aria-label,
// placeholder, title, alt and input buttons' values people read — is or holds
// an English text of the catalog. A one-word English text counts when it
// is a whole text; longer ones anywhere in one.
func spanish(t *testing.T, english []string, name string, pg *page, wants ...string) *page {
	t.Helper()
	if pg.Status >= 300 && pg.Status < 400 {
		t.Fatalf("%s: sent to %s", name, pg.Location)
	}
	if !strings.Contains(pg.Body, `<html lang="es"`) {
		t.Errorf("%s: not a Spanish page: %.200s", name, pg.Body)
	}
	for _, w := range wants {
		if !strings.Contains(pg.Body, w) {
			t.Errorf("%s: no %q", name, w)
		}
	}
	doc, err := html.Parse(strings.NewReader(pg.Body))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style") {
			return
		}
		if n.Type == html.TextNode {
			if s := strings.TrimSpace(n.Data); s != "" {
				texts = append(texts, s)
			}
		}
		for _, a := range n.Attr {
			switch a.Key {
			case "aria-label", "placeholder", "title", "alt":
				texts = append(texts, a.Val)
			case "value":
				if n.Data == "input" && (attr(n, "type") == "submit" || attr(n, "type") == "button") { // a <button>'s value is data
					texts = append(texts, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(texts) < 3 {
		t.Fatalf("%s: %d texts", name, len(texts))
	}
	for _, text := range texts {
		for _, e := range english {
			if text == e || strings.Contains(e, " ") && strings.Contains(text, e) {
				t.Errorf("%s: English left: %q (in %q)", name, e, text)
			}
		}
	}
	return pg
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

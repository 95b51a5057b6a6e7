package web_test

import (
	"context"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"teleclinic/internal/app"
)

// TestPortal_Interpreters: the admin adds the clinic's interpreters in
// /admin (a language from the list or a tag of another) and removes one;
// the room's intake asks the patient's language, offering those the
// clinic has interpreters of first, each named in itself; the choice (or
// the page's own language, when it is not the clinic's first) is kept on
// the intake.
func TestPortal_Interpreters(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	adm := newBrowser(t, f.e)
	f.adminSignIn(t, adm)
	section := func(pg string) string {
		_, s, _ := strings.Cut(pg, `<h2 id="interpreters">`)
		s, _, _ = strings.Cut(s, "</section>")
		return html.UnescapeString(s)
	}
	if s := section(adm.get("/admin").Body); !strings.Contains(s, "No interpreters yet.") || !strings.Contains(s, `<option value="es">español — Spanish</option>`) {
		t.Fatalf("the empty section: %s", s)
	}
	add := func(kv ...string) *page {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return adm.post("/admin/interpreters", v)
	}
	if pg := add("name", "Ana Ruiz", "language", "es"); pg.Status != 400 || !strings.Contains(pg.Body, "Give an email, a mobile number or both") {
		t.Fatalf("no way to reach her: %d", pg.Status)
	}
	if pg := add("name", "Ana Ruiz", "language", "es", "email", "ana@example.com", "phone", "+1 415 555 0177"); pg.Status != 303 || pg.Location != "/admin?done=interpreter#interpreters" {
		t.Fatalf("add: %d %s", pg.Status, pg.Location)
	}
	if pg := add("name", "Hmong Link", "language", "es", "language_other", "hmn", "email", "desk@hmong.example.com", "agency", "1"); pg.Status != 303 {
		t.Fatalf("add another language: %d %s", pg.Status, pg.Body)
	}
	s := section(adm.get("/admin").Body)
	if !strings.Contains(s, "Ana Ruiz</strong> <span class=\"muted\">Spanish · ana@example.com · +14155550177") || !strings.Contains(s, "Hmong Link</strong> <span class=\"muted\">Hmong · agency") {
		t.Fatalf("the list: %s", s)
	}

	// The intake: the page's language, then the clinic's, then the common.
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/c/acme/main", nil)
	room := html.UnescapeString(b.get("/c/acme/main").Body)
	opts := regexp.MustCompile(`<option value="([^"]*)">`).FindAllStringSubmatch(room, -1)
	if len(opts) < 5 || opts[0][1] != "" || opts[1][1] != "es" || opts[2][1] != "hmn" || opts[3][1] != "cmn" {
		t.Fatalf("the languages offered: %v", opts)
	}
	if !strings.Contains(room, `<option value="vi">Tiếng Việt — Vietnamese</option>`) {
		t.Fatalf("a language named in itself: %s", room)
	}
	intake := func(b *browser, lang string) string {
		t.Helper()
		form := url.Values{"reason_for_visit": {"Headache"}, "terms": {"1"}, "kind": {"econsult"}, "preferred_language": {lang}}
		d := visitFrom(t, f, b.post("/c/acme/main/intake", form))
		return d.Intake.Custom[app.PreferredLanguageKey]
	}
	if got := intake(b, "vi"); got != "vi" {
		t.Fatalf("the chosen language: %q", got)
	}
	if got := intake(b, ""); got != "" {
		t.Fatalf("the page's language, the clinic's first: %q", got)
	}
	if pg := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"x"}, "terms": {"1"}, "kind": {"econsult"}, "preferred_language": {"!!"}}); pg.Status != 400 {
		t.Fatalf("a language that is none: %d", pg.Status)
	}
	b.get("/lang/es?next=%2Fvisits")
	if got := intake(b, ""); got != "es" {
		t.Fatalf("the page read in Spanish: %q", got)
	}

	// Removed: no longer offered, to the admin or the intake.
	list, err := f.e.App.Interpreters(bg, f.admin(t), "es")
	if err != nil || len(list) != 1 {
		t.Fatalf("the Spanish ones: %v %v", list, err)
	}
	if pg := adm.post("/admin/interpreters/"+itoa(list[0].ID)+"/delete", url.Values{}); pg.Status != 303 {
		t.Fatalf("remove: %d", pg.Status)
	}
	if s := section(adm.get("/admin").Body); strings.Contains(s, "Ana Ruiz") {
		t.Fatalf("still listed: %s", s)
	}
	if pg := adm.post("/admin/interpreters/"+itoa(list[0].ID)+"/delete", url.Values{}); pg.Status != 404 {
		t.Fatalf("removed twice: %d", pg.Status)
	}
}

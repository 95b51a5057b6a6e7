package locale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPick(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ chosen, accept, want string }{
		{"", "", "en"},
		{"", "es-MX,es;q=0.9,en;q=0.8", "es"},
		{"", "es-419", "es"},
		{"", "fr-FR,fr;q=0.9", "en"},        // a language the portal lacks: the default
		{"", "de;q=0.5,es;q=0.9", "es"},     // by weight, not order
		{"en", "es-MX,es;q=0.9", "en"},      // the switch wins over the browser
		{"fr", "es", "es"},                  // a chosen language the portal lacks is ignored
		{"", "not a language header", "en"}, // malformed is as none
	} {
		if got := s.Pick(c.chosen, c.accept).Tag.String(); got != c.want {
			t.Errorf("Pick(%q, %q) = %s, want %s", c.chosen, c.accept, got, c.want)
		}
	}
	if s.Default().Tag.String() != "en" || len(s.All()) != 2 || s.All()[1].Name != "Español" {
		t.Fatalf("set: %v", s.All())
	}
}

func TestTextAndDates(t *testing.T) {
	s, _ := Load("")
	es, en := s.Get("es"), s.Get("en")
	if got := es.T("Times are in %s.", "America/New_York"); got != "Las horas están en America/New_York." {
		t.Errorf("es: %q", got)
	}
	if got := en.T("Times are in %s.", "UTC"); got != "Times are in UTC." {
		t.Errorf("en: %q", got)
	}
	// A key no catalog has prints as it is.
	if got := es.T("Not in any catalog %s", "x"); got != "Not in any catalog x" {
		t.Errorf("unknown key: %q", got)
	}
	if _, ok := es.Text("Not in any catalog %s"); ok {
		t.Error("Text found a key no catalog has")
	}
	at := time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)
	if got := es.Day(at); got != "miércoles, 4 de marzo de 2026" {
		t.Errorf("es day: %q", got)
	}
	if got := es.At(at); got != "mié 4 mar 2026, 09:30" {
		t.Errorf("es at: %q", got)
	}
	if got := en.Day(at); got != "Wednesday 4 March 2026" {
		t.Errorf("en day: %q", got)
	}
	if got := en.At(at); got != "Wed 4 Mar 2026, 09:30" {
		t.Errorf("en at: %q", got)
	}
	if m := es.Messages([]string{"Join the call", "Not in any catalog"}); len(m) != 1 || m["Join the call"] != "Unirse a la llamada" {
		t.Errorf("messages: %v", m)
	}
}

// TestLoad_Dir: a clinic's directory adds a language and rewords one;
// a broken file is refused, saying which and why.
func TestLoad_Dir(t *testing.T) {
	dir := t.TempDir()
	en, err := os.ReadFile(filepath.Join("catalogs", "en.json"))
	if err != nil {
		t.Fatal(err)
	}
	fr := strings.Replace(strings.Replace(string(en), `"language": "English"`, `"language": "Français"`, 1),
		`"Times are in %s.": "Times are in %s."`, `"Times are in %s.": "Les heures sont en %s."`, 1)
	if err := os.WriteFile(filepath.Join(dir, "fr.json"), []byte(fr), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.All()) != 3 || s.Default().Tag.String() != "en" {
		t.Fatalf("set: %d languages, default %s", len(s.All()), s.Default().Tag)
	}
	l := s.Pick("", "fr-CA,fr;q=0.9")
	if l.Name != "Français" || l.T("Times are in %s.", "UTC") != "Les heures sont en UTC." {
		t.Errorf("fr: %s %q", l.Name, l.T("Times are in %s.", "UTC"))
	}
	if got := s.Get("es").T("Times are in %s.", "UTC"); got != "Las horas están en UTC." {
		t.Errorf("es after adding fr: %q", got)
	}
	for name, body := range map[string]string{
		"de.json":        `{"language": "Deutsch", "dates": {"at": "x"}, "messages": {}}`,
		"it.json":        `{not json`,
		"not a tag.json": string(en),
	} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), strings.TrimSuffix(name, ".json")) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPick_Clock: the reader's region decides the clock; a zone reads as
// its city's time, in the page's language.
func TestPick_Clock(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 4, 16, 30, 0, 0, time.UTC)
	for _, c := range []struct{ chosen, accept, want string }{
		{"", "en-US,en;q=0.9", "4:30 PM"},
		{"", "en-GB,en;q=0.9", "16:30"},
		{"", "en", "16:30"},
		{"", "es-MX,es;q=0.9", "16:30"},
		{"", "es-US,en-US;q=0.5", "4:30 PM"}, // Spanish in the United States
		{"es", "en-US", "16:30"},             // the first tag of the language chosen decides
		{"", "", "16:30"},
	} {
		if got := s.Pick(c.chosen, c.accept).Clock(at); got != c.want {
			t.Errorf("Pick(%q, %q).Clock = %s, want %s", c.chosen, c.accept, got, c.want)
		}
	}
	ny, _ := time.LoadLocation("America/New_York")
	if got := s.Pick("", "en-US").ZoneName(ny); got != "New York time" {
		t.Errorf("New York: %q", got)
	}
	if got := s.Get("es").ZoneName(ny); got != "hora de New York" {
		t.Errorf("New York in Spanish: %q", got)
	}
	if got := s.Default().ZoneName(time.UTC); got != "UTC" {
		t.Errorf("UTC: %q", got)
	}
	if got := s.Pick("", "en-US").At(at); got != "Wed 4 Mar 2026, 4:30 PM" {
		t.Errorf("At on the 12-hour clock: %q", got)
	}
}

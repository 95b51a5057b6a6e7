package web

import (
	"encoding/json"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
)

// writeCatalog rewrites the English catalog's messages from the keys the
// portal uses: go test ./internal/web -run TestCatalog -catalog.write
// (then translate what TestCatalog_EveryKey says each language lacks).
var writeCatalog = flag.Bool("catalog.write", false, "rewrite internal/locale/catalogs/en.json's messages from the keys the portal uses")

// englishOnlyPages are the templates of englishOnly's pages.
// The superbill is read by a US insurer: English whatever the portal's
// language (its article says lang="en").
var englishOnlyPages = []string{"admin", "adminroom", "adminsignin", "dashboard", "chart", "rotated", "activate", "superbill", "numbers"}

var (
	templateKey = regexp.MustCompile(`\{\{-?\s*t\s+("(?:[^"\\]|\\.)*")`)
	goKey       = regexp.MustCompile(`(?:\.T|\btr)\(\s*("(?:[^"\\]|\\.)*")`)
	verb        = regexp.MustCompile(`%(\[\d+\])?[sd%]`)
)

// usedKeys are every message key of the portal: the templates' {{t "…"}},
// the handlers' loc.T("…"), the scripts' T("…"), and the words the
// handlers pass to templates to translate (statuses, kinds, notices,
// titles, error sentences, test cards).
func usedKeys(t *testing.T) []string {
	t.Helper()
	keys := map[string]bool{}
	add := func(re *regexp.Regexp, b []byte) {
		for _, m := range re.FindAllSubmatch(b, -1) {
			k, err := strconv.Unquote(string(m[1]))
			if err != nil {
				t.Fatal(err)
			}
			keys[k] = true
		}
	}
	tpls, _ := fs.Glob(templateFS, "templates/*.html")
	for _, n := range tpls {
		b, _ := fs.ReadFile(templateFS, n)
		add(templateKey, b)
	}
	// The portal's handlers, and app's emails, which each person gets in
	// the language of their profile.
	gos, _ := filepath.Glob("*.go")
	mails, _ := filepath.Glob(filepath.Join("..", "app", "*.go"))
	gos = append(gos, mails...)
	for _, n := range gos {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		add(goKey, b)
	}
	static, _ := fs.Sub(staticFS, "static")
	js, err := scriptKeys(static)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range js {
		keys[k] = true
	}
	var dynamic []string
	for _, st := range []int{clinic.VisitPending, clinic.VisitConfirmed, clinic.VisitInProgress, clinic.VisitCompleted, clinic.VisitCancelled} {
		dynamic = append(dynamic, statusWord(st))
	}
	dynamic = append(dynamic, locale.ZoneTimeKey, "booked", "missed", "cancelled late", clinic.NoteDraft, clinic.NoteSigned, "Go to the administration", "Go to your dashboard", "Go to your visits")
	dynamic = slices.AppendSeq(dynamic, maps.Values(kindWord))
	dynamic = slices.AppendSeq(dynamic, maps.Values(notices))
	dynamic = slices.AppendSeq(dynamic, maps.Values(pageTitles))
	dynamic = slices.AppendSeq(dynamic, maps.Values(codeWords))
	dynamic = append(dynamic, refusals...)
	for _, c := range sandboxCards {
		dynamic = append(dynamic, c.Label)
	}
	for _, k := range dynamic {
		keys[k] = true
	}
	return slices.Sorted(maps.Keys(keys))
}

func readCatalog(t *testing.T, tag string) (locale.File, string) {
	t.Helper()
	path := filepath.Join("..", "locale", "catalogs", tag+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f locale.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f, path
}

// TestCatalog_EveryKey walks the catalogs: English holds each key the
// portal uses as itself, and nothing else; every other language
// translates every key, with the same verbs (so no %!s(MISSING) reaches a
// page), and holds no key the portal no longer uses.
func TestCatalog_EveryKey(t *testing.T) {
	keys := usedKeys(t)
	if len(keys) < 200 {
		t.Fatalf("found %d message keys; the extraction is broken", len(keys))
	}
	en, path := readCatalog(t, "en")
	if *writeCatalog {
		en.Messages = map[string]string{}
		for _, k := range keys {
			en.Messages[k] = k
		}
		b, err := json.MarshalIndent(en, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b)))
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if en.Messages[k] != k {
			t.Errorf("en.json: %q is not itself (run with -catalog.write)", k)
		}
	}
	names, _ := fs.Glob(os.DirFS(filepath.Join("..", "locale", "catalogs")), "*.json")
	if len(names) < 2 {
		t.Fatalf("catalogs: %v", names)
	}
	for _, n := range names {
		tag := strings.TrimSuffix(n, ".json")
		f, _ := readCatalog(t, tag)
		var missing []string
		for _, k := range keys {
			v, ok := f.Messages[k]
			if !ok || strings.TrimSpace(v) == "" {
				missing = append(missing, k)
				continue
			}
			if tag != "en" && v == k && !slices.Contains(sameInSpanish, k) {
				t.Errorf("%s.json: %q is not translated", tag, k)
			}
			if kv, vv := verbs(k), verbs(v); !slices.Equal(kv, vv) {
				t.Errorf("%s.json: %q has verbs %v, its text %q has %v", tag, k, kv, v, vv)
			}
		}
		for _, m := range missing {
			t.Errorf("%s.json lacks %q", tag, m)
		}
		for k := range f.Messages {
			if !slices.Contains(keys, k) {
				t.Errorf("%s.json holds %q, which the portal no longer uses", tag, k)
			}
		}
	}
}

// sameInSpanish are the texts Spanish writes as English does; any other
// text a catalog holds as its key was copied and not translated.
var sameInSpanish = []string{"No", "Plan", "Portal"}

// verbs are the fmt verbs of a text, sorted (a translation may reorder
// them with %[n]s).
func verbs(s string) []string {
	var out []string
	n := 0
	for _, m := range verb.FindAllStringSubmatch(s, -1) {
		v := m[0]
		if m[1] != "" {
			v = "%" + v[len(m[1])+1:]
		}
		if v != "%%" {
			n++
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// TestCatalog_NoLiteralText reads each translated page's template: once
// its actions are taken out, no text and no aria-label, placeholder,
// title or alt is left that holds a letter (every word goes through t).
func TestCatalog_NoLiteralText(t *testing.T) {
	action := regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	tpls, _ := fs.Glob(templateFS, "templates/*.html")
	checked := 0
	for _, n := range tpls {
		name := strings.TrimSuffix(filepath.Base(n), ".html")
		if slices.Contains(englishOnlyPages, name) {
			continue
		}
		checked++
		b, _ := fs.ReadFile(templateFS, n)
		z := html.NewTokenizer(strings.NewReader(action.ReplaceAllString(string(b), "")))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			tok := z.Token()
			switch tt {
			case html.TextToken:
				if hasLetter(strings.ReplaceAll(tok.Data, "Teleclinic", "")) { // the product's name is the same in every language
					t.Errorf("%s: text outside t: %q", name, strings.TrimSpace(tok.Data))
				}
			case html.StartTagToken, html.SelfClosingTagToken:
				for _, a := range tok.Attr {
					switch a.Key {
					case "aria-label", "placeholder", "title", "alt":
						if hasLetter(a.Val) {
							t.Errorf("%s: <%s %s=%q> outside t", name, tok.Data, a.Key, a.Val)
						}
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d templates", checked)
	}
}

func hasLetter(s string) bool {
	for _, r := range s {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
			return true
		}
	}
	return false
}

package web

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/language"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
)

// The portal's pages for patients and guests, and the visit page, speak
// the viewer's language (internal/locale): the one chosen with the
// language switch (a cookie), else the browser's Accept-Language, else
// English. The provider's dashboard and chart and the administration are
// English only: their paths are listed in englishOnly.

// langCookie holds the language the viewer chose with the switch.
const langCookie = "lang"

// englishOnly are the path prefixes of the pages not yet translated.
var englishOnly = []string{"/admin", "/providers/", "/activate", "/reset-password"}

// translated says r's page is drawn in the viewer's language.
func translated(r *http.Request) bool {
	for _, p := range englishOnly {
		if strings.HasPrefix(r.URL.Path, p) {
			return false
		}
	}
	return true
}

// localeOf is the language r's page is drawn in.
func (s *Server) localeOf(r *http.Request) *locale.Locale {
	if !translated(r) {
		return s.locales.Default()
	}
	chosen := ""
	if c, err := r.Cookie(langCookie); err == nil {
		chosen = c.Value
	}
	return s.locales.Pick(chosen, r.Header.Get("Accept-Language"))
}

// languageLinks is the language switch of r's page: each language, the
// link back to the page (a GET's address; a form's answer goes back to
// the visits).
func (s *Server) languageLinks(r *http.Request, current *locale.Locale) []languageLink {
	all := s.locales.All()
	if len(all) < 2 {
		return nil
	}
	here := "/visits"
	if r.Method == http.MethodGet {
		here = r.URL.RequestURI()
	}
	out := make([]languageLink, 0, len(all))
	for _, l := range all {
		tag := l.Tag.String()
		out = append(out, languageLink{Tag: tag, Name: l.Name, Current: l.Tag == current.Tag, Href: "/lang/" + tag + "?next=" + url.QueryEscape(here)})
	}
	return out
}

// setLanguage is GET /lang/{tag}?next=…: the language switch. It keeps
// the choice in a cookie for a year and goes back to next, a path on this
// site; a signed-in person's profile takes it too, so the clinic's emails
// to them come in it. It changes nothing but the language pages and
// emails are written in, so a link may do it.
func (s *Server) setLanguage(w http.ResponseWriter, r *http.Request) error {
	l := s.locales.Get(r.PathValue("tag"))
	if l == nil {
		return clinic.Errorf(clinic.ENotFound, "The portal does not speak that language.")
	}
	if p, err := s.principal(r); err == nil && !p.IsAdmin() && app.UserLanguage(p.User) != l.Tag.String() {
		tag := l.Tag.String()
		if _, err := s.app.UpdateMe(r.Context(), p, app.ProfileUpdate{Language: &tag}); err != nil {
			s.log.Warn("language: not saved to the profile", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: l.Tag.String(), Path: "/", MaxAge: 365 * 24 * 3600,
		Secure: s.cfg.Secure, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	next := r.URL.Query().Get("next")
	if !app.LocalPath(next) {
		next = "/visits"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// messagesJS is GET /i18n/{tag}.js: the texts the pages' scripts show,
// in that language, as window.teleclinicMessages (static/live.js's T
// reads it). The scripts' keys are found in them once, at start.
func (s *Server) messagesJS(w http.ResponseWriter, r *http.Request) error {
	body, ok := s.scriptMessages[strings.TrimSuffix(r.PathValue("file"), ".js")]
	if !ok || !strings.HasSuffix(r.PathValue("file"), ".js") {
		return clinic.Errorf(clinic.ENotFound, "The portal does not speak that language.")
	}
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=3600")
	_, err := w.Write(body)
	return err
}

// scriptKey finds a message key in a script: T("…", …).
var scriptKey = regexp.MustCompile(`\bT\(\s*("(?:[^"\\]|\\.)*")`)

// scriptKeys are the message keys the portal's scripts use.
func scriptKeys(static fs.FS) ([]string, error) {
	names, err := fs.Glob(static, "*.js")
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, n := range names {
		b, err := fs.ReadFile(static, n)
		if err != nil {
			return nil, err
		}
		for _, m := range scriptKey.FindAllSubmatch(b, -1) {
			k, err := strconv.Unquote(string(m[1]))
			if err != nil {
				return nil, err
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// buildScriptMessages makes each language's /i18n/{tag}.js.
func (s *Server) buildScriptMessages(static fs.FS) error {
	keys, err := scriptKeys(static)
	if err != nil {
		return err
	}
	s.scriptMessages = map[string][]byte{}
	for _, l := range s.locales.All() {
		b, err := json.Marshal(l.Messages(keys))
		if err != nil {
			return err
		}
		s.scriptMessages[l.Tag.String()] = append(append([]byte("window.teleclinicMessages = "), b...), ";\n"...)
	}
	return nil
}

// words is an error's message in r's language: its translation where
// the catalog has the message; in English, the message itself; else the
// catalog's sentence for its code (the detail of a message the catalog
// does not hold is English, and is not shown on a page in another
// language).
func (s *Server) words(r *http.Request, code, msg string) string {
	loc := s.localeOf(r)
	if text, ok := loc.Text(msg); ok {
		return text
	}
	if loc.Tag == s.locales.Default().Tag { // English, on either clock
		return msg
	}
	if w, ok := codeWords[code]; ok {
		return loc.T(w)
	}
	return loc.T(codeWords[clinic.EInvalid])
}

// refusals are the rules' messages a patient meets on the translated
// pages that the catalogs translate as they are (words finds them); any
// other refusal is shown by its code's sentence.
var refusals = []string{calls.ErrNoProviderYet, oneVisitOnly}

// codeWords say each error code's refusal in general, for a message the
// catalog does not translate.
var codeWords = map[string]string{
	clinic.EInvalid:         "Something in the form is not right. Check it and send it again.",
	clinic.EUnauthenticated: "Sign in to see this page.",
	clinic.EForbidden:       "Your account may not do this.",
	clinic.ENotFound:        "This page or what it names was not found.",
	clinic.EConflict:        "This cannot be done now: something changed meanwhile. Reload the page and try again.",
	clinic.ETooMany:         "Too many tries. Wait a moment and try again.",
	clinic.ETooLarge:        "What you sent is larger than the clinic takes.",
	clinic.EPayment:         "The payment did not go through. Try another card.",
	clinic.EMismatch:        "This request was already sent with other details.",
	clinic.EStale:           "Someone changed this in the meantime. Open it again to see the change.",
	clinic.EBusy:            "The server is busy. Try again in a moment.",
	clinic.EUnavailable:     "This is not available now. Try again later.",
	clinic.EInternal:        "Something went wrong on our side. Try again in a moment.",
}

// otherLanguages are the languages the portal writes in besides the
// clinic's first, named in English (the admin's pages are English): a
// room's words may be given in each.
func (s *Server) otherLanguages() []languageOption {
	var out []languageOption
	for _, l := range s.locales.All()[1:] {
		out = append(out, languageOption{Tag: l.Tag.String(), Label: app.LanguageName(l.Tag.String(), language.English)})
	}
	return out
}

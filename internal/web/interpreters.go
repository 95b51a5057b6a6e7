package web

import (
	"context"
	"net/http"
	"strings"

	"golang.org/x/text/language"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The clinic's interpreters in /admin, and the languages an intake offers
// (app/interpreters.go).

// adminInterpreter is an interpreter as /admin lists it.
type adminInterpreter struct {
	*clinic.Interpreter
	LanguageName string
}

// languageOption is a language an intake or the admin's form offers: its
// tag, and its name in itself beside the page's name of it ("español —
// Spanish"), so a patient who reads neither the page's language nor
// English still finds theirs.
type languageOption struct{ Tag, Label string }

// adminInterpreters loads the clinic's interpreters and the languages the
// form offers.
func (s *Server) adminInterpreters(ctx context.Context, p *clinic.Principal, _ adminQuery, page *adminPage) error {
	list, err := s.app.Interpreters(ctx, p, "")
	if err != nil {
		return err
	}
	for _, it := range list {
		page.Interpreters = append(page.Interpreters, adminInterpreter{Interpreter: it, LanguageName: app.LanguageName(it.Language, language.English)})
	}
	page.Languages = languageOptions(language.English, nil)
	return nil
}

// languageOptions are first (the languages the clinic has interpreters
// of), then the common languages, labelled for a page in language in.
func languageOptions(in language.Tag, first []string) []languageOption {
	var out []languageOption
	seen := map[string]bool{}
	for _, tag := range append(append([]string{}, first...), app.CommonLanguages...) {
		if seen[tag] {
			continue
		}
		seen[tag] = true
		self, here := app.Autonym(tag), app.LanguageName(tag, in)
		label := self
		if !strings.EqualFold(self, here) {
			label = self + " — " + here
		}
		out = append(out, languageOption{Tag: tag, Label: label})
	}
	return out
}

// adminInterpreterAdd is POST /admin/interpreters: name, language (or
// language_other, a tag the list lacks), email, phone, agency.
func (s *Server) adminInterpreterAdd(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	lang := r.PostFormValue("language")
	if other := strings.TrimSpace(r.PostFormValue("language_other")); other != "" {
		lang = other
	}
	_, err = s.app.AddInterpreter(r.Context(), p, app.InterpreterInput{Name: r.PostFormValue("name"), Language: lang,
		Email: r.PostFormValue("email"), Phone: r.PostFormValue("phone"), Agency: r.PostFormValue("agency") == "1"})
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=interpreter#interpreters", http.StatusSeeOther)
	return nil
}

// adminInterpreterRemove is POST /admin/interpreters/{id}/delete.
func (s *Server) adminInterpreterRemove(w http.ResponseWriter, r *http.Request) error {
	return s.adminByID(w, r, "No such interpreter.", s.app.RemoveInterpreter, "/admin?done=interpreter-removed#interpreters")
}

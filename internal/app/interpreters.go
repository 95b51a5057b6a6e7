package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
	"teleclinic/internal/sms"
	"teleclinic/internal/store"
)

// Interpreters (docs/design-notes.md, "Interpreters"): the intake asks the
// patient's preferred language; the clinic keeps its interpreters, people
// or agencies, each for one language; the visit's provider sends one a
// one-time link into the call by email or text (calls.InviteInterpreter),
// and the interpreter joins as a guest the call, the visit's facts and
// the claim name as its interpreter.

// PreferredLanguageKey is where an intake keeps the patient's preferred
// language (a BCP 47 tag), among its custom fields.
const PreferredLanguageKey = "preferred_language"

// LanguageTag is s as a canonical BCP 47 language tag ("es", "vi",
// "zh-Hant", "ase" for American Sign Language), or an error for what
// names no language.
func LanguageTag(s string) (string, error) {
	t, err := language.Parse(strings.TrimSpace(s))
	if base, conf := t.Base(); err != nil || conf == language.No || base.String() == "und" {
		return "", clinic.Errorf(clinic.EInvalid, "language must be a language tag such as es, vi, zh-Hant or ase (American Sign Language).")
	}
	return t.String(), nil
}

// LanguageName is language tag's name in language in ("Spanish",
// "español" in es); the tag itself for one x/text has no name of.
func LanguageName(tag string, in language.Tag) string {
	t, err := language.Parse(tag)
	if err != nil {
		return tag
	}
	if n := display.Tags(in).Name(t); n != "" {
		return n
	}
	return tag
}

// Autonym is language tag's name in itself ("Tiếng Việt" for vi): what a
// speaker of it reads whatever the page's language.
func Autonym(tag string) string {
	t, err := language.Parse(tag)
	if err != nil {
		return tag
	}
	if n := display.Self.Name(t); n != "" && n != tag {
		return n
	}
	return LanguageName(tag, language.English) // none in itself: a sign language, Haitian Creole
}

// SameLanguage reports whether tags a and b name one language, whatever
// their regions or scripts: an interpreter of es serves a patient of es-MX.
func SameLanguage(a, b string) bool {
	ta, err1 := language.Parse(a)
	tb, err2 := language.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ba, _ := ta.Base()
	bb, _ := tb.Base()
	return ba == bb
}

// CommonLanguages are the languages an intake offers first: those most
// often asked for interpreters in US clinics, then any the clinic's own
// interpreters speak.
var CommonLanguages = []string{"es", "cmn", "yue", "vi", "fil", "ar", "ko", "ru", "ht", "fr", "pt", "fa", "so", "am", "uk", "pl", "hi", "pa", "bn", "ja", "ase"}

// InterpreterInput is one of the clinic's interpreters as the admin adds it.
type InterpreterInput struct {
	Name, Language, Email, Phone string
	Agency                       bool
}

// AddInterpreter is POST /interpreters (extension; admin): an interpreter
// for one language, with an email, a mobile number, or both.
func (a *App) AddInterpreter(ctx context.Context, p *clinic.Principal, in InterpreterInput) (*clinic.Interpreter, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	it := &clinic.Interpreter{AccountID: p.Account.ID, Name: strings.TrimSpace(in.Name), Email: strings.TrimSpace(in.Email),
		Agency: in.Agency, Created: a.Unix()}
	if err := CheckFields(Line("name", it.Name, MaxLineChars), Line("email", it.Email, MaxLineChars), Line("phone", in.Phone, 32)); err != nil {
		return nil, err
	}
	if it.Name == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "name is required: the person's, or the agency's.")
	}
	tag, err := LanguageTag(in.Language)
	if err != nil {
		return nil, err
	}
	it.Language = tag
	if it.Email != "" && !mailable(it.Email) {
		return nil, clinic.Errorf(clinic.EInvalid, "email must be an address like name@example.com.")
	}
	if phone := strings.TrimSpace(in.Phone); phone != "" {
		e164, ok := sms.Normalize(phone)
		if !ok {
			return nil, clinic.Errorf(clinic.EInvalid, "phone must be a mobile number with its country code, like +1 415 555 0134.")
		}
		it.Phone = e164
	}
	if it.Email == "" && it.Phone == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "Give an email, a mobile number or both: the link into a call goes there.")
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.AddInterpreter(ctx, it); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "interpreter.create", "interpreter", i64s(it.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("add interpreter: %w", err)
	}
	return it, nil
}

// Interpreters is GET /interpreters (extension): the clinic's interpreters,
// of one language when it is given, for the admin and the providers who
// bring them into calls.
func (a *App) Interpreters(ctx context.Context, p *clinic.Principal, lang string) ([]*clinic.Interpreter, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if !p.IsAdmin() && !IsProvider(p) {
		return nil, clinic.Errorf(clinic.EForbidden, "The clinic's interpreters are for its admin and providers.")
	}
	if lang != "" {
		tag, err := LanguageTag(lang)
		if err != nil {
			return nil, err
		}
		lang = tag
	}
	// A clinic keeps a handful: read them all, keep the language's.
	list, err := a.store.Read().Interpreters(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("interpreters: %w", err)
	}
	if lang != "" {
		list = slices.DeleteFunc(list, func(it *clinic.Interpreter) bool { return !SameLanguage(it.Language, lang) })
	}
	return list, nil
}

// InterpreterLanguages are the languages the clinic has interpreters of
// (tags, nothing of who they are): an intake offers them first. Anyone of
// the clinic asks.
func (a *App) InterpreterLanguages(ctx context.Context, p *clinic.Principal) ([]string, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	list, err := a.store.Read().Interpreters(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("interpreter languages: %w", err)
	}
	var out []string
	for _, it := range list {
		if !slices.Contains(out, it.Language) {
			out = append(out, it.Language)
		}
	}
	return out, nil
}

// RemoveInterpreter is DELETE /interpreters/{id} (extension; admin): no
// longer offered; the visits that had them still name them.
func (a *App) RemoveInterpreter(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.RemoveInterpreter(ctx, p.Account.ID, id); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "interpreter.delete", "interpreter", i64s(id), OutcomeOK)
	})
	return StoreErr("remove interpreter", err, "Interpreter not found.")
}

// VisitLanguage is the language visit v's patient asked for on its intake
// ("" when they asked none, or the visit has no intake).
func (c Core) VisitLanguage(ctx context.Context, accountID, visitID int64) (string, error) {
	v, err := c.a.store.Read().VisitByID(ctx, accountID, visitID)
	if err != nil || v.IntakeID == 0 {
		return "", err
	}
	it, err := c.a.store.Read().IntakeByID(ctx, accountID, v.IntakeID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return it.Custom[PreferredLanguageKey], nil
}

// Interpreter is the clinic's active interpreter id, for p to invite.
func (c Core) Interpreter(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Interpreter, error) {
	it, err := c.a.store.Read().InterpreterByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !it.Active {
		return nil, clinic.Errorf(clinic.ENotFound, "Interpreter %d not found: the clinic's interpreters are on GET /interpreters.", id)
	}
	return it, err
}

// InterpreterBy says how an interpreter's link goes.
const (
	InterpreterByEmail = "email"
	InterpreterByText  = "text"
)

// SendInterpreterLink writes, in transaction q, the message that takes
// link (a one-time invitation into a call) to
// interpreter it by email or text (via), in the clinic's first language:
// the interpreter is not a user with a language of their own. from names
// the provider who asks.
func (c Core) SendInterpreterLink(ctx context.Context, q *store.Q, it *clinic.Interpreter, via, link, from string) error {
	a := c.a
	loc := a.cfg.Locales.Default()
	lang := LanguageName(it.Language, loc.Tag)
	switch via {
	case InterpreterByText:
		return a.textTo(ctx, q, it.AccountID, it.Phone, TextInterpreter, loc, func(loc *locale.Locale) (string, error) {
			return loc.T("%s asks you to interpret (%s) in a video visit now. Join: %s", from, lang, link), nil
		})
	case InterpreterByEmail:
		subject := loc.T("An interpreter is needed now: %s, a video visit", lang)
		body := loc.T("Hello %s,\n\n%s asks you to interpret (%s) in a video visit that is going on now. Open this link to join the call; it lets one person in, once, for two hours:\n\n%s\n\nYou need a camera or a microphone, and a current browser.", it.Name, from, lang, link)
		raw, _ := json.Marshal(mailMessage{To: it.Email, Subject: subject, Body: body})
		sealed, err := a.Seal(raw)
		if err != nil {
			return err
		}
		return q.Enqueue(ctx, &store.OutboxItem{AccountID: it.AccountID, Topic: TopicMail, Payload: sealed, Created: a.Unix(), Due: a.Unix()})
	}
	return fmt.Errorf("interpreter link by %q", via)
}

// TextsOn reports whether the clinic sends texts.
func (c Core) TextsOn(ctx context.Context, accountID int64) (bool, error) {
	s, err := textSettings(ctx, c.a.store.Read(), accountID)
	return s != nil, err
}

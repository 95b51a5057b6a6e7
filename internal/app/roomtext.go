package app

import (
	"slices"
	"strings"

	"teleclinic/internal/clinic"
)

// The clinic's words in each language (docs/design-notes.md): a room's
// name, subtitle, description, closed message, intake questions, consent
// and email note are written by the clinic in its first language, and may
// be given in each other language the server writes in (Config.Locales).
// A reader of one of them reads the room in it (clinic.Room.WordsIn),
// each word not given falling back to the room's own.

// MaxEmailNoteChars bounds a room's note in its mails.
const MaxEmailNoteChars = 1000

// checkTranslations checks room settings s's translations, as the admin
// gives them, against the languages the clinic writes in (tags, the first
// its own) and the room's questions and consent, trimming each word; a
// consent given is of the room's consent version in force (one kept from
// before keeps its version, and is not shown once the room's changes).
func checkTranslations(s *clinic.RoomSettings, tags []string) error {
	for tag, t := range s.Translations {
		if !slices.Contains(tags[1:], tag) {
			return clinic.Errorf(clinic.EInvalid, "translations: %q is not a language the clinic writes in besides its first (%s).", tag, strings.Join(tags[1:], ", "))
		}
		at := "translations." + tag + "."
		for _, f := range []struct {
			v    *string
			name string
			max  int
		}{{&t.Name, "name", MaxNameChars}, {&t.Subtitle, "subtitle", MaxLineChars}, {&t.Description, "description", MaxTextChars},
			{&t.CloseMsg, "close_msg", MaxTextChars}, {&t.EmailNote, "email_note", MaxEmailNoteChars}, {&t.Consent, "consent", MaxConsentChars}} {
			*f.v = strings.TrimSpace(*f.v)
			if err := CheckFields(text(at+f.name, *f.v, f.max)); err != nil {
				return err
			}
		}
		for id, qt := range t.Questions {
			i := slices.IndexFunc(s.IntakeQuestions, func(q clinic.IntakeQuestion) bool { return q.ID == id })
			if i < 0 {
				return clinic.Errorf(clinic.EInvalid, "%squestions names %q, which is not one of the room's intake questions.", at, id)
			}
			q := s.IntakeQuestions[i]
			qt.Label = strings.TrimSpace(qt.Label)
			if len([]rune(qt.Label)) > 200 {
				return clinic.Errorf(clinic.EInvalid, "%squestions.%s.label must be at most 200 characters.", at, id)
			}
			if len(qt.Choices) > 0 && len(qt.Choices) != len(q.Choices) {
				return clinic.Errorf(clinic.EInvalid, "%squestions.%s.choices must give each of the question's %d choices, in its order.", at, id, len(q.Choices))
			}
			for j, c := range qt.Choices {
				qt.Choices[j] = strings.TrimSpace(c)
				if len([]rune(qt.Choices[j])) > 200 {
					return clinic.Errorf(clinic.EInvalid, "%squestions.%s.choices[%d] must be at most 200 characters.", at, id, j)
				}
			}
			t.Questions[id] = qt
		}
		switch {
		case t.Consent != "" && s.Consent == nil:
			return clinic.Errorf(clinic.EInvalid, "%sconsent: the room has no consent to translate.", at)
		case t.Consent != "":
			t.ConsentVersion = s.Consent.Version
		default:
			t.ConsentVersion = ""
		}
		s.Translations[tag] = t
	}
	return nil
}

// keepTranslations carries room settings s's translations over a change of
// its questions: the words of a question no longer asked go.
func keepTranslations(s *clinic.RoomSettings) {
	for tag, t := range s.Translations {
		for id := range t.Questions {
			if !slices.ContainsFunc(s.IntakeQuestions, func(q clinic.IntakeQuestion) bool { return q.ID == id }) {
				delete(t.Questions, id)
			}
		}
		s.Translations[tag] = t
	}
}

// LanguageTags are the languages the clinic writes in, its first first.
func (a *App) LanguageTags() []string {
	var out []string
	for _, l := range a.cfg.Locales.All() {
		out = append(out, l.Tag.String())
	}
	return out
}

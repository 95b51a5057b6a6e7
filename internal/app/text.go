package app

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"teleclinic/internal/clinic"
)

// Every text a caller stores is bounded, in characters, so that no request
// can put megabytes into a name and make every list that shows it
// megabytes. openapi.yaml gives each field its maxLength; the limits are
// generous for real names and addresses.
const (
	MaxNameChars     = 100  // a person's given or family name, a city, a room's name
	MaxCodeChars     = 128  // codes and ids the integrator chooses, usernames, slugs
	MaxLineChars     = 255  // one line: an address, an email, a title, a domain, a URL
	MaxTextChars     = 4000 // free text: a reason for the visit, a description, a note
	MaxRoomHTMLChars = 20000
)

// MaxSkip bounds how far into a list a page may start (skip, start,
// page × limit), so that no arithmetic on it overflows and no query is
// asked to step over more rows than a clinic has.
const MaxSkip = 10_000_000

// field is one text of an operation's input and its rule: at most max
// characters, valid UTF-8 without NUL; a line (names, codes, room text)
// also without control characters or bidirectional overrides, which
// could make a name show as something it is not. Free text keeps line
// breaks and tabs, and may hold the bidirectional marks of right-to-left
// writing other than the overrides.
type field struct {
	name  string
	value string
	max   int
	line  bool
}

// Line is a one-line input (no control characters) of at most max
// characters, for CheckFields.
func Line(name, v string, max int) field { return field{name: name, value: v, max: max, line: true} }
func text(name, v string, max int) field { return field{name: name, value: v, max: max} }

// optLine and optText are line and text of an optional input: nil is
// nothing to check.
func optLine(name string, v *string, max int) field {
	if v == nil {
		return field{}
	}
	return Line(name, *v, max)
}

func optText(name string, v *string, max int) field {
	if v == nil {
		return field{}
	}
	return text(name, *v, max)
}

// FormText refuses a form's value (or a field's name) that is not text:
// invalid UTF-8, a NUL, or a control character other than a line break
// or a tab. The portal checks every field of every form with it before a
// page reads any (the API's parameters are checked as they are read), so
// no bad byte reaches a store that would keep it or refuse it late.
func FormText(name, v string) error {
	return field{name: name, value: v, max: int(^uint(0) >> 1)}.check()
}

// CheckFields refuses the first field that breaks its rule, naming it and
// the limit (400).
func CheckFields(fs ...field) error {
	for _, f := range fs {
		if err := f.check(); err != nil {
			return err
		}
	}
	return nil
}

func (f field) check() error {
	if f.name == "" {
		return nil
	}
	if !utf8.ValidString(f.value) {
		return clinic.Errorf(clinic.EInvalid, "%s is not valid UTF-8 text.", f.name)
	}
	n := 0
	for _, r := range f.value {
		n++
		switch {
		case r == 0:
			return clinic.Errorf(clinic.EInvalid, "%s contains a NUL character.", f.name)
		case unicode.IsControl(r) && (f.line || (r != '\n' && r != '\r' && r != '\t')):
			return clinic.Errorf(clinic.EInvalid, "%s contains a control character (U+%04X).", f.name, r)
		case f.line && bidiOverride(r):
			return clinic.Errorf(clinic.EInvalid, "%s contains a bidirectional override character (U+%04X).", f.name, r)
		}
	}
	if n > f.max {
		return clinic.Errorf(clinic.EInvalid, "%s is longer than %d characters.", f.name, f.max)
	}
	return nil
}

// bidiOverride reports the embeddings, overrides and isolates of Unicode's
// bidirectional algorithm (U+202A–U+202E, U+2066–U+2069).
func bidiOverride(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// clip is s cut to n characters, for naming a field in a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// mailable says whether s is one plain email address a mail can go to
// (name@example.com: no display name, no list).
func mailable(s string) bool {
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Address == s
}

// phoneChars says whether s is written as a phone number is: digits,
// spaces and + - ( ) . only.
func phoneChars(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789 +-().", r) })
}

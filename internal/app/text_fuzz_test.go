package app

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckFields: what the text rule accepts is valid UTF-8 within its
// length, without NUL, and, in a line, without control or bidirectional
// override characters.
func FuzzCheckFields(f *testing.F) {
	for _, s := range []string{"Ada Lovelace", "Zoë Ñúñez", "Pat\x00", "\xff", "a\u202eb", "line\nbreak", strings.Repeat("é", 101)} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, oneLine bool) {
		fl := text("f", s, MaxNameChars)
		if oneLine {
			fl = Line("f", s, MaxNameChars)
		}
		if fl.check() != nil {
			return
		}
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 || utf8.RuneCountInString(s) > MaxNameChars {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if oneLine && (r < 0x20 || r == 0x7f || bidiOverride(r)) {
				t.Fatalf("a line accepted %q", s)
			}
		}
	})
}

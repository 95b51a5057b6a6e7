package jsonstr

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppend_AsEncodingJSON holds Append to json.Marshal over random strings
// mixing every class of character the encoder treats apart: quotes,
// backslashes, control characters, HTML's <, > and &, U+2028 and U+2029,
// other multi-byte runes and invalid UTF-8.
func TestAppend_AsEncodingJSON(t *testing.T) {
	pieces := []string{"a", "Zz 09", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "<", ">", "&",
		"\u2028", "\u2029", "é", "€", "😀", "\xff", "\xe2\x82", "\xed\xa0\x80", "/", "'", "\u00a0"}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var b []byte
		for range rnd.IntN(12) {
			b = append(b, pieces[rnd.IntN(len(pieces))]...)
		}
		s := string(b)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q:\n got %s\nwant x%s", s, got, want)
		}
	}
}

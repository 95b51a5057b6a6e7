package httpapi

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"teleclinic/internal/app"
)

// TestMessages_PageSameBytes holds the hand-written thread page to what
// encoding/json writes for the same page through okList, over random
// messages whose strings mix every class of character the encoder treats
// apart: quotes, backslashes, control characters, HTML's <, > and &,
// U+2028 and U+2029, other multi-byte runes and invalid UTF-8.
func TestMessages_PageSameBytes(t *testing.T) {
	pieces := []string{"a", "Zz 09", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "<", ">", "&",
		"\u2028", "\u2029", "é", "€", "😀", "\xff", "\xe2\x82", "\xed\xa0\x80", "/", "'", "\u00a0"}
	rnd := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b []byte
		for range rnd.IntN(12) {
			b = append(b, pieces[rnd.IntN(len(pieces))]...)
		}
		return string(b)
	}
	var pages messagePages // reused, as the server reuses its buffers
	for round := range 300 {
		ms := make([]*app.Message, rnd.IntN(5))
		for i := range ms {
			m := &app.Message{ID: rnd.Int64(), VisitID: rnd.Int64N(1000), Type: str(), Content: str(), CreatedUS: rnd.Int64N(1 << 52),
				Actor: app.MessageActor{ID: rnd.Int64N(1 << 40), Type: rnd.IntN(500) - 10, DisplayName: str()}}
			for range rnd.IntN(3) {
				m.Attachments = append(m.Attachments, rnd.Int64N(1<<50))
			}
			ms[i] = m
		}
		total := rnd.IntN(100)
		want := httptest.NewRecorder()
		out := make([]messageOut, len(ms))
		for i, m := range ms {
			out[i] = toMessageOut(m)
		}
		if err := okList(want, out, total); err != nil {
			t.Fatal(err)
		}
		got := httptest.NewRecorder()
		if err := pages.write(got, ms, total); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("round %d:\n got %q\nwant %q", round, got.Body.String(), want.Body.String())
		}
		if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Fatalf("round %d: %d %q, want %d %q", round, got.Code, got.Header().Get("Content-Type"), want.Code, want.Header().Get("Content-Type"))
		}
	}
}

// BenchmarkMessagePage is a 25-message page written by hand, and
// BenchmarkMessagePage_JSON the same page through encoding/json.
func BenchmarkMessagePage(b *testing.B) {
	ms, w := benchPage(), &discard{h: http.Header{}}
	var pages messagePages
	b.ReportAllocs()
	for b.Loop() {
		_ = pages.write(w, ms, 30)
	}
}

func BenchmarkMessagePage_JSON(b *testing.B) {
	ms, w := benchPage(), &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		out := make([]messageOut, len(ms))
		for i, m := range ms {
			out[i] = toMessageOut(m)
		}
		_ = okList(w, out, 30)
	}
}

// discard is a ResponseWriter that keeps nothing, so the benchmarks time
// the encoding alone.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func benchPage() []*app.Message {
	ms := make([]*app.Message, 25)
	for i := range ms {
		ms[i] = &app.Message{ID: int64(1000 + i), VisitID: 7, Type: "patient_message", Content: "A message of a usual length, a sentence or two about how the patient feels.",
			CreatedUS: 1763748000123456 + int64(i), Actor: app.MessageActor{ID: 42, Type: 200, DisplayName: "Pat Doe"}}
	}
	return ms
}

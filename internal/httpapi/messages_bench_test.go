package httpapi_test

import (
	"testing"

	"teleclinic/internal/testenv"
)

// BenchmarkPostMessage posts to an accepted e-consult's thread over HTTP,
// one caller at a time: the post's own cost (its statements, the audit
// entry, the response), without the contention the load tool adds.
func BenchmarkPostMessage(b *testing.B) {
	e := testenv.New(b)
	s := newClinicSetup(b, e, "alpha")
	visit := s.econsult(b, s.pat)
	if res := s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit); res.Status != 200 {
		b.Fatalf("accept: %d %s", res.Status, res.Raw)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res := postMsg(e, s.pat.Token, visit, "How is the rash today?"); res.Status != 201 {
			b.Fatalf("post: %d %s", res.Status, res.Raw)
		}
	}
}

package fhir

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

func unix(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

// TestParseFHIRDate: a date of each precision covers its whole year,
// month, day, minute or second; a fraction of a second is within its
// second; a time without a zone is UTC.
func TestParseFHIRDate(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi string
	}{
		{"2026", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"2026-02", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"2026-02-28", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"2026-03-02T09:30Z", "2026-03-02T09:30:00Z", "2026-03-02T09:31:00Z"},
		{"2026-03-02T09:30:15+01:00", "2026-03-02T08:30:15Z", "2026-03-02T08:30:16Z"},
		{"2026-03-02T09:30:15.123456Z", "2026-03-02T09:30:15Z", "2026-03-02T09:30:16Z"},
		{" 2026-03-02T09:30:15 ", "2026-03-02T09:30:15Z", "2026-03-02T09:30:16Z"},
	} {
		lo, hi, ok := parseFHIRDate(tc.in)
		if !ok || lo != unix(tc.lo) || hi != unix(tc.hi) {
			t.Errorf("%q: [%d, %d) %v, want [%s, %s)", tc.in, lo, hi, ok, tc.lo, tc.hi)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13", "2026-02-30", "26-01-01"} {
		if _, _, ok := parseFHIRDate(bad); ok {
			t.Errorf("%q taken as a date", bad)
		}
	}
}

// TestParseFHIRQuery: the page, the record's patient named either way,
// _lastUpdated's prefixes as the store's window; every parameter the type
// does not take, and every malformed one, is refused with invalid.
func TestParseFHIRQuery(t *testing.T) {
	q, err := parseFHIRQuery(url.Values{"patient": {"Patient/12"}, "subject": {"12"}, "_count": {"50"}, "_offset": {"100"},
		"_lastUpdated": {"ge2026-03-01", "lt2026-04-01"}, "_format": {"application/fhir+json"}}, "patient", "subject")
	if err != nil {
		t.Fatal(err)
	}
	if q.patient != 12 || q.count != 50 || q.offset != 100 {
		t.Errorf("patient %d, count %d, offset %d", q.patient, q.count, q.offset)
	}
	if diff := cmp.Diff(app.RecordPage{Since: unix("2026-03-01T00:00:00Z"), Before: unix("2026-04-01T00:00:00Z")}, q.page()); diff != "" {
		t.Errorf("the window (-want +got):\n%s", diff)
	}
	if q, err := parseFHIRQuery(url.Values{"_since": {"2026-03-02T10:00:00Z"}}); err != nil || q.count != defaultCount ||
		q.page().Since != unix("2026-03-02T10:00:00Z") || q.page().Before != 0 {
		t.Errorf("_since: %+v %v", q, err)
	}
	// An exact day keeps what was updated in it, not the day after.
	day, err := parseFHIRQuery(url.Values{"_lastUpdated": {"2026-03-02"}})
	if err != nil {
		t.Fatal(err)
	}
	for at, want := range map[string]bool{"2026-03-01T23:59:59Z": false, "2026-03-02T00:00:00Z": true, "2026-03-02T23:59:59Z": true, "2026-03-03T00:00:00Z": false} {
		if got := day.updated[0].holds(unix(at)); got != want {
			t.Errorf("eq2026-03-02 holds %s: %v", at, got)
		}
	}
	for _, bad := range []url.Values{
		{"_count": {"0"}}, {"_count": {"1001"}}, {"_count": {"ten"}}, {"_count": {"5", "6"}}, {"_offset": {"-1"}},
		{"_format": {"xml"}}, {"_lastUpdated": {"ne2026"}}, {"_lastUpdated": {"soon"}},
		{"patient": {"Practitioner/3"}}, {"patient": {"0"}}, {"patient": {"1", "2"}},
		{"patient": {"1"}, "subject": {"2"}}, {"status": {"final"}},
	} {
		if _, err := parseFHIRQuery(bad, "patient", "subject"); clinic.ErrorCode(err) != clinic.EInvalid {
			t.Errorf("%v: %v, want invalid", bad, err)
		}
	}
}

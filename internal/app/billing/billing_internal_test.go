package billing

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"teleclinic/internal/clinic"
)

// TestParseUntil: a coupon's valid_until as unix seconds, an RFC 3339
// time, or a date that lasts to its last second (UTC); empty or 0 is
// never; anything else is refused.
func TestParseUntil(t *testing.T) {
	day := time.Date(2026, 3, 31, 23, 59, 59, 0, time.UTC).Unix()
	for in, want := range map[string]int64{"": 0, " 0 ": 0, "1772442000": 1772442000,
		"2026-03-02T09:00:00+01:00": time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC).Unix(), "2026-03-31": day} {
		if got, err := parseUntil(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"-5", "tomorrow", "2026-02-30", "31/03/2026"} {
		if _, err := parseUntil(bad); clinic.ErrorCode(err) != clinic.EInvalid {
			t.Errorf("%q: %v, want invalid", bad, err)
		}
	}
}

// TestClaimCodesAndTime: a visit's stored codes read back whole, none as
// empty lists (never null); a claim's date is the call's start, else the
// booked start, else when it was asked for.
func TestClaimCodesAndTime(t *testing.T) {
	got := parseClaimCodes(`{"diagnoses":["J01.90","R51.9"],"procedures":[{"code":"99213","modifiers":["95"]}]}`)
	want := &ClaimCodes{Diagnoses: []string{"J01.90", "R51.9"}, Procedures: []ClaimProcedure{{Code: "99213", Modifiers: []string{"95"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&ClaimCodes{Diagnoses: []string{}, Procedures: []ClaimProcedure{}}, parseClaimCodes("")); diff != "" {
		t.Errorf("none (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		v    clinic.Visit
		want int64
	}{
		{clinic.Visit{ActualStart: 30, Start: 20, Created: 10}, 30},
		{clinic.Visit{Start: 20, Created: 10}, 20},
		{clinic.Visit{Created: 10}, 10},
	} {
		if got := claimTime(&tc.v); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.v, got, tc.want)
		}
	}
	if normCoupon("  spring10 ") != "SPRING10" {
		t.Errorf("coupon code %q", normCoupon("  spring10 "))
	}
}

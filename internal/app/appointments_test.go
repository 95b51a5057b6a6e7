package app

import "testing"

func TestLeadWords(t *testing.T) {
	for minutes, want := range map[int]string{15: "in 15 minutes", 60: "in an hour", 90: "in 90 minutes", 120: "in 2 hours", 1440: "tomorrow", 2880: "in 2 days"} {
		if got := leadWords(minutes); got != want {
			t.Errorf("leadWords(%d) = %q, want %q", minutes, got, want)
		}
	}
}

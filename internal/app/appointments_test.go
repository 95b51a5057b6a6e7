package app

import (
	"testing"

	"teleclinic/internal/locale"
)

func TestLeadWords(t *testing.T) {
	set, err := locale.Load("")
	if err != nil {
		t.Fatal(err)
	}
	for tag, cases := range map[string]map[int]string{
		"en": {1: "in a minute", 15: "in 15 minutes", 60: "in an hour", 90: "in 90 minutes", 120: "in 2 hours", 1440: "tomorrow", 2880: "in 2 days"},
		"es": {15: "dentro de 15 minutos", 60: "dentro de una hora", 1440: "mañana", 2880: "dentro de 2 días"},
	} {
		for minutes, want := range cases {
			if got := leadWords(set.Get(tag), minutes); got != want {
				t.Errorf("%s: leadWords(%d) = %q, want %q", tag, minutes, got, want)
			}
		}
	}
}

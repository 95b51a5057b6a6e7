package claimrules

import (
	"slices"
	"testing"
)

// TestDerive: a test per rule, facts in, place of service and modifiers
// out; and what a claim still lacks.
func TestDerive(t *testing.T) {
	for _, c := range []struct {
		name      string
		f         Facts
		pos       string
		modifiers []string
		applied   []string
		missing   []string
		warnings  int
	}{
		{"pos-10 and mod-95: video, at home", Facts{Modality: "video", PatientHome: "yes", PatientState: "NY", ProviderState: "NY"},
			"10", []string{"95"}, []string{"pos-10", "mod-95"}, []string{}, 0},
		{"pos-02: video, not at home", Facts{Modality: "video", PatientHome: "no", PatientState: "NY"},
			"02", []string{"95"}, []string{"pos-02", "mod-95"}, []string{}, 0},
		{"mod-93: audio only", Facts{Modality: "audio", PatientHome: "yes", PatientState: "NJ"},
			"10", []string{"93"}, []string{"pos-10", "mod-93"}, []string{}, 0},
		{"mod-fq: audio only at a health center", Facts{Modality: "audio", PatientHome: "no", PatientState: "NJ", RHC: true},
			"02", []string{"93", "FQ"}, []string{"pos-02", "mod-93", "mod-fq"}, []string{}, 0},
		{"no fq for video at a health center", Facts{Modality: "video", PatientHome: "yes", PatientState: "NJ", RHC: true},
			"10", []string{"95"}, []string{"pos-10", "mod-95"}, []string{}, 0},
		{"nothing recorded", Facts{},
			"", []string{}, []string{}, []string{"patient_location", "modality", "patient_state"}, 0},
		{"another state", Facts{Modality: "video", PatientHome: "yes", PatientState: "CA", ProviderState: "NY"},
			"10", []string{"95"}, []string{"pos-10", "mod-95"}, []string{}, 1},
	} {
		r := Derive(c.f)
		if r.PlaceOfService != c.pos || !slices.Equal(r.Modifiers, c.modifiers) || !slices.Equal(r.Applied, c.applied) ||
			!slices.Equal(r.Missing, c.missing) || len(r.Warnings) != c.warnings || r.RuleSet != "2026" {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

func TestMerge(t *testing.T) {
	if got := Merge([]string{"25", "95"}, []string{"95"}); !slices.Equal(got, []string{"25", "95"}) {
		t.Errorf("a coded 95 twice: %v", got)
	}
	if got := Merge([]string{"25", "59", "76", "77"}, []string{"95"}); len(got) != 4 {
		t.Errorf("past four: %v", got)
	}
	if got := Merge(nil, []string{"93", "FQ"}); !slices.Equal(got, []string{"93", "FQ"}) {
		t.Errorf("derived alone: %v", got)
	}
}

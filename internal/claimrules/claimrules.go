// Package claimrules derives what a payer asks of a telehealth claim — the
// place of service and the telehealth modifiers — from the facts the call
// recorded, by written rules that carry the year of their rule set. Each
// rule is a line of the table below, so a clinic's biller reads what the
// code does, and a test holds each one (facts in, codes out).
package claimrules

// RuleSet is the year of the rules below. They follow the Centers for
// Medicare & Medicaid Services' telehealth billing guidance as it stands
// for 2026 (place of service 02 and 10 since 2022; modifier 95 for
// real-time audio and video, 93 for audio only; FQ for an audio-only
// service of a rural health clinic or federally qualified health center)
// and the CPT conventions most commercial payers share. A payer's own
// contract may ask otherwise: the biller checks before filing.
const RuleSet = "2026"

// Facts are what the visit recorded of itself.
type Facts struct {
	// Modality is how the patient took part: "video" or "audio" (audio
	// only); "" when the call did not record it.
	Modality string
	// PatientHome is where the patient was, as they said at check-in:
	// "yes" (at home), "no" (elsewhere) or "" (not asked or not answered).
	PatientHome string
	// PatientState and ProviderState are two-letter US states ("" when
	// unknown).
	PatientState, ProviderState string
	// RHC: the clinic bills as a rural health clinic or federally
	// qualified health center.
	RHC bool
}

// Result is a claim's derived codes and why.
type Result struct {
	// PlaceOfService is "02" or "10" ("" when the patient's location is
	// unknown: the claim is not clean).
	PlaceOfService string
	// Modifiers apply to every telehealth service line, in order.
	Modifiers []string
	RuleSet   string
	// Applied names the rules that gave the codes (their IDs below).
	Applied []string
	// Missing names the facts a clean claim still needs.
	Missing []string
	// Warnings are what the biller should look at before filing.
	Warnings []string
}

// Rule is one line of the table: when When holds, it gives its place of
// service or modifier.
type Rule struct {
	ID, Says string
	When     func(Facts) bool
	POS      string
	Modifier string
}

// Rules is the rule set, in the order they apply.
var Rules = []Rule{
	{ID: "pos-10", Says: "The patient was at home: place of service 10 (telehealth provided in the patient's home).",
		When: func(f Facts) bool { return f.PatientHome == "yes" }, POS: "10"},
	{ID: "pos-02", Says: "The patient was not at home: place of service 02 (telehealth provided other than in the patient's home).",
		When: func(f Facts) bool { return f.PatientHome == "no" }, POS: "02"},
	{ID: "mod-95", Says: "Real-time audio and video: modifier 95 (synchronous telemedicine service).",
		When: func(f Facts) bool { return f.Modality == "video" }, Modifier: "95"},
	{ID: "mod-93", Says: "Audio only: modifier 93 (synchronous telemedicine service by telephone or other real-time audio-only system).",
		When: func(f Facts) bool { return f.Modality == "audio" }, Modifier: "93"},
	{ID: "mod-fq", Says: "Audio only, billed by a rural health clinic or federally qualified health center: modifier FQ.",
		When: func(f Facts) bool { return f.Modality == "audio" && f.RHC }, Modifier: "FQ"},
}

// Derive applies the rule set to f.
func Derive(f Facts) Result {
	r := Result{Modifiers: []string{}, RuleSet: RuleSet, Applied: []string{}, Missing: []string{}, Warnings: []string{}}
	for _, rule := range Rules {
		if !rule.When(f) {
			continue
		}
		r.Applied = append(r.Applied, rule.ID)
		if rule.POS != "" {
			r.PlaceOfService = rule.POS
		}
		if rule.Modifier != "" {
			r.Modifiers = append(r.Modifiers, rule.Modifier)
		}
	}
	if r.PlaceOfService == "" {
		r.Missing = append(r.Missing, "patient_location")
	}
	if f.Modality == "" {
		r.Missing = append(r.Missing, "modality")
	}
	if f.PatientState == "" {
		r.Missing = append(r.Missing, "patient_state")
	}
	if f.PatientState != "" && f.ProviderState != "" && f.PatientState != f.ProviderState {
		r.Warnings = append(r.Warnings, "The patient was in "+f.PatientState+" and the provider's state is "+f.ProviderState+": check the provider's license covers the patient's state.")
	}
	return r
}

// Merge is the modifiers of a service line: those the provider coded,
// then the derived ones it lacks, at most four (a claim line's room).
func Merge(coded, derived []string) []string {
	out := append([]string{}, coded...)
	for _, m := range derived {
		have := false
		for _, c := range out {
			have = have || c == m
		}
		if !have && len(out) < 4 {
			out = append(out, m)
		}
	}
	return out
}

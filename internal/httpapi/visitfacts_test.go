package httpapi_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

type telehealthOut struct {
	Modality      string `json:"modality"`
	PatientState  string `json:"patient_state"`
	PatientHome   *bool  `json:"patient_home"`
	ProviderState string `json:"provider_state"`
	CallStart     int64  `json:"call_start"`
	CallEnd       int64  `json:"call_end"`
	Minutes       int64  `json:"minutes"`
	Participants  []struct {
		UserID string `json:"user_id"`
		Role   string `json:"role"`
	} `json:"participants"`
	RuleSet        string   `json:"rule_set"`
	Rules          []string `json:"rules"`
	Missing        []string `json:"missing"`
	Warnings       []string `json:"warnings"`
	PlaceOfService string   `json:"place_of_service"`
	Modifiers      []string `json:"modifiers"`
}

type factsClaim struct {
	VisitID        string        `json:"visit_id"`
	PlaceOfService string        `json:"place_of_service"`
	Modifiers      []string      `json:"modifiers"`
	Telehealth     telehealthOut `json:"telehealth"`
	Procedures     []struct {
		Code      string   `json:"code"`
		Modifiers []string `json:"modifiers"`
	} `json:"procedures"`
}

// TestVisitFacts_MakeTheClaim: the call records the visit's facts as it
// happens — the patient's audio-only join, the provider's state, who took
// part, the call's start once both have joined and its end as the visit
// closes — and the patient's check-in says where they are; the claims
// report carries the place of service and modifiers the rules derive
// (POS 10 and 93 here, added to the modifiers the provider coded), with the
// rule set's year and what a clean claim still lacks for another visit.
// A check-in is the patient's (or staff's), a known state, before the
// visit ends.
func TestVisitFacts_MakeTheClaim(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	ctx := context.Background()
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.doc.Token), Form: q("state", "ny")}))
	visit := s.withVisit(t)
	bare := s.withVisit(t) // nothing recorded
	principal := func(who *session) *clinic.Principal {
		p, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: s.c.Code, APIToken: who.Token}, app.NeedUser)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := calls.New(e.App.Core())
	vid := mustID(t, visit)

	// Check-in: refused for another patient, an unknown state, no answer.
	loc := func(who *session, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/location", Header: userHeaders(s.c, who.Token), Form: q(kv...)})
	}
	wantMsg(t, loc(s.pat, "state", "ZZ", "at_home", "1"), 400, "two-letter US state")
	wantMsg(t, loc(s.pat, "state", "NJ"), 400, "at_home")
	if res := loc(s.pat2, "state", "NJ", "at_home", "1"); res.Status != 404 && res.Status != 403 {
		t.Fatalf("another patient's check-in: %d %s", res.Status, res.Raw)
	}
	got := dataOf[telehealthOut](t, loc(s.pat, "state", "nj", "at_home", "1"))
	if got.PatientState != "NJ" || got.PatientHome == nil || !*got.PatientHome {
		t.Fatalf("the check-in: %+v", got)
	}

	// The call: the provider joins (starting the visit), then the patient
	// by voice; the patient leaves and comes back; the provider ends it.
	t0 := e.Clock.Now().Unix()
	if _, err := c.Join(ctx, principal(s.doc), vid, false); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(time.Minute)
	j, err := c.Join(ctx, principal(s.pat), vid, true)
	if err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(5 * time.Minute)
	if err := c.Leave(ctx, principal(s.pat), vid, j.Peer); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, principal(s.pat), vid, true); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(9*time.Minute + 30*time.Second)
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", visit))
	wantMsg(t, loc(s.pat, "state", "NJ", "at_home", "0"), 409, "before it ends")

	facts := dataOf[telehealthOut](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/facts", Header: userHeaders(s.c, s.doc.Token)}))
	if facts.Modality != "audio" || facts.ProviderState != "NY" || facts.CallStart != t0+60 || facts.CallEnd != t0+60+5*60+9*60+30 ||
		facts.Minutes != 15 || len(facts.Participants) != 2 || facts.PlaceOfService != "10" || !slices.Equal(facts.Modifiers, []string{"93"}) {
		t.Fatalf("the visit's facts: %+v", facts)
	}
	if len(facts.Warnings) != 1 { // a patient in NJ, a provider of NY
		t.Fatalf("warnings: %v", facts.Warnings)
	}

	// The claim: the provider coded G2252 with GC; the rules add 93.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/codes", Header: userHeaders(s.c, s.doc.Token),
		JSON: map[string]any{"diagnoses": []string{"J06.9"}, "procedures": []map[string]any{{"code": "G2252", "modifiers": []string{"GC"}}}}}))
	day := e.Clock.Now().UTC().Format("2006-01-02")
	claims := dataOf[[]factsClaim](t, e.Do(testenv.Req{Path: "/api_v3/reports/claims", Header: adminHeaders(s.c), Query: q("from_date", day, "to_date", day)}))
	var mine, other *factsClaim
	for i := range claims {
		switch claims[i].VisitID {
		case visit:
			mine = &claims[i]
		case bare:
			other = &claims[i]
		}
	}
	if mine == nil || mine.PlaceOfService != "10" || !slices.Equal(mine.Modifiers, []string{"93"}) || mine.Telehealth.RuleSet != "2026" ||
		!slices.Equal(mine.Telehealth.Rules, []string{"pos-10", "mod-93"}) || len(mine.Procedures) != 1 || !slices.Equal(mine.Procedures[0].Modifiers, []string{"GC", "93"}) {
		t.Fatalf("the claim: %+v", mine)
	}
	if other == nil || other.PlaceOfService != "" || !slices.Equal(other.Telehealth.Missing, []string{"patient_location", "modality", "patient_state"}) {
		t.Fatalf("a claim with nothing recorded: %+v", other)
	}
}

// mustID parses a visit id the API answered.
func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var id int64
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("id %q", s)
		}
		id = id*10 + int64(r-'0')
	}
	return id
}

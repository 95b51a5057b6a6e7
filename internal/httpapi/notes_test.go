package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// TestNotes_DraftSignAmend: the visit's provider writes a note as a
// draft (diagnoses from the code set, described), saves it again, signs
// it, and then can only add dated addenda; the admin reads it, the
// patient does not, and gets the summary once the visit is over; every
// read is audited.
func TestNotes_DraftSignAmend(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.withVisit(t)
	path := "/api_v3/visits/" + visit + "/note"
	doc, pat := userHeaders(s.c, s.doc.Token), userHeaders(s.c, s.pat.Token)
	draft := noteBody{Subjective: "Rash for 3 days, itchy.", Objective: "Erythematous patches on both forearms.",
		Assessment: "Contact dermatitis.", Plan: "Hydrocortisone 1% twice a day for a week.", Diagnoses: []string{"l259", "R21"}, Procedure: "g2252",
		PatientSummary: "You have a skin reaction to something you touched. Use the cream twice a day."}

	testenv.Steps(t, []testenv.Step{
		{Name: "ErrNoNoteYet", Run: func(t *testing.T) {
			wantErr(t, e.Do(testenv.Req{Path: path, Header: doc}), 404, 404)
		}},
		{Name: "OKDraft", Run: func(t *testing.T) {
			d := dataOf[client.VisitNote](t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: draft}))
			if d.Status != "draft" || d.Subjective != draft.Subjective || len(d.Diagnoses) != 2 ||
				d.Diagnoses[0].Code != "L25.9" || d.Diagnoses[0].Description == "" || d.SignedBy != "" || d.Procedure != "G2252" {
				t.Fatalf("%+v", d)
			}
			// Saved again, whole: the second save replaces the first.
			d = dataOf[client.VisitNote](t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, Form: q("subjective", "Rash for 4 days.", "diagnoses[]", "R21", "plan", "Cream.")}))
			if d.Subjective != "Rash for 4 days." || len(d.Diagnoses) != 1 || d.Objective != "" {
				t.Fatalf("the second save: %+v", d)
			}
			mustOK(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: draft}))
		}},
		{Name: "ErrBadDraft", Run: func(t *testing.T) {
			for _, bad := range []noteBody{{Diagnoses: []string{"X99.999"}}, {Plan: strings.Repeat("a", 20001)}, {Procedure: "99999"}} {
				wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: bad}), 400, 400)
			}
		}},
		{Name: "ErrOnlyTheVisitsProviderWrites", Run: func(t *testing.T) {
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: pat, JSON: draft}), 403, 403)
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: adminHeaders(s.c), JSON: draft}), 403, 403)
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: userHeaders(s.c, s.other.Token), JSON: draft}), 404, 404)
		}},
		{Name: "OKAdminReadsThePatientNotYet", Run: func(t *testing.T) {
			if d := dataOf[client.VisitNote](t, e.Do(testenv.Req{Path: path, Header: adminHeaders(s.c)})); d.Assessment != "Contact dermatitis." {
				t.Fatalf("the admin: %+v", d)
			}
			// The patient reads the note once it is signed and the visit over.
			wantErr(t, e.Do(testenv.Req{Path: path, Header: pat}), 404, 404)
			// Before the visit is over and the note signed, no summary.
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/summary", Header: pat}), 404, 404)
		}},
		{Name: "OKSignLocks", Run: func(t *testing.T) {
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/addenda", Header: doc, Form: q("text", "Too early.")}), 409, 409)
			// A procedure coded before the note is signed stays beside the
			// note's diagnoses.
			mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/codes", Header: doc, JSON: js(`{"diagnoses": ["J06.9"], "procedures": [{"code": "G2012", "modifiers": ["95"]}]}`)}))
			if d := dataOf[client.VisitNote](t, e.Do(testenv.Req{Method: "POST", Path: path + "/sign", Header: doc})); d.Status != "signed" || d.SignedBy != s.doc.UserID || d.SignedAt == 0 {
				t.Fatalf("sign: %+v", d)
			}
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/sign", Header: doc}), 409, 409)
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: noteBody{Plan: "Changed after signing."}}), 409, 409)
			if d := dataOf[client.VisitNote](t, e.Do(testenv.Req{Path: path, Header: doc})); d.Plan != draft.Plan {
				t.Fatalf("a signed note changed: %+v", d)
			}
			// The signed note's diagnoses, primary first, and its service
			// (first; an e-consult's online service takes no telehealth
			// modifier) are the visit's billing codes, and the claims
			// report's.
			codes := dataOf[client.ClaimCodes](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/codes", Header: doc}))
			if diff := cmp.Diff([]string{"L25.9", "R21"}, codes.Diagnoses); diff != "" || len(codes.Procedures) != 2 || codes.Procedures[0].Code != "G2252" ||
				len(codes.Procedures[0].Modifiers) != 0 || codes.Procedures[1].Code != "G2012" {
				t.Fatalf("the visit's codes after signing (-want +got):\n%s%+v", diff, codes.Procedures)
			}
			day := e.Clock.Now().UTC().Format("2006-01-02")
			claims := dataOf[[]claim](t, e.Do(testenv.Req{Path: "/api_v3/reports/claims", Header: adminHeaders(s.c), Query: q("from_date", day, "to_date", day)}))
			if len(claims) != 1 || len(claims[0].Diagnoses) != 2 || claims[0].Diagnoses[0].Code != "L25.9" {
				t.Fatalf("the claims report after signing: %+v", claims)
			}
		}},
		{Name: "OKAddendaDated", Run: func(t *testing.T) {
			e.Clock.Advance(10 * 60e9)
			d := dataOf[client.VisitNote](t, e.Do(testenv.Req{Method: "POST", Path: path + "/addenda", Header: doc, Form: q("text", "Patch test booked for next week.")}))
			if len(d.Addenda) != 1 || d.Addenda[0].Text != "Patch test booked for next week." || d.Addenda[0].Created <= d.SignedAt {
				t.Fatalf("addendum: %+v", d)
			}
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/addenda", Header: doc, Form: q("text", " ")}), 400, 400)
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/addenda", Header: pat, Form: q("text", "Mine")}), 403, 403)
		}},
		{Name: "OKSummaryAfterTheVisit", Run: func(t *testing.T) {
			for _, step := range []string{"inprogress", "close"} {
				mustOK(t, s.post(s.doc.Token, "/api_v3/visits/"+step, "id", visit))
			}
			res := e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/summary", Header: pat})
			d := dataOf[client.VisitSummary](t, res)
			if d.PatientSummary != draft.PatientSummary || d.Plan != draft.Plan || len(d.Diagnoses) != 2 || len(d.Addenda) != 1 {
				t.Fatalf("the summary: %s", res.Raw)
			}
			// The clinician's own sections are not the patient's to read.
			members := dataOf[map[string]json.RawMessage](t, res)
			for _, private := range []string{"subjective", "objective", "assessment"} {
				if _, has := members[private]; has {
					t.Fatalf("the summary holds %s: %s", private, res.Raw)
				}
			}
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/summary", Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)
		}},
		{Name: "OKAudited", Run: func(t *testing.T) {
			e.FlushAudits()
			for action, least := range map[string]int{"visit.note.read": 2, "visit.note.write": 3, "visit.note.sign": 1, "visit.note.addendum": 1, "visit.summary.read": 1} {
				if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = '"+action+"' AND outcome = 'ok'"); n < least {
					t.Errorf("%d %s entries, want at least %d", n, action, least)
				}
			}
		}},
	})
}

// composition is a Composition as the test reads it.
type composition struct {
	ResourceType, ID, Status, Title string
	Subject, Encounter              fhirRef
	Author                          []fhirRef
	Section                         []struct {
		Title string
		Text  struct{ Status, Div string }
		Entry []fhirRef
	}
}

// condition is a Condition as the test reads it.
type condition struct {
	ID       string
	Category []struct {
		Coding []struct{ System, Code string }
	}
	Code struct {
		Coding []struct{ System, Code, Display string }
	}
	Encounter *fhirRef
	Recorder  *fhirRef
}

// TestFHIR_Composition: a visit's note is a Composition that validates
// against R4: preliminary as a draft, final once signed, amended after an
// addendum, for the provider and the admin; the patient gets the summary
// part once the visit is over, and another patient nothing.
func TestFHIR_Composition(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.withVisit(t)
	doc, pat := userHeaders(s.c, s.doc.Token), userHeaders(s.c, s.pat.Token)
	note := "/api_v3/visits/" + visit + "/note"
	search := func(h map[string]string) []composition {
		t.Helper()
		res := fhirGet(t, e, h, "/fhir/R4/Composition", "patient", s.pat.UserID)
		var b struct {
			Entry []struct{ Resource composition }
		}
		if res.Status != 200 || json.Unmarshal(res.Raw, &b) != nil {
			t.Fatalf("search: %d %s", res.Status, res.Raw)
		}
		var out []composition
		for _, en := range b.Entry {
			out = append(out, en.Resource)
		}
		return out
	}
	titles := func(c composition) []string {
		var out []string
		for _, sec := range c.Section {
			out = append(out, sec.Title)
		}
		return out
	}
	if got := search(doc); len(got) != 0 {
		t.Fatalf("a Composition before any note: %+v", got)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: note, Header: doc, JSON: noteBody{Subjective: "Itchy <rash> & red", Assessment: "Contact dermatitis.",
		Plan: "Cream twice a day.", Diagnoses: []string{"L25.9"}, PatientSummary: "A skin reaction. Use the cream."}}))
	got := search(doc)
	wantID := s.pat.UserID + "-" + visit
	if len(got) != 1 || got[0].ID != wantID || got[0].Status != "preliminary" || got[0].Encounter.Reference != "Encounter/"+visit ||
		got[0].Author[0].Reference != "Practitioner/"+s.doc.UserID || !strings.Contains(got[0].Section[1].Text.Div, "Itchy &lt;rash&gt; &amp; red") {
		t.Fatalf("the draft's Composition: %+v", got)
	}
	if diff := cmp.Diff([]string{"Summary for the patient", "Subjective", "Assessment", "Plan", "Diagnoses (ICD-10-CM)"}, titles(got[0])); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	if got := conditions(t, e, doc, s.pat.UserID); len(got) != 0 {
		t.Fatalf("a draft's diagnoses are Conditions already: %+v", got)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: note + "/sign", Header: doc}))
	if got := search(adminHeaders(s.c)); len(got) != 1 || got[0].Status != "final" {
		t.Fatalf("signed, as the admin reads it: %+v", got)
	}
	// Signed, its diagnosis is a coded Condition of the encounter, which
	// the Composition's diagnoses section refers to and which reads by id.
	dx := conditions(t, e, doc, s.pat.UserID)
	if len(dx) != 1 || dx[0].Category[0].Coding[0].Code != "encounter-diagnosis" || dx[0].Code.Coding[0].System != "http://hl7.org/fhir/sid/icd-10-cm" ||
		dx[0].Code.Coding[0].Code != "L25.9" || dx[0].Encounter == nil || dx[0].Encounter.Reference != "Encounter/"+visit ||
		dx[0].Recorder == nil || dx[0].Recorder.Reference != "Practitioner/"+s.doc.UserID {
		t.Fatalf("the note's diagnosis as a Condition: %+v", dx)
	}
	if sec := search(doc)[0].Section; sec[len(sec)-1].Title != "Diagnoses (ICD-10-CM)" || len(sec[len(sec)-1].Entry) != 1 || sec[len(sec)-1].Entry[0].Reference != "Condition/"+dx[0].ID {
		t.Fatalf("the diagnoses section's entries: %+v", sec)
	}
	if res := fhirGet(t, e, doc, "/fhir/R4/Condition/"+dx[0].ID); res.Status != 200 || !strings.Contains(string(res.Raw), `"L25.9"`) {
		t.Fatalf("the Condition by id: %d %s", res.Status, res.Raw)
	}
	// The Encounter names it, billed, the primary.
	var enc struct {
		Diagnosis []struct {
			Condition struct{ Reference string } `json:"condition"`
			Use       struct {
				Coding []struct{ System, Code string } `json:"coding"`
			} `json:"use"`
			Rank int `json:"rank"`
		} `json:"diagnosis"`
	}
	if res := fhirGet(t, e, doc, "/fhir/R4/Encounter/"+visit); res.Status != 200 || json.Unmarshal(res.Raw, &enc) != nil || len(enc.Diagnosis) != 1 ||
		enc.Diagnosis[0].Condition.Reference != "Condition/"+dx[0].ID || enc.Diagnosis[0].Rank != 1 || enc.Diagnosis[0].Use.Coding[0].Code != "billing" {
		t.Fatalf("the Encounter's diagnoses: %d %s", res.Status, res.Raw)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: note + "/addenda", Header: doc, Form: q("text", "Patch test next week.")}))
	if got := search(doc); len(got) != 1 || got[0].Status != "amended" || got[0].Section[len(got[0].Section)-1].Title != "Addenda" {
		t.Fatalf("amended: %+v", got)
	}
	if got := search(pat); len(got) != 0 {
		t.Fatalf("the patient before the visit is over: %+v", got)
	}
	for _, step := range []string{"inprogress", "close"} {
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/"+step, "id", visit))
	}
	got = search(pat)
	if len(got) != 1 {
		t.Fatalf("the patient after the visit: %+v", got)
	}
	if diff := cmp.Diff([]string{"Summary for the patient", "Plan", "Diagnoses (ICD-10-CM)", "Addenda"}, titles(got[0])); diff != "" {
		t.Errorf("the patient's sections (-want +got):\n%s", diff)
	}
	if res := fhirGet(t, e, pat, "/fhir/R4/Composition/"+wantID); res.Status != 200 || strings.Contains(string(res.Raw), "Itchy") {
		t.Fatalf("the patient's read: %d %s", res.Status, res.Raw)
	}
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat2.Token), "/fhir/R4/Composition/"+wantID), 404, "not-found")
	// $everything holds it too.
	if all := entries(t, fhirGet(t, e, doc, "/fhir/R4/Patient/"+s.pat.UserID+"/$everything")); len(all["Composition"]) != 1 {
		t.Errorf("$everything: %v", counts(all))
	}
}

// TestIntakes_QuestionsAndConsent: a room's own questions and consent
// through the API: set on the room, shown with it, answered and signed
// with an intake (refused without), the answers kept under custom.
func TestIntakes_QuestionsAndConsent(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	room := dataOf[client.RoomDetail](t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(`{
		"intake_questions": [{"id": "fever", "label": "Do you have a fever?", "kind": "yesno", "required": true}],
		"consent": {"version": "v1", "text": "I agree to a video visit."}}`)}))
	if room.IntakeQuestions == nil || len(*room.IntakeQuestions) != 1 || room.Consent == nil || room.Consent.Version != "v1" {
		t.Fatalf("the room: %+v %+v", room.IntakeQuestions, room.Consent)
	}
	wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(`{
		"intake_questions": [{"id": "Bad Id", "label": "x", "kind": "text"}]}`)}), 400, 400)
	intake := func(kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token), Form: q(append([]string{"room_code", "main", "reason_for_visit", "Cough"}, kv...)...)})
	}
	wantErr(t, intake("answers", `{"fever":"yes"}`), 400, 400)                                                     // unsigned
	wantErr(t, intake("answers", `{"fever":"yes"}`, "consent_name", "Pat One", "consent_version", "v0"), 409, 409) // another version
	wantErr(t, intake("consent_name", "Pat One", "consent_version", "v1"), 400, 400)                               // unanswered
	if it := dataOf[client.Intake](t, intake("answers", `{"fever":"yes"}`, "consent_name", "Pat One", "consent_version", "v1")); it.Custom["q_fever"] != "yes" {
		t.Fatalf("the intake: %+v", it)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM consents WHERE signed_name = 'Pat One' AND version = 'v1'"); n != 1 {
		t.Fatalf("%d signed consents", n)
	}
}

// TestUsers_Invite: the admin invites a provider into a room: the
// provider is pending, in the room, and mailed an activation link; a bad
// email, an unknown room or an email the clinic has are refused, and
// nothing is created for them.
func TestUsers_Invite(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	invite := func(kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/invite", Header: adminHeaders(s.c), Form: q(kv...)})
	}
	d := dataOf[invitedUser](t, invite("first_name", "Maya", "last_name", "Medic", "email", "maya@alpha.example", "rooms[]", "main"))
	if d.FirstName != "Maya" || d.Email != "maya@alpha.example" || d.Type != 400 || d.Status != 0 || len(d.Rooms) != 1 {
		t.Fatalf("invite: %+v", d)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM outbox WHERE topic = 'mail'"); n != 1 {
		t.Errorf("%d activation mails queued, want 1", n)
	}
	// The invitation says who sends it, from which clinic, for how long
	// the link works, in words, and where to sign in afterwards.
	box := &outbox{}
	if n := e.App.DeliverMail(context.Background(), box); n != 1 {
		t.Fatalf("delivered %d mails", n)
	}
	m := box.msgs[0]
	if m.To != "maya@alpha.example" || m.Subject != "You are invited to join Alpha Clinic" {
		t.Fatalf("the invitation: %+v", m)
	}
	for _, want := range []string{"Hello Maya", "Alpha Clinic's administrator invited you to join Alpha Clinic", "within 24 hours", "/activate?account=alpha&token=", "/signin"} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("the invitation does not say %q:\n%s", want, m.Body)
		}
	}
	if strings.Contains(m.Body, "24h0m0s") || strings.Contains(m.Body, "did not ask for this") {
		t.Errorf("the invitation reads as a request of the provider's:\n%s", m.Body)
	}
	provs := dataOf[[]client.RoomProvider](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers", Header: acctHeaders(s.c)}))
	found := false
	for _, p := range provs {
		found = found || p.Id == d.ID
	}
	if !found {
		t.Errorf("the invited provider is not in the room: %v", provs)
	}
	users := count(t, e, "SELECT COUNT(*) FROM users")
	wantUsersErr(t, invite("first_name", "A", "last_name", "B", "email", "not an address"), 400)
	wantUsersErr(t, invite("first_name", "A", "last_name", "B", "email", "a@alpha.example", "rooms[]", "nope"), 400)
	wantUsersErr(t, invite("last_name", "B", "email", "b@alpha.example"), 400)
	wantErr(t, invite("first_name", "Maya", "last_name", "Again", "email", "maya@alpha.example"), 409, 409)
	if n := count(t, e, "SELECT COUNT(*) FROM users"); n != users {
		t.Errorf("refused invitations made %d users", n-users)
	}
	wantUsersErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/invite", Header: userHeaders(s.c, s.doc.Token), Form: q("first_name", "A", "last_name", "B", "email", "c@alpha.example")}), 401)
}

// noteBody is a visit note as its provider saves it.
type noteBody struct {
	Subjective     string   `json:"subjective,omitempty"`
	Objective      string   `json:"objective,omitempty"`
	Assessment     string   `json:"assessment,omitempty"`
	Plan           string   `json:"plan,omitempty"`
	Diagnoses      []string `json:"diagnoses,omitempty"`
	Procedure      string   `json:"procedure,omitempty"`
	PatientSummary string   `json:"patient_summary,omitempty"`
}

// invitedUser is POST /users/invite's answer, as far as the test reads it.
type invitedUser struct {
	ID        string `json:"id"`
	FirstName string `json:"first_name"`
	Email     string `json:"email"`
	Type      int    `json:"type"`
	Status    int    `json:"status"`
	Rooms     []any  `json:"rooms"`
}

// conditions are the patient's Conditions of encounters (their notes'
// diagnoses), as h finds them.
func conditions(t *testing.T, e *testenv.Env, h map[string]string, patient string) []condition {
	t.Helper()
	res := fhirGet(t, e, h, "/fhir/R4/Condition", "patient", patient)
	var b struct {
		Entry []struct{ Resource condition }
	}
	if res.Status != 200 || json.Unmarshal(res.Raw, &b) != nil {
		t.Fatalf("Condition search: %d %s", res.Status, res.Raw)
	}
	var out []condition
	for _, en := range b.Entry {
		if len(en.Resource.Category) > 0 && len(en.Resource.Category[0].Coding) > 0 && en.Resource.Category[0].Coding[0].Code == "encounter-diagnosis" {
			out = append(out, en.Resource)
		}
	}
	return out
}

// TestFHIR_GuestPatient: a guest who came to a visit has a record like any
// patient: their FHIR Patient reads for the visit's provider and for
// themself, and their visit is an Encounter.
func TestFHIR_GuestPatient(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	guest := mustSSO(t, e, s.c, "600", "", "Gail", "Guest")
	visit := s.econsult(t, guest)
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit))
	for who, h := range map[string]map[string]string{"the provider": userHeaders(s.c, s.doc.Token), "the guest": userHeaders(s.c, guest.Token)} {
		res := fhirGet(t, e, h, "/fhir/R4/Patient/"+guest.UserID)
		if res.Status != 200 || !strings.Contains(string(res.Raw), `"Guest"`) {
			t.Fatalf("%s reads the guest's Patient: %d %s", who, res.Status, res.Raw)
		}
	}
	if res := fhirGet(t, e, userHeaders(s.c, guest.Token), "/fhir/R4/Encounter", "patient", guest.UserID); res.Status != 200 || !strings.Contains(string(res.Raw), `"Encounter/`+visit+`"`) && !strings.Contains(string(res.Raw), `"id":"`+visit+`"`) {
		t.Fatalf("the guest's Encounter: %d %s", res.Status, res.Raw)
	}
	// Another provider, without a visit with the guest, is refused as for any patient.
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.other.Token), "/fhir/R4/Patient/"+guest.UserID), 403, "forbidden")
}

// TestNotes_AuthorshipSurvivesReschedule: a patient reschedules to
// another provider's slot after their first provider drafted the note.
// The note stays its author's: the new provider neither reads the draft,
// nor writes over it, nor signs it; the author still reads, edits and
// signs it, the signature binding the hash of what was signed; the new
// provider then reads it and amends it under their own name; a change to
// the row after signing shows as a signature that no longer holds; the
// patient reads the signed note once the visit is over.
func TestNotes_AuthorshipSurvivesReschedule(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}))
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "America/New_York", Duration: 30})
	s.publish(t, s.other.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "10:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30})
	at := func(i int) string { return fmt.Sprint(tue0900NY + int64(i)*1800) }
	visit := dataOf[client.Visit](t, s.post(s.pat.Token, "/api_v3/visits", "slot_start", at(0), "slot_end", at(1), "room_code", "main", "type", "2",
		"intake_id", s.intake(t, s.pat, "type", "2"))).Id
	path := "/api_v3/visits/" + visit + "/note"
	doc, other := userHeaders(s.c, s.doc.Token), userHeaders(s.c, s.other.Token)
	draft := func(plan string) map[string]any {
		return map[string]any{"subjective": "Rash for a week.", "assessment": "Contact dermatitis.", "plan": plan, "diagnoses": []string{"L25.9"}}
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: draft("Hydrocortisone.")}))

	// The reschedule gives the visit to the other provider.
	mustOK(t, s.post(s.pat.Token, "/api_v3/visits/"+visit+"/reschedule", "slot_start", at(2), "slot_end", at(3), "provider_id", s.other.UserID))
	if v := dataOf[client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit, Header: other})); fmt.Sprint(v.ProviderId) != s.other.UserID {
		t.Fatalf("the visit's provider after the reschedule: %v", v.ProviderId)
	}
	wantMsg(t, e.Do(testenv.Req{Path: path, Header: other}), 403, "draft of the provider who wrote it")
	wantMsg(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: other, JSON: draft("Mine now.")}), 403, "only they edit or sign it")
	wantMsg(t, e.Do(testenv.Req{Method: "POST", Path: path + "/sign", Header: other}), 403, "only they edit or sign it")

	// The author keeps it.
	got := dataOf[client.VisitNote](t, e.Do(testenv.Req{Path: path, Header: doc}))
	if got.Plan != "Hydrocortisone." || got.AuthorId != s.doc.UserID || got.SignatureHolds {
		t.Fatalf("the author's note: %+v", got)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: draft("Hydrocortisone 1% twice a day.")}))
	signed := dataOf[client.VisitNote](t, e.Do(testenv.Req{Method: "POST", Path: path + "/sign", Header: doc}))
	if signed.Status != "signed" || signed.SignedBy != s.doc.UserID || len(signed.SignedHash) != 64 || !signed.SignatureHolds {
		t.Fatalf("signed: %+v", signed)
	}

	// Signed: the visit's provider reads it and amends it under their name.
	amended := dataOf[client.VisitNote](t, e.Do(testenv.Req{Method: "POST", Path: path + "/addenda", Header: other, Form: q("text", "Seen again: better.")}))
	if len(amended.Addenda) != 1 || amended.Addenda[0].AuthorId != s.other.UserID || amended.AuthorId != s.doc.UserID || !amended.SignatureHolds {
		t.Fatalf("amended: %+v", amended)
	}
	// A change to the row after signing shows.
	if _, err := e.Store.DB().Exec("UPDATE visit_notes SET plan = 'Nothing.'"); err != nil {
		t.Fatal(err)
	}
	if n := dataOf[client.VisitNote](t, e.Do(testenv.Req{Path: path, Header: doc})); n.SignatureHolds || n.SignedHash != signed.SignedHash {
		t.Fatalf("a changed signed note: %+v", n)
	}

	// The patient reads the signed note once the visit is over.
	wantErr(t, e.Do(testenv.Req{Path: path, Header: userHeaders(s.c, s.pat.Token)}), 404, 404)
	mustOK(t, s.post(s.other.Token, "/api_v3/visits/inprogress", "id", visit))
	mustOK(t, s.post(s.other.Token, "/api_v3/visits/close", "id", visit))
	if n := dataOf[client.VisitNote](t, e.Do(testenv.Req{Path: path, Header: userHeaders(s.c, s.pat.Token)})); n.Assessment != "Contact dermatitis." {
		t.Fatalf("the patient's note: %+v", n)
	}
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"teleclinic/internal/testenv"
)

// fhirAppt is an Appointment (or a Slot, Schedule, OperationOutcome) as
// the scheduling tests read it.
type fhirAppt struct {
	ResourceType string     `json:"resourceType"`
	ID           string     `json:"id,omitempty"`
	Status       string     `json:"status,omitempty"`
	Start        string     `json:"start,omitempty"`
	End          string     `json:"end,omitempty"`
	Identifier   []fhirIdf  `json:"identifier,omitempty"`
	Slot         []fhirRefT `json:"slot,omitempty"`
	Schedule     *fhirRefT  `json:"schedule,omitempty"`
	Actor        []fhirRefT `json:"actor,omitempty"`
	ServiceType  []struct {
		Coding []fhirIdfCode `json:"coding,omitempty"`
	} `json:"serviceType,omitempty"`
	Participant []struct {
		Actor fhirRefT `json:"actor"`
	} `json:"participant,omitempty"`
	Extension []struct {
		URL          string `json:"url"`
		ValueInstant string `json:"valueInstant"`
	} `json:"extension,omitempty"`
	CancelationReason *struct {
		Text string `json:"text"`
	} `json:"cancelationReason,omitempty"`
}

type fhirRefT struct {
	Reference string `json:"reference"`
}

type fhirIdf struct {
	System string `json:"system"`
	Value  string `json:"value"`
}

type fhirIdfCode struct {
	System string `json:"system"`
	Code   string `json:"code"`
}

type fhirApptBundle struct {
	ResourceType string `json:"resourceType"`
	Total        int    `json:"total"`
	Link         []struct{ Relation, URL string }
	Entry        []struct {
		FullURL  string   `json:"fullUrl"`
		Resource fhirAppt `json:"resource"`
	} `json:"entry"`
}

// TestFHIR_Scheduling: an integrator finds open times by the standard
// (Slot search, Appointment/$find), holds one for a patient, books it,
// moves it and cancels it by writing its status, on the same slots and
// rules as the portal; every answer is valid R4 and every refusal an
// OperationOutcome.
func TestFHIR_Scheduling(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	slots := s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:30", Timezone: "America/New_York", Duration: 15})
	pat, doc, admin := userHeaders(s.c, s.pat.Token), userHeaders(s.c, s.doc.Token), adminHeaders(s.c)
	send := func(method, path string, h map[string]string, body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: method, Path: path, Header: h, JSON: json.RawMessage(body)})
	}
	read := func(res *testenv.Resp, status int) fhirAppt {
		t.Helper()
		if res.Status != status {
			t.Fatalf("status %d, want %d: %s", res.Status, status, res.Raw)
		}
		checkFHIR(t, res.Raw)
		var a fhirAppt
		if err := json.Unmarshal(res.Raw, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	bundle := func(res *testenv.Resp) fhirApptBundle {
		t.Helper()
		if res.Status != 200 {
			t.Fatalf("status %d: %s", res.Status, res.Raw)
		}
		checkFHIR(t, res.Raw)
		var b fhirApptBundle
		if err := json.Unmarshal(res.Raw, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	statuses := func() string {
		t.Helper()
		b := bundle(fhirGet(t, e, pat, "/fhir/R4/Slot", "start", "ge"+slotDay, "schedule", "Schedule/"+s.doc.UserID))
		var out []string
		for _, en := range b.Entry {
			out = append(out, en.Resource.Status)
		}
		return strings.Join(out, " ")
	}

	// The slots, their schedule and the room they serve.
	b := bundle(fhirGet(t, e, pat, "/fhir/R4/Slot", "start", "ge"+slotDay, "start", "lt2026-03-04", "service-type", "main"))
	if b.Total != 6 || b.Entry[0].Resource.ResourceType != "Slot" || b.Entry[0].Resource.Schedule == nil || b.Entry[0].Resource.Schedule.Reference != "Schedule/"+s.doc.UserID ||
		b.Entry[0].Resource.ServiceType[0].Coding[0].Code != "main" || b.Entry[0].Resource.ServiceType[0].Coding[0].System != "urn:teleclinic:alpha:room" {
		t.Fatalf("the slots: %+v", b)
	}
	if got := statuses(); got != "free free free free free free" {
		t.Fatalf("statuses %q", got)
	}
	// _count pages, and the next link goes on.
	page := bundle(fhirGet(t, e, pat, "/fhir/R4/Slot", "start", "ge"+slotDay, "_count", "4"))
	next := ""
	for _, l := range page.Link {
		if l.Relation == "next" {
			next = l.URL
		}
	}
	if len(page.Entry) != 4 || !strings.Contains(next, "_after=") {
		t.Fatalf("the first page: %d entries, next %q", len(page.Entry), next)
	}
	nextURL, err := url.Parse(next)
	if err != nil {
		t.Fatal(err)
	}
	if rest := bundle(e.Do(testenv.Req{Path: nextURL.Path, Query: nextURL.Query(), Header: pat})); len(rest.Entry) != 2 || rest.Entry[0].Resource.ID != slots[4].Id {
		t.Fatalf("the next page: %+v", rest)
	}
	sl := read(fhirGet(t, e, pat, "/fhir/R4/Slot/"+slots[0].Id), 200)
	if sl.ID != slots[0].Id || sl.Status != "free" {
		t.Fatalf("the slot: %+v", sl)
	}
	if sch := read(fhirGet(t, e, pat, "/fhir/R4/Schedule/"+s.doc.UserID), 200); sch.Actor[0].Reference != "Practitioner/"+s.doc.UserID {
		t.Fatalf("the schedule: %+v", sch)
	}
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Slot/99999"), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Schedule/"+s.pat.UserID), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Slot", "start", "soon"), 400, "invalid")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Slot", "practitioner", "1"), 400, "invalid")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Slot", "status", "open"), 400, "invalid")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Slot", "start", "ge2026-01-01", "start", "lt2026-06-01"), 400, "invalid")

	// $find: 30 minutes take two back-to-back 15-minute slots, so five of
	// the six can start one; the same by a Parameters body.
	find := bundle(fhirGet(t, e, pat, "/fhir/R4/Appointment/$find", "service-type", "main", "start", slotDay, "end", "2026-03-04", "duration", "30"))
	if find.Total != 5 {
		t.Fatalf("$find: %+v", find)
	}
	for i, en := range find.Entry {
		a := en.Resource
		if a.Status != "proposed" || a.ID != "" || len(a.Slot) != 2 || a.Slot[0].Reference != "Slot/"+slots[i].Id ||
			a.Participant[0].Actor.Reference != "Practitioner/"+s.doc.UserID || en.FullURL != "" {
			t.Fatalf("proposal %d: %+v", i, en)
		}
	}
	posted := bundle(send("POST", "/fhir/R4/Appointment/$find", pat, `{"resourceType": "Parameters", "parameter": [
		{"name": "service-type", "valueCoding": {"system": "urn:teleclinic:alpha:room", "code": "main"}},
		{"name": "start", "valueDate": "`+slotDay+`"}, {"name": "end", "valueDate": "2026-03-04"},
		{"name": "practitioner", "valueReference": {"reference": "Practitioner/`+s.doc.UserID+`"}}]}`))
	if posted.Total != 6 {
		t.Fatalf("$find by Parameters: %+v", posted)
	}
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Appointment/$find", "start", slotDay), 400, "invalid")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Appointment/$find", "service-type", "main", "duration", "0"), 400, "invalid")
	wantOutcome(t, fhirGet(t, e, pat, "/fhir/R4/Appointment/$find", "service-type", "nowhere"), 404, "not-found")
	wantOutcome(t, send("POST", "/fhir/R4/Appointment/$find", pat, `{"resourceType": "Patient"}`), 400, "invalid")

	proposal := func(i int) string {
		raw, err := json.Marshal(find.Entry[i].Resource)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	// $hold: the patient holds the first time; it shows as held, and no one
	// else may hold it.
	held := read(send("POST", "/fhir/R4/Appointment/$hold", pat, `{"resourceType": "Parameters", "parameter": [{"name": "appt-resource", "resource": `+proposal(0)+`}]}`), 200)
	if held.Status != "pending" || len(held.Identifier) != 1 || held.Identifier[0].System != "urn:teleclinic:alpha:intake" ||
		len(held.Extension) != 1 || !strings.HasSuffix(held.Extension[0].URL, "/StructureDefinition/hold-expires") {
		t.Fatalf("the hold: %+v", held)
	}
	if got := statuses(); got != "busy-tentative busy-tentative free free free free" {
		t.Fatalf("statuses after the hold %q", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'intake.hold' AND object_id = ?", held.Identifier[0].Value); n != 1 {
		t.Fatalf("%d audits of the hold", n)
	}
	p2 := userHeaders(s.c, s.pat2.Token)
	wantOutcome(t, send("POST", "/fhir/R4/Appointment/$hold", p2, proposal(0)), 409, "conflict")

	// $book the held time, naming the hold's intake.
	heldRaw, _ := json.Marshal(held)
	res := send("POST", "/fhir/R4/Appointment/$book", pat, string(heldRaw))
	booked := read(res, 201)
	if booked.Status != "booked" || booked.ID == "" || booked.Identifier[0].Value != held.Identifier[0].Value ||
		!strings.HasSuffix(res.Header.Get("Location"), "/fhir/R4/Appointment/"+booked.ID) || booked.Start != find.Entry[0].Resource.Start {
		t.Fatalf("the booking: %+v %v", booked, res.Header)
	}
	if got := statuses(); got != "busy busy free free free free" {
		t.Fatalf("statuses after the booking %q", got)
	}
	if again := read(fhirGet(t, e, pat, "/fhir/R4/Appointment/"+booked.ID), 200); again.Status != "booked" {
		t.Fatalf("read back: %+v", again)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'visit.create' AND object_id = ?", booked.ID); n != 1 {
		t.Fatalf("%d audits of the booking", n)
	}

	// The errors of a booking.
	for _, c := range []struct {
		name, body string
		h          map[string]string
		status     int
		code       string
	}{
		{"not an Appointment", `{"resourceType": "Patient"}`, pat, 400, "invalid"},
		{"a status R4 does not know", `{"resourceType": "Appointment", "status": "maybe", "participant": [{"actor": {"reference": "Patient/1"}, "status": "accepted"}]}`, pat, 400, "invalid"},
		{"no time", `{"resourceType": "Appointment", "status": "proposed", "participant": []}`, pat, 400, "invalid"},
		{"no room", `{"resourceType": "Appointment", "status": "proposed", "start": "2026-03-03T15:00:00Z", "end": "2026-03-03T15:15:00Z", "participant": []}`, pat, 400, "invalid"},
		{"a slot of no clinic's", `{"resourceType": "Appointment", "status": "proposed", "slot": [{"reference": "Slot/99999"}], "participant": []}`, pat, 400, "invalid"},
		{"a time with no slot", `{"resourceType": "Appointment", "status": "proposed", "start": "2026-03-03T15:05:00Z", "end": "2026-03-03T15:20:00Z",
			"serviceType": [{"coding": [{"system": "urn:teleclinic:alpha:room", "code": "main"}]}], "participant": []}`, pat, 400, "invalid"},
		{"a provider books naming no patient", proposal(2), doc, 400, "invalid"},
		{"a patient books for another", strings.Replace(proposal(2), `"participant":[`, `"participant":[{"actor":{"reference":"Patient/`+s.pat2.UserID+`"},"status":"accepted"},`, 1), pat, 403, "forbidden"},
		{"a time already booked", proposal(0), p2, 409, "conflict"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantOutcome(t, send("POST", "/fhir/R4/Appointment/$book", c.h, c.body), c.status, c.code)
		})
	}
	if n := count(t, e, "SELECT COUNT(*) FROM intakes WHERE member_id = ?", s.pat2.UserID); n != 0 {
		t.Fatalf("refused bookings left %d intakes", n)
	}

	// Two clients race for one time: one books, the other is told it is
	// taken, and keeps no intake.
	racers := []map[string]string{p2, userHeaders(s.c, mustSSO(t, e, s.c, "200", "pat3", "Pam", "Three").Token)}
	var wg sync.WaitGroup
	results := make([]*testenv.Resp, len(racers))
	for i, h := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = testenv.Do(t, e.URL, testenv.Req{Method: "POST", Path: "/fhir/R4/Appointment/$book", Header: h, JSON: json.RawMessage(proposal(2))})
		}()
	}
	wg.Wait()
	won := map[int]int{}
	for _, r := range results {
		won[r.Status]++
		if r.Status == 409 {
			wantOutcome(t, r, 409, "conflict")
		}
	}
	if won[201] != 1 || won[409] != 1 {
		t.Fatalf("the race: %v", won)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM intakes i JOIN users u ON u.id = i.member_id WHERE u.code IN ('pat2', 'pat3') AND i.visit_id IS NULL"); n != 0 {
		t.Fatalf("the loser kept %d intakes", n)
	}

	// A PUT of new times moves the booking; its old slots open again.
	moved := booked
	moved.Start, moved.End = find.Entry[4].Resource.Start, find.Entry[4].Resource.End
	movedRaw, _ := json.Marshal(moved)
	if m := read(send("PUT", "/fhir/R4/Appointment/"+booked.ID, pat, string(movedRaw)), 200); m.Start != moved.Start || m.Status != "booked" {
		t.Fatalf("the move: %+v", m)
	}
	if got := statuses(); got != "free free busy busy busy busy" {
		t.Fatalf("statuses after the move %q", got)
	}
	// Writing back what was read changes nothing.
	now := read(fhirGet(t, e, pat, "/fhir/R4/Appointment/"+booked.ID), 200)
	nowRaw, _ := json.Marshal(now)
	read(send("PUT", "/fhir/R4/Appointment/"+booked.ID, pat, string(nowRaw)), 200)

	// Cancelled by a JSON Patch of its status, with a reason.
	patch := func(h map[string]string, id, body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PATCH", Path: "/fhir/R4/Appointment/" + id, Header: withHeader(h, "Content-Type", "application/json-patch+json"), RawBody: []byte(body)})
	}
	cancel := `[{"op": "replace", "path": "/status", "value": "cancelled"}, {"op": "add", "path": "/cancelationReason", "value": {"text": "Feeling better"}}]`
	wantOutcome(t, patch(p2, booked.ID, cancel), 404, "not-found") // another patient's
	wantOutcome(t, patch(pat, booked.ID, `[{"op": "replace", "path": "/start", "value": "2026-03-03T15:00:00Z"}]`), 400, "invalid")
	wantOutcome(t, patch(pat, booked.ID, `{"status": "cancelled"}`), 400, "invalid")
	wantOutcome(t, patch(pat, booked.ID, `[{"op": "remove", "path": "/status"}]`), 400, "invalid")
	c := read(patch(pat, booked.ID, cancel), 200)
	if c.Status != "cancelled" || c.CancelationReason == nil || c.CancelationReason.Text != "Feeling better" {
		t.Fatalf("the cancel: %+v", c)
	}
	if got := statuses(); got != "free free busy busy free free" {
		t.Fatalf("statuses after the cancel %q", got)
	}
	// Again: what it already is, so nothing changes; a no-show of a
	// cancelled visit is a conflict.
	if again := read(patch(pat, booked.ID, cancel), 200); again.Status != "cancelled" {
		t.Fatalf("the second cancel: %+v", again)
	}
	wantOutcome(t, patch(doc, booked.ID, `[{"op": "replace", "path": "/status", "value": "noshow"}]`), 409, "conflict")
	wantOutcome(t, send("PUT", "/fhir/R4/Appointment/"+booked.ID, pat, strings.Replace(string(nowRaw), `"status":"booked"`, `"status":"fulfilled"`, 1)), 400, "invalid")

	// The admin books for a patient; the provider marks them a no-show.
	forPat := strings.Replace(proposal(0), `"participant":[`, `"participant":[{"actor":{"reference":"Patient/`+s.pat.UserID+`"},"status":"accepted"},`, 1)
	ad := read(send("POST", "/fhir/R4/Appointment/$book", admin, forPat), 201)
	ns := ad
	ns.Status = "noshow"
	nsRaw, _ := json.Marshal(ns)
	if got := read(send("PUT", "/fhir/R4/Appointment/"+ad.ID, doc, string(nsRaw)), 200); got.Status != "noshow" {
		t.Fatalf("the no-show: %+v", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM visits WHERE id = ? AND cancel_reason = 'no-show'", ad.ID); n != 1 {
		t.Fatal("the no-show is not stored as one")
	}
}

// TestFHIR_BookPriced: in a room that charges for its visits, $book holds
// the time and answers 402 with what to pay; once the intake's invoice is
// paid, $book with the hold's identifier books it.
func TestFHIR_BookPriced(t *testing.T) {
	t.Parallel()
	e, s, _ := billingSetup(t)
	s.enableAppointments(t)
	slots := s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "09:30", Timezone: "America/New_York", Duration: 15})
	pat := userHeaders(s.c, s.pat.Token)
	appt := `{"resourceType": "Appointment", "status": "proposed", "slot": [{"reference": "Slot/` + slots[0].Id + `"}], "participant": []}`
	res := e.Do(testenv.Req{Method: "POST", Path: "/fhir/R4/Appointment/$book", Header: pat, JSON: json.RawMessage(appt)})
	wantOutcome(t, res, 402, "business-rule")
	if !strings.Contains(string(res.Raw), "25.00 USD") {
		t.Fatalf("the 402 does not say what to pay: %s", res.Raw)
	}
	var intake string
	if _, err := fmt.Sscanf(string(res.Raw)[strings.Index(string(res.Raw), "held for intake ")+len("held for intake "):], "%s", &intake); err != nil || intake == "" {
		t.Fatalf("no intake in %s", res.Raw)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM slots WHERE id = ? AND held_by = ?", slots[0].Id, intake); n != 1 {
		t.Fatal("the unpaid time is not held")
	}
	withIntake := strings.Replace(appt, `"status"`, `"identifier": [{"system": "urn:teleclinic:alpha:intake", "value": "`+intake+`"}], "status"`, 1)
	wantOutcome(t, e.Do(testenv.Req{Method: "POST", Path: "/fhir/R4/Appointment/$book", Header: pat, JSON: json.RawMessage(withIntake)}), 402, "business-rule")
	if n := count(t, e, "SELECT COUNT(*) FROM visits"); n != 0 {
		t.Fatalf("%d visits booked unpaid", n)
	}
	card := s.addCard(t, s.pat, "tok_visa")
	mustOK(t, s.process(s.pat.Token, "intake_id", intake, "create_invoice", "true", "source_id", card.Id))
	res = e.Do(testenv.Req{Method: "POST", Path: "/fhir/R4/Appointment/$book", Header: pat, JSON: json.RawMessage(withIntake)})
	if res.Status != 201 || res.Body["status"] != "booked" {
		t.Fatalf("the paid booking: %d %s", res.Status, res.Raw)
	}
}

// withHeader is h with one more header.
func withHeader(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

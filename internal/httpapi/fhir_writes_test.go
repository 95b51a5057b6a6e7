package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"teleclinic/internal/testenv"
)

// fhirPatientOut is a Patient as the server writes it, as far as the test
// reads it.
type fhirPatientOut struct {
	ResourceType string `json:"resourceType"`
	ID           string `json:"id"`
	Meta         struct {
		VersionID string `json:"versionId"`
	} `json:"meta"`
	Identifier []struct{ System, Value string } `json:"identifier"`
	Name       []struct {
		Family string   `json:"family"`
		Given  []string `json:"given"`
	} `json:"name"`
	Gender    string                           `json:"gender"`
	BirthDate string                           `json:"birthDate"`
	Telecom   []struct{ System, Value string } `json:"telecom"`
}

// TestFHIR_PatientWrites: an integrator's admin creates a patient from a
// FHIR Patient, once however often it retries (If-None-Exist on the
// identifier); updates them with the version it read (If-Match), and a
// write against an older version is refused with 412, changing nothing;
// the patient updates themself; a provider may not; every answer is valid
// R4 and every error an OperationOutcome.
func TestFHIR_PatientWrites(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	admin := adminHeaders(s.c)
	system := "urn:teleclinic:alpha:user"
	patient := func(family, given string) json.RawMessage {
		return js(`{"resourceType": "Patient", "identifier": [{"system": "` + system + `", "value": "ehr-123"}],
			"name": [{"family": "` + family + `", "given": ["` + given + `"]}], "gender": "female", "birthDate": "1984-05-06",
			"telecom": [{"system": "email", "value": "rosa@example.com"}, {"system": "phone", "value": "+1 555 0100"}],
			"address": [{"line": ["1 Main St"], "city": "Springfield", "state": "IL", "postalCode": "62701"}]}`)
	}
	send := func(method, path string, h map[string]string, body json.RawMessage, extra ...string) *testenv.Resp {
		hh := map[string]string{}
		for k, v := range h {
			hh[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			hh[extra[i]] = extra[i+1]
		}
		return e.Do(testenv.Req{Method: method, Path: path, Header: hh, JSON: body})
	}
	read := func(res *testenv.Resp, status int) fhirPatientOut {
		t.Helper()
		if res.Status != status {
			t.Fatalf("status %d, want %d: %s", res.Status, status, res.Raw)
		}
		checkFHIR(t, res.Raw)
		var p fhirPatientOut
		if err := json.Unmarshal(res.Raw, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Created, with where it is and its version.
	res := send("POST", "/fhir/R4/Patient", admin, patient("Diaz", "Rosa"))
	p := read(res, 201)
	if p.ID == "" || p.Meta.VersionID == "" || res.Header.Get("ETag") != `W/"`+p.Meta.VersionID+`"` ||
		!strings.HasSuffix(res.Header.Get("Location"), "/fhir/R4/Patient/"+p.ID+"/_history/"+p.Meta.VersionID) ||
		p.Name[0].Family != "Diaz" || p.Gender != "female" || p.BirthDate != "1984-05-06" || len(p.Telecom) != 2 {
		t.Fatalf("the created Patient: %+v %v", p, res.Header)
	}
	// A retry, conditional on the identifier: the same patient, no second.
	again := read(send("POST", "/fhir/R4/Patient", admin, patient("Diaz", "Rosa"), "If-None-Exist", "identifier="+system+"|ehr-123"), 200)
	if again.ID != p.ID {
		t.Fatalf("the conditional create made another: %s, had %s", again.ID, p.ID)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM users WHERE code = 'ehr-123'"); n != 1 {
		t.Fatalf("%d users with the identifier", n)
	}
	for _, c := range []struct {
		name    string
		res     *testenv.Resp
		status  int
		outcome string
	}{
		{"the identifier taken, unconditionally", send("POST", "/fhir/R4/Patient", admin, patient("Diaz", "Rosa")), 409, "conflict"},
		{"a patient creates", send("POST", "/fhir/R4/Patient", userHeaders(s.c, s.pat.Token), patient("X", "Y")), 403, "forbidden"},
		{"not a Patient", send("POST", "/fhir/R4/Patient", admin, js(`{"resourceType": "Practitioner"}`)), 400, "invalid"},
		{"a bad gender", send("POST", "/fhir/R4/Patient", admin, js(`{"resourceType": "Patient", "name": [{"family": "A", "given": ["B"]}], "gender": "robot"}`)), 400, "invalid"},
		{"no name", send("POST", "/fhir/R4/Patient", admin, js(`{"resourceType": "Patient"}`)), 400, "invalid"},
		{"another type", send("POST", "/fhir/R4/Encounter", admin, js(`{"resourceType": "Encounter"}`)), 400, "invalid"},
		{"a bad If-None-Exist", send("POST", "/fhir/R4/Patient", admin, patient("Diaz", "Rosa"), "If-None-Exist", "name=Diaz"), 400, "invalid"},
		// Not R4: the schema refuses it, saying where.
		{"a birthDate R4 does not admit", send("POST", "/fhir/R4/Patient", admin, js(`{"resourceType": "Patient", "name": [{"family": "A", "given": ["B"]}], "birthDate": "yesterday"}`)), 400, "invalid"},
		{"a name that is not a list", send("POST", "/fhir/R4/Patient", admin, js(`{"resourceType": "Patient", "name": {"family": "A"}}`)), 400, "invalid"},
	} {
		wantOutcome(t, c.res, c.status, c.outcome)
	}

	// Read with its ETag; updated with the version read.
	got := e.Do(testenv.Req{Path: "/fhir/R4/Patient/" + p.ID, Header: admin})
	etag := got.Header.Get("ETag")
	if etag != `W/"`+p.Meta.VersionID+`"` {
		t.Fatalf("the read's ETag: %q", etag)
	}
	res = send("PUT", "/fhir/R4/Patient/"+p.ID, admin, patient("Diaz-Moreno", "Rosa"), "If-Match", etag)
	up := read(res, 200)
	if up.Name[0].Family != "Diaz-Moreno" || up.Meta.VersionID == p.Meta.VersionID || res.Header.Get("ETag") == etag {
		t.Fatalf("the update: %+v %q", up, res.Header.Get("ETag"))
	}
	// A writer with the older version is refused, and nothing changes.
	wantOutcome(t, send("PUT", "/fhir/R4/Patient/"+p.ID, admin, patient("Stale", "Writer"), "If-Match", etag), 412, "conflict")
	if now := read(e.Do(testenv.Req{Path: "/fhir/R4/Patient/" + p.ID, Header: admin}), 200); now.Name[0].Family != "Diaz-Moreno" {
		t.Fatalf("a stale write changed the patient: %+v", now)
	}
	wantOutcome(t, send("PUT", "/fhir/R4/Patient/"+p.ID, admin, js(`{"resourceType": "Patient", "id": "999", "name": [{"family": "A", "given": ["B"]}]}`)), 400, "invalid")
	wantOutcome(t, send("PUT", "/fhir/R4/Patient/"+p.ID, admin, js(`{"resourceType": "Patient", "identifier": [{"system": "`+system+`", "value": "other"}], "name": [{"family": "A", "given": ["B"]}]}`)), 400, "invalid")
	// The patient changes their own; a provider may not.
	mine := read(send("PUT", "/fhir/R4/Patient/"+s.pat.UserID, userHeaders(s.c, s.pat.Token), js(`{"resourceType": "Patient", "name": [{"family": "One", "given": ["Patricia"]}]}`)), 200)
	if mine.Name[0].Given[0] != "Patricia" {
		t.Fatalf("the patient's own update: %+v", mine)
	}
	wantOutcome(t, send("PUT", "/fhir/R4/Patient/"+s.pat.UserID, userHeaders(s.c, s.doc.Token), js(`{"resourceType": "Patient", "name": [{"family": "X", "given": ["Y"]}]}`)), 403, "forbidden")
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'user.update' AND object_id = ?", p.ID); n != 1 {
		t.Fatalf("%d audit entries of the update", n)
	}
	// The CapabilityStatement says so.
	if meta := e.Do(testenv.Req{Path: "/fhir/R4/metadata"}); !strings.Contains(string(meta.Raw), `"conditionalCreate":true`) || !strings.Contains(string(meta.Raw), `{"code":"update"}`) {
		t.Fatalf("metadata: %s", meta.Raw)
	}
}

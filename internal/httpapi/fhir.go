package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The FHIR R4 read API (/fhir/R4): the same credentials as the API (a user
// token or the admin token in X-ApiToken, or a user token as
// "Authorization: Bearer"), the same rules (app.PatientRecord) and the same
// audit. Answers are application/fhir+json; errors are OperationOutcome
// resources.

// fhirType is a resource type served: the record parts it needs and the
// search parameters it takes besides _lastUpdated and _format.
type fhirType struct {
	name   string
	parts  app.RecordParts
	search []string
}

// fhirTypes are the resource types served, in the CapabilityStatement's
// order.
var fhirTypes = []fhirType{
	{"Patient", app.RecordParts{}, []string{"patient", "_id"}},
	{"Practitioner", app.RecordParts{Visits: true}, []string{"patient", "_id"}},
	{"Encounter", app.RecordParts{Visits: true}, []string{"patient", "subject"}},
	{"Appointment", app.RecordParts{Visits: true}, []string{"patient"}},
	{"Communication", app.RecordParts{Messages: true}, []string{"patient", "subject"}},
	{"Observation", app.RecordParts{Readings: true}, []string{"patient", "subject"}},
	{"Coverage", app.RecordParts{Coverage: true}, []string{"patient"}},
	{"MedicationRequest", app.RecordParts{Prescriptions: true}, []string{"patient", "subject"}},
	{"AllergyIntolerance", app.RecordParts{EMR: true}, []string{"patient"}},
	{"Condition", app.RecordParts{EMR: true}, []string{"patient", "subject"}},
	{"DocumentReference", app.RecordParts{Files: true}, []string{"patient", "subject"}},
}

// lookupFHIRType finds a served type by name.
func lookupFHIRType(name string) (fhirType, error) {
	for _, t := range fhirTypes {
		if t.name == name {
			return t, nil
		}
	}
	return fhirType{}, clinic.Errorf(clinic.ENotFound, "This server does not serve %s resources; see GET /fhir/R4/metadata.", name)
}

const fhirContentType = "application/fhir+json; charset=utf-8"

func writeFHIR(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", fhirContentType)
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

type fhirIssue struct {
	Severity    string `json:"severity"`
	Code        string `json:"code"`
	Diagnostics string `json:"diagnostics"`
}

type fhirOutcome struct {
	ResourceType string      `json:"resourceType"`
	Issue        []fhirIssue `json:"issue"`
}

// outcomeCode is the OperationOutcome issue code of an answer's status.
func outcomeCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "login"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not-found"
	case http.StatusTooManyRequests:
		return "throttled"
	case http.StatusRequestEntityTooLarge:
		return "too-costly"
	case http.StatusConflict:
		return "conflict"
	}
	return "exception"
}

func writeOutcome(w http.ResponseWriter, status int, msg string) {
	_ = writeFHIR(w, status, fhirOutcome{ResourceType: "OperationOutcome",
		Issue: []fhirIssue{{Severity: "error", Code: outcomeCode(status), Diagnostics: msg}}})
}

type fhirLink struct {
	Relation string `json:"relation"`
	URL      string `json:"url"`
}

type fhirSearchMode struct {
	Mode string `json:"mode"`
}

type fhirEntry struct {
	FullURL  string          `json:"fullUrl"`
	Resource fhirResource    `json:"resource"`
	Search   *fhirSearchMode `json:"search,omitempty"`
}

type fhirBundle struct {
	ResourceType string      `json:"resourceType"`
	Meta         fhirMeta    `json:"meta"`
	Type         string      `json:"type"`
	Timestamp    string      `json:"timestamp"`
	Total        int         `json:"total"`
	Link         []fhirLink  `json:"link"`
	Entry        []fhirEntry `json:"entry,omitempty"`
}

func (s *Server) fhirBase() string { return strings.TrimRight(s.app.BaseURL(), "/") + "/fhir/R4/" }

// bundle is a search set of rs, linked to the request that asked.
func (s *Server) bundle(r *http.Request, rs []fhirResource) *fhirBundle {
	now := s.app.Now().Unix()
	self := s.fhirBase() + strings.TrimPrefix(r.URL.Path, "/fhir/R4/")
	if r.URL.RawQuery != "" {
		self += "?" + r.URL.RawQuery
	}
	b := &fhirBundle{ResourceType: "Bundle", Meta: fhirMeta{LastUpdated: instant(now)}, Type: "searchset", Timestamp: instant(now),
		Total: len(rs), Link: []fhirLink{{Relation: "self", URL: self}}}
	for _, res := range rs {
		b.Entry = append(b.Entry, fhirEntry{FullURL: s.fhirBase() + res.ref(), Resource: res, Search: &fhirSearchMode{Mode: "match"}})
	}
	return b
}

// fhirQuery is a search's parameters: whose record, and the _lastUpdated
// bounds.
type fhirQuery struct {
	patient int64 // 0: not given
	id      string
	updated []timeBound
}

// timeBound is one _lastUpdated comparison: a prefix and the range its
// value's precision covers, [lo, hi) in unix seconds.
type timeBound struct {
	prefix string
	lo, hi int64
}

func (b timeBound) holds(t int64) bool {
	switch b.prefix {
	case "gt":
		return t >= b.hi
	case "ge":
		return t >= b.lo
	case "lt":
		return t < b.lo
	case "le":
		return t < b.hi
	}
	return t >= b.lo && t < b.hi
}

// parseFHIRDate reads a FHIR date or dateTime of any precision as the range
// of seconds it covers; one without a zone is UTC.
func parseFHIRDate(v string) (lo, hi int64, ok bool) {
	layouts := []struct {
		layout string
		next   func(time.Time) time.Time
	}{
		{"2006", func(t time.Time) time.Time { return t.AddDate(1, 0, 0) }},
		{"2006-01", func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }},
		{"2006-01-02", func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }},
		{"2006-01-02T15:04Z07:00", func(t time.Time) time.Time { return t.Add(time.Minute) }},
		{"2006-01-02T15:04:05Z07:00", func(t time.Time) time.Time { return t.Add(time.Second) }},
		{"2006-01-02T15:04:05", func(t time.Time) time.Time { return t.Add(time.Second) }},
	}
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '.'); i > 0 && strings.Contains(v, "T") {
		// Fractions of a second: the second holds them.
		j := i + 1
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		v = v[:i] + v[j:]
	}
	for _, l := range layouts {
		if t, err := time.Parse(l.layout, v); err == nil {
			return t.Unix(), l.next(t).Unix(), true
		}
	}
	return 0, 0, false
}

// parseFHIRQuery reads a search's query; names are the parameters the
// type takes besides _lastUpdated and _format. An unknown parameter is
// refused rather than ignored: a filter the server silently skipped would
// answer more of a patient's record than was asked for.
func parseFHIRQuery(q url.Values, names ...string) (*fhirQuery, error) {
	out := &fhirQuery{}
	for name, vals := range q {
		switch {
		case name == "_format":
			for _, v := range vals {
				if !slices.Contains([]string{"json", "application/json", "application/fhir+json"}, v) {
					return nil, clinic.Errorf(clinic.EInvalid, "_format must be json: this server speaks FHIR JSON only.")
				}
			}
		case name == "_lastUpdated" || name == "_since":
			for _, v := range vals {
				prefix := "eq"
				if name == "_since" {
					prefix = "ge"
				} else if len(v) > 2 && v[0] >= 'a' && v[0] <= 'z' {
					prefix, v = v[:2], v[2:]
				}
				if !slices.Contains([]string{"eq", "gt", "ge", "lt", "le"}, prefix) {
					return nil, clinic.Errorf(clinic.EInvalid, "%s takes the prefixes eq, gt, ge, lt and le.", name)
				}
				lo, hi, ok := parseFHIRDate(v)
				if !ok {
					return nil, clinic.Errorf(clinic.EInvalid, "%s must be a FHIR date or dateTime, for example ge2026-01-01 or gt2026-01-01T10:00:00Z.", name)
				}
				out.updated = append(out.updated, timeBound{prefix: prefix, lo: lo, hi: hi})
			}
		case slices.Contains(names, name):
			if len(vals) != 1 {
				return nil, clinic.Errorf(clinic.EInvalid, "%s is given once.", name)
			}
			v := strings.TrimSpace(vals[0])
			if name == "_id" {
				out.id = v
				continue
			}
			// patient and subject name the patient: 12 or Patient/12.
			v = strings.TrimPrefix(v, "Patient/")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return nil, clinic.Errorf(clinic.EInvalid, "%s must be a patient's id, as 12 or Patient/12.", name)
			}
			if out.patient != 0 && out.patient != n {
				return nil, clinic.Errorf(clinic.EInvalid, "patient and subject name different patients.")
			}
			out.patient = n
		default:
			return nil, clinic.Errorf(clinic.EInvalid, "The search parameter %s is not supported here; see GET /fhir/R4/metadata.", name)
		}
	}
	return out, nil
}

func (q *fhirQuery) keep(res fhirResource) bool {
	for _, b := range q.updated {
		if !b.holds(res.updated()) {
			return false
		}
	}
	return q.id == "" || strings.HasSuffix(res.ref(), "/"+q.id)
}

// resourcesOf maps the part of a record that makes resources of one type.
func resourcesOf(typ string, rec *app.PatientRecord) []fhirResource {
	var out []fhirResource
	pt := rec.Patient
	switch typ {
	case "Patient":
		out = append(out, toFHIRPatient(rec.Account, pt))
	case "Practitioner":
		seen := map[int64]bool{}
		for _, d := range rec.Visits {
			if d.Provider != nil && !seen[d.Provider.ID] {
				seen[d.Provider.ID] = true
				out = append(out, toFHIRPractitioner(rec.Account, d.Provider))
			}
		}
	case "Encounter":
		for _, d := range rec.Visits {
			out = append(out, toFHIREncounter(d))
		}
	case "Appointment":
		for _, d := range rec.Visits {
			if d.Visit.Kind == clinic.KindAppointment {
				out = append(out, toFHIRAppointment(d))
			}
		}
	case "Communication":
		for _, m := range rec.Messages {
			out = append(out, toFHIRCommunication(pt, m))
		}
	case "Observation":
		for _, r := range rec.Readings {
			out = append(out, toFHIRObservation(pt, r))
		}
	case "Coverage":
		for _, c := range rec.Cards {
			out = append(out, toFHIRCoverage(pt, c))
		}
	case "MedicationRequest":
		for _, rx := range rec.Prescriptions {
			out = append(out, toFHIRMedicationRequest(pt, rx))
		}
	case "AllergyIntolerance":
		out = toFHIRAllergies(pt, rec.EMR["allergies"])
	case "Condition":
		out = toFHIRConditions(pt, rec.EMR["conditions"])
	case "DocumentReference":
		for _, f := range rec.Files {
			out = append(out, toFHIRDocumentReference(pt, f))
		}
	}
	return out
}

// fhirMetadata is GET /fhir/R4/metadata: what this server does, in FHIR's
// words. It needs no credentials, as FHIR clients expect.
func (s *Server) fhirMetadata(w http.ResponseWriter, r *http.Request, c *call) error {
	return writeFHIR(w, http.StatusOK, s.capabilities())
}

type fhirSearchParam struct {
	Name          string `json:"name"`
	Type          string `json:"type"`
	Documentation string `json:"documentation,omitempty"`
}

type fhirInteraction struct {
	Code string `json:"code"`
}

type fhirOperation struct {
	Name       string `json:"name"`
	Definition string `json:"definition"`
}

type fhirCapResource struct {
	Type        string            `json:"type"`
	Interaction []fhirInteraction `json:"interaction"`
	SearchParam []fhirSearchParam `json:"searchParam"`
	Operation   []fhirOperation   `json:"operation,omitempty"`
}

type fhirCapRest struct {
	Mode     string `json:"mode"`
	Security struct {
		Description string `json:"description"`
	} `json:"security"`
	Resource []fhirCapResource `json:"resource"`
}

type fhirCapability struct {
	ResourceType string `json:"resourceType"`
	Status       string `json:"status"`
	Date         string `json:"date"`
	Kind         string `json:"kind"`
	Software     struct {
		Name string `json:"name"`
	} `json:"software"`
	Implementation struct {
		Description string `json:"description"`
		URL         string `json:"url"`
	} `json:"implementation"`
	FHIRVersion string        `json:"fhirVersion"`
	Format      []string      `json:"format"`
	Rest        []fhirCapRest `json:"rest"`
}

func (s *Server) capabilities() *fhirCapability {
	c := &fhirCapability{ResourceType: "CapabilityStatement", Status: "active", Date: s.app.Now().UTC().Format("2006-01-02"),
		Kind: "instance", FHIRVersion: "4.0.1", Format: []string{"json"}}
	c.Software.Name = "Teleclinic"
	c.Implementation.Description = "Teleclinic's read-only FHIR R4 view of the clinic's records"
	c.Implementation.URL = strings.TrimSuffix(s.fhirBase(), "/")
	rest := fhirCapRest{Mode: "server"}
	rest.Security.Description = "X-AccountCode with X-ApiToken (a user token or the clinic admin token), or a user token as Authorization: Bearer. " +
		"The admin reads the clinic's patients; a patient their own record; a provider the records of the patients they have a visit with. " +
		"Visit messages are their participants'; insurance is the patient's and the admin's. Every read is audited."
	params := map[string]fhirSearchParam{
		"patient": {Name: "patient", Type: "reference", Documentation: "the patient's id (12 or Patient/12); a patient's own by default"},
		"subject": {Name: "subject", Type: "reference"},
		"_id":     {Name: "_id", Type: "token"},
	}
	updated := fhirSearchParam{Name: "_lastUpdated", Type: "date", Documentation: "eq, gt, ge, lt or le and a date or dateTime"}
	for _, t := range fhirTypes {
		res := fhirCapResource{Type: t.name, Interaction: []fhirInteraction{{"read"}, {"search-type"}}}
		for _, name := range t.search {
			res.SearchParam = append(res.SearchParam, params[name])
			if name == "patient" {
				res.SearchParam = append(res.SearchParam, updated)
			}
		}
		if t.name == "Patient" {
			res.Operation = []fhirOperation{{Name: "everything", Definition: "http://hl7.org/fhir/OperationDefinition/Patient-everything"}}
		}
		rest.Resource = append(rest.Resource, res)
	}
	c.Rest = []fhirCapRest{rest}
	return c
}

// fhirSearch is GET /fhir/R4/{type}: one patient's resources of the type
// (q.patient 0, naming nobody, is a patient's own record).
func (s *Server) fhirSearch(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := lookupFHIRType(r.PathValue("type"))
	if err != nil {
		return err
	}
	typ := t.name
	q, err := parseFHIRQuery(r.URL.Query(), t.search...)
	if err != nil {
		return err
	}
	if typ == "Practitioner" && q.id != "" {
		// A practitioner by id is read as GET /users/{id} lets the caller.
		n, err := strconv.ParseInt(q.id, 10, 64)
		var rs []fhirResource
		if err == nil && n > 0 {
			if u, err := s.app.Practitioner(r.Context(), c.p, n); err == nil {
				rs = append(rs, toFHIRPractitioner(c.p.Account, u))
			} else if clinic.ErrorCode(err) != clinic.ENotFound {
				return err
			}
		}
		return writeFHIR(w, http.StatusOK, s.bundle(r, filter(rs, q)))
	}
	if typ == "Patient" && q.id != "" {
		n, err := strconv.ParseInt(q.id, 10, 64)
		if err != nil || n <= 0 || (q.patient != 0 && q.patient != n) {
			return writeFHIR(w, http.StatusOK, s.bundle(r, nil))
		}
		q.patient = n
	}
	rec, err := s.app.PatientRecord(r.Context(), c.p, q.patient, t.parts)
	if err != nil {
		return err
	}
	return writeFHIR(w, http.StatusOK, s.bundle(r, filter(resourcesOf(typ, rec), q)))
}

func filter(rs []fhirResource, q *fhirQuery) []fhirResource {
	out := rs[:0]
	for _, res := range rs {
		if q.keep(res) {
			out = append(out, res)
		}
	}
	return out
}

// fhirRead is GET /fhir/R4/{type}/{id}.
func (s *Server) fhirRead(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := lookupFHIRType(r.PathValue("type"))
	if err != nil {
		return err
	}
	typ, rid := t.name, r.PathValue("id")
	notFound := clinic.Errorf(clinic.ENotFound, "%s/%s not found.", typ, rid)
	if _, err := parseFHIRQuery(r.URL.Query()); err != nil {
		return err
	}
	// Patients, practitioners, visits and files are numbered; the other
	// types' ids are "<patient>-<local id>".
	n, err := strconv.ParseInt(rid, 10, 64)
	numbered := err == nil && n > 0
	var patient int64
	switch typ {
	case "Practitioner", "Encounter", "Appointment", "Patient", "DocumentReference":
		if !numbered {
			return notFound
		}
	}
	switch typ {
	case "Practitioner":
		u, err := s.app.Practitioner(r.Context(), c.p, n)
		if err != nil {
			return err
		}
		return writeFHIR(w, http.StatusOK, toFHIRPractitioner(c.p.Account, u))
	case "Encounter", "Appointment":
		d, err := s.app.GetVisit(r.Context(), c.p, n, false)
		if err != nil {
			return err
		}
		if typ == "Encounter" {
			return writeFHIR(w, http.StatusOK, toFHIREncounter(d))
		}
		if d.Visit.Kind != clinic.KindAppointment {
			return notFound
		}
		return writeFHIR(w, http.StatusOK, toFHIRAppointment(d))
	case "Patient":
		patient = n
	case "DocumentReference":
		f, err := s.app.GetFile(r.Context(), c.p, n)
		if err != nil {
			return err
		}
		switch f.TargetType {
		case "user":
			patient = f.TargetID
		case "visit":
			d, err := s.app.GetVisit(r.Context(), c.p, f.TargetID, false)
			if err != nil {
				return err
			}
			patient = d.Visit.MemberID
		default: // a file of no patient's
			return notFound
		}
	default:
		head, _, found := strings.Cut(rid, "-")
		p, err := strconv.ParseInt(head, 10, 64)
		if !found || err != nil || p <= 0 {
			return notFound
		}
		patient = p
	}
	rec, err := s.app.PatientRecord(r.Context(), c.p, patient, t.parts)
	if err != nil {
		return err
	}
	for _, res := range resourcesOf(typ, rec) {
		if res.ref() == typ+"/"+rid {
			return writeFHIR(w, http.StatusOK, res)
		}
	}
	return notFound
}

// fhirEverything is GET /fhir/R4/Patient/{id}/$everything: the patient and
// every resource of their record the caller may read, in one search set
// (_since keeps those changed since an instant).
func (s *Server) fhirEverything(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Patient/%s not found.", r.PathValue("id"))
	}
	q, err := parseFHIRQuery(r.URL.Query())
	if err != nil {
		return err
	}
	rec, err := s.app.PatientRecord(r.Context(), c.p, n, app.AllRecordParts)
	if err != nil {
		return err
	}
	var rs []fhirResource
	for _, t := range fhirTypes {
		rs = append(rs, filter(resourcesOf(t.name, rec), q)...)
	}
	return writeFHIR(w, http.StatusOK, s.bundle(r, rs))
}

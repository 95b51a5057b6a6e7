// Package fhir is the FHIR R4 read API (/fhir/R4): a patient's record in
// the EHR world's format, on the API's credentials (httpapi authenticates
// the request; a user token may also come as "Authorization: Bearer"), the
// API's rules (app.PatientRecord and the reads it names) and its audit.
// Answers are application/fhir+json; errors are OperationOutcome resources.
//
// Each resource type is one row of types (types.go): its name, its search
// parameters, what its ids are, and how its resources are drawn from a
// patient's record. A new type is a resource and its to… function
// (resources.go) and a row; search, read, $everything and the
// CapabilityStatement follow from the row.
package fhir

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
)

// Server answers the FHIR routes over a, and b for what a booking pays
// and a cancellation refunds.
type Server struct {
	app     *app.App
	billing *billing.Service
	r4      r4Schemas // what written resources are validated against
}

// New is the FHIR door over a and b.
// It gives a its mapping of records to resources, for bulk exports.
func New(a *app.App, b *billing.Service) *Server {
	s := &Server{app: a, billing: b}
	a.SetRecordExporter(s)
	return s
}

// Metadata is GET /fhir/R4/metadata: what this server does, in FHIR's
// words. It needs no credentials, as FHIR clients expect.
func (s *Server) Metadata(w http.ResponseWriter, r *http.Request, _ *clinic.Principal) error {
	return writeFHIR(w, http.StatusOK, s.capabilities())
}

// Search is GET /fhir/R4/{type}: one patient's resources of the type (a
// patient's own record when the search names nobody), or with _id the one
// resource of that id.
func (s *Server) Search(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	t, err := lookup(r.PathValue("type"))
	if err != nil {
		return err
	}
	if err := granted(p, t.name, 's'); err != nil {
		return err
	}
	q, err := parseFHIRQuery(r.URL.Query(), t.search...)
	if err != nil {
		return err
	}
	var rs []resource
	switch list, long := longLists[t.name]; {
	case q.id != "" && t.id == patientID && q.patient != 0 && q.id != id(q.patient):
		// _id and patient name different patients: nothing matches.
	case q.id != "":
		res, err := s.read(r.Context(), p, t, q.id)
		if err != nil && clinic.ErrorCode(err) != clinic.ENotFound {
			return err
		}
		if res != nil {
			rs = []resource{res}
		}
	case long:
		// The store reads the page itself, and the list's count.
		parts, pg := t.parts, q.page()
		pg.Offset, pg.Limit = q.offset, q.count
		list.set(&parts, pg)
		rec, err := s.app.PatientRecord(r.Context(), p, q.patient, parts)
		if err != nil {
			return err
		}
		return writeFHIR(w, http.StatusOK, s.bundle(r, t.draw(rec), list.total(rec), q))
	default:
		rec, err := s.app.PatientRecord(r.Context(), p, q.patient, t.parts)
		if err != nil {
			return err
		}
		rs = t.draw(rec)
	}
	rs = filter(rs, q)
	return writeFHIR(w, http.StatusOK, s.bundle(r, window(rs, q), len(rs), q))
}

// granted refuses what the caller's app was not granted (its SMART
// scopes): perm is c, r, u, d or s on resources of typ. The role's rules
// stand behind it, in app; a grant narrows them and never widens.
func granted(p *clinic.Principal, typ string, perm byte) error {
	if app.GrantAllows(p.Grant, typ, perm) {
		return nil
	}
	return clinic.Errorf(clinic.EForbidden, "This app was not granted %q on %s; its scopes are: %s.", string(perm), typ, strings.Join(p.Grant.Scopes, " "))
}

// window is the page of rs that q asks for.
func window(rs []resource, q *fhirQuery) []resource {
	return rs[min(q.offset, len(rs)):min(q.offset+q.count, len(rs))]
}

// Read is GET /fhir/R4/{type}/{id}.
func (s *Server) Read(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	t, err := lookup(r.PathValue("type"))
	if err != nil {
		return err
	}
	if err := granted(p, t.name, 'r'); err != nil {
		return err
	}
	if _, err := parseFHIRQuery(r.URL.Query()); err != nil {
		return err
	}
	res, err := s.read(r.Context(), p, t, r.PathValue("id"))
	if err != nil {
		return err
	}
	if pt, ok := res.(*fhirPatient); ok {
		w.Header().Set("ETag", etag(pt.Meta.VersionID))
	}
	return writeFHIR(w, http.StatusOK, res)
}

// Everything is GET /fhir/R4/Patient/{id}/$everything: the patient and
// every resource of their record the caller may read, in one search set
// (_since keeps those changed since an instant).
func (s *Server) Everything(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Patient", 'r'); err != nil {
		return err
	}
	patient, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || patient <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Patient/%s not found.", r.PathValue("id"))
	}
	q, err := parseFHIRQuery(r.URL.Query())
	if err != nil {
		return err
	}
	// The first read takes the record's short parts whole and counts its
	// long lists (longLists); a second reads the pages of those lists that
	// fall in the answer's page, if any do.
	parts, pg := app.AllRecordParts, q.page()
	for _, list := range longLists {
		list.set(&parts, pg)
	}
	rec, err := s.app.PatientRecord(r.Context(), p, patient, parts)
	if err != nil {
		return err
	}
	type part struct {
		t     *resourceType
		rs    []resource // a long list's: those from skip on
		skip  int
		total int
	}
	var all []part
	var pages app.RecordParts
	total, from, to := 0, q.offset, q.offset+q.count
	for i := range types {
		t := &types[i]
		if !app.GrantAllows(p.Grant, t.name, 'r') {
			continue // a type the caller's app may not read
		}
		list, long := longLists[t.name]
		if !long {
			rs := filter(t.draw(rec), q)
			all = append(all, part{t: t, rs: rs, total: len(rs)})
			total += len(rs)
			continue
		}
		count := list.total(rec)
		lo, hi := max(from-total, 0), min(to-total, count)
		if lo < hi {
			page := pg
			page.Offset, page.Limit = lo, hi-lo
			list.set(&pages, page)
		}
		all = append(all, part{t: t, skip: lo, total: count})
		total += count
	}
	if pages != (app.RecordParts{}) {
		more, err := s.app.PatientRecord(r.Context(), p, patient, pages)
		if err != nil {
			return err
		}
		for i, pt := range all {
			if _, long := longLists[pt.t.name]; long {
				all[i].rs = pt.t.draw(more)
			}
		}
	}
	var page []resource
	at := 0 // the place in the answer of the part's first resource
	for _, pt := range all {
		for j, res := range pt.rs {
			if k := at + pt.skip + j; k >= from && k < to {
				page = append(page, res)
			}
		}
		at += pt.total
	}
	return writeFHIR(w, http.StatusOK, s.bundle(r, page, total, q))
}

// read finds the resource of type t with logical id rid: directly for a
// provider, in the visit for a visit's types, and otherwise in the record
// of the patient the id leads to.
func (s *Server) read(ctx context.Context, p *clinic.Principal, t *resourceType, rid string) (resource, error) {
	notFound := clinic.Errorf(clinic.ENotFound, "%s/%s not found.", t.name, rid)
	n, err := strconv.ParseInt(rid, 10, 64)
	numbered := err == nil && n > 0
	if !numbered && t.id != localID {
		return nil, notFound
	}
	var rec *app.PatientRecord
	switch t.id {
	case providerID:
		u, err := s.app.Practitioner(ctx, p, n)
		if err != nil {
			return nil, err
		}
		return toFHIRPractitioner(p.Account, u), nil
	case visitID:
		d, err := s.app.GetVisit(ctx, p, n, false)
		if err != nil {
			return nil, err
		}
		rec = &app.PatientRecord{Account: p.Account, Visits: []*app.VisitDetail{d}, Appointments: []*app.VisitDetail{d}}
		if t.name == "Encounter" { // with its diagnoses, where the caller may read the note
			if note := s.visitNote(ctx, p, n); note != nil {
				rec.Notes = []*clinic.VisitNote{note}
			}
		}
	default:
		patient, err := s.patientOf(ctx, p, t.id, rid, n)
		if err != nil || patient == 0 {
			return nil, cmp.Or(err, error(notFound))
		}
		parts := t.parts
		if list, long := longLists[t.name]; long {
			item := n // a file's resource id is the file's
			if t.id != fileID {
				item = localItem(rid)
			}
			if item == 0 {
				return nil, notFound
			}
			list.set(&parts, app.RecordPage{ID: item, Limit: 1})
		}
		if rec, err = s.app.PatientRecord(ctx, p, patient, parts); err != nil {
			return nil, err
		}
	}
	for _, res := range t.draw(rec) {
		if res.ref() == t.name+"/"+rid {
			return res, nil
		}
	}
	return nil, notFound
}

// localItem is the id of the item a long list's resource id ("<patient>-<id>")
// names, 0 when it names none.
func localItem(rid string) int64 {
	_, tail, _ := strings.Cut(rid, "-")
	n, err := strconv.ParseInt(tail, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// patientOf is the patient whose record holds the resource of id rid (n
// when it is a number), 0 when the id leads to no patient.
func (s *Server) patientOf(ctx context.Context, p *clinic.Principal, kind idKind, rid string, n int64) (int64, error) {
	switch kind {
	case patientID:
		return n, nil
	case fileID:
		f, err := s.app.GetFile(ctx, p, n)
		if err != nil {
			return 0, err
		}
		switch f.TargetType {
		case "user":
			return f.TargetID, nil
		case "visit":
			d, err := s.app.GetVisit(ctx, p, f.TargetID, false)
			if err != nil {
				return 0, err
			}
			return d.Visit.MemberID, nil
		}
		return 0, nil // a file of no patient's
	}
	head, _, found := strings.Cut(rid, "-")
	patient, err := strconv.ParseInt(head, 10, 64)
	if !found || err != nil || patient <= 0 {
		return 0, nil
	}
	return patient, nil
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
	case http.StatusPaymentRequired:
		return "business-rule"
	case http.StatusRequestEntityTooLarge:
		return "too-costly"
	case http.StatusConflict, http.StatusPreconditionFailed:
		return "conflict"
	}
	return "exception"
}

// WriteOutcome answers an error as a FHIR OperationOutcome.
func WriteOutcome(w http.ResponseWriter, status int, msg string) {
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
	FullURL  string          `json:"fullUrl,omitempty"`
	Resource resource        `json:"resource"`
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

func (s *Server) base() string { return strings.TrimRight(s.app.BaseURL(), "/") + "/fhir/R4/" }

// bundle is page, the page q asks for of total resources, as a search
// set: the links give the request that asked (self) and the pages beside
// it (next, previous), the same request with _offset moved. The pages are
// cut from the record as it is at each request, so a resource added
// meanwhile may shift them by one.
func (s *Server) bundle(r *http.Request, page []resource, total int, q *fhirQuery) *fhirBundle {
	now := s.app.Now().Unix()
	link := func(relation string, offset int) fhirLink {
		u, query := s.base()+strings.TrimPrefix(r.URL.Path, "/fhir/R4/"), r.URL.RawQuery
		if offset >= 0 {
			v := r.URL.Query()
			v.Set("_offset", strconv.Itoa(offset))
			v.Set("_count", strconv.Itoa(q.count))
			query = v.Encode()
		}
		if query != "" {
			u += "?" + query
		}
		return fhirLink{Relation: relation, URL: u}
	}
	b := &fhirBundle{ResourceType: "Bundle", Meta: fhirMeta{LastUpdated: instant(now)}, Type: "searchset", Timestamp: instant(now),
		Total: total, Link: []fhirLink{link("self", -1)}}
	from, to := min(q.offset, total), min(q.offset+q.count, total)
	if to < total {
		b.Link = append(b.Link, link("next", to))
	}
	if from > 0 {
		b.Link = append(b.Link, link("previous", max(0, from-q.count)))
	}
	for _, res := range page {
		b.Entry = append(b.Entry, fhirEntry{FullURL: s.base() + res.ref(), Resource: res, Search: &fhirSearchMode{Mode: "match"}})
	}
	return b
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
	// The writes a type takes (Patient's): conditional create on its
	// identifier, versioned updates.
	Versioning        string `json:"versioning,omitempty"`
	ConditionalCreate bool   `json:"conditionalCreate,omitempty"`
}

type fhirCapRest struct {
	Mode     string `json:"mode"`
	Security struct {
		Extension   []fhirOAuthURIs `json:"extension,omitempty"`
		Service     []fhirConcept   `json:"service,omitempty"`
		Description string          `json:"description"`
	} `json:"security"`
	Resource  []fhirCapResource `json:"resource"`
	Operation []fhirOperation   `json:"operation,omitempty"`
}

// fhirOAuthURIs is SMART's oauth-uris extension: where the authorization
// server is, for clients that read the CapabilityStatement.
type fhirOAuthURIs struct {
	URL       string `json:"url"`
	Extension []struct {
		URL      string `json:"url"`
		ValueURI string `json:"valueUri"`
	} `json:"extension"`
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
	c.Implementation.Description = "Teleclinic's FHIR R4 view of the clinic's records; Patient is written too, and Appointments are found, held and booked over the providers' Slots"
	c.Implementation.URL = strings.TrimSuffix(s.base(), "/")
	rest := fhirCapRest{Mode: "server"}
	iss := s.app.OAuthIssuer()
	uris := fhirOAuthURIs{URL: "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris"}
	for _, u := range [][2]string{{"authorize", iss + "/authorize"}, {"token", iss + "/token"}, {"revoke", iss + "/revoke"}} {
		uris.Extension = append(uris.Extension, struct {
			URL      string `json:"url"`
			ValueURI string `json:"valueUri"`
		}{u[0], u[1]})
	}
	rest.Security.Extension = []fhirOAuthURIs{uris}
	rest.Security.Service = []fhirConcept{{Coding: []fhirCoding{{System: "http://terminology.hl7.org/CodeSystem/restful-security-service", Code: "SMART-on-FHIR"}}}}
	rest.Operation = []fhirOperation{{Name: "export", Definition: "http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export"}}
	rest.Security.Description = "A SMART app's access token (SMART App Launch; .well-known/smart-configuration), or " +
		"X-AccountCode with X-ApiToken (a user token or the clinic admin token), or a user token as Authorization: Bearer. " +
		"The admin reads the clinic's patients; a patient their own record; a provider the records of the patients they have a visit with. " +
		"Visit messages are their participants'; insurance is the patient's and the admin's. Every read is audited."
	params := map[string]fhirSearchParam{
		"patient": {Name: "patient", Type: "reference", Documentation: "the patient's id (12 or Patient/12); a patient's own by default"},
		"subject": {Name: "subject", Type: "reference"},
		"_id":     {Name: "_id", Type: "token"},
	}
	updated := fhirSearchParam{Name: "_lastUpdated", Type: "date", Documentation: "eq, gt, ge, lt or le and a date or dateTime"}
	count := fhirSearchParam{Name: "_count", Type: "number", Documentation: "resources a page, 1 to 1000 (200 by default); the Bundle's next link gives the next page"}
	for _, t := range types {
		res := fhirCapResource{Type: t.name, Interaction: []fhirInteraction{{"read"}, {"search-type"}}}
		for _, name := range t.search {
			res.SearchParam = append(res.SearchParam, params[name])
			if name == "patient" {
				res.SearchParam = append(res.SearchParam, updated, count)
			}
		}
		if t.name == "Patient" {
			res.Operation = []fhirOperation{{Name: "everything", Definition: "http://hl7.org/fhir/OperationDefinition/Patient-everything"}}
			res.Interaction = append(res.Interaction, fhirInteraction{"create"}, fhirInteraction{"update"})
			res.Versioning, res.ConditionalCreate = "versioned-update", true
		}
		if t.name == "Appointment" {
			res.Operation = []fhirOperation{
				{Name: "find", Definition: "http://fhir.org/guides/argonaut/scheduling/OperationDefinition/appointment-find"},
				{Name: "hold", Definition: "http://fhir.org/guides/argonaut/scheduling/OperationDefinition/appointment-hold"},
				{Name: "book", Definition: "http://fhir.org/guides/argonaut/scheduling/OperationDefinition/appointment-book"}}
			res.Interaction = append(res.Interaction, fhirInteraction{"update"}, fhirInteraction{"patch"})
		}
		rest.Resource = append(rest.Resource, res)
	}
	start := fhirSearchParam{Name: "start", Type: "date", Documentation: "ge, gt, le, lt or eq and a date or dateTime; a week from now unless given"}
	rest.Resource = append(rest.Resource,
		fhirCapResource{Type: "Slot", Interaction: []fhirInteraction{{"read"}, {"search-type"}}, SearchParam: []fhirSearchParam{start,
			{Name: "schedule", Type: "reference", Documentation: "Schedule/<provider id>"},
			{Name: "service-type", Type: "token", Documentation: "the room's code"},
			{Name: "status", Type: "token"}, count}},
		fhirCapResource{Type: "Schedule", Interaction: []fhirInteraction{{"read"}}, SearchParam: []fhirSearchParam{}})
	c.Rest = []fhirCapRest{rest}
	return c
}

// visitNote is visit id's note as p may read it: the whole note (its
// provider, the admin), or its patient's summary once the visit is over;
// nil when neither.
func (s *Server) visitNote(ctx context.Context, p *clinic.Principal, id int64) *clinic.VisitNote {
	if n, err := s.app.VisitNote(ctx, p, id); err == nil {
		return n
	}
	if n, err := s.app.VisitSummary(ctx, p, id); err == nil {
		return n
	}
	return nil
}

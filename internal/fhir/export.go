package fhir

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// FHIR Bulk Data export (2.0): the kick-off at system, Patient and Group
// level, the job's status and its NDJSON files. The job is app's
// (app/export.go); the resources are this package's mapping, which the
// Server gives the app as its RecordExporter.

// Types are the types an export writes: every type of a patient's record.
func (s *Server) Types() []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.name
	}
	return out
}

// Shared says whether a type's resources are in many records: a
// Practitioner is the providers of many patients' visits.
func (s *Server) Shared(typ string) bool { return typ == "Practitioner" }

// Export draws the types' resources from one patient's record, as p may
// read it: one read of every part with the first page of each long list,
// then the further pages of a list longer than a page, so a patient with
// many readings is read a page at a time.
func (s *Server) Export(ctx context.Context, p *clinic.Principal, patient int64, names []string, since int64, out func(typ, id string, line []byte) error) error {
	var parts app.RecordParts
	var ts []*resourceType
	for _, name := range names {
		t, err := lookup(name)
		if err != nil {
			return err
		}
		ts = append(ts, t)
		tp := t.parts
		if list, long := longLists[name]; long {
			list.set(&tp, app.RecordPage{Limit: app.MaxRecordPage})
		}
		parts = union(parts, tp)
	}
	write := func(t *resourceType, rec *app.PatientRecord) error {
		for _, res := range t.draw(rec) {
			if res == nil || res.updated() < since {
				continue
			}
			line, err := json.Marshal(res)
			if err != nil {
				return err
			}
			if err := out(t.name, strings.TrimPrefix(res.ref(), t.name+"/"), line); err != nil {
				return err
			}
		}
		return nil
	}
	rec, err := s.app.PatientRecord(ctx, p, patient, parts)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := write(t, rec); err != nil {
			return err
		}
		list, long := longLists[t.name]
		if !long {
			continue
		}
		for offset, total := app.MaxRecordPage, list.total(rec); offset < total; offset += app.MaxRecordPage {
			more := t.parts
			list.set(&more, app.RecordPage{Offset: offset, Limit: app.MaxRecordPage})
			page, err := s.app.PatientRecord(ctx, p, patient, more)
			if err != nil {
				return err
			}
			if err := write(t, page); err != nil {
				return err
			}
		}
	}
	return nil
}

// union is the parts either asks for; a list's page is whichever names
// one.
func union(a, b app.RecordParts) app.RecordParts {
	a.Visits, a.Appointments, a.Practitioners = a.Visits || b.Visits, a.Appointments || b.Appointments, a.Practitioners || b.Practitioners
	a.Messages, a.Readings, a.Coverage = a.Messages || b.Messages, a.Readings || b.Readings, a.Coverage || b.Coverage
	a.Prescriptions, a.EMR, a.Files, a.Notes = a.Prescriptions || b.Prescriptions, a.EMR || b.EMR, a.Files || b.Files, a.Notes || b.Notes
	page := func(x, y app.RecordPage) app.RecordPage {
		if x.Limit >= y.Limit {
			return x
		}
		return y
	}
	a.VisitsPage, a.AppointmentsPage, a.NotesPage = page(a.VisitsPage, b.VisitsPage), page(a.AppointmentsPage, b.AppointmentsPage), page(a.NotesPage, b.NotesPage)
	a.MessagesPage, a.ReadingsPage = page(a.MessagesPage, b.MessagesPage), page(a.ReadingsPage, b.ReadingsPage)
	a.FilesPage, a.PrescriptionsPage = page(a.FilesPage, b.FilesPage), page(a.PrescriptionsPage, b.PrescriptionsPage)
	return a
}

// ndjson are the _outputFormat values that name NDJSON.
var ndjson = []string{"application/fhir+ndjson", "application/ndjson", "ndjson"}

// Kickoff is $export at the system level (GET /fhir/R4/$export), the
// Patient level (GET /fhir/R4/Patient/$export: every patient's
// compartment) or a Group's (GET /fhir/R4/Group/{id}/$export: the
// patients of the room whose code is id). It asks for an asynchronous
// answer (Prefer: respond-async) and gets 202 with the status address in
// Content-Location.
func (s *Server) Kickoff(level string) func(http.ResponseWriter, *http.Request, *clinic.Principal) error {
	return func(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
		if err := app.CheckExporter(p); err != nil {
			return err
		}
		if !strings.Contains(r.Header.Get("Prefer"), "respond-async") {
			return clinic.Errorf(clinic.EInvalid, "An export answers asynchronously: send Prefer: respond-async.")
		}
		if acc := r.Header.Get("Accept"); acc != "" && !strings.Contains(acc, "json") && !strings.Contains(acc, "*/*") {
			return clinic.Errorf(clinic.EInvalid, "Accept must be application/fhir+json.")
		}
		qv := r.URL.Query()
		if err := onlyParams(qv, "_type", "_since", "_outputFormat"); err != nil {
			return err
		}
		in := app.ExportInput{Level: level, Group: r.PathValue("id"), Request: s.base() + strings.TrimPrefix(r.URL.RequestURI(), "/fhir/R4/")}
		if f := qv.Get("_outputFormat"); f != "" && !slices.Contains(ndjson, f) {
			return clinic.Errorf(clinic.EInvalid, "_outputFormat: this server writes %s.", ndjson[0])
		}
		for _, v := range qv["_type"] {
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					in.Types = append(in.Types, t)
				}
			}
		}
		if v := qv.Get("_since"); v != "" {
			lo, _, ok := parseFHIRDate(v)
			if !ok {
				return clinic.Errorf(clinic.EInvalid, "_since must be a FHIR instant, for example 2026-01-01T00:00:00Z.")
			}
			in.Since = lo
		}
		j, err := s.app.StartExport(r.Context(), p, in)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Location", s.base()+"$export-status/"+j.ID)
		return writeFHIR(w, http.StatusAccepted, fhirOutcome{ResourceType: "OperationOutcome",
			Issue: []fhirIssue{{Severity: "information", Code: "informational", Diagnostics: "The export was accepted; its status is at Content-Location."}}})
	}
}

type exportOutput struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Count int    `json:"count"`
}

// exportManifest is a finished export's answer (Bulk Data's manifest).
type exportManifest struct {
	TransactionTime     string         `json:"transactionTime"`
	Request             string         `json:"request"`
	RequiresAccessToken bool           `json:"requiresAccessToken"`
	Output              []exportOutput `json:"output"`
	Error               []exportOutput `json:"error"`
}

// ExportStatus is GET /fhir/R4/$export-status/{id}: 202 with X-Progress
// while the export runs, 200 with the manifest once done, 500 with an
// OperationOutcome when it failed.
func (s *Server) ExportStatus(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	j, err := s.app.ExportJob(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	switch j.Status {
	case "accepted", "running":
		w.Header().Set("X-Progress", cmp.Or(j.Progress, j.Status))
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusAccepted)
		return nil
	case "error":
		return writeFHIR(w, http.StatusInternalServerError, fhirOutcome{ResourceType: "OperationOutcome",
			Issue: []fhirIssue{{Severity: "error", Code: "exception", Diagnostics: j.Error}}})
	case "done":
		m := exportManifest{TransactionTime: instant(j.Created), Request: j.Request, RequiresAccessToken: true, Output: []exportOutput{}, Error: []exportOutput{}}
		for _, f := range j.Output {
			m.Output = append(m.Output, exportOutput{Type: f.Type, URL: s.base() + "$export-file/" + j.ID + "/" + f.Name, Count: f.Count})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Expires", httpDate(j.Expires))
		return json.NewEncoder(w).Encode(m)
	}
	return clinic.Errorf(clinic.ENotFound, "This export was cancelled or has expired.")
}

// CancelExport is DELETE /fhir/R4/$export-status/{id}.
func (s *Server) CancelExport(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := s.app.CancelExport(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// ExportFile is GET /fhir/R4/$export-file/{id}/{name}: one NDJSON file of
// a finished export, streamed from the blob store.
func (s *Server) ExportFile(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	f, err := s.app.OpenExportFile(r.Context(), p, r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		return err
	}
	defer f.Body.Close()
	w.Header().Set("Content-Type", "application/fhir+ndjson")
	w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	_, err = io.Copy(w, f.Body)
	return err
}

func httpDate(unix int64) string { return time.Unix(unix, 0).UTC().Format(http.TimeFormat) }

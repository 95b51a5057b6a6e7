package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// A visit's note and the patient's summary of it (extension; app/notes.go
// has the rules).

// noteOut is a visit's note as the provider and the admin read it.
type noteOut struct {
	VisitID        string          `json:"visit_id"`
	Status         string          `json:"status"`
	AuthorID       string          `json:"author_id"`
	Subjective     string          `json:"subjective"`
	Objective      string          `json:"objective"`
	Assessment     string          `json:"assessment"`
	Plan           string          `json:"plan"`
	Diagnoses      []noteDiagnosis `json:"diagnoses"`
	Procedure      string          `json:"procedure"`
	PatientSummary string          `json:"patient_summary"`
	SignedBy       string          `json:"signed_by"`
	SignedAt       int64           `json:"signed_at"`
	// SignedHash is the SHA-256 the signature binds; SignatureHolds says
	// whether the note is still what was signed.
	SignedHash     string        `json:"signed_hash"`
	SignatureHolds bool          `json:"signature_holds"`
	Created        int64         `json:"created"`
	Modified       int64         `json:"modified"`
	Addenda        []addendumOut `json:"addenda"`
}

// summaryOut is what the patient is given of a signed note.
type summaryOut struct {
	VisitID        string          `json:"visit_id"`
	PatientSummary string          `json:"patient_summary"`
	Plan           string          `json:"plan"`
	Diagnoses      []noteDiagnosis `json:"diagnoses"`
	SignedAt       int64           `json:"signed_at"`
	Addenda        []addendumOut   `json:"addenda"`
}

type noteDiagnosis struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

type addendumOut struct {
	ID       string `json:"id"`
	AuthorID string `json:"author_id"`
	Text     string `json:"text"`
	Created  int64  `json:"created"`
}

func toNoteParts(n *clinic.VisitNote) ([]noteDiagnosis, []addendumOut) {
	dx := make([]noteDiagnosis, len(n.Diagnoses))
	for i, d := range n.Diagnoses {
		dx[i] = noteDiagnosis(d)
	}
	ad := make([]addendumOut, len(n.Addenda))
	for i, a := range n.Addenda {
		ad[i] = addendumOut{ID: id(a.ID), AuthorID: id(a.AuthorID), Text: a.Body, Created: a.Created}
	}
	return dx, ad
}

func toNote(n *clinic.VisitNote) noteOut {
	dx, ad := toNoteParts(n)
	out := noteOut{VisitID: id(n.VisitID), Status: n.Status, AuthorID: id(n.AuthorID), Subjective: n.Subjective, Objective: n.Objective,
		Assessment: n.Assessment, Plan: n.Plan, Diagnoses: dx, Procedure: n.Procedure, PatientSummary: n.PatientSummary, SignedAt: n.SignedAt,
		SignedHash: n.SignedHash, SignatureHolds: n.SignatureHolds(), Created: n.Created, Modified: n.Modified, Addenda: ad}
	if n.SignedBy != 0 {
		out.SignedBy = id(n.SignedBy)
	}
	return out
}

func (s *Server) getNote(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	n, err := s.app.VisitNote(r.Context(), c.p, vid)
	if err != nil {
		return err
	}
	return ok(w, toNote(n))
}

func (s *Server) saveNote(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	q := c.params
	in := app.NoteDraft{Subjective: q.Str("subjective"), Objective: q.Str("objective"), Assessment: q.Str("assessment"), Plan: q.Str("plan"),
		PatientSummary: q.Str("patient_summary"), Procedure: q.Str("procedure")}
	// A JSON list, or a form's diagnoses[]=J06.9.
	if _, err := q.JSON("diagnoses", &in.Diagnoses); err != nil {
		in.Diagnoses = q.List("diagnoses")
	}
	n, err := s.app.SaveVisitNote(r.Context(), c.p, vid, in)
	if err != nil {
		return err
	}
	return ok(w, toNote(n))
}

func (s *Server) signNote(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	n, err := s.app.SignVisitNote(r.Context(), c.p, vid)
	if err != nil {
		return err
	}
	return ok(w, toNote(n))
}

func (s *Server) addAddendum(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	n, err := s.app.AddNoteAddendum(r.Context(), c.p, vid, c.params.Str("text"))
	if err != nil {
		return err
	}
	return ok(w, toNote(n))
}

func (s *Server) getSummary(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	n, err := s.app.VisitSummary(r.Context(), c.p, vid)
	if err != nil {
		return err
	}
	dx, ad := toNoteParts(n)
	return ok(w, summaryOut{VisitID: id(n.VisitID), PatientSummary: n.PatientSummary, Plan: n.Plan, Diagnoses: dx, SignedAt: n.SignedAt, Addenda: ad})
}

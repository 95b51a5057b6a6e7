package web

import (
	"net/http"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/reference"
)

// The visit note on the visit page (app/notes.go has the rules): the
// visit's provider drafts, signs and amends it; the admin reads it; the
// patient reads the summary once the visit is over. Its forms are sent in
// place (static/live.js), so writing a note never ends the call.

// noteView is the note part of the visit page.
type noteView struct {
	VisitID int64
	// Mine: the viewer is the visit's provider, who writes the note;
	// Edit: the draft's form (otherwise the note is shown).
	Mine, Edit bool
	// Summary: the patient's part only.
	Summary bool
	Note    *clinic.VisitNote
	// Codes are the draft's diagnosis codes, comma separated, for the
	// form without JavaScript.
	Codes    string
	SignedBy string
	Error    string
	// CodeYear is the ICD-10-CM release the search holds ("" for the
	// built-in list of common codes), CodeCount its billable codes.
	CodeYear  string
	CodeCount int
	// Services are the procedure list the note's service is chosen from;
	// ServiceText the chosen one's words.
	Services    []reference.Entry
	ServiceText string
}

// noteFor is the note part of visit d's page for p, nil when there is
// none for them.
func (s *Server) noteFor(r *http.Request, p *clinic.Principal, d *app.VisitDetail, msg string) (*noteView, error) {
	v := d.Visit
	mine := v.ProviderID != 0 && v.ProviderID == p.UserID()
	switch {
	case mine || p.IsAdmin():
		n, err := s.app.VisitNote(r.Context(), p, v.ID)
		switch clinic.ErrorCode(err) {
		case clinic.ENotFound:
			if !mine {
				return nil, nil
			}
			n, err = &clinic.VisitNote{Status: clinic.NoteDraft, AuthorID: p.UserID()}, nil
		case clinic.EForbidden:
			// Another provider's draft (the visit came to this one by a
			// reschedule): shown once its author signs it.
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		nv := &noteView{VisitID: v.ID, Mine: mine, Edit: mine && n.Status == clinic.NoteDraft && n.AuthorID == p.UserID(), Note: n, Error: msg}
		var codes []string
		for _, dx := range n.Diagnoses {
			codes = append(codes, dx.Code)
		}
		nv.Codes = strings.Join(codes, ", ")
		ref := s.app.ReferenceLists()
		nv.CodeYear, nv.CodeCount = ref.ReleaseYear(), ref.DiagnosisCount()
		nv.Services, nv.ServiceText = ref.Procedures, ref.ProcedureText(n.Procedure)
		if n.SignedBy != 0 && d.Provider != nil && d.Provider.ID == n.SignedBy {
			nv.SignedBy = d.Provider.FullName()
		}
		return nv, nil
	case v.MemberID == p.UserID() && v.Status == clinic.VisitCompleted:
		n, err := s.app.VisitSummary(r.Context(), p, v.ID)
		if clinic.ErrorCode(err) == clinic.ENotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		nv := &noteView{VisitID: v.ID, Summary: true, Note: n}
		if d.Provider != nil {
			nv.SignedBy = d.Provider.FullName()
		}
		return nv, nil
	}
	return nil, nil
}

// saveNote is POST /visits/start/{id}/note: the draft as the form holds
// it (action=save), or saved and signed (action=sign).
func (s *Server) saveNote(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return clinic.Errorf(clinic.EInvalid, "The note's form could not be read.")
	}
	f := r.PostForm
	in := app.NoteDraft{Subjective: f.Get("subjective"), Objective: f.Get("objective"), Assessment: f.Get("assessment"), Plan: f.Get("plan"),
		PatientSummary: f.Get("patient_summary"), Diagnoses: f["diagnoses"], Procedure: f.Get("procedure")}
	// Without JavaScript the codes come typed, comma separated.
	for _, c := range strings.Split(f.Get("diagnoses_text"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			in.Diagnoses = append(in.Diagnoses, c)
		}
	}
	in.Diagnoses = uniqueCodes(in.Diagnoses)
	if _, err := s.app.SaveVisitNote(r.Context(), p, id, in); err != nil {
		return s.noteRefused(w, r, err)
	}
	notice := "note-saved"
	if f.Get("action") == "sign" {
		if _, err := s.app.SignVisitNote(r.Context(), p, id); err != nil {
			return s.noteRefused(w, r, err)
		}
		notice = "note-signed"
	}
	afterChange(w, r, id, notice)
	return nil
}

// addAddendum is POST /visits/start/{id}/note/addenda.
func (s *Server) addAddendum(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if _, err := s.app.AddNoteAddendum(r.Context(), p, id, r.PostFormValue("text")); err != nil {
		return s.noteRefused(w, r, err)
	}
	afterChange(w, r, id, "note-amended")
	return nil
}

// noteRefused answers a refused note form with its message, as an error
// page whose alert static/live.js shows beside the form.
func (s *Server) noteRefused(w http.ResponseWriter, r *http.Request, err error) error {
	if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.EConflict); ok {
		s.render(w, r, status, "error", errorPage{Message: msg})
		return nil
	}
	return err
}

func uniqueCodes(cs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cs {
		if k := reference.NormCode(c); k != "" && !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// diagnosisHit is a code found by the note form's search.
type diagnosisHit struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// diagnoses is GET /providers/diagnoses?q=: the ICD-10-CM codes matching
// q (code or words), at most 20, for the note form's search (providers).
func (s *Server) diagnoses(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if !isProviderOrAdmin(p) {
		return clinic.Errorf(clinic.EForbidden, "The code search is for the clinic's providers.")
	}
	out := []diagnosisHit{}
	if q := strings.TrimSpace(r.URL.Query().Get("q")); len(q) >= 2 {
		for _, d := range s.app.ReferenceLists().FindDiagnoses(reference.Query{Q: q, Limit: 20}) {
			out = append(out, diagnosisHit{Code: d.Code, Description: d.Description})
		}
	}
	return edge.WriteJSON(w, http.StatusOK, out)
}

package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// emrSectionOut is the spec's EMR section.
type emrSectionOut struct {
	Data            any            `json:"data"`
	DataNotReported *bool          `json:"data_not_reported,omitempty"`
	Modified        *int64         `json:"modified"`
	ModifiedBy      *emrModifiedBy `json:"modified_by"`
}

// emrModifiedBy is who last wrote a section; Suffix is capitalised as in the spec.
type emrModifiedBy struct {
	ID        string `json:"id"`
	Type      int    `json:"type"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Title     string `json:"title"`
	Suffix    string `json:"Suffix"`
}

func toEMRSection(s *app.EMRSection) emrSectionOut {
	out := emrSectionOut{Data: s.Data, DataNotReported: s.DataNotReported}
	if s.Modified != 0 {
		out.Modified = &s.Modified
	}
	if u := s.ModifiedBy; u != nil {
		out.ModifiedBy = &emrModifiedBy{ID: id(u.ID), Type: u.Type, FirstName: u.FirstName, LastName: u.LastName}
	}
	return out
}

func (s *Server) getEMR(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	sections, err := s.app.GetEMR(r.Context(), c.p, userID)
	if err != nil {
		return err
	}
	out := make(map[string]emrSectionOut, len(sections))
	for name, sec := range sections {
		out[name] = toEMRSection(sec)
	}
	return ok(w, out)
}

func (s *Server) putEMR(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	var data any
	has, err := q.JSON("data", &data)
	if err != nil {
		return clinic.Errorf(clinic.EInvalid, "data must be JSON: an array or an object as the section's shape says (GET /emr/schema).")
	}
	notReported, err := q.Bool("data_not_reported")
	if err != nil {
		return err
	}
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	sec, err := s.app.PutEMR(r.Context(), c.p, userID, q.Str("name"), data, has, notReported)
	if err != nil {
		return err
	}
	return ok(w, toEMRSection(sec))
}

func (s *Server) emrSchema(w http.ResponseWriter, r *http.Request, c *call) error {
	return ok(w, app.EMRSchema())
}

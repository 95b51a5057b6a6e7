package httpapi

import (
	"encoding/json"
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// prescriptionOut is the spec's Prescription, with its capitalised names.
type prescriptionOut struct {
	ID             string `json:"ID"`
	DrugID         string `json:"DrugID"`
	NDC            string `json:"NDC"`
	Drug           string `json:"Drug"`
	Directions     string `json:"Directions"`
	Qty            int    `json:"Qty"`
	Refills        int    `json:"Refills"`
	Status         string `json:"Status"`
	PrescriberName string `json:"PrescriberName"`
	PrescriberID   string `json:"PrescriberID"`
	VisitID        string `json:"VisitID"`
	PharmacyCode   string `json:"PharmacyCode"`
	Created        int64  `json:"Created"`
	Modified       int64  `json:"Modified"`
}

func toPrescription(rx *app.PrescriptionView) prescriptionOut {
	out := prescriptionOut{ID: id(rx.ID), DrugID: rx.DrugID, NDC: rx.NDC, Drug: rx.Drug, Directions: rx.Directions, Qty: rx.Qty, Refills: rx.Refills,
		Status: rx.Status, PrescriberName: rx.PrescriberName, PrescriberID: id(rx.PrescriberID), PharmacyCode: rx.PharmacyCode,
		Created: rx.Created, Modified: rx.Modified}
	if rx.VisitID != 0 {
		out.VisitID = id(rx.VisitID)
	}
	return out
}

func (s *Server) listPrescriptions(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	before, limit, err := c.params.Keyset("before")
	if err != nil {
		return err
	}
	rxs, err := s.app.Prescriptions(r.Context(), c.p, userID, app.RxQuery{Status: c.params.Str("status"), Before: before, Limit: limit})
	if err != nil {
		return err
	}
	nextLink(w, r, "before", rxs.Next)
	out := make([]prescriptionOut, len(rxs.Items))
	for i, rx := range rxs.Items {
		out[i] = toPrescription(rx)
	}
	return ok(w, out)
}

func (s *Server) prescribe(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.PrescriptionInput{DrugID: q.Str("drug_id"), NDC: q.Str("ndc"), Drug: q.Str("drug"), Directions: q.Str("directions"), PharmacyCode: q.Str("pharmacy_code")}
	var err error
	if in.Qty, err = q.Int("qty", 0); err != nil {
		return err
	}
	if in.Refills, err = q.Int("refills", 0); err != nil {
		return err
	}
	if in.VisitID, err = q.Int("visit_id", 0); err != nil {
		return err
	}
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	rx, err := s.app.Prescribe(r.Context(), c.p, userID, in)
	if err != nil {
		return err
	}
	return ok(w, toPrescription(rx))
}

func (s *Server) discontinue(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	rxID, err := pathID(c, "rx_id", "Prescription")
	if err != nil {
		return err
	}
	if err := s.app.Discontinue(r.Context(), c.p, userID, rxID); err != nil {
		return err
	}
	return ok(w, true)
}

func toPharmacy(p *clinic.Pharmacy) map[string]any {
	out := map[string]any{"is_default": p.IsDefault, "extra": json.RawMessage("{}")}
	for _, k := range app.PharmacyFieldNames() {
		if v, ok := p.Fields[k]; ok {
			out[k] = v
		}
	}
	if len(p.Extra) > 0 {
		out["extra"] = p.Extra
	}
	return out
}

func (s *Server) listPharmacies(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	phs, err := s.app.Pharmacies(r.Context(), c.p, userID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(phs))
	for i, p := range phs {
		out[i] = toPharmacy(p)
	}
	return ok(w, out)
}

func (s *Server) savePharmacy(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.PharmacyInput{Fields: map[string]any{}}
	for _, k := range app.PharmacyFieldNames() {
		if v, ok := q.Raw(k); ok {
			in.Fields[k] = v
		}
	}
	if v, ok := q.Raw("extra"); ok {
		switch x := v.(type) {
		case string: // a form carries the search result as JSON text
			in.Extra = json.RawMessage(x)
		default:
			raw, err := json.Marshal(x)
			if err != nil {
				return clinic.Errorf(clinic.EInvalid, "extra must be JSON.")
			}
			in.Extra = raw
		}
	}
	def, err := q.Flag("is_default")
	if err != nil {
		return err
	}
	in.IsDefault = def
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.app.SavePharmacy(r.Context(), c.p, userID, in); err != nil {
		return err
	}
	return ok(w, true)
}

func (s *Server) deletePharmacy(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.app.DeletePharmacy(r.Context(), c.p, userID, c.params.Str("code")); err != nil {
		return err
	}
	return ok(w, true)
}

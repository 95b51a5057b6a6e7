package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/claimrules"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/reference"
	"teleclinic/internal/superbill"
)

// cardOut is the spec's insurance card: card_type and every field.
type cardOut map[string]any

func toCardOut(c *app.Card) cardOut {
	out := cardOut{"card_type": c.CardType, "modified": c.Modified}
	for k, v := range c.Fields {
		out[k] = v
	}
	return out
}

// versioned is an insurance answer: data and the format version.
type versioned struct {
	Data    any    `json:"data"`
	Version string `json:"version"`
}

func okVersioned(w http.ResponseWriter, data any) error {
	return edge.WriteJSON(w, http.StatusOK, versioned{Data: data, Version: app.InsuranceVersion})
}

// cardInput gathers the card fields a request carries, typed as sent.
func cardInput(q *Params) map[string]any {
	in := map[string]any{}
	for _, name := range app.CardFieldNames() {
		if v, ok := q.Raw(name); ok {
			in[name] = v
		}
	}
	return in
}

func okCards(w http.ResponseWriter, cards []*app.Card, err error) error {
	if err != nil {
		return err
	}
	out := make([]cardOut, len(cards))
	for i, cd := range cards {
		out[i] = toCardOut(cd)
	}
	return okVersioned(w, out)
}

func (s *Server) listCards(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	cards, err := s.app.InsuranceCards(r.Context(), c.p, userID)
	return okCards(w, cards, err)
}

func (s *Server) importCards(w http.ResponseWriter, r *http.Request, c *call) error {
	var in []map[string]any
	if _, err := c.params.JSON("insurances", &in); err != nil {
		return err
	}
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	cards, err := s.app.ImportInsuranceCards(r.Context(), c.p, userID, in)
	return okCards(w, cards, err)
}

func (s *Server) saveCard(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	cd, err := s.app.SaveInsuranceCard(r.Context(), c.p, userID, c.params.Str("card_type"), cardInput(c.params))
	if err != nil {
		return err
	}
	return okVersioned(w, toCardOut(cd))
}

func (s *Server) getCard(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	cd, err := s.app.InsuranceCard(r.Context(), c.p, userID, c.params.Str("card_type"))
	if err != nil {
		return err
	}
	return okVersioned(w, toCardOut(cd))
}

func (s *Server) deleteCard(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	if err := s.app.DeleteInsuranceCard(r.Context(), c.p, userID, c.params.Str("card_type")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// jobOut is the spec's eligibility job, with its outcome once known.
type jobOut struct {
	JobID    string         `json:"job_id"`
	Status   string         `json:"status"`
	Details  map[string]any `json:"details"`
	Started  int64          `json:"started"`
	Finished *int64         `json:"finished"`
}

func toJob(j *clinic.EligibilityJob) jobOut {
	out := jobOut{JobID: id(j.ID), Status: j.Status, Details: j.Details, Started: j.Started}
	if out.Details == nil {
		out.Details = map[string]any{}
	}
	if j.Finished != 0 {
		out.Finished = &j.Finished
	}
	return out
}

func (s *Server) checkEligibility(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	j, err := s.app.CheckEligibility(r.Context(), c.p, userID)
	if err != nil {
		return err
	}
	return ok(w, toJob(j))
}

func (s *Server) getEligibility(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	j, err := s.app.Eligibility(r.Context(), c.p, userID)
	if err != nil {
		return err
	}
	return ok(w, toJob(j))
}

// Reference lists (spec: reference list entries).

type refEntry struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	Description string `json:"description"`
}

type dxOut struct {
	Code        string    `json:"code"`
	Description string    `json:"description"`
	EHRVendor   ehrVendor `json:"ehr_vendor"`
}

type ehrVendor struct {
	Code    string      `json:"code"`
	CPID    string      `json:"cpid,omitempty"`
	Address *ehrAddress `json:"address,omitempty"`
}

type ehrAddress struct {
	Zip      string `json:"zip"`
	City     string `json:"city"`
	State    string `json:"state"`
	Address1 string `json:"address1"`
	Address2 string `json:"address2"`
	AreaCode string `json:"areacode"`
}

type carrierOut struct {
	Name      string    `json:"name"`
	Code      string    `json:"code"`
	EHRVendor ehrVendor `json:"ehr_vendor"`
}

// refQuery reads a list's optional q (a code or words) and limit.
func refQuery(c *call) (reference.Query, error) {
	limit, err := c.params.Int("limit", 0)
	return reference.Query{Q: c.params.Str("q"), Limit: int(limit)}, err
}

// okRefList answers a reference list: the same for every caller of the
// clinic for as long as the server runs, so a browser may keep it.
func okRefList[T, O any](w http.ResponseWriter, list []T, out func(T) O) error {
	res := make([]O, len(list))
	for i, e := range list {
		res[i] = out(e)
	}
	w.Header().Set("Cache-Control", "private, max-age=3600")
	return ok(w, res)
}

func (s *Server) listDiagnoses(w http.ResponseWriter, r *http.Request, c *call) error {
	q, err := refQuery(c)
	if err != nil {
		return err
	}
	return okRefList(w, s.app.ReferenceLists().FindDiagnoses(q), func(d reference.Diagnosis) dxOut {
		return dxOut{Code: d.Code, Description: d.Description, EHRVendor: ehrVendor{Code: reference.NormCode(d.Code)}}
	})
}

func (s *Server) listProcedures(w http.ResponseWriter, r *http.Request, c *call) error {
	q, err := refQuery(c)
	if err != nil {
		return err
	}
	return okRefList(w, s.app.ReferenceLists().FindProcedures(q), toRefEntry)
}

func (s *Server) listModifiers(w http.ResponseWriter, r *http.Request, c *call) error {
	q, err := refQuery(c)
	if err != nil {
		return err
	}
	return okRefList(w, s.app.ReferenceLists().FindModifiers(q), toRefEntry)
}

func toRefEntry(e reference.Entry) refEntry {
	return refEntry{ID: e.ID, Text: e.Text, Description: e.Description}
}

func (s *Server) listInsurers(w http.ResponseWriter, r *http.Request, c *call) error {
	q, err := refQuery(c)
	if err != nil {
		return err
	}
	return okRefList(w, s.app.ReferenceLists().FindPayers(q), func(p reference.Payer) refEntry {
		return refEntry{ID: p.Code, Text: p.Name, Description: "Payer ID " + p.PayerID}
	})
}

func (s *Server) listCarriers(w http.ResponseWriter, r *http.Request, c *call) error {
	q, err := refQuery(c)
	if err != nil {
		return err
	}
	return okRefList(w, s.app.ReferenceLists().FindPayers(q), func(p reference.Payer) carrierOut {
		return carrierOut{Name: p.Name, Code: p.Code, EHRVendor: ehrVendor{Code: p.Code, CPID: p.PayerID,
			Address: &ehrAddress{Zip: p.Zip, City: p.City, State: p.State, Address1: p.Address1, Address2: p.Address2, AreaCode: p.AreaCode}}}
	})
}

// Claims.

type claimOut struct {
	VisitID    string         `json:"visit_id"`
	Date       string         `json:"date"`
	Status     int            `json:"status"`
	Kind       string         `json:"kind"`
	Start      int64          `json:"start"`
	End        int64          `json:"end"`
	Patient    claimPerson    `json:"patient"`
	Provider   *claimPerson   `json:"provider"`
	Diagnoses  []claimCode    `json:"diagnoses"`
	Procedures []claimProc    `json:"procedures"`
	Insurance  claimInsurance `json:"insurance"`
	// The telehealth facts and what the rule set makes of them.
	PlaceOfService string     `json:"place_of_service"`
	Modifiers      []string   `json:"modifiers"`
	Telehealth     telehealth `json:"telehealth"`
}

// telehealth is a visit's recorded facts with the rule set's reading.
type telehealth struct {
	Modality      string        `json:"modality"`
	PatientState  string        `json:"patient_state"`
	PatientHome   *bool         `json:"patient_home"`
	ProviderState string        `json:"provider_state"`
	CallStart     int64         `json:"call_start"`
	CallEnd       int64         `json:"call_end"`
	Minutes       int64         `json:"minutes"`
	Participants  []participant `json:"participants"`
	// Interpreter is the interpreter who took part (null: none), for the
	// claim's and the record's mention of language services.
	Interpreter *participant `json:"interpreter"`
	Rejoins     int          `json:"rejoins"`
	RuleSet     string       `json:"rule_set"`
	Rules       []string     `json:"rules"`
	Missing     []string     `json:"missing"`
	Warnings    []string     `json:"warnings"`
}

type participant struct {
	UserID   string `json:"user_id"`
	Role     string `json:"role"`
	Name     string `json:"name"`
	Language string `json:"language,omitempty"`
}

func toTelehealth(f *clinic.VisitFacts, r claimrules.Result) telehealth {
	t := telehealth{Modality: f.Modality, PatientState: f.PatientState, ProviderState: f.ProviderState, CallStart: f.CallStart, CallEnd: f.CallEnd,
		Participants: []participant{}, Rejoins: f.Rejoins, RuleSet: r.RuleSet, Rules: r.Applied, Missing: r.Missing, Warnings: r.Warnings}
	if f.PatientHome != "" {
		home := f.PatientHome == "yes"
		t.PatientHome = &home
	}
	if f.CallStart > 0 && f.CallEnd > f.CallStart {
		t.Minutes = (f.CallEnd - f.CallStart + 59) / 60
	}
	for _, c := range f.Participants {
		t.Participants = append(t.Participants, participant{UserID: id(c.UserID), Role: c.Role, Name: c.Name, Language: c.Language})
	}
	if c := f.Interpreter(); c != nil {
		t.Interpreter = &participant{UserID: id(c.UserID), Role: c.Role, Name: c.Name, Language: c.Language}
	}
	return t
}

type claimPerson struct {
	ID        string `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	DOB       string `json:"dob,omitempty"`
	Gender    *int   `json:"gender,omitempty"`
}

type claimCode struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

type claimProc struct {
	Code        string   `json:"code"`
	Description string   `json:"description"`
	Modifiers   []string `json:"modifiers"`
}

type claimInsurance struct {
	Primary   cardOut `json:"primary"`
	Secondary cardOut `json:"secondary"`
}

func (s *Server) claimsReport(w http.ResponseWriter, r *http.Request, c *call) error {
	after, limit, err := c.params.Keyset("after")
	if err != nil {
		return err
	}
	claims, err := s.billing.ClaimsReport(r.Context(), c.p, billing.ClaimsQuery{FromDate: c.params.Str("from_date"), ToDate: c.params.Str("to_date"), After: after, Limit: limit})
	if err != nil {
		return err
	}
	nextLink(w, r, "after", claims.Next)
	ref := s.app.ReferenceLists()
	out := make([]claimOut, len(claims.Items))
	for i, cl := range claims.Items {
		v := cl.Visit
		o := claimOut{VisitID: id(v.ID), Date: cl.Date, Status: v.Status, Kind: v.Kind, Start: v.Start, End: v.End,
			Diagnoses: []claimCode{}, Procedures: []claimProc{}}
		if u := cl.Patient; u != nil {
			g := u.Gender
			o.Patient = claimPerson{ID: id(u.ID), FirstName: u.FirstName, LastName: u.LastName, DOB: u.DOB, Gender: &g}
		}
		if u := cl.Provider; u != nil {
			o.Provider = &claimPerson{ID: id(u.ID), FirstName: u.FirstName, LastName: u.LastName}
		}
		for _, d := range cl.Codes.Diagnoses {
			o.Diagnoses = append(o.Diagnoses, claimCode{Code: d, Description: ref.DiagnosisText(d)})
		}
		for _, p := range cl.Codes.Procedures {
			o.Procedures = append(o.Procedures, claimProc{Code: p.Code, Description: ref.ProcedureText(p.Code), Modifiers: claimrules.Merge(p.Modifiers, cl.Derived.Modifiers)})
		}
		for _, cd := range cl.Insurance {
			if cd.CardType == "primary" {
				o.Insurance.Primary = toCardOut(cd)
			} else {
				o.Insurance.Secondary = toCardOut(cd)
			}
		}
		o.PlaceOfService, o.Modifiers, o.Telehealth = cl.Derived.PlaceOfService, cl.Derived.Modifiers, toTelehealth(cl.Facts, cl.Derived)
		out[i] = o
	}
	return ok(w, out)
}

// Visit claim codes (extension).

func (s *Server) setVisitCodes(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	// Absent lists stay nil: the rules tell "not sent" from "emptied".
	var in billing.ClaimCodes
	if c.params.Has("diagnoses") {
		if _, err := c.params.JSON("diagnoses", &in.Diagnoses); err != nil {
			in.Diagnoses = c.params.List("diagnoses")
		}
	}
	if c.params.Has("procedures") {
		if _, err := c.params.JSON("procedures", &in.Procedures); err != nil {
			// A form lists bare codes: procedures[]=G2012.
			in.Procedures = []billing.ClaimProcedure{}
			for _, code := range c.params.List("procedures") {
				in.Procedures = append(in.Procedures, billing.ClaimProcedure{Code: code})
			}
		}
	}
	codes, err := s.billing.SetClaimCodes(r.Context(), c.p, vid, in)
	if err != nil {
		return err
	}
	return ok(w, codes)
}

// checkIn is POST /visits/{id}/location (extension).
func (s *Server) checkIn(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	home, err := c.params.Bool("at_home")
	if err != nil {
		return err
	}
	in := app.CheckInInput{State: c.params.Str("state"), AtHome: home}
	f, err := s.app.CheckIn(r.Context(), c.p, vid, in)
	if err != nil {
		return err
	}
	return ok(w, toTelehealth(f, app.DeriveClaim(f)))
}

// visitFacts is GET /visits/{id}/facts (extension).
func (s *Server) visitFacts(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	f, derived, err := s.app.VisitFacts(r.Context(), c.p, vid)
	if err != nil {
		return err
	}
	out := toTelehealth(f, derived)
	return ok(w, visitFactsOut{telehealth: out, PlaceOfService: derived.PlaceOfService, Modifiers: derived.Modifiers})
}

// visitFactsOut is a visit's facts with the place of service and the
// modifiers the rule set derives.
type visitFactsOut struct {
	telehealth
	PlaceOfService string   `json:"place_of_service"`
	Modifiers      []string `json:"modifiers"`
}

// superbillPDF is GET /visits/{id}/superbill (extension): the completed
// visit's superbill as a PDF.
func (s *Server) superbillPDF(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	b, err := s.billing.Superbill(r.Context(), c.p, vid)
	if err != nil {
		return err
	}
	return superbill.Serve(w, b)
}

func (s *Server) getVisitCodes(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	codes, err := s.billing.ClaimCodesOf(r.Context(), c.p, vid)
	if err != nil {
		return err
	}
	return ok(w, codes)
}

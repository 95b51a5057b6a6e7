package fhir

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The FHIR writes an integrator needs: a Patient created (conditionally,
// on its identifier, so the same person is not made twice) and updated
// (with If-Match on the version it read). Appointments are written
// through the scheduling operations. Each write is app's (its rules, its
// audit); this file reads the resource and writes the answer.

// maxWriteBytes bounds a written resource: a Patient is a few hundred
// bytes.
const maxWriteBytes = 64 << 10

// patientIn is a Patient as a client writes it: the fields this server
// keeps. Others are accepted and not kept (a Patient may carry many).
type patientIn struct {
	ResourceType string           `json:"resourceType"`
	ID           string           `json:"id"`
	Identifier   []fhirIdentifier `json:"identifier"`
	Name         []fhirName       `json:"name"`
	Telecom      []fhirContact    `json:"telecom"`
	Gender       string           `json:"gender"`
	BirthDate    string           `json:"birthDate"`
	Address      []fhirAddress    `json:"address"`
}

// readPatient reads r's body as a Patient of the clinic acct, valid R4.
func (s *Server) readPatient(r *http.Request, acct *clinic.Account) (*patientIn, app.PatientInput, error) {
	var in patientIn
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBytes+1))
	if err != nil || len(body) > maxWriteBytes {
		return nil, app.PatientInput{}, clinic.Errorf(clinic.EInvalid, "The body must be a Patient of at most 64 KiB.")
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, app.PatientInput{}, clinic.Errorf(clinic.EInvalid, "The body is not a FHIR JSON resource: %s.", err.Error())
	}
	if in.ResourceType != "Patient" {
		return nil, app.PatientInput{}, clinic.Errorf(clinic.EInvalid, "resourceType must be Patient, not %q.", in.ResourceType)
	}
	if err := s.r4.validate("Patient", body); err != nil {
		return nil, app.PatientInput{}, err
	}
	out := app.PatientInput{DOB: in.BirthDate}
	system := "urn:teleclinic:" + acct.Code + ":user"
	for _, id := range in.Identifier {
		if id.System == system {
			out.Code = id.Value
		}
	}
	if len(in.Name) > 0 {
		out.LastName = in.Name[0].Family
		out.FirstName = strings.Join(in.Name[0].Given, " ")
	}
	switch in.Gender {
	case "male", "female":
		out.Gender = in.Gender
	case "", "unknown", "other":
	default:
		return nil, app.PatientInput{}, clinic.Errorf(clinic.EInvalid, "gender must be male, female, other or unknown.")
	}
	for _, c := range in.Telecom {
		switch {
		case c.System == "email" && out.Email == "":
			out.Email = c.Value
		case c.System == "phone" && out.Phone == "":
			out.Phone = c.Value
		}
	}
	if len(in.Address) > 0 {
		a := in.Address[0]
		out.StreetAddr, out.City, out.State, out.Zip = strings.Join(a.Line, ", "), a.City, a.State, a.PostalCode
	}
	return &in, out, nil
}

// Create is POST /fhir/R4/{type}: a Patient, by the clinic admin. An
// If-None-Exist of identifier=<system>|<value> answers the patient that
// has it (200) rather than making another; a new one is 201, with its
// Location and ETag.
func (s *Server) Create(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, r.PathValue("type"), 'c'); err != nil {
		return err
	}
	if r.PathValue("type") != "Patient" {
		return clinic.Errorf(clinic.EInvalid, "This server creates Patient resources; %s are written through their operations, or not at all.", r.PathValue("type"))
	}
	_, in, err := s.readPatient(r, p.Account)
	if err != nil {
		return err
	}
	cond, err := ifNoneExist(r.Header.Get("If-None-Exist"), p.Account)
	if err != nil {
		return err
	}
	u, created, err := s.app.CreatePatient(r.Context(), p, in, cond)
	if err != nil {
		return err
	}
	res := toFHIRPatient(p.Account, u)
	w.Header().Set("ETag", etag(res.Meta.VersionID))
	w.Header().Set("Location", s.base()+"Patient/"+res.ID+"/_history/"+res.Meta.VersionID)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeFHIR(w, status, res)
}

// Update is PUT /fhir/R4/{type}/{id}: a Patient's demographics replaced,
// by the clinic admin or the patient; If-Match (W/"<versionId>") refuses
// a change to a version the patient no longer has (412).
func (s *Server) Update(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, r.PathValue("type"), 'u'); err != nil {
		return err
	}
	switch r.PathValue("type") {
	case "Appointment":
		return s.updateAppointment(w, r, p)
	case "Patient":
	default:
		return clinic.Errorf(clinic.EInvalid, "This server updates Patient and Appointment resources; the others are not written.")
	}
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Patient/%s not found.", r.PathValue("id"))
	}
	body, in, err := s.readPatient(r, p.Account)
	if err != nil {
		return err
	}
	if body.ID != "" && body.ID != r.PathValue("id") {
		return clinic.Errorf(clinic.EInvalid, "The resource's id (%s) is not the address's (%s).", body.ID, r.PathValue("id"))
	}
	version := int64(-1) // no If-Match
	if m := r.Header.Get("If-Match"); m != "" {
		v := strings.Trim(strings.TrimPrefix(strings.TrimSpace(m), "W/"), `"`)
		if version, err = strconv.ParseInt(v, 10, 64); err != nil || version < 0 {
			return clinic.Errorf(clinic.EInvalid, `If-Match must be W/"<versionId>" of the Patient as read.`)
		}
	}
	u, err := s.app.UpdatePatient(r.Context(), p, n, in, version)
	if err != nil {
		return err
	}
	res := toFHIRPatient(p.Account, u)
	w.Header().Set("ETag", etag(res.Meta.VersionID))
	return writeFHIR(w, http.StatusOK, res)
}

// ifNoneExist is the identifier code a conditional create names
// ("identifier=<system>|<value>", the system this clinic's), "" when none.
func ifNoneExist(h string, acct *clinic.Account) (string, error) {
	if h == "" {
		return "", nil
	}
	v, ok := strings.CutPrefix(strings.TrimPrefix(h, "?"), "identifier=")
	system, value, bar := strings.Cut(v, "|")
	if !ok || !bar || value == "" || system != "urn:teleclinic:"+acct.Code+":user" {
		return "", clinic.Errorf(clinic.EInvalid, "If-None-Exist must be identifier=urn:teleclinic:%s:user|<code>.", acct.Code)
	}
	return value, nil
}

// etag is a version as an entity tag.
func etag(version string) string { return `W/"` + version + `"` }

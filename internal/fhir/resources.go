package fhir

import (
	"html"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// FHIR R4 resources as the FHIR door shows them: explicit types with the
// elements we fill, built from the same app types the API answers from.
// Every resource validates against the official R4 JSON Schema (the tests
// hold each type to it).
//
// Logical ids: a patient or practitioner is its user id, an encounter or
// appointment its visit id, a document reference its file id. The parts of
// a record that have no id of their own across the clinic carry the
// patient's: "<patient>-<reading>" (Observation), "<patient>-<message>"
// (Communication), "<patient>-<prescription>" (MedicationRequest),
// "<patient>-primary" (Coverage), "<patient>-<n>" for the n-th entry of the
// allergies or conditions section (AllergyIntolerance, Condition; a section
// is replaced whole, so these ids last until its next change).

// Code systems and the terminology of the mapping.
const (
	sysLOINC         = "http://loinc.org"
	sysUCUM          = "http://unitsofmeasure.org"
	sysNDC           = "http://hl7.org/fhir/sid/ndc"
	sysActCode       = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
	sysObsCategory   = "http://terminology.hl7.org/CodeSystem/observation-category"
	sysCondCat       = "http://terminology.hl7.org/CodeSystem/condition-category"
	sysCondVer       = "http://terminology.hl7.org/CodeSystem/condition-ver-status"
	sysICD10CM       = "http://hl7.org/fhir/sid/icd-10-cm"
	sysDiagnosisRole = "http://terminology.hl7.org/CodeSystem/diagnosis-role"
	sysAllergyClin   = "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical"
	sysCoverClass    = "http://terminology.hl7.org/CodeSystem/coverage-class"
	// sysDataType codes the readings LOINC has no code for (a room's
	// environment: illuminance, humidity, …) by their data_type.
	sysDataType = "urn:teleclinic:health:data_type"
)

// resource is what every resource answers: its type, id and last
// change, for entries, links and the _lastUpdated search.
type resource interface {
	ref() string
	updated() int64
}

type fhirMeta struct {
	VersionID   string `json:"versionId,omitempty"`
	LastUpdated string `json:"lastUpdated"`
}

type fhirCoding struct {
	System  string `json:"system,omitempty"`
	Code    string `json:"code,omitempty"`
	Display string `json:"display,omitempty"`
}

type fhirConcept struct {
	Coding []fhirCoding `json:"coding,omitempty"`
	Text   string       `json:"text,omitempty"`
}

type fhirRef struct {
	Reference string `json:"reference,omitempty"`
	Display   string `json:"display,omitempty"`
}

type fhirIdentifier struct {
	System string `json:"system,omitempty"`
	Value  string `json:"value"`
}

type fhirName struct {
	Use    string   `json:"use,omitempty"`
	Text   string   `json:"text,omitempty"`
	Family string   `json:"family,omitempty"`
	Given  []string `json:"given,omitempty"`
}

type fhirContact struct {
	System string `json:"system"`
	Value  string `json:"value"`
}

type fhirAddress struct {
	Line       []string `json:"line,omitempty"`
	City       string   `json:"city,omitempty"`
	State      string   `json:"state,omitempty"`
	PostalCode string   `json:"postalCode,omitempty"`
}

type fhirPeriod struct {
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

type fhirQuantity struct {
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	System string  `json:"system,omitempty"`
	Code   string  `json:"code,omitempty"`
}

type fhirAttachment struct {
	ContentType string `json:"contentType,omitempty"`
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Size        int64  `json:"size"`
	Creation    string `json:"creation,omitempty"`
}

// base is the part every resource shares.
type base struct {
	ResourceType string   `json:"resourceType"`
	ID           string   `json:"id,omitempty"` // none for $find's proposals
	Meta         fhirMeta `json:"meta"`
	modified     int64
}

func newBase(typ, id string, modified int64) base {
	return base{ResourceType: typ, ID: id, Meta: fhirMeta{LastUpdated: instant(modified)}, modified: modified}
}

func (b base) ref() string { return b.ResourceType + "/" + b.ID }

// id is a number as FHIR ids and references write it.
func id(n int64) string       { return strconv.FormatInt(n, 10) }
func (b base) updated() int64 { return b.modified }

// instant is a FHIR instant: seconds in UTC.
func instant(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

func userRef(u *clinic.User) fhirRef {
	if u == nil {
		return fhirRef{}
	}
	typ := "Patient"
	if u.Type == clinic.UserProvider {
		typ = "Practitioner"
	}
	return fhirRef{Reference: typ + "/" + id(u.ID), Display: u.FullName()}
}

func patientRef(u *clinic.User) fhirRef {
	return fhirRef{Reference: "Patient/" + id(u.ID), Display: u.FullName()}
}

// subID is the id of a record part that carries its patient's.
func subID(patient int64, local string) string { return id(patient) + "-" + local }

func userIdentifier(acct *clinic.Account, u *clinic.User) []fhirIdentifier {
	if u.Code == "" {
		return nil
	}
	return []fhirIdentifier{{System: "urn:teleclinic:" + acct.Code + ":user", Value: u.Code}}
}

func userName(u *clinic.User) []fhirName {
	n := fhirName{Use: "official", Text: u.FullName(), Family: u.LastName}
	if u.FirstName != "" {
		n.Given = []string{u.FirstName}
	}
	if n.Text == "" {
		return nil
	}
	return []fhirName{n}
}

type fhirPatient struct {
	base
	Identifier []fhirIdentifier `json:"identifier,omitempty"`
	Active     bool             `json:"active"`
	Name       []fhirName       `json:"name,omitempty"`
	Telecom    []fhirContact    `json:"telecom,omitempty"`
	Gender     string           `json:"gender"`
	BirthDate  string           `json:"birthDate,omitempty"`
	Address    []fhirAddress    `json:"address,omitempty"`
}

func toFHIRPatient(acct *clinic.Account, u *clinic.User) *fhirPatient {
	out := &fhirPatient{base: newBase("Patient", id(u.ID), u.Modified), Identifier: userIdentifier(acct, u),
		Active: u.Status == clinic.StatusActive, Name: userName(u), Gender: fhirGender(u.Gender), BirthDate: u.DOB}
	out.Meta.VersionID = id(u.Version) // the version an update's If-Match names
	if u.Email != "" {
		out.Telecom = append(out.Telecom, fhirContact{System: "email", Value: u.Email})
	}
	if u.Phone != "" {
		out.Telecom = append(out.Telecom, fhirContact{System: "phone", Value: u.Phone})
	}
	if u.StreetAddr != "" || u.City != "" || u.State != "" || u.Zip != "" {
		a := fhirAddress{City: u.City, State: u.State, PostalCode: u.Zip}
		if u.StreetAddr != "" {
			a.Line = []string{u.StreetAddr}
		}
		out.Address = []fhirAddress{a}
	}
	return out
}

func fhirGender(g int) string {
	switch g {
	case clinic.GenderMale:
		return "male"
	case clinic.GenderFemale:
		return "female"
	}
	return "unknown"
}

// fhirPractitioner shows a provider by name only: the API shows a
// provider's contact details to nobody but the admin and themself.
type fhirPractitioner struct {
	base
	Identifier []fhirIdentifier `json:"identifier,omitempty"`
	Active     bool             `json:"active"`
	Name       []fhirName       `json:"name,omitempty"`
}

func toFHIRPractitioner(acct *clinic.Account, u *clinic.User) *fhirPractitioner {
	return &fhirPractitioner{base: newBase("Practitioner", id(u.ID), u.Modified), Identifier: userIdentifier(acct, u),
		Active: u.Status == clinic.StatusActive, Name: userName(u)}
}

type fhirEncounterParticipant struct {
	Individual fhirRef `json:"individual"`
}

type fhirEncounter struct {
	base
	Identifier  []fhirIdentifier           `json:"identifier,omitempty"`
	Status      string                     `json:"status"`
	Class       fhirCoding                 `json:"class"`
	Type        []fhirConcept              `json:"type,omitempty"`
	Subject     fhirRef                    `json:"subject"`
	Participant []fhirEncounterParticipant `json:"participant,omitempty"`
	Appointment []fhirRef                  `json:"appointment,omitempty"`
	Period      *fhirPeriod                `json:"period,omitempty"`
	ReasonCode  []fhirConcept              `json:"reasonCode,omitempty"`
	Diagnosis   []fhirEncounterDiagnosis   `json:"diagnosis,omitempty"`
}

// fhirEncounterDiagnosis is a diagnosis of an encounter: the Condition,
// billed (its use), ranked (1 is the primary).
type fhirEncounterDiagnosis struct {
	Condition fhirRef      `json:"condition"`
	Use       *fhirConcept `json:"use,omitempty"`
	Rank      int          `json:"rank"`
}

// encounterStatus: a walk-in that waits in its room's queue has arrived; a
// pending or confirmed booking or e-consult is planned.
func encounterStatus(v *clinic.Visit) string {
	switch v.Status {
	case clinic.VisitInProgress:
		return "in-progress"
	case clinic.VisitCompleted:
		return "finished"
	case clinic.VisitCancelled:
		return "cancelled"
	case clinic.VisitPending:
		if v.Kind == clinic.KindWalkin {
			return "arrived"
		}
	}
	return "planned"
}

// encounterClass: in person is ambulatory; phone, video and e-consult are
// virtual.
func encounterClass(v *clinic.Visit) fhirCoding {
	if v.Type == clinic.VisitInPerson {
		return fhirCoding{System: sysActCode, Code: "AMB", Display: "ambulatory"}
	}
	return fhirCoding{System: sysActCode, Code: "VR", Display: "virtual"}
}

func visitTypeText(v *clinic.Visit) string {
	kind := map[string]string{clinic.KindWalkin: "Walk-in", clinic.KindEconsult: "E-consult", clinic.KindAppointment: "Appointment"}[v.Kind]
	switch v.Type {
	case clinic.VisitInPerson:
		return kind + " in person"
	case clinic.VisitPhone:
		return kind + " by phone"
	case clinic.VisitVideo:
		return kind + " by video"
	}
	return kind
}

func visitPeriod(v *clinic.Visit) *fhirPeriod {
	start, end := v.ActualStart, v.ActualEnd
	if start == 0 {
		start, end = v.Start, v.End
	}
	if start == 0 {
		return nil
	}
	p := &fhirPeriod{Start: instant(start)}
	if end >= start && end != 0 {
		p.End = instant(end)
	}
	return p
}

// visitReason is the reason the patient gave in the visit's intake.
func visitReason(d *app.VisitDetail) []fhirConcept {
	if d.Intake == nil || strings.TrimSpace(d.Intake.ReasonForVisit) == "" {
		return nil
	}
	return []fhirConcept{{Text: d.Intake.ReasonForVisit}}
}

// The encounter names the diagnoses of its signed note (n, nil when none)
// in their order, each the Condition toFHIRDiagnoses makes of it.
func toFHIREncounter(d *app.VisitDetail, n *clinic.VisitNote) *fhirEncounter {
	v := d.Visit
	out := &fhirEncounter{base: newBase("Encounter", id(v.ID), v.Modified), Status: encounterStatus(v), Class: encounterClass(v),
		Type: []fhirConcept{{Text: visitTypeText(v)}}, Subject: patientRef(d.Member), Period: visitPeriod(v)}
	if v.Code != "" {
		out.Identifier = []fhirIdentifier{{System: "urn:teleclinic:" + d.Account.Code + ":visit", Value: v.Code}}
	}
	if d.Provider != nil {
		out.Participant = []fhirEncounterParticipant{{Individual: userRef(d.Provider)}}
	}
	if v.Kind == clinic.KindAppointment {
		out.Appointment = []fhirRef{{Reference: "Appointment/" + id(v.ID)}}
	}
	out.ReasonCode = visitReason(d)
	if n != nil && n.Status == clinic.NoteSigned && d.Member != nil {
		for i := range n.Diagnoses {
			out.Diagnosis = append(out.Diagnosis, fhirEncounterDiagnosis{Condition: fhirRef{Reference: "Condition/" + diagnosisID(d.Member, v.ID, i+1)},
				Use: &fhirConcept{Coding: []fhirCoding{{System: sysDiagnosisRole, Code: "billing", Display: "Billing"}}}, Rank: i + 1})
		}
	}
	return out
}

type fhirAppointmentParticipant struct {
	Actor  fhirRef `json:"actor"`
	Status string  `json:"status"`
}

type fhirAppointment struct {
	base
	Extension         []fhirExtension              `json:"extension,omitempty"`
	Identifier        []fhirIdentifier             `json:"identifier,omitempty"`
	Status            string                       `json:"status"`
	CancelationReason *fhirConcept                 `json:"cancelationReason,omitempty"`
	ServiceType       []fhirConcept                `json:"serviceType,omitempty"`
	ReasonCode        []fhirConcept                `json:"reasonCode,omitempty"`
	Description       string                       `json:"description,omitempty"`
	Start             string                       `json:"start,omitempty"`
	End               string                       `json:"end,omitempty"`
	Slot              []fhirRef                    `json:"slot,omitempty"`
	Created           string                       `json:"created,omitempty"`
	Participant       []fhirAppointmentParticipant `json:"participant"`
}

// appointmentStatus is a visit's as an Appointment's: a visit cancelled
// as a no-show is a noshow; one over its provider's slots is booked from
// the start (the provider accepted the time by publishing it).
func appointmentStatus(v *clinic.Visit) string {
	switch v.Status {
	case clinic.VisitPending:
		if v.SlotID != 0 {
			return "booked"
		}
	case clinic.VisitCancelled:
		if v.Outcome == clinic.OutcomeNoShow || v.CancelReason == app.ReasonNoShow {
			return "noshow"
		}
		return "cancelled"
	case clinic.VisitConfirmed:
		return "booked"
	case clinic.VisitInProgress:
		return "arrived"
	case clinic.VisitCompleted:
		return "fulfilled"
	}
	return "pending"
}

// toFHIRAppointment is a booked visit (one over a provider's slot), with
// the intake it was booked for as its identifier and its room as a
// service type.
func toFHIRAppointment(acct *clinic.Account, d *app.VisitDetail) *fhirAppointment {
	v := d.Visit
	out := &fhirAppointment{base: newBase("Appointment", id(v.ID), v.Modified), Status: appointmentStatus(v),
		ServiceType: []fhirConcept{{Text: visitTypeText(v)}}, Created: time.Unix(v.Created, 0).UTC().Format("2006-01-02")}
	if v.IntakeID != 0 {
		out.Identifier = []fhirIdentifier{{System: intakeSystem(acct), Value: id(v.IntakeID)}}
	}
	if d.Room != nil {
		out.ServiceType = append(out.ServiceType, roomConcept(acct, d.Room))
	}
	if v.SlotID != 0 {
		out.Slot = []fhirRef{{Reference: "Slot/" + id(v.SlotID)}}
	}
	if v.Start != 0 && v.End > v.Start {
		out.Start, out.End = instant(v.Start), instant(v.End)
	}
	if v.Status == clinic.VisitCancelled && v.CancelReason != "" {
		out.CancelationReason = &fhirConcept{Text: v.CancelReason}
	}
	out.ReasonCode = visitReason(d)
	if d.Room != nil {
		out.Description = d.Room.Name
	}
	out.Participant = []fhirAppointmentParticipant{{Actor: patientRef(d.Member), Status: "accepted"}}
	if d.Provider != nil {
		st := "accepted"
		if v.Status == clinic.VisitPending && v.SlotID == 0 {
			st = "needs-action"
		}
		out.Participant = append(out.Participant, fhirAppointmentParticipant{Actor: userRef(d.Provider), Status: st})
	}
	return out
}

type fhirPayload struct {
	ContentString    string   `json:"contentString,omitempty"`
	ContentReference *fhirRef `json:"contentReference,omitempty"`
}

type fhirCommunication struct {
	base
	Status    string        `json:"status"`
	Category  []fhirConcept `json:"category,omitempty"`
	Subject   fhirRef       `json:"subject"`
	Encounter fhirRef       `json:"encounter"`
	Sent      string        `json:"sent"`
	Sender    fhirRef       `json:"sender"`
	Payload   []fhirPayload `json:"payload,omitempty"`
}

// toFHIRCommunication is one message of a visit's thread; its attachments
// are the files it names, as document references.
func toFHIRCommunication(patient *clinic.User, m *app.Message) *fhirCommunication {
	sent := m.CreatedUS / 1e6
	out := &fhirCommunication{base: newBase("Communication", subID(patient.ID, id(m.ID)), sent), Status: "completed",
		Subject: patientRef(patient), Encounter: fhirRef{Reference: "Encounter/" + id(m.VisitID)},
		Sent:   time.UnixMicro(m.CreatedUS).UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		Sender: fhirRef{Reference: "Patient/" + id(m.Actor.ID), Display: m.Actor.DisplayName}}
	if m.Actor.Type == clinic.UserProvider {
		out.Sender.Reference = "Practitioner/" + id(m.Actor.ID)
	}
	if m.Type != "" { // patient_message or provider_message
		out.Category = []fhirConcept{{Text: m.Type}}
	}
	if m.Content != "" {
		out.Payload = append(out.Payload, fhirPayload{ContentString: m.Content})
	}
	for _, f := range m.Attachments {
		out.Payload = append(out.Payload, fhirPayload{ContentReference: &fhirRef{Reference: "DocumentReference/" + id(f)}})
	}
	return out
}

type fhirComponent struct {
	Code          fhirConcept   `json:"code"`
	ValueQuantity *fhirQuantity `json:"valueQuantity,omitempty"`
}

type fhirObservation struct {
	base
	Status            string          `json:"status"`
	Category          []fhirConcept   `json:"category,omitempty"`
	Code              fhirConcept     `json:"code"`
	Subject           fhirRef         `json:"subject"`
	EffectiveDateTime string          `json:"effectiveDateTime"`
	Issued            string          `json:"issued"`
	ValueQuantity     *fhirQuantity   `json:"valueQuantity,omitempty"`
	ValueString       string          `json:"valueString,omitempty"`
	ValueBoolean      *bool           `json:"valueBoolean,omitempty"`
	Device            *fhirRef        `json:"device,omitempty"`
	Component         []fhirComponent `json:"component,omitempty"`
}

// loinc is a measurement's LOINC code, with the category it files under.
type loinc struct{ code, display, category string }

var readingCodes = map[string]loinc{
	"temperature_body": {"8310-5", "Body temperature", "vital-signs"},
	"weight":           {"29463-7", "Body weight", "vital-signs"},
	"hr":               {"8867-4", "Heart rate", "vital-signs"},
	"bo":               {"59408-5", "Oxygen saturation in Arterial blood by Pulse oximetry", "vital-signs"},
	"bp":               {"85354-9", "Blood pressure panel with all children optional", "vital-signs"},
	"steps":            {"55423-8", "Number of steps in unspecified time Pedometer", "activity"},
	"active_minutes":   {"55411-3", "Exercise duration", "activity"},
	"bg":               {"2339-0", "Glucose [Mass/volume] in Blood", "laboratory"},
}

// ucum is each unit as the API takes it, in UCUM.
var ucum = map[string]struct{ code, unit string }{
	"cel": {"Cel", "°C"}, "fah": {"[degF]", "°F"},
	"mg/dL": {"mg/dL", "mg/dL"}, "mmol/L": {"mmol/L", "mmol/L"},
	"mmHg": {"mm[Hg]", "mmHg"}, "kPa": {"kPa", "kPa"},
	"kg": {"kg", "kg"}, "lbs": {"[lb_av]", "lb"},
	"lux": {"lx", "lx"}, "percentage": {"%", "%"}, "cm": {"cm", "cm"},
}

// readingUnits are the units of the measurements whose unit is fixed.
var readingUnits = map[string]struct{ code, unit string }{
	"hr": {"/min", "beats/minute"}, "bo": {"%", "%"}, "steps": {"{steps}", "steps"}, "active_minutes": {"min", "min"},
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func quantity(v any, unit string) *fhirQuantity {
	f, ok := number(v)
	if !ok {
		return nil
	}
	q := &fhirQuantity{Value: f}
	if u, ok := ucum[unit]; ok {
		q.Unit, q.System, q.Code = u.unit, sysUCUM, u.code
	} else if unit != "" {
		q.Unit = unit
	}
	return q
}

// toFHIRObservation is a device reading. Vital signs, activity and blood
// glucose carry their LOINC code and UCUM units; a room's environment
// (illuminance, humidity, gas, movement, noise, range) has no LOINC code
// and is coded by its data_type.
func toFHIRObservation(patient *clinic.User, r *clinic.Reading) *fhirObservation {
	out := &fhirObservation{base: newBase("Observation", subID(patient.ID, id(r.ID)), r.Created), Status: "final",
		Subject: patientRef(patient), EffectiveDateTime: instant(r.Time), Issued: instant(r.Created),
		Device: &fhirRef{Display: r.Type + " " + r.DeviceID}}
	lc, clinical := readingCodes[r.DataType]
	if r.DataType == "bg" && r.Values["bg_unit"] == "mmol/L" {
		lc = loinc{"15074-8", "Glucose [Moles/volume] in Blood", "laboratory"}
	}
	if clinical {
		out.Category = []fhirConcept{{Coding: []fhirCoding{{System: sysObsCategory, Code: lc.category}}}}
		out.Code = fhirConcept{Coding: []fhirCoding{{System: sysLOINC, Code: lc.code, Display: lc.display}}, Text: lc.display}
	} else {
		out.Code = fhirConcept{Coding: []fhirCoding{{System: sysDataType, Code: r.DataType}}, Text: r.DataType}
	}
	unitOf := func(field string) string { s, _ := r.Values[field].(string); return s }
	switch r.DataType {
	case "bp":
		unit := unitOf("bp_unit")
		out.Component = []fhirComponent{
			{Code: fhirConcept{Coding: []fhirCoding{{System: sysLOINC, Code: "8480-6", Display: "Systolic blood pressure"}}}, ValueQuantity: quantity(r.Values["hp"], unit)},
			{Code: fhirConcept{Coding: []fhirCoding{{System: sysLOINC, Code: "8462-4", Display: "Diastolic blood pressure"}}}, ValueQuantity: quantity(r.Values["lp"], unit)},
		}
	case "temperature_body":
		out.ValueQuantity = quantity(r.Values["temperature_body"], unitOf("temperature_unit"))
	case "bg":
		out.ValueQuantity = quantity(r.Values["bg"], unitOf("bg_unit"))
	case "weight":
		out.ValueQuantity = quantity(r.Values["weight"], unitOf("weight_unit"))
	case "illuminance", "humidity", "range":
		out.ValueQuantity = quantity(r.Values[r.DataType], unitOf(r.DataType+"_unit"))
	case "gas":
		out.ValueString, _ = r.Values["gas"].(string)
	case "movement":
		f, _ := number(r.Values["movement"])
		b := f == 1
		out.ValueBoolean = &b
	default: // hr, bo, steps, active_minutes, noise
		out.ValueQuantity = quantity(r.Values[r.DataType], "")
		if u, ok := readingUnits[r.DataType]; ok && out.ValueQuantity != nil {
			out.ValueQuantity.Unit, out.ValueQuantity.System, out.ValueQuantity.Code = u.unit, sysUCUM, u.code
		}
	}
	return out
}

type fhirCoverageClass struct {
	Type  fhirConcept `json:"type"`
	Value string      `json:"value"`
}

type fhirCoverage struct {
	base
	Status       string              `json:"status"`
	SubscriberID string              `json:"subscriberId,omitempty"`
	Beneficiary  fhirRef             `json:"beneficiary"`
	Payor        []fhirRef           `json:"payor"`
	Class        []fhirCoverageClass `json:"class,omitempty"`
	Order        int                 `json:"order"`
}

// toFHIRCoverage is an insurance card; its payor is the insurer's code as
// the card holds it (a display, not a reference: insurers are not
// resources here).
func toFHIRCoverage(patient *clinic.User, c *app.Card) *fhirCoverage {
	str := func(k string) string { s, _ := c.Fields[k].(string); return strings.TrimSpace(s) }
	out := &fhirCoverage{base: newBase("Coverage", subID(patient.ID, c.CardType), c.Modified), Status: "active",
		SubscriberID: str("subscriber_number"), Beneficiary: patientRef(patient), Order: 1}
	if c.CardType == "secondary" {
		out.Order = 2
	}
	payor := str("insurer_code")
	if payor == "" {
		payor = "Insurer not given"
	}
	out.Payor = []fhirRef{{Display: payor}}
	if g := str("group_number"); g != "" {
		out.Class = []fhirCoverageClass{{Type: fhirConcept{Coding: []fhirCoding{{System: sysCoverClass, Code: "group"}}}, Value: g}}
	}
	return out
}

type fhirDosage struct {
	Text string `json:"text"`
}

type fhirDispense struct {
	NumberOfRepeatsAllowed int           `json:"numberOfRepeatsAllowed"`
	Quantity               *fhirQuantity `json:"quantity,omitempty"`
}

type fhirMedicationRequest struct {
	base
	Status                    string       `json:"status"`
	Intent                    string       `json:"intent"`
	MedicationCodeableConcept fhirConcept  `json:"medicationCodeableConcept"`
	Subject                   fhirRef      `json:"subject"`
	Encounter                 *fhirRef     `json:"encounter,omitempty"`
	AuthoredOn                string       `json:"authoredOn"`
	Requester                 fhirRef      `json:"requester"`
	DosageInstruction         []fhirDosage `json:"dosageInstruction,omitempty"`
	DispenseRequest           fhirDispense `json:"dispenseRequest"`
}

func toFHIRMedicationRequest(patient *clinic.User, rx *app.PrescriptionView) *fhirMedicationRequest {
	out := &fhirMedicationRequest{base: newBase("MedicationRequest", subID(patient.ID, id(rx.ID)), rx.Modified), Status: "active",
		Intent: "order", MedicationCodeableConcept: fhirConcept{Text: rx.Drug}, Subject: patientRef(patient),
		AuthoredOn: instant(rx.Created), Requester: fhirRef{Reference: "Practitioner/" + id(rx.PrescriberID), Display: rx.PrescriberName},
		DispenseRequest: fhirDispense{NumberOfRepeatsAllowed: rx.Refills}}
	if rx.Status == app.RxDiscontinued {
		out.Status = "stopped"
	}
	if rx.NDC != "" {
		out.MedicationCodeableConcept.Coding = []fhirCoding{{System: sysNDC, Code: rx.NDC}}
	}
	if rx.VisitID != 0 {
		out.Encounter = &fhirRef{Reference: "Encounter/" + id(rx.VisitID)}
	}
	if rx.Directions != "" {
		out.DosageInstruction = []fhirDosage{{Text: rx.Directions}}
	}
	if rx.Qty > 0 {
		out.DispenseRequest.Quantity = &fhirQuantity{Value: float64(rx.Qty)}
	}
	return out
}

type fhirAllergy struct {
	base
	ClinicalStatus fhirConcept `json:"clinicalStatus"`
	Code           fhirConcept `json:"code"`
	Patient        fhirRef     `json:"patient"`
	RecordedDate   string      `json:"recordedDate,omitempty"`
}

type fhirCondition struct {
	base
	ClinicalStatus     *fhirConcept  `json:"clinicalStatus,omitempty"`
	VerificationStatus *fhirConcept  `json:"verificationStatus,omitempty"`
	Category           []fhirConcept `json:"category"`
	Code               fhirConcept   `json:"code"`
	Subject            fhirRef       `json:"subject"`
	Encounter          *fhirRef      `json:"encounter,omitempty"`
	Recorder           *fhirRef      `json:"recorder,omitempty"`
	RecordedDate       string        `json:"recordedDate,omitempty"`
}

// diagnosisID is the local id of the nth (1-based) diagnosis of visit's
// note: "dx<visit>-<n>".
func diagnosisID(patient *clinic.User, visit int64, n int) string {
	return subID(patient.ID, "dx"+id(visit)+"-"+strconv.Itoa(n))
}

// toFHIRDiagnoses are a signed note's diagnoses as coded Conditions of
// its encounter (encounter-diagnosis, ICD-10-CM), in the note's order:
// the first is the primary. A draft's are not yet diagnoses.
func toFHIRDiagnoses(patient *clinic.User, n *clinic.VisitNote) []resource {
	if n.Status != clinic.NoteSigned {
		return nil
	}
	var out []resource
	for i, d := range n.Diagnoses {
		c := &fhirCondition{base: newBase("Condition", diagnosisID(patient, n.VisitID, i+1), n.SignedAt),
			VerificationStatus: &fhirConcept{Coding: []fhirCoding{{System: sysCondVer, Code: "confirmed"}}},
			Category:           []fhirConcept{{Coding: []fhirCoding{{System: sysCondCat, Code: "encounter-diagnosis", Display: "Encounter Diagnosis"}}}},
			Code:               fhirConcept{Coding: []fhirCoding{{System: sysICD10CM, Code: d.Code, Display: d.Description}}, Text: d.Description},
			Subject:            patientRef(patient), Encounter: &fhirRef{Reference: "Encounter/" + id(n.VisitID)},
			Recorder: &fhirRef{Reference: "Practitioner/" + id(n.SignedBy)}, RecordedDate: instant(n.SignedAt)}
		out = append(out, c)
	}
	return out
}

// sectionResources makes one resource of each entry of an array EMR
// section (allergies: substance; conditions: condition, the one field
// each has); build makes it from its base and text. An entry's id is its
// place in the section. A section the patient declined to declare has
// none.
func sectionResources(patient *clinic.User, s *app.EMRSection, field string, build func(b base, text string) resource) []resource {
	if s == nil || (s.DataNotReported != nil && *s.DataNotReported) {
		return nil
	}
	items, _ := s.Data.([]any)
	var out []resource
	for i, it := range items {
		m, _ := it.(map[string]any)
		if text, _ := m[field].(string); strings.TrimSpace(text) != "" {
			out = append(out, build(newBase("", subID(patient.ID, strconv.Itoa(i+1)), s.Modified), strings.TrimSpace(text)))
		}
	}
	return out
}

func toFHIRAllergies(patient *clinic.User, s *app.EMRSection) []resource {
	return sectionResources(patient, s, "substance", func(b base, text string) resource {
		b.ResourceType = "AllergyIntolerance"
		return &fhirAllergy{base: b, ClinicalStatus: fhirConcept{Coding: []fhirCoding{{System: sysAllergyClin, Code: "active"}}},
			Code: fhirConcept{Text: text}, Patient: patientRef(patient), RecordedDate: instant(s.Modified)}
	})
}

func toFHIRConditions(patient *clinic.User, s *app.EMRSection) []resource {
	return sectionResources(patient, s, "condition", func(b base, text string) resource {
		b.ResourceType = "Condition"
		return &fhirCondition{base: b, Category: []fhirConcept{{Coding: []fhirCoding{{System: sysCondCat, Code: "problem-list-item"}}}},
			Code: fhirConcept{Text: text}, Subject: patientRef(patient), RecordedDate: instant(s.Modified)}
	})
}

type fhirDocContent struct {
	Attachment fhirAttachment `json:"attachment"`
}

type fhirDocContext struct {
	Encounter []fhirRef `json:"encounter,omitempty"`
}

type fhirDocumentReference struct {
	base
	Status      string           `json:"status"`
	Category    []fhirConcept    `json:"category,omitempty"`
	Subject     fhirRef          `json:"subject"`
	Date        string           `json:"date"`
	Author      []fhirRef        `json:"author,omitempty"`
	Description string           `json:"description,omitempty"`
	Content     []fhirDocContent `json:"content"`
	Context     *fhirDocContext  `json:"context,omitempty"`
}

// toFHIRDocumentReference is a file of the patient's or of one of their
// visits; its attachment's url is the file's signed link, as GET /files
// gives it.
func toFHIRDocumentReference(patient *clinic.User, f *app.FileInfo) *fhirDocumentReference {
	title := f.Title
	if title == "" {
		title = f.Name
	}
	out := &fhirDocumentReference{base: newBase("DocumentReference", id(f.ID), f.Created), Status: "current",
		Subject: patientRef(patient), Date: instant(f.Created), Description: f.Description,
		Content: []fhirDocContent{{Attachment: fhirAttachment{ContentType: f.ContentType, URL: f.URL, Title: title, Size: f.Size, Creation: instant(f.Created)}}}}
	if f.Category != "" {
		out.Category = []fhirConcept{{Text: f.Category}}
	}
	if f.Creator != nil {
		out.Author = []fhirRef{userRef(f.Creator)}
	}
	if f.TargetType == "visit" {
		out.Context = &fhirDocContext{Encounter: []fhirRef{{Reference: "Encounter/" + id(f.TargetID)}}}
	}
	return out
}

// A visit's note is a Composition: a progress note (LOINC 11506-3) of
// the visit's Encounter, its SOAP sections as narrative sections, the
// diagnoses as coded text, and the addenda as one dated section. A draft
// is "preliminary", a signed note "final", and one amended since
// "amended". The patient's summary (what a patient reads of it) is the
// same resource with the summary, plan and diagnoses only.
type fhirComposition struct {
	base
	Status    string                   `json:"status"`
	Type      fhirConcept              `json:"type"`
	Subject   fhirRef                  `json:"subject"`
	Encounter *fhirRef                 `json:"encounter,omitempty"`
	Date      string                   `json:"date"`
	Author    []fhirRef                `json:"author"`
	Title     string                   `json:"title"`
	Attester  []fhirAttester           `json:"attester,omitempty"`
	Section   []fhirCompositionSection `json:"section,omitempty"`
}

type fhirAttester struct {
	Mode  string  `json:"mode"`
	Time  string  `json:"time,omitempty"`
	Party fhirRef `json:"party"`
}

type fhirCompositionSection struct {
	Title string        `json:"title"`
	Code  *fhirConcept  `json:"code,omitempty"`
	Text  fhirNarrative `json:"text"`
	Entry []fhirRef     `json:"entry,omitempty"`
}

type fhirNarrative struct {
	Status string `json:"status"`
	Div    string `json:"div"`
}

// narrative is text as an XHTML div, each line a paragraph, escaped.
func narrative(text string) fhirNarrative {
	var b strings.Builder
	b.WriteString(`<div xmlns="http://www.w3.org/1999/xhtml">`)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		b.WriteString("<p>" + html.EscapeString(line) + "</p>")
	}
	b.WriteString("</div>")
	return fhirNarrative{Status: "generated", Div: b.String()}
}

func toFHIRComposition(patient *clinic.User, n *clinic.VisitNote) *fhirComposition {
	out := &fhirComposition{base: newBase("Composition", subID(patient.ID, id(n.VisitID)), n.Modified), Status: "preliminary",
		Type:    fhirConcept{Coding: []fhirCoding{{System: sysLOINC, Code: "11506-3", Display: "Progress note"}}, Text: "Visit note"},
		Subject: patientRef(patient), Encounter: &fhirRef{Reference: "Encounter/" + id(n.VisitID)}, Date: instant(n.Modified),
		Author: []fhirRef{{Reference: "Practitioner/" + id(n.AuthorID)}}, Title: "Visit note"}
	if n.Status == clinic.NoteSigned {
		out.Status, out.Date = "final", instant(n.SignedAt)
		out.Attester = []fhirAttester{{Mode: "legal", Time: instant(n.SignedAt), Party: fhirRef{Reference: "Practitioner/" + id(n.SignedBy)}}}
		if len(n.Addenda) > 0 {
			out.Status = "amended"
		}
	}
	section := func(title, loinc, text string) {
		if strings.TrimSpace(text) == "" {
			return
		}
		s := fhirCompositionSection{Title: title, Text: narrative(text)}
		if loinc != "" {
			s.Code = &fhirConcept{Coding: []fhirCoding{{System: sysLOINC, Code: loinc}}}
		}
		out.Section = append(out.Section, s)
	}
	section("Summary for the patient", "", n.PatientSummary)
	section("Subjective", "61150-9", n.Subjective)
	section("Objective", "61149-1", n.Objective)
	section("Assessment", "51848-0", n.Assessment)
	section("Plan", "18776-5", n.Plan)
	var dx []string
	for _, d := range n.Diagnoses {
		dx = append(dx, d.Code+" "+d.Description)
	}
	section("Diagnoses (ICD-10-CM)", "29548-5", strings.Join(dx, "\n"))
	if n.Status == clinic.NoteSigned && len(n.Diagnoses) > 0 {
		last := &out.Section[len(out.Section)-1]
		for i := range n.Diagnoses {
			last.Entry = append(last.Entry, fhirRef{Reference: "Condition/" + diagnosisID(patient, n.VisitID, i+1)})
		}
	}
	var ad []string
	for _, a := range n.Addenda {
		ad = append(ad, instant(a.Created)+": "+a.Body)
	}
	section("Addenda", "", strings.Join(ad, "\n"))
	return out
}

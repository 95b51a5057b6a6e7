package fhir

import (
	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// resourceType is one resource type served: a row of types. Search, read,
// $everything and the CapabilityStatement are loops over the rows.
type resourceType struct {
	name string
	// parts are the parts of a patient's record its resources come from.
	parts app.RecordParts
	// search are the search parameters it takes besides _lastUpdated,
	// _since and _format.
	search []string
	// id is what its logical ids are, and so how a read finds one.
	id idKind
	// draw makes its resources from a patient's record (the parts above).
	draw func(rec *app.PatientRecord) []resource
}

// idKind is what a type's logical ids are.
type idKind int

const (
	// localID is "<patient>-<local id>": the resource is in that
	// patient's record (a reading, a message, a prescription, an EMR
	// entry, the coverage).
	localID idKind = iota
	// patientID is the patient's user id.
	patientID
	// providerID is a provider's user id, read as GET /users/{id} lets
	// the caller.
	providerID
	// visitID is a visit's id, read as GET /visits/{id} lets the caller.
	visitID
	// fileID is a file's id: the resource is in the record of the file's
	// patient.
	fileID
)

// types are the resource types served, in the CapabilityStatement's order
// (and $everything's).
var types = []resourceType{
	{"Patient", app.RecordParts{}, []string{"patient", "_id"}, patientID, func(rec *app.PatientRecord) []resource {
		return []resource{toFHIRPatient(rec.Account, rec.Patient)}
	}},
	{"Practitioner", app.RecordParts{Practitioners: true}, []string{"patient", "_id"}, providerID, func(rec *app.PatientRecord) []resource {
		return each(rec.Providers, func(u *clinic.User) resource { return toFHIRPractitioner(rec.Account, u) })
	}},
	// An encounter names its signed note's diagnoses: the notes of up to
	// MaxRecordPage visits are read with the page, as for Condition.
	{"Encounter", app.RecordParts{Visits: true, Notes: true, NotesPage: app.RecordPage{Limit: app.MaxRecordPage}}, []string{"patient", "subject"}, visitID, func(rec *app.PatientRecord) []resource {
		notes := map[int64]*clinic.VisitNote{}
		for _, n := range rec.Notes {
			notes[n.VisitID] = n
		}
		return each(rec.Visits, func(d *app.VisitDetail) resource { return toFHIREncounter(d, notes[d.Visit.ID]) })
	}},
	{"Appointment", app.RecordParts{Appointments: true}, []string{"patient"}, visitID, func(rec *app.PatientRecord) []resource {
		return each(rec.Appointments, func(d *app.VisitDetail) resource {
			if d.Visit.Kind != clinic.KindAppointment {
				return nil
			}
			return toFHIRAppointment(rec.Account, d)
		})
	}},
	{"Communication", app.RecordParts{Messages: true}, []string{"patient", "subject"}, localID, func(rec *app.PatientRecord) []resource {
		return each(rec.Messages, func(m *app.Message) resource { return toFHIRCommunication(rec.Patient, m) })
	}},
	{"Observation", app.RecordParts{Readings: true}, []string{"patient", "subject"}, localID, func(rec *app.PatientRecord) []resource {
		return each(rec.Readings, func(r *clinic.Reading) resource { return toFHIRObservation(rec.Patient, r) })
	}},
	{"Coverage", app.RecordParts{Coverage: true}, []string{"patient"}, localID, func(rec *app.PatientRecord) []resource {
		return each(rec.Cards, func(c *app.Card) resource { return toFHIRCoverage(rec.Patient, c) })
	}},
	{"MedicationRequest", app.RecordParts{Prescriptions: true}, []string{"patient", "subject"}, localID, func(rec *app.PatientRecord) []resource {
		return each(rec.Prescriptions, func(rx *app.PrescriptionView) resource { return toFHIRMedicationRequest(rec.Patient, rx) })
	}},
	{"AllergyIntolerance", app.RecordParts{EMR: true}, []string{"patient"}, localID, func(rec *app.PatientRecord) []resource {
		return toFHIRAllergies(rec.Patient, rec.EMR["allergies"])
	}},
	// Conditions are the problem list the patient keeps (EMR conditions)
	// and the diagnoses of their signed notes, coded (encounter-diagnosis):
	// the notes of up to MaxRecordPage visits, which a patient's record
	// does not outgrow in practice.
	{"Condition", app.RecordParts{EMR: true, Notes: true, NotesPage: app.RecordPage{Limit: app.MaxRecordPage}}, []string{"patient", "subject"}, localID, func(rec *app.PatientRecord) []resource {
		out := toFHIRConditions(rec.Patient, rec.EMR["conditions"])
		for _, n := range rec.Notes {
			out = append(out, toFHIRDiagnoses(rec.Patient, n)...)
		}
		return out
	}},
	{"Composition", app.RecordParts{Notes: true}, []string{"patient", "subject"}, localID, func(rec *app.PatientRecord) []resource {
		return each(rec.Notes, func(n *clinic.VisitNote) resource { return toFHIRComposition(rec.Patient, n) })
	}},
	{"DocumentReference", app.RecordParts{Files: true}, []string{"patient", "subject"}, fileID, func(rec *app.PatientRecord) []resource {
		return each(rec.Files, func(f *app.FileInfo) resource { return toFHIRDocumentReference(rec.Patient, f) })
	}},
}

// longList is how a type drawn from one of a record's lists that grow
// without bound (a patient's visits and what comes with them, their device
// readings) is read a page at a time: set asks a record read for a page of
// its list, and total is how many the list holds in the page's time range.
type longList struct {
	set   func(parts *app.RecordParts, pg app.RecordPage)
	total func(rec *app.PatientRecord) int
}

// longLists are the types read a page at a time, by name.
var longLists = map[string]longList{
	"Encounter": {
		set:   func(parts *app.RecordParts, pg app.RecordPage) { parts.Visits, parts.VisitsPage = true, pg },
		total: func(rec *app.PatientRecord) int { return rec.VisitsTotal },
	},
	"Appointment": {
		set:   func(parts *app.RecordParts, pg app.RecordPage) { parts.Appointments, parts.AppointmentsPage = true, pg },
		total: func(rec *app.PatientRecord) int { return rec.AppointmentsTotal },
	},
	"Communication": {
		set:   func(parts *app.RecordParts, pg app.RecordPage) { parts.Messages, parts.MessagesPage = true, pg },
		total: func(rec *app.PatientRecord) int { return rec.MessagesTotal },
	},
	"Observation": {
		set:   func(parts *app.RecordParts, pg app.RecordPage) { parts.Readings, parts.ReadingsPage = true, pg },
		total: func(rec *app.PatientRecord) int { return rec.ReadingsTotal },
	},
	"Composition": {
		set:   func(parts *app.RecordParts, pg app.RecordPage) { parts.Notes, parts.NotesPage = true, pg },
		total: func(rec *app.PatientRecord) int { return rec.NotesTotal },
	},
	"MedicationRequest": {
		set: func(parts *app.RecordParts, pg app.RecordPage) {
			parts.Prescriptions, parts.PrescriptionsPage = true, pg
		},
		total: func(rec *app.PatientRecord) int { return rec.PrescriptionsTotal },
	},
	"DocumentReference": {
		set:   func(parts *app.RecordParts, pg app.RecordPage) { parts.Files, parts.FilesPage = true, pg },
		total: func(rec *app.PatientRecord) int { return rec.FilesTotal },
	},
}

// lookup finds a served type by name.
func lookup(name string) (*resourceType, error) {
	for i := range types {
		if types[i].name == name {
			return &types[i], nil
		}
	}
	return nil, clinic.Errorf(clinic.ENotFound, "This server does not serve %s resources; see GET /fhir/R4/metadata.", name)
}

// each maps the items of a record's part to resources; an item that makes
// none (nil) is left out.
func each[T any](items []T, to func(T) resource) []resource {
	var out []resource
	for _, it := range items {
		if res := to(it); res != nil {
			out = append(out, res)
		}
	}
	return out
}

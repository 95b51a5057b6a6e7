package app

import (
	"context"
	"fmt"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// The FHIR door (/fhir/R4) reads a patient's record through these
// operations, under the API's rules: the admin reads the clinic's
// patients, a patient their own record, a provider the records of the
// patients they have a visit with. Within a record each part keeps its own
// rule, as the API has it: a visit's messages are its participants' (not
// the admin's), insurance is the patient's and the admin's (not a
// provider's), and a provider sees only the visits they see through the
// API.

// RecordParts names the parts of a patient's record a read needs, so a
// search of one resource type loads only that type.
type RecordParts struct {
	Visits, Appointments, Practitioners, Messages, Readings, Coverage, Prescriptions, EMR, Files, Notes bool
	// The pages are what a read takes of the record's lists that grow
	// without bound, with the patient's visits (the visits, the
	// appointments among them, the notes, the threads' messages) or on
	// their own (device readings): a page of each (none unless asked), and
	// their counts, however long the lists are.
	VisitsPage, AppointmentsPage, NotesPage, MessagesPage, ReadingsPage RecordPage
	// The patient's files and prescriptions grow on their own too.
	FilesPage, PrescriptionsPage RecordPage
}

// RecordPage is a page of one of a record's long lists: the items stored
// in [Since, Before) (unix seconds; 0 leaves that end open), from the
// Offset-th of them, at most Limit (at most MaxRecordPage; 0 reads only
// their count); with ID, only the item of that id.
type RecordPage struct {
	Since, Before int64
	Offset, Limit int
	ID            int64
}

// MaxRecordPage bounds the items of a long list one record read returns.
const MaxRecordPage = 1000

// AllRecordParts is every part, for Patient/$everything (the long lists'
// counts, without their items).
var AllRecordParts = RecordParts{Visits: true, Appointments: true, Practitioners: true, Messages: true, Readings: true, Coverage: true,
	Prescriptions: true, EMR: true, Files: true, Notes: true}

// PatientRecord is one patient's record as the caller may read it. A part
// not asked for, or not the caller's to read, is empty.
type PatientRecord struct {
	Patient *clinic.User
	Account *clinic.Account
	// Visits are the page asked for of the visits the caller sees (newest
	// first), VisitsTotal how many the page's time range holds;
	// Appointments the same of the booked appointments among them.
	Visits            []*VisitDetail
	VisitsTotal       int
	Appointments      []*VisitDetail
	AppointmentsTotal int
	// Providers are the providers of the visits the caller sees.
	Providers []*clinic.User
	// Messages are the page asked for of the messages of the visits the
	// caller takes part in (by visit, then oldest first), MessagesTotal
	// how many the page's time range holds.
	Messages      []*Message
	MessagesTotal int
	// Readings are the page asked for of the device readings (newest
	// measurement first), ReadingsTotal how many its time range holds.
	Readings      []*clinic.Reading
	ReadingsTotal int
	Cards         []*Card
	// Prescriptions and Files are the pages asked for of the patient's
	// prescriptions and of the files the caller sees of the record
	// (newest first), with how many the page's time range holds.
	Prescriptions      []*PrescriptionView
	PrescriptionsTotal int
	EMR                map[string]*EMRSection
	Files              []*FileInfo
	FilesTotal         int
	// Notes are the page asked for of the notes of the visits the caller
	// sees (newest visit first) as the caller may read them: whole for
	// the visit's provider and the admin, the patient's summary
	// (VisitSummary's part) for the patient once given; NotesTotal how
	// many the page's time range holds.
	Notes      []*clinic.VisitNote
	NotesTotal int
}

// PatientRecord reads the parts of a patient's record the caller asks for
// and may see, as one audited read ("record.read" on the patient). A
// patient id of 0 is the caller's own record, for a patient; anyone else
// must name the patient. Another clinic's user, a user who is not a
// patient, and another patient are not found; a provider without a visit
// with the patient is refused.
func (a *App) PatientRecord(ctx context.Context, p *clinic.Principal, patientID int64, parts RecordParts) (*PatientRecord, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if patientID == 0 {
		if !IsPatient(p) {
			return nil, clinic.Errorf(clinic.EInvalid, "Name the patient: patient=<id> (a patient's own record is the default).")
		}
		patientID = p.User.ID
	}
	rec, err := a.patientRecord(ctx, p, patientID, parts)
	if err := a.AuditOutcome(ctx, p, "record.read", "user", i64s(patientID), err); err != nil {
		return nil, err
	}
	return rec, nil
}

func (a *App) patientRecord(ctx context.Context, p *clinic.Principal, patientID int64, parts RecordParts) (*PatientRecord, error) {
	u, err := a.recordOwner(ctx, p, patientID, readRecords, false)
	if err != nil {
		return nil, err
	}
	// A patient is a registered one or a guest who came to a visit (a
	// guest's visits, notes and messages are a record as any other).
	if u.Type != clinic.UserMember && u.Type != clinic.UserGuest {
		return nil, clinic.Errorf(clinic.ENotFound, "Patient not found.")
	}
	rr := &recordRead{a: a, p: p, u: u, rv: recordVisits(p, u.ID), parts: parts, rec: &PatientRecord{Patient: u, Account: p.Account}}
	own, admin := u.ID == p.UserID(), p.IsAdmin()
	for _, part := range []struct {
		want bool
		read func(context.Context) error
	}{
		{parts.Visits, rr.visits},
		{parts.Appointments, rr.appointments},
		{parts.Practitioners, rr.practitioners},
		// The thread's participants are those who see the visit, less
		// the admin (messageVisit).
		{parts.Messages && !admin, rr.messages},
		{parts.Notes, rr.notes},
		{parts.Readings, rr.readings},
		// Insurance is the patient's and the admin's: a provider's read
		// of the record leaves it out rather than failing.
		{parts.Coverage && (admin || own), rr.coverage},
		{parts.Prescriptions, rr.prescriptions},
		{parts.EMR, rr.emr},
		{parts.Files, rr.files},
	} {
		if !part.want {
			continue
		}
		if err := part.read(ctx); err != nil {
			return nil, err
		}
	}
	return rr.rec, nil
}

// recordRead is one read of a patient's record: each part it is asked
// for is read by its own method into rec.
type recordRead struct {
	a     *App
	p     *clinic.Principal
	u     *clinic.User
	rv    store.RecordVisits
	parts RecordParts
	rec   *PatientRecord
}

func (rr *recordRead) visits(ctx context.Context) (err error) {
	rr.rec.Visits, rr.rec.VisitsTotal, err = rr.a.recordVisitPage(ctx, rr.p, rr.rv, "", rr.parts.VisitsPage)
	return err
}

func (rr *recordRead) appointments(ctx context.Context) (err error) {
	rr.rec.Appointments, rr.rec.AppointmentsTotal, err = rr.a.recordVisitPage(ctx, rr.p, rr.rv, clinic.KindAppointment, rr.parts.AppointmentsPage)
	return err
}

// practitioners are the providers of the patient's visits the caller
// sees.
func (rr *recordRead) practitioners(ctx context.Context) error {
	rd := rr.a.store.Read()
	ids, err := rd.RecordProviders(ctx, rr.rv)
	if err != nil {
		return fmt.Errorf("record providers: %w", err)
	}
	users, err := rd.UsersByIDs(ctx, rr.p.Account.ID, ids)
	if err != nil {
		return fmt.Errorf("record providers: %w", err)
	}
	for _, id := range ids {
		if u := users[id]; u != nil {
			rr.rec.Providers = append(rr.rec.Providers, u)
		}
	}
	return nil
}

func (rr *recordRead) messages(ctx context.Context) error {
	ms, total, err := rr.a.store.Read().MessagesWindow(ctx, rr.rv, rr.parts.MessagesPage.window())
	if err != nil {
		return fmt.Errorf("record threads: %w", err)
	}
	rr.rec.MessagesTotal = total
	rr.rec.Messages, err = rr.a.namedMessages(ctx, rr.p.Account.ID, ms)
	return err
}

// notes: a note is whole for the visit's provider and the admin; the
// patient is given their part of the signed notes of completed visits.
func (rr *recordRead) notes(ctx context.Context) (err error) {
	nv, patient := rr.rv, rr.u.ID == rr.p.UserID()
	nv.Rooms = false
	if rr.rec.Notes, rr.rec.NotesTotal, err = rr.a.store.Read().NotesWindow(ctx, nv, patient, rr.parts.NotesPage.window()); err != nil {
		return fmt.Errorf("record notes: %w", err)
	}
	if patient {
		for i, n := range rr.rec.Notes {
			rr.rec.Notes[i] = patientPart(n)
		}
	}
	return nil
}

func (rr *recordRead) readings(ctx context.Context) (err error) {
	rr.rec.Readings, rr.rec.ReadingsTotal, err = rr.a.store.Read().ReadingsWindow(ctx, rr.p.Account.ID, rr.u.ID, rr.parts.ReadingsPage.window())
	if err != nil {
		return fmt.Errorf("record readings: %w", err)
	}
	return nil
}

func (rr *recordRead) coverage(ctx context.Context) (err error) {
	rr.rec.Cards, err = rr.a.insuranceCards(ctx, rr.p, rr.u.ID)
	return err
}

func (rr *recordRead) prescriptions(ctx context.Context) error {
	rxs, total, err := rr.a.store.Read().PrescriptionsWindow(ctx, rr.p.Account.ID, rr.u.ID, rr.parts.PrescriptionsPage.window())
	if err != nil {
		return fmt.Errorf("record prescriptions: %w", err)
	}
	rr.rec.PrescriptionsTotal = total
	rr.rec.Prescriptions, err = rr.a.prescriptionViews(ctx, rr.p, rxs)
	return err
}

func (rr *recordRead) emr(ctx context.Context) (err error) {
	rr.rec.EMR, err = rr.a.getEMR(ctx, rr.p, rr.u.ID)
	return err
}

// files are the patient's own files, and those of the patient's visits
// the caller sees (canSeeFile, in SQL) or uploaded.
func (rr *recordRead) files(ctx context.Context) error {
	files, total, err := rr.a.store.Read().FilesWindow(ctx, rr.rv, rr.p.UserID(), rr.parts.FilesPage.window())
	if err != nil {
		return fmt.Errorf("record files: %w", err)
	}
	rr.rec.FilesTotal = total
	rr.rec.Files, err = rr.a.fileInfos(ctx, rr.p, files)
	return err
}

// window is pg as the store reads it.
func (pg RecordPage) window() store.RecordWindow {
	return store.RecordWindow{Since: pg.Since, Before: pg.Before, Offset: max(pg.Offset, 0), Limit: min(pg.Limit, MaxRecordPage), ID: pg.ID}
}

// recordVisits are the visits of patient's record that p sees (seesVisit):
// all of them for the admin and the patient, a provider's own and those
// awaiting a provider in their rooms for a provider.
func recordVisits(p *clinic.Principal, patient int64) store.RecordVisits {
	rv := store.RecordVisits{AccountID: p.Account.ID, MemberID: patient}
	if !p.IsAdmin() && p.UserID() != patient {
		rv.ProviderID, rv.Rooms = p.UserID(), IsProvider(p)
	}
	return rv
}

// recordVisitPage is a page of rv's visits (of kind, when given) with
// their details, and how many the page's time range holds. The statements
// do not grow with the page: the details come in one batch
// (visitDetails).
func (a *App) recordVisitPage(ctx context.Context, p *clinic.Principal, rv store.RecordVisits, kind string, pg RecordPage) ([]*VisitDetail, int, error) {
	vs, total, err := a.store.Read().VisitsWindow(ctx, rv, kind, pg.window())
	if err != nil {
		return nil, 0, fmt.Errorf("record visits: %w", err)
	}
	ds, err := a.visitDetails(ctx, p, vs)
	return ds, total, err
}

// Practitioner reads a provider of the clinic as GET /users/{id} lets the
// caller (audited as user.read); a user who is not a provider is not found.
func (a *App) Practitioner(ctx context.Context, p *clinic.Principal, id int64) (*clinic.User, error) {
	prof, err := a.GetUser(ctx, p, id, "")
	if err != nil {
		return nil, err
	}
	if prof.User.Type != clinic.UserProvider {
		return nil, clinic.Errorf(clinic.ENotFound, "Practitioner not found.")
	}
	return prof.User, nil
}

// patientPart is what the patient is given of a signed note: the summary
// written for them, the diagnoses, the plan and the addenda.
func patientPart(n *clinic.VisitNote) *clinic.VisitNote {
	return &clinic.VisitNote{ID: n.ID, AccountID: n.AccountID, VisitID: n.VisitID, AuthorID: n.AuthorID, Plan: n.Plan, Diagnoses: n.Diagnoses,
		PatientSummary: n.PatientSummary, Status: n.Status, SignedBy: n.SignedBy, SignedAt: n.SignedAt, Created: n.Created, Modified: n.Modified, Addenda: n.Addenda}
}

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
	Visits, Messages, Readings, Coverage, Prescriptions, EMR, Files, Notes bool
	// MessagesPage and ReadingsPage are what a read takes of the record's
	// two lists that grow without bound, its visits' messages and its
	// device readings: a page of each (none unless asked), and their
	// counts, however long the lists are.
	MessagesPage, ReadingsPage RecordPage
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
var AllRecordParts = RecordParts{Visits: true, Messages: true, Readings: true, Coverage: true, Prescriptions: true, EMR: true, Files: true, Notes: true}

// PatientRecord is one patient's record as the caller may read it. A part
// not asked for, or not the caller's to read, is empty.
type PatientRecord struct {
	Patient *clinic.User
	Account *clinic.Account
	Visits  []*VisitDetail
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
	Prescriptions []*PrescriptionView
	EMR           map[string]*EMRSection
	Files         []*FileInfo
	// Notes are the notes of the visits above as the caller may read
	// them: whole for the visit's provider and the admin, the patient's
	// summary (VisitSummary's part) for the patient once given.
	Notes []*clinic.VisitNote
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
		if p.User == nil || p.User.Type != clinic.UserMember || p.IsAdmin() {
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
	if u.Type != clinic.UserMember {
		return nil, clinic.Errorf(clinic.ENotFound, "Patient not found.")
	}
	rec := &PatientRecord{Patient: u, Account: p.Account}
	if parts.Visits || parts.Messages || parts.Notes {
		var messages *RecordPage
		if parts.Messages {
			messages = &parts.MessagesPage
		}
		if err := a.recordVisits(ctx, p, rec, messages); err != nil {
			return nil, err
		}
		if parts.Notes {
			if rec.Notes, err = a.recordNotes(ctx, p, rec.Visits); err != nil {
				return nil, err
			}
		}
		if !parts.Visits {
			rec.Visits = nil
		}
	}
	if parts.Readings {
		rec.Readings, rec.ReadingsTotal, err = a.store.Read().ReadingsWindow(ctx, p.Account.ID, u.ID, parts.ReadingsPage.window())
		if err != nil {
			return nil, fmt.Errorf("record readings: %w", err)
		}
	}
	// Insurance is the patient's and the admin's: a provider's read of the
	// record leaves it out rather than failing.
	if parts.Coverage && (p.IsAdmin() || u.ID == p.UserID()) {
		if rec.Cards, err = a.insuranceCards(ctx, p, u.ID); err != nil {
			return nil, err
		}
	}
	if parts.Prescriptions {
		if rec.Prescriptions, err = a.prescriptions(ctx, p, u.ID, "all"); err != nil {
			return nil, err
		}
	}
	if parts.EMR {
		if rec.EMR, err = a.getEMR(ctx, p, u.ID); err != nil {
			return nil, err
		}
	}
	if parts.Files {
		files, err := a.listFiles(ctx, p, FileQuery{TargetID: u.ID, TargetType: "user", IncludeShared: true})
		if err != nil {
			return nil, err
		}
		// The shared files are those of the patient's visits: each is the
		// caller's only if its visit is.
		for _, f := range files {
			ok, err := a.canSeeFile(ctx, p, f.File)
			if err != nil {
				return nil, fmt.Errorf("record files: %w", err)
			}
			if ok {
				rec.Files = append(rec.Files, f)
			}
		}
	}
	return rec, nil
}

// window is pg as the store reads it.
func (pg RecordPage) window() store.RecordWindow {
	return store.RecordWindow{Since: pg.Since, Before: pg.Before, Offset: max(pg.Offset, 0), Limit: min(pg.Limit, MaxRecordPage), ID: pg.ID}
}

// recordVisits adds the patient's visits the caller sees and, when asked,
// a page of the messages of those the caller takes part in. The statements
// do not grow with the visits: the details come in one batch
// (visitDetails), a provider's rooms are read once, and the messages are
// one window over the threads.
func (a *App) recordVisits(ctx context.Context, p *clinic.Principal, rec *PatientRecord, messages *RecordPage) error {
	vs, err := a.store.Read().ListVisits(ctx, store.VisitFilter{AccountID: p.Account.ID, MemberID: rec.Patient.ID, Limit: MaxVisitList})
	if err != nil {
		return fmt.Errorf("record visits: %w", err)
	}
	var rooms map[int64]bool // the provider's, read when first asked
	inRoom := func(room int64) (bool, error) {
		if rooms == nil {
			links, err := a.store.Read().UserRooms(ctx, p.Account.ID, p.UserID())
			if err != nil {
				return false, err
			}
			rooms = map[int64]bool{}
			for _, l := range links {
				rooms[l.Room.ID] = true
			}
		}
		return rooms[room], nil
	}
	seen := vs[:0]
	for _, v := range vs {
		ok, err := seesVisit(p, v.Thread(), inRoom)
		if err != nil {
			return fmt.Errorf("record visits: %w", err)
		}
		if ok {
			seen = append(seen, v)
		}
	}
	if rec.Visits, err = a.visitDetails(ctx, p, seen); err != nil {
		return err
	}
	// The thread's participants are those who see the visit, less the
	// admin (messageVisit).
	if messages == nil || p.IsAdmin() {
		return nil
	}
	ms, total, err := a.store.Read().MessagesWindow(ctx, p.Account.ID, seen, messages.window())
	if err != nil {
		return fmt.Errorf("record threads: %w", err)
	}
	rec.MessagesTotal = total
	rec.Messages, err = a.namedMessages(ctx, p.Account.ID, ms)
	return err
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

// recordNotes are the notes of visits as the caller may read them (see
// PatientRecord.Notes), read in one batch.
func (a *App) recordNotes(ctx context.Context, p *clinic.Principal, visits []*VisitDetail) ([]*clinic.VisitNote, error) {
	ids := make([]int64, len(visits))
	for i, d := range visits {
		ids[i] = d.Visit.ID
	}
	notes, err := a.store.Read().VisitNotes(ctx, p.Account.ID, ids)
	if err != nil {
		return nil, fmt.Errorf("record notes: %w", err)
	}
	var out []*clinic.VisitNote
	for _, d := range visits {
		n := notes[d.Visit.ID]
		switch {
		case n == nil:
		case p.IsAdmin() || d.Visit.ProviderID == p.UserID():
			out = append(out, n)
		case d.Visit.MemberID == p.UserID() && n.Status == clinic.NoteSigned && d.Visit.Status == clinic.VisitCompleted:
			out = append(out, patientPart(n))
		}
	}
	return out, nil
}

// patientPart is what the patient is given of a signed note: the summary
// written for them, the diagnoses, the plan and the addenda.
func patientPart(n *clinic.VisitNote) *clinic.VisitNote {
	return &clinic.VisitNote{ID: n.ID, AccountID: n.AccountID, VisitID: n.VisitID, AuthorID: n.AuthorID, Plan: n.Plan, Diagnoses: n.Diagnoses,
		PatientSummary: n.PatientSummary, Status: n.Status, SignedBy: n.SignedBy, SignedAt: n.SignedAt, Created: n.Created, Modified: n.Modified, Addenda: n.Addenda}
}

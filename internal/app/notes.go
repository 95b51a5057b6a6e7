package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/reference"
	"teleclinic/internal/store"
)

// A visit's note (extension): the visit's provider writes it as a draft
// (SOAP sections, diagnoses from the ICD-10-CM list, the patient's
// summary), signs it, and after signing adds dated addenda only. The note
// is its author's: only they edit or sign it, a visit that changes
// provider keeps its author, and a signature binds the hash of what was
// signed. The author and the clinic admin read the note; the visit's
// provider reads it once signed; the patient reads it, and its summary,
// once it is signed and the visit is over. Every read and write is
// audited.

// Limits of a note.
const (
	MaxNoteSectionChars = 20000
	MaxNoteDiagnoses    = 12
	MaxAddendumChars    = 5000
)

// NoteDraft is what a provider saves of a note: every field is written
// as given (a draft is saved whole).
type NoteDraft struct {
	Subjective, Objective, Assessment, Plan string
	Diagnoses                               []string // ICD-10-CM codes
	// Procedure is the service billed: a code of the clinic's procedure
	// list, "" for none.
	Procedure      string
	PatientSummary string
}

// Parts in a visit's note (noteVisit).
const (
	noteAuthor   = "author"   // wrote it: edits, signs, amends, reads it
	noteProvider = "provider" // the visit's provider, who did not write it: starts one if none, reads it once signed, amends it
	noteAdmin    = "admin"    // reads it
	notePatient  = "patient"  // reads it, and its summary, once signed and the visit completed
)

// noteVisit is visit id, its note (nil: none yet) and the caller's part
// in it. A note is its author's: a visit that changed provider (a
// reschedule to another's slot) keeps its note's author, who still
// reaches it although the visit is no longer theirs; the new provider
// does not edit or sign it. Anyone else is refused as the visit is.
func (a *App) noteVisit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Visit, *clinic.VisitNote, string, error) {
	if err := RequireUser(p); err != nil {
		return nil, nil, "", err
	}
	v, err := a.VisitFor(ctx, p, id)
	if err != nil && IsProvider(p) && errors.Is(err, ErrVisitNotFound) {
		// The author of the note of a visit that is no longer theirs.
		if w, werr := a.store.Read().VisitByID(ctx, p.Account.ID, id); werr == nil {
			if n, nerr := a.store.Read().VisitNote(ctx, p.Account.ID, w.ID); nerr == nil && n.AuthorID == p.UserID() {
				return w, n, noteAuthor, nil
			}
		}
	}
	if err != nil {
		return nil, nil, "", err
	}
	n, err := a.store.Read().VisitNote(ctx, p.Account.ID, v.ID)
	if errors.Is(err, store.ErrNotFound) {
		n, err = nil, nil
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("note: %w", err)
	}
	switch uid := p.UserID(); {
	case n != nil && n.AuthorID == uid && !p.IsAdmin():
		return v, n, noteAuthor, nil
	case v.ProviderID != 0 && v.ProviderID == uid:
		return v, n, noteProvider, nil
	case p.IsAdmin():
		return v, n, noteAdmin, nil
	case v.MemberID == uid:
		return v, n, notePatient, nil
	}
	return nil, nil, "", clinic.Errorf(clinic.EForbidden, "Only the visit's provider writes its note; a provider accepts the visit first.")
}

// errOthersDraft refuses a provider a note another wrote and has not
// signed.
func errOthersDraft(v *clinic.Visit) error {
	return clinic.Errorf(clinic.EForbidden, "The note of visit %d is a draft of the provider who wrote it: only they edit or sign it, and it is read once signed.", v.ID)
}

// VisitNote is GET /visits/{id}/note: the note for its author and the
// clinic admin; once signed, also for the visit's provider and, the visit
// completed, its patient (their record is theirs to read). A visit
// without one is a 404.
func (a *App) VisitNote(ctx context.Context, p *clinic.Principal, id int64) (*clinic.VisitNote, error) {
	v, n, role, err := a.noteVisit(ctx, p, id)
	if err == nil && n != nil && n.Status != clinic.NoteSigned && role == noteProvider {
		err = errOthersDraft(v)
	}
	if err == nil && role == notePatient && (n == nil || n.Status != clinic.NoteSigned || v.Status != clinic.VisitCompleted) {
		err = clinic.Errorf(clinic.ENotFound, "Visit %d has no note to read yet: it is given once the visit is over and its note signed.", v.ID)
	}
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.note.read", "visit", i64s(id), err)
	}
	if n == nil {
		return nil, clinic.Errorf(clinic.ENotFound, "Visit %d has no note yet.", v.ID)
	}
	return n, a.Audit(ctx, p, "visit.note.read", "visit", i64s(v.ID), OutcomeOK)
}

// VisitSummary is GET /visits/{id}/summary: what the patient is given of
// the note — its summary, diagnoses and plan, with its addenda — once it
// is signed and the visit is completed; before that, 404.
func (a *App) VisitSummary(ctx context.Context, p *clinic.Principal, id int64) (*clinic.VisitNote, error) {
	v, n, _, err := a.noteVisit(ctx, p, id)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.summary.read", "visit", i64s(id), err)
	}
	if n == nil || n.Status != clinic.NoteSigned || v.Status != clinic.VisitCompleted {
		return nil, clinic.Errorf(clinic.ENotFound, "Visit %d has no summary yet: it is given once the visit is over and its note signed.", v.ID)
	}
	// The patient's part only: the provider's working sections stay out.
	return patientPart(n), a.Audit(ctx, p, "visit.summary.read", "visit", i64s(v.ID), OutcomeOK)
}

// SaveVisitNote is POST /visits/{id}/note: the visit's provider starts
// the note, its author saves the draft; a signed note is a 409 (add an
// addendum instead), another's draft a 403.
func (a *App) SaveVisitNote(ctx context.Context, p *clinic.Principal, id int64, in NoteDraft) (*clinic.VisitNote, error) {
	n, err := a.saveVisitNote(ctx, p, id, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.note.write", "visit", i64s(id), err)
	}
	return n, nil
}

func (a *App) saveVisitNote(ctx context.Context, p *clinic.Principal, id int64, in NoteDraft) (*clinic.VisitNote, error) {
	v, cur, role, err := a.noteVisit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	switch {
	case role != noteAuthor && role != noteProvider:
		return nil, clinic.Errorf(clinic.EForbidden, "Only the visit's provider writes its note.")
	case cur != nil && cur.Status == clinic.NoteSigned:
		return nil, clinic.Errorf(clinic.EConflict, "The note of visit %d is signed: add an addendum instead.", v.ID)
	case role == noteProvider && cur != nil:
		return nil, errOthersDraft(v)
	}
	if err := CheckFields(text("subjective", in.Subjective, MaxNoteSectionChars), text("objective", in.Objective, MaxNoteSectionChars),
		text("assessment", in.Assessment, MaxNoteSectionChars), text("plan", in.Plan, MaxNoteSectionChars),
		text("patient_summary", in.PatientSummary, MaxNoteSectionChars)); err != nil {
		return nil, err
	}
	if len(in.Diagnoses) > MaxNoteDiagnoses {
		return nil, clinic.Errorf(clinic.EInvalid, "A note holds at most %d diagnoses.", MaxNoteDiagnoses)
	}
	ref := a.cfg.Reference
	dx := []clinic.NoteDiagnosis{}
	for _, c := range in.Diagnoses {
		if !ref.IsDiagnosis(c) {
			return nil, clinic.Errorf(clinic.EInvalid, "%q is not an ICD-10-CM code of the clinic's code set.", c)
		}
		dx = append(dx, clinic.NoteDiagnosis{Code: reference.DotCode(c), Description: ref.DiagnosisText(c)})
	}
	procedure := strings.TrimSpace(in.Procedure)
	if procedure != "" {
		if !ref.IsProcedure(procedure) {
			return nil, clinic.Errorf(clinic.EInvalid, "procedure: %q is not a code of the clinic's procedure list (GET /insurances/list/procedures).", procedure)
		}
		procedure = reference.NormCode(procedure)
	}
	now := a.Unix()
	n := &clinic.VisitNote{AccountID: p.Account.ID, VisitID: v.ID, AuthorID: p.UserID(), Subjective: strings.TrimSpace(in.Subjective),
		Objective: strings.TrimSpace(in.Objective), Assessment: strings.TrimSpace(in.Assessment), Plan: strings.TrimSpace(in.Plan),
		Diagnoses: dx, Procedure: procedure, PatientSummary: strings.TrimSpace(in.PatientSummary), Status: clinic.NoteDraft, Created: now, Modified: now}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		saved, err := q.SaveNoteDraft(ctx, n)
		if err != nil {
			return err
		}
		if !saved { // signed, or started by another, since it was read
			return clinic.Errorf(clinic.EConflict, "The note of visit %d changed meanwhile (signed, or started by another provider): read it again.", v.ID)
		}
		return a.AuditIn(ctx, q, p, "visit.note.write", "visit", i64s(v.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("note", err, "")
	}
	return a.store.Read().VisitNote(ctx, p.Account.ID, v.ID)
}

// SignVisitNote is POST /visits/{id}/note/sign: the note's author locks
// the draft as they read it, binding the hash of its content to the
// signature. Signing twice is a 409; another's draft a 403.
func (a *App) SignVisitNote(ctx context.Context, p *clinic.Principal, id int64) (*clinic.VisitNote, error) {
	v, n, role, err := a.noteVisit(ctx, p, id)
	switch {
	case err != nil:
	case role == noteProvider && n != nil && n.Status == clinic.NoteDraft:
		err = errOthersDraft(v)
	case role != noteAuthor && role != noteProvider:
		err = clinic.Errorf(clinic.EForbidden, "Only the note's author signs it.")
	case n == nil || n.Status != clinic.NoteDraft:
		err = clinic.Errorf(clinic.EConflict, "Visit %d has no draft note to sign (none written, or signed already).", v.ID)
	}
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.note.sign", "visit", i64s(id), err)
	}
	now := a.Unix()
	n.SignedBy, n.SignedAt = p.UserID(), now
	n.SignedHash = n.ContentHash()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		signed, err := q.SignNote(ctx, n, now)
		if err != nil {
			return err
		}
		if !signed {
			return clinic.Errorf(clinic.EConflict, "The note of visit %d changed as it was signed: read it again, then sign.", v.ID)
		}
		if err := a.AuditIn(ctx, q, p, "visit.note.sign", "visit", i64s(v.ID), OutcomeOK); err != nil {
			return err
		}
		q.AfterCommit(func() { a.publishNote(v) })
		n, codes, err := a.billNote(ctx, q, p, v)
		if err != nil {
			return err
		}
		return a.Emit(ctx, q, v.AccountID, EventNoteSigned, NoteHook{VisitID: i64s(v.ID), PatientID: i64s(v.MemberID),
			ProviderID: i64s(v.ProviderID), Diagnoses: codes.Diagnoses, Procedures: codes.Procedures, SignedAt: n.SignedAt})
	})
	if err != nil {
		return nil, StoreErr("sign note", err, "")
	}
	return a.store.Read().VisitNote(ctx, p.Account.ID, v.ID)
}

// AddNoteAddendum is POST /visits/{id}/note/addenda: a dated addition to
// a signed note, by its author or the visit's provider, each addendum
// under its own author.
func (a *App) AddNoteAddendum(ctx context.Context, p *clinic.Principal, id int64, body string) (*clinic.VisitNote, error) {
	v, n, role, err := a.noteVisit(ctx, p, id)
	if err == nil && role != noteAuthor && role != noteProvider {
		err = clinic.Errorf(clinic.EForbidden, "Only the note's author or the visit's provider amends its note.")
	}
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.note.addendum", "visit", i64s(id), err)
	}
	body = strings.TrimSpace(body)
	if body == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "text (the addendum) is required.")
	}
	if err := CheckFields(text("text", body, MaxAddendumChars)); err != nil {
		return nil, err
	}
	if n == nil || n.Status != clinic.NoteSigned {
		return nil, clinic.Errorf(clinic.EConflict, "Only a signed note takes addenda; edit the draft instead.")
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.AddNoteAddendum(ctx, p.Account.ID, n.ID, &clinic.NoteAddendum{AuthorID: p.UserID(), Body: body, Created: a.Unix()}); err != nil {
			return err
		}
		q.AfterCommit(func() { a.publishNote(v) })
		return a.AuditIn(ctx, q, p, "visit.note.addendum", "visit", i64s(v.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("addendum", err, "")
	}
	return a.store.Read().VisitNote(ctx, p.Account.ID, v.ID)
}

// billNote makes a signed note's diagnoses, in its order (the first is
// the primary), and the service it bills the visit's billing codes, in
// the signing's transaction, so the claims report bills what the note
// says. The service is the first procedure, with the telehealth modifier
// of a video visit (95, real-time audio and video; an e-consult's online
// service takes none); the procedures already coded stay after it. A
// note without diagnoses leaves the diagnoses coded as they are; one
// without a service, the procedures. It answers the signed note and the
// visit's codes as they now are (note.signed announces them).
func (a *App) billNote(ctx context.Context, q *store.Q, p *clinic.Principal, v *clinic.Visit) (*clinic.VisitNote, clinic.ClaimCodes, error) {
	visitID := v.ID
	codes := clinic.ClaimCodes{Diagnoses: []string{}, Procedures: []clinic.ClaimProcedure{}}
	n, err := q.VisitNote(ctx, p.Account.ID, visitID)
	if err != nil {
		return nil, codes, err
	}
	raw, err := q.VisitClaimCodes(ctx, p.Account.ID, visitID)
	if err != nil {
		return nil, codes, err
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &codes); err != nil {
			return nil, codes, fmt.Errorf("claim codes of visit %d: %w", visitID, err)
		}
	}
	if len(n.Diagnoses) == 0 && n.Procedure == "" {
		return n, codes, nil
	}
	if len(n.Diagnoses) > 0 {
		codes.Diagnoses = []string{}
		for _, d := range n.Diagnoses[:min(len(n.Diagnoses), clinic.MaxClaimDiagnoses)] {
			codes.Diagnoses = append(codes.Diagnoses, d.Code)
		}
	}
	if n.Procedure != "" {
		service := clinic.ClaimProcedure{Code: n.Procedure, Modifiers: []string{}}
		if v.Type == clinic.VisitVideo && a.cfg.Reference.IsModifier("95") {
			service.Modifiers = append(service.Modifiers, "95")
		}
		rest := slices.DeleteFunc(codes.Procedures, func(c clinic.ClaimProcedure) bool { return c.Code == n.Procedure })
		codes.Procedures = append([]clinic.ClaimProcedure{service}, rest...)
		codes.Procedures = codes.Procedures[:min(len(codes.Procedures), clinic.MaxClaimProcedures)]
	}
	if codes.Diagnoses == nil {
		codes.Diagnoses = []string{}
	}
	out, _ := json.Marshal(codes)
	if err := q.SetVisitClaimCodes(ctx, p.Account.ID, visitID, string(out), a.Unix()); err != nil {
		return nil, codes, err
	}
	return n, codes, a.AuditIn(ctx, q, p, "visit.codes", "visit", i64s(visitID), OutcomeOK)
}

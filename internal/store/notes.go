package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"teleclinic/internal/clinic"
)

const noteCols = "id, account_id, visit_id, author_id, subjective, objective, assessment, plan, diagnoses, patient_summary, status, signed_by, signed_at, created, modified, procedure, signed_hash"

// VisitNote is the note of a visit, with its addenda, oldest first.
func (q *Q) VisitNote(ctx context.Context, accountID, visitID int64) (*clinic.VisitNote, error) {
	var n clinic.VisitNote
	var dx string
	err := q.queryRow(ctx, "SELECT "+noteCols+" FROM visit_notes WHERE account_id = ? AND visit_id = ?", []any{accountID, visitID},
		&n.ID, &n.AccountID, &n.VisitID, &n.AuthorID, &n.Subjective, &n.Objective, &n.Assessment, &n.Plan, &dx, &n.PatientSummary,
		&n.Status, &n.SignedBy, &n.SignedAt, &n.Created, &n.Modified, &n.Procedure, &n.SignedHash)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(dx), &n.Diagnoses); err != nil {
		return nil, err
	}
	rows, err := q.query(ctx, "SELECT id, author_id, body, created FROM visit_note_addenda WHERE account_id = ? AND note_id = ? ORDER BY id", accountID, n.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n.Addenda = []clinic.NoteAddendum{}
	for rows.Next() {
		var a clinic.NoteAddendum
		if err := rows.Scan(&a.ID, &a.AuthorID, &a.Body, &a.Created); err != nil {
			return nil, q.d.translate(err)
		}
		n.Addenda = append(n.Addenda, a)
	}
	return &n, q.d.translate(rows.Err())
}

// SaveNoteDraft writes a visit's note while it is a draft: it is created
// on the first save; false when the note is signed (locked).
func (q *Q) SaveNoteDraft(ctx context.Context, n *clinic.VisitNote) (bool, error) {
	dx, _ := json.Marshal(n.Diagnoses)
	// A note is its author's: a draft is written over only by them, and
	// never once signed (the WHERE keeps it as it was).
	id, err := q.insert(ctx, `INSERT INTO visit_notes (account_id, visit_id, author_id, subjective, objective, assessment, plan, diagnoses, patient_summary, status, created, modified, procedure)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, visit_id) DO UPDATE SET subjective = excluded.subjective, objective = excluded.objective,
			assessment = excluded.assessment, plan = excluded.plan, diagnoses = excluded.diagnoses,
			patient_summary = excluded.patient_summary, modified = excluded.modified,
			procedure = excluded.procedure
		WHERE visit_notes.status = ? AND visit_notes.author_id = excluded.author_id`,
		n.AccountID, n.VisitID, n.AuthorID, n.Subjective, n.Objective, n.Assessment, n.Plan, string(dx), n.PatientSummary, clinic.NoteDraft,
		n.Created, n.Modified, n.Procedure, clinic.NoteDraft)
	if errors.Is(err, ErrNotFound) { // the WHERE kept a signed note, or another's, as it was
		return false, nil
	}
	n.ID = id
	return err == nil, err
}

// SignNote locks draft n, as read, signed by n.SignedBy at n.SignedAt
// with n.SignedHash: false when the draft is no longer as read (signed,
// or changed since: its modified time moved) or is not its signer's.
func (q *Q) SignNote(ctx context.Context, n *clinic.VisitNote, now int64) (bool, error) {
	c, err := q.affected(ctx, `UPDATE visit_notes SET status = ?, signed_by = ?, signed_at = ?, signed_hash = ?, modified = ?
		WHERE account_id = ? AND visit_id = ? AND status = ? AND author_id = ? AND modified = ?`,
		clinic.NoteSigned, n.SignedBy, n.SignedAt, n.SignedHash, now, n.AccountID, n.VisitID, clinic.NoteDraft, n.SignedBy, n.Modified)
	return c == 1, err
}

// AddNoteAddendum adds a dated addendum to a signed note.
func (q *Q) AddNoteAddendum(ctx context.Context, accountID, noteID int64, a *clinic.NoteAddendum) error {
	id, err := q.insert(ctx, "INSERT INTO visit_note_addenda (account_id, note_id, author_id, body, created) VALUES (?, ?, ?, ?, ?)",
		accountID, noteID, a.AuthorID, a.Body, a.Created)
	a.ID = id
	return err
}

// VisitNotes are the notes of visits (by visit id), each with its
// addenda: two statements for any number of visits.
func (q *Q) VisitNotes(ctx context.Context, accountID int64, visits []int64) (map[int64]*clinic.VisitNote, error) {
	out := map[int64]*clinic.VisitNote{}
	if len(visits) == 0 {
		return out, nil
	}
	notes, err := q.notes(ctx, "SELECT "+noteCols+" FROM visit_notes WHERE account_id = ? AND visit_id IN ("+placeholders(len(visits))+")",
		append([]any{accountID}, anys(visits)...)...)
	for _, n := range notes {
		out[n.VisitID] = n
	}
	return out, err
}

// NotesWindow is a window of the notes of rv's visits, newest visit first,
// and how many the window's time range holds (by the note's last change);
// with signedOnly only the signed notes of completed visits (what a
// patient is given). The window's ID is a visit's. The Compositions of a
// FHIR record.
func (q *Q) NotesWindow(ctx context.Context, rv RecordVisits, signedOnly bool, w RecordWindow) ([]*clinic.VisitNote, int, error) {
	count, page := notesWindow(rv, signedOnly, w)
	var total int
	if err := q.queryRow(ctx, count.query, count.args, &total); err != nil {
		return nil, 0, err
	}
	if w.Limit <= 0 || w.Offset >= total {
		return []*clinic.VisitNote{}, total, nil
	}
	notes, err := q.notes(ctx, page.query, page.args...)
	return notes, total, err
}

// notesWindow is the count and the page of NotesWindow: the patient's
// visits (their own index), each's note found by its key, never a read of
// the clinic's notes. SQLite's planner, left to choose, read every note
// of the clinic and sorted; CROSS JOIN is how SQLite is told the order of
// a join (PostgreSQL reads it as an inner join and plans it by cost).
func notesWindow(rv RecordVisits, signedOnly bool, w RecordWindow) (count, page listQuery) {
	cond, args := rv.cond()
	cond += " AND n.account_id = v.account_id AND n.visit_id = v.id"
	if signedOnly {
		cond += " AND n.status = ? AND v.status = ?"
		args = append(args, clinic.NoteSigned, clinic.VisitCompleted)
	}
	wc, wargs := w.where("n.visit_id", "n.modified", 1)
	from := " FROM visits v CROSS JOIN visit_notes n WHERE " + cond + wc
	args = append(args, wargs...)
	cols := "n." + strings.ReplaceAll(noteCols, ", ", ", n.")
	return listQuery{"SELECT count(*)" + from, args},
		listQuery{"SELECT " + cols + from + " ORDER BY v.id DESC LIMIT ? OFFSET ?", append(slices.Clip(args), w.Limit, w.Offset)}
}

// notes reads the notes query selects (noteCols) and their addenda.
func (q *Q) notes(ctx context.Context, query string, args ...any) ([]*clinic.VisitNote, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out := []*clinic.VisitNote{}
	byID := map[int64]*clinic.VisitNote{}
	for rows.Next() {
		n := &clinic.VisitNote{Addenda: []clinic.NoteAddendum{}}
		var dx string
		if err := rows.Scan(&n.ID, &n.AccountID, &n.VisitID, &n.AuthorID, &n.Subjective, &n.Objective, &n.Assessment, &n.Plan, &dx,
			&n.PatientSummary, &n.Status, &n.SignedBy, &n.SignedAt, &n.Created, &n.Modified, &n.Procedure, &n.SignedHash); err != nil {
			rows.Close()
			return nil, q.d.translate(err)
		}
		if err := json.Unmarshal([]byte(dx), &n.Diagnoses); err != nil {
			rows.Close()
			return nil, err
		}
		out, byID[n.ID] = append(out, n), n
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(byID) == 0 {
		return out, q.d.translate(err)
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	accountID := out[0].AccountID
	rows, err = q.query(ctx, "SELECT note_id, id, author_id, body, created FROM visit_note_addenda WHERE account_id = ? AND note_id IN ("+placeholders(len(ids))+") ORDER BY id",
		append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var noteID int64
		var a clinic.NoteAddendum
		if err := rows.Scan(&noteID, &a.ID, &a.AuthorID, &a.Body, &a.Created); err != nil {
			return nil, q.d.translate(err)
		}
		byID[noteID].Addenda = append(byID[noteID].Addenda, a)
	}
	return out, q.d.translate(rows.Err())
}

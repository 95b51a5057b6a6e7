package store

import (
	"context"
	"encoding/json"
	"errors"

	"teleclinic/internal/clinic"
)

const factCols = `visit_id, modality, patient_state, patient_home, provider_state, call_start, call_end, participants, rejoins, updated`

func scanFacts(sc interface{ Scan(...any) error }) (*clinic.VisitFacts, error) {
	var f clinic.VisitFacts
	var parts string
	if err := sc.Scan(&f.VisitID, &f.Modality, &f.PatientState, &f.PatientHome, &f.ProviderState, &f.CallStart, &f.CallEnd, &parts, &f.Rejoins, &f.Updated); err != nil {
		return nil, err
	}
	_ = json.Unmarshal([]byte(parts), &f.Participants)
	return &f, nil
}

// VisitFacts are visit visitID's facts; a visit with none recorded has
// an empty record (VisitID set), not ErrNotFound.
func (q *Q) VisitFacts(ctx context.Context, accountID, visitID int64) (*clinic.VisitFacts, error) {
	var f clinic.VisitFacts
	var parts string
	err := q.queryRow(ctx, "SELECT "+factCols+" FROM visit_facts WHERE account_id = ? AND visit_id = ?", []any{accountID, visitID},
		&f.VisitID, &f.Modality, &f.PatientState, &f.PatientHome, &f.ProviderState, &f.CallStart, &f.CallEnd, &parts, &f.Rejoins, &f.Updated)
	if errors.Is(err, ErrNotFound) {
		return &clinic.VisitFacts{VisitID: visitID, Participants: []clinic.CallParticipant{}}, nil
	}
	if err != nil {
		return nil, err
	}
	f.Participants = []clinic.CallParticipant{}
	_ = json.Unmarshal([]byte(parts), &f.Participants)
	return &f, nil
}

// VisitFactsOf are the facts of the visits ids (those with any), by visit.
func (q *Q) VisitFactsOf(ctx context.Context, accountID int64, ids []int64) (map[int64]*clinic.VisitFacts, error) {
	out := map[int64]*clinic.VisitFacts{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT "+factCols+" FROM visit_facts WHERE account_id = ? AND visit_id IN ("+placeholders(len(ids))+")",
		append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		f, err := scanFacts(rows)
		if err != nil {
			return nil, err
		}
		out[f.VisitID] = f
	}
	return out, rows.Err()
}

// PutVisitFacts writes f, visit f.VisitID's facts, whole (read them in
// the same transaction to change them).
func (q *Q) PutVisitFacts(ctx context.Context, accountID int64, f *clinic.VisitFacts) error {
	parts, _ := json.Marshal(f.Participants)
	_, err := q.exec(ctx, `INSERT INTO visit_facts (account_id, `+factCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, visit_id) DO UPDATE SET modality = excluded.modality, patient_state = excluded.patient_state,
		patient_home = excluded.patient_home, provider_state = excluded.provider_state, call_start = excluded.call_start,
		call_end = excluded.call_end, participants = excluded.participants, rejoins = excluded.rejoins, updated = excluded.updated`,
		accountID, f.VisitID, f.Modality, f.PatientState, f.PatientHome, f.ProviderState, f.CallStart, f.CallEnd, string(parts), f.Rejoins, f.Updated)
	return err
}

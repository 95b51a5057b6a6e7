package store

import (
	"context"
	"encoding/json"

	"teleclinic/internal/clinic"
)

const recordingCols = "id, account_id, visit_id, blob_key, size, content_type, starts_at, ends_at, version, participants, created"

// CreateRecording inserts a recording whose bytes are already stored.
func (q *Q) CreateRecording(ctx context.Context, r *clinic.Recording) error {
	parts, _ := json.Marshal(r.Participants)
	id, err := q.insert(ctx, `INSERT INTO recordings (account_id, visit_id, blob_key, size, content_type, starts_at, ends_at, version, participants, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.AccountID, r.VisitID, r.BlobKey, r.Size, r.ContentType, r.Start, r.End, r.Version, string(parts), r.Created)
	r.ID = id
	return err
}

func (q *Q) recordings(ctx context.Context, query string, args ...any) ([]clinic.Recording, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []clinic.Recording{}
	for rows.Next() {
		var r clinic.Recording
		var parts string
		if err := rows.Scan(&r.ID, &r.AccountID, &r.VisitID, &r.BlobKey, &r.Size, &r.ContentType, &r.Start, &r.End, &r.Version, &parts, &r.Created); err != nil {
			return nil, q.d.translate(err)
		}
		_ = json.Unmarshal([]byte(parts), &r.Participants)
		out = append(out, r)
	}
	return out, q.d.translate(rows.Err())
}

// RecordingsOfVisits lists the recordings of the clinic's visits, by visit.
func (q *Q) RecordingsOfVisits(ctx context.Context, accountID int64, visitIDs []int64) (map[int64][]clinic.Recording, error) {
	out := map[int64][]clinic.Recording{}
	if len(visitIDs) == 0 {
		return out, nil
	}
	rs, err := q.recordings(ctx, "SELECT "+recordingCols+" FROM recordings WHERE account_id = ? AND visit_id IN ("+placeholders(len(visitIDs))+") ORDER BY starts_at, id",
		append([]any{accountID}, anys(visitIDs)...)...)
	for _, r := range rs {
		out[r.VisitID] = append(out[r.VisitID], r)
	}
	return out, err
}

// RecordingByID finds a recording of the clinic.
func (q *Q) RecordingByID(ctx context.Context, accountID, id int64) (*clinic.Recording, error) {
	rs, err := q.recordings(ctx, "SELECT "+recordingCols+" FROM recordings WHERE account_id = ? AND id = ?", accountID, id)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return &rs[0], nil
}

package store

import (
	"context"
	"encoding/json"

	"teleclinic/internal/clinic"
)

// EMR returns the sections a user has written.
func (q *Q) EMR(ctx context.Context, accountID, userID int64) ([]clinic.EMRSection, error) {
	rows, err := q.query(ctx, "SELECT name, data, data_not_reported, modified, modified_by FROM emr_sections WHERE account_id = ? AND user_id = ?", accountID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []clinic.EMRSection
	for rows.Next() {
		var s clinic.EMRSection
		var data string
		var notReported int
		if err := rows.Scan(&s.Name, &data, &notReported, &s.Modified, &s.ModifiedBy); err != nil {
			return nil, err
		}
		s.Data, s.DataNotReported = json.RawMessage(data), notReported == 1
		out = append(out, s)
	}
	return out, rows.Err()
}

// PutEMR writes a section whole, replacing what was there.
func (q *Q) PutEMR(ctx context.Context, accountID, userID int64, s clinic.EMRSection) error {
	_, err := q.exec(ctx, `INSERT INTO emr_sections (account_id, user_id, name, data, data_not_reported, modified, modified_by) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, user_id, name) DO UPDATE SET data = excluded.data, data_not_reported = excluded.data_not_reported,
		modified = excluded.modified, modified_by = excluded.modified_by`,
		accountID, userID, s.Name, string(s.Data), b2i(s.DataNotReported), s.Modified, s.ModifiedBy)
	return err
}

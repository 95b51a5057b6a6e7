package store

import (
	"context"

	"teleclinic/internal/clinic"
)

// AddConsent stores a patient's signed consent.
func (q *Q) AddConsent(ctx context.Context, c *clinic.Consent) error {
	id, err := q.insert(ctx, "INSERT INTO consents (account_id, user_id, room_id, intake_id, version, body, signed_name, signed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		c.AccountID, c.UserID, c.RoomID, c.IntakeID, c.Version, c.Text, c.SignedName, c.SignedAt)
	c.ID = id
	return err
}

// Consents are a patient's signed consents, newest first.
func (q *Q) Consents(ctx context.Context, accountID, userID int64, limit int) ([]*clinic.Consent, error) {
	rows, err := q.query(ctx, "SELECT id, room_id, intake_id, version, body, signed_name, signed_at FROM consents WHERE account_id = ? AND user_id = ? ORDER BY id DESC LIMIT ?",
		accountID, userID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*clinic.Consent
	for rows.Next() {
		c := &clinic.Consent{AccountID: accountID, UserID: userID}
		if err := rows.Scan(&c.ID, &c.RoomID, &c.IntakeID, &c.Version, &c.Text, &c.SignedName, &c.SignedAt); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, c)
	}
	return out, q.d.translate(rows.Err())
}

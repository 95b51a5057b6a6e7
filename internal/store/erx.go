package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"teleclinic/internal/clinic"
)

// Pharmacies lists a user's pharmacies, the default first.
func (q *Q) Pharmacies(ctx context.Context, accountID, userID int64) ([]*clinic.Pharmacy, error) {
	rows, err := q.query(ctx, "SELECT user_id, code, fields, is_default, created FROM pharmacies WHERE account_id = ? AND user_id = ? ORDER BY is_default DESC, id", accountID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Pharmacy{}
	for rows.Next() {
		var p clinic.Pharmacy
		var raw string
		var def int
		if err := rows.Scan(&p.UserID, &p.Code, &raw, &def, &p.Created); err != nil {
			return nil, err
		}
		var stored struct {
			Fields map[string]any  `json:"fields"`
			Extra  json.RawMessage `json:"extra"`
		}
		if err := json.Unmarshal([]byte(raw), &stored); err != nil {
			return nil, err
		}
		if string(stored.Extra) == "null" { // saved without one (before omitempty)
			stored.Extra = nil
		}
		p.Fields, p.Extra, p.IsDefault = stored.Fields, stored.Extra, def == 1
		out = append(out, &p)
	}
	return out, rows.Err()
}

// PutPharmacy saves a pharmacy by its code. Making it the default first
// clears the user's other default; the partial unique index holds the
// rule if two saves race.
func (q *Q) PutPharmacy(ctx context.Context, accountID int64, p *clinic.Pharmacy) error {
	raw, err := json.Marshal(struct {
		Fields map[string]any  `json:"fields"`
		Extra  json.RawMessage `json:"extra,omitempty"`
	}{p.Fields, p.Extra})
	if err != nil {
		return err
	}
	if p.IsDefault {
		if _, err := q.exec(ctx, "UPDATE pharmacies SET is_default = 0 WHERE account_id = ? AND user_id = ? AND code <> ? AND is_default = 1", accountID, p.UserID, p.Code); err != nil {
			return err
		}
	}
	_, err = q.exec(ctx, `INSERT INTO pharmacies (account_id, user_id, code, fields, is_default, created) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, user_id, code) DO UPDATE SET fields = excluded.fields, is_default = excluded.is_default`,
		accountID, p.UserID, p.Code, string(raw), b2i(p.IsDefault), p.Created)
	return q.d.translate(err)
}

// DeletePharmacy removes a user's pharmacy.
func (q *Q) DeletePharmacy(ctx context.Context, accountID, userID int64, code string) error {
	return q.mustAffect(ctx, "DELETE FROM pharmacies WHERE account_id = ? AND user_id = ? AND code = ?", accountID, userID, code)
}

const rxCols = "id, user_id, prescriber_id, COALESCE(visit_id, 0), drug_id, ndc, drug, directions, qty, refills, pharmacy_code, status, created, modified"

// CreatePrescription inserts a prescription and sets its id.
func (q *Q) CreatePrescription(ctx context.Context, accountID int64, rx *clinic.Prescription) error {
	var visit any
	if rx.VisitID != 0 {
		visit = rx.VisitID
	}
	var err error
	rx.ID, err = q.insert(ctx, `INSERT INTO prescriptions (account_id, user_id, prescriber_id, visit_id, drug_id, ndc, drug, directions, qty, refills, pharmacy_code, status, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		accountID, rx.UserID, rx.PrescriberID, visit, rx.DrugID, rx.NDC, rx.Drug, rx.Directions, rx.Qty, rx.Refills, rx.PharmacyCode, rx.Status, rx.Created, rx.Modified)
	return err
}

// RxFilter selects a page of a user's prescriptions: of a Status ("" for
// all), with ids below Before (0: from the newest), Limit of them.
type RxFilter struct {
	Status string
	Before int64
	Limit  int
}

// Prescriptions lists a page of a user's prescriptions, newest first.
func (q *Q) Prescriptions(ctx context.Context, accountID, userID int64, f RxFilter) ([]*clinic.Prescription, error) {
	query := "SELECT " + rxCols + " FROM prescriptions WHERE account_id = ? AND user_id = ?"
	args := []any{accountID, userID}
	if f.Status != "" {
		query += " AND status = ?"
		args = append(args, f.Status)
	}
	if f.Before != 0 {
		query += " AND id < ?"
		args = append(args, f.Before)
	}
	return q.prescriptions(ctx, query+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
}

// Prescription reads one of a user's prescriptions.
func (q *Q) Prescription(ctx context.Context, accountID, userID, id int64) (*clinic.Prescription, error) {
	rxs, err := q.prescriptions(ctx, "SELECT "+rxCols+" FROM prescriptions WHERE account_id = ? AND user_id = ? AND id = ?", accountID, userID, id)
	if err != nil {
		return nil, err
	}
	if len(rxs) == 0 {
		return nil, ErrNotFound
	}
	return rxs[0], nil
}

func (q *Q) prescriptions(ctx context.Context, query string, args ...any) ([]*clinic.Prescription, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Prescription{}
	for rows.Next() {
		rx, err := scanPrescription(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rx)
	}
	return out, rows.Err()
}

func scanPrescription(rows *sql.Rows) (*clinic.Prescription, error) {
	var rx clinic.Prescription
	err := rows.Scan(&rx.ID, &rx.UserID, &rx.PrescriberID, &rx.VisitID, &rx.DrugID, &rx.NDC, &rx.Drug, &rx.Directions, &rx.Qty, &rx.Refills,
		&rx.PharmacyCode, &rx.Status, &rx.Created, &rx.Modified)
	return &rx, err
}

// SetPrescriptionStatus moves a prescription from one status to another;
// it reports whether it did (the conditional UPDATE decides races).
func (q *Q) SetPrescriptionStatus(ctx context.Context, accountID, userID, id int64, from, to string, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE prescriptions SET status = ?, modified = ? WHERE account_id = ? AND user_id = ? AND id = ? AND status = ?",
		to, now, accountID, userID, id, from)
	return n == 1, err
}

// PrescriptionsWindow is a window of a user's prescriptions, newest first,
// and how many the window's time range holds (by last change): a FHIR
// record's MedicationRequests.
func (q *Q) PrescriptionsWindow(ctx context.Context, accountID, userID int64, w RecordWindow) ([]*clinic.Prescription, int, error) {
	cond, args := w.where("id", "modified", 1)
	args = append([]any{accountID, userID}, args...)
	from := " FROM prescriptions WHERE account_id = ? AND user_id = ?" + cond
	return readWindow(ctx, q, w, listQuery{"SELECT count(*)" + from, args},
		listQuery{"SELECT " + rxCols + from + " ORDER BY id DESC LIMIT ? OFFSET ?", append(slices.Clip(args), w.Limit, w.Offset)}, -1, scanPrescription)
}

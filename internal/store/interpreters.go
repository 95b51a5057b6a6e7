package store

import (
	"context"

	"teleclinic/internal/clinic"
)

const interpreterCols = `id, account_id, name, language, email, phone, agency, active, created`

func scanInterpreter(sc interface{ Scan(...any) error }) (*clinic.Interpreter, error) {
	var in clinic.Interpreter
	var agency, active int
	if err := sc.Scan(&in.ID, &in.AccountID, &in.Name, &in.Language, &in.Email, &in.Phone, &agency, &active, &in.Created); err != nil {
		return nil, err
	}
	in.Agency, in.Active = agency == 1, active == 1
	return &in, nil
}

// AddInterpreter adds one of the clinic's interpreters, setting its ID.
func (q *Q) AddInterpreter(ctx context.Context, in *clinic.Interpreter) error {
	id, err := q.insert(ctx, "INSERT INTO interpreters (account_id, name, language, email, phone, agency, active, created) VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
		in.AccountID, in.Name, in.Language, in.Email, in.Phone, b2i(in.Agency), in.Created)
	in.ID, in.Active = id, err == nil
	return err
}

// Interpreters are the clinic's active interpreters, by language and name.
func (q *Q) Interpreters(ctx context.Context, accountID int64) ([]*clinic.Interpreter, error) {
	rows, err := q.query(ctx, "SELECT "+interpreterCols+" FROM interpreters WHERE account_id = ? AND active = 1 ORDER BY language, name, id", accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Interpreter{}
	for rows.Next() {
		in, err := scanInterpreter(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// InterpreterByID is interpreter id of the clinic, active or removed.
func (q *Q) InterpreterByID(ctx context.Context, accountID, id int64) (*clinic.Interpreter, error) {
	var in clinic.Interpreter
	var agency, active int
	err := q.queryRow(ctx, "SELECT "+interpreterCols+" FROM interpreters WHERE account_id = ? AND id = ?", []any{accountID, id},
		&in.ID, &in.AccountID, &in.Name, &in.Language, &in.Email, &in.Phone, &agency, &active, &in.Created)
	if err != nil {
		return nil, err
	}
	in.Agency, in.Active = agency == 1, active == 1
	return &in, nil
}

// RemoveInterpreter makes interpreter id inactive: no longer offered, still
// named by the visits it took part in. ErrNotFound when it is not an
// active one of the clinic.
func (q *Q) RemoveInterpreter(ctx context.Context, accountID, id int64) error {
	return q.mustAffect(ctx, "UPDATE interpreters SET active = 0 WHERE account_id = ? AND id = ? AND active = 1", accountID, id)
}

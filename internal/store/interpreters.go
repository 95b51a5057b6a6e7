package store

import (
	"context"

	"teleclinic/internal/clinic"
)

const interpreterCols = `id, account_id, name, language, email, phone, agency, active, created`

// interpreterRow is an interpreter as its row is scanned: its columns'
// destinations (interpreterCols), the flags read as integers.
type interpreterRow struct {
	in             clinic.Interpreter
	agency, active int
}

func (r *interpreterRow) dest() []any {
	return []any{&r.in.ID, &r.in.AccountID, &r.in.Name, &r.in.Language, &r.in.Email, &r.in.Phone, &r.agency, &r.active, &r.in.Created}
}

func (r *interpreterRow) interpreter() *clinic.Interpreter {
	r.in.Agency, r.in.Active = r.agency == 1, r.active == 1
	return &r.in
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
		var r interpreterRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, r.interpreter())
	}
	return out, rows.Err()
}

// InterpreterByID is interpreter id of the clinic, active or removed.
func (q *Q) InterpreterByID(ctx context.Context, accountID, id int64) (*clinic.Interpreter, error) {
	var r interpreterRow
	if err := q.queryRow(ctx, "SELECT "+interpreterCols+" FROM interpreters WHERE account_id = ? AND id = ?", []any{accountID, id}, r.dest()...); err != nil {
		return nil, err
	}
	return r.interpreter(), nil
}

// RemoveInterpreter makes interpreter id inactive: no longer offered, still
// named by the visits it took part in. ErrNotFound when it is not an
// active one of the clinic.
func (q *Q) RemoveInterpreter(ctx context.Context, accountID, id int64) error {
	return q.mustAffect(ctx, "UPDATE interpreters SET active = 0 WHERE account_id = ? AND id = ? AND active = 1", accountID, id)
}

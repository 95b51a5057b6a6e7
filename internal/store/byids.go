package store

import (
	"context"
	"slices"

	"teleclinic/internal/clinic"
)

// The readers of related rows by id lists: a list of visits reads its
// patients, providers, intakes, rooms and intake files with one statement
// each, however long the list (a statement per visit was a quarter of a
// 500-visit list's CPU: docs/performance.md).

// distinct is ids without zeros and repeats, sorted.
func distinct(ids []int64) []int64 {
	out := slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return id == 0 })
	slices.Sort(out)
	return slices.Compact(out)
}

// UsersByIDs reads the clinic's users of ids, by id; an id with no user is
// absent.
func (q *Q) UsersByIDs(ctx context.Context, accountID int64, ids []int64) (map[int64]*clinic.User, error) {
	out := map[int64]*clinic.User{}
	if ids = distinct(ids); len(ids) == 0 {
		return out, nil
	}
	us, err := q.users(ctx, "SELECT "+userCols+" FROM users u WHERE u.account_id = ? AND "+inList("u.id", len(ids)), append([]any{accountID}, anys(ids)...)...)
	for _, u := range us {
		out[u.ID] = u
	}
	return out, err
}

// IntakesByIDs reads the clinic's intakes of ids, by id.
func (q *Q) IntakesByIDs(ctx context.Context, accountID int64, ids []int64) (map[int64]*clinic.Intake, error) {
	out := map[int64]*clinic.Intake{}
	if ids = distinct(ids); len(ids) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT "+intakeCols+" FROM intakes WHERE account_id = ? AND "+inList("id", len(ids)), append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		in, err := scanIntake(rows)
		if err != nil {
			return nil, q.d.translate(err)
		}
		out[in.ID] = in
	}
	return out, q.d.translate(rows.Err())
}

// RoomsByIDs reads the clinic's rooms of ids, by id.
func (q *Q) RoomsByIDs(ctx context.Context, accountID int64, ids []int64) (map[int64]*clinic.Room, error) {
	out := map[int64]*clinic.Room{}
	if ids = distinct(ids); len(ids) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT "+roomCols+" FROM rooms r WHERE r.account_id = ? AND "+inList("r.id", len(ids)), append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r clinic.Room
		if err := scanRoom(rows, &r); err != nil {
			return nil, q.d.translate(err)
		}
		out[r.ID] = &r
	}
	return out, q.d.translate(rows.Err())
}

// FilesByIDs reads the clinic's files of ids, by id.
func (q *Q) FilesByIDs(ctx context.Context, accountID int64, ids []int64) (map[int64]*clinic.File, error) {
	out := map[int64]*clinic.File{}
	if ids = distinct(ids); len(ids) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT "+fileCols+" FROM files WHERE account_id = ? AND "+inList("id", len(ids)), append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	fs, err := scanFiles(rows)
	for _, f := range fs {
		out[f.ID] = f
	}
	return out, err
}

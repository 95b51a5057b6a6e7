package store

import (
	"context"

	"teleclinic/internal/clinic"
)

const roomCols = "r.id, r.account_id, r.code, r.slug, r.name, r.domain, r.active, r.created, r.modified"

func scanRoom(sc interface{ Scan(...any) error }, r *clinic.Room, more ...any) error {
	var active int
	err := sc.Scan(append([]any{&r.ID, &r.AccountID, &r.Code, &r.Slug, &r.Name, &r.Domain, &active, &r.Created, &r.Modified}, more...)...)
	r.Active = active == 1
	return err
}

// CreateRoom inserts a room; a duplicate code in the clinic or slug in the
// domain is ErrConflict.
func (q *Q) CreateRoom(ctx context.Context, r *clinic.Room) error {
	id, err := q.insert(ctx, "INSERT INTO rooms (account_id, code, slug, name, domain, active, created, modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		r.AccountID, r.Code, r.Slug, r.Name, r.Domain, b2i(r.Active), r.Created, r.Modified)
	r.ID = id
	return err
}

// RoomByCode finds a room of the clinic.
func (q *Q) RoomByCode(ctx context.Context, accountID int64, code string) (*clinic.Room, error) {
	var r clinic.Room
	rows, err := q.query(ctx, "SELECT "+roomCols+" FROM rooms r WHERE r.account_id = ? AND r.code = ?", accountID, code)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, firstErr(q.d.translate(rows.Err()), ErrNotFound)
	}
	return &r, scanRoom(rows, &r)
}

// ListRooms returns a page of the clinic's rooms ordered by id, and the total.
func (q *Q) ListRooms(ctx context.Context, accountID int64, start, limit int) ([]clinic.Room, int, error) {
	var total int
	if err := q.queryRow(ctx, "SELECT COUNT(*) FROM rooms WHERE account_id = ?", []any{accountID}, &total); err != nil {
		return nil, 0, err
	}
	rows, err := q.query(ctx, "SELECT "+roomCols+" FROM rooms r WHERE r.account_id = ? ORDER BY r.id LIMIT ? OFFSET ?", accountID, limit, start)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []clinic.Room{}
	for rows.Next() {
		var r clinic.Room
		if err := scanRoom(rows, &r); err != nil {
			return nil, 0, q.d.translate(err)
		}
		out = append(out, r)
	}
	return out, total, q.d.translate(rows.Err())
}

// LinkUserRoom associates a user with a room; linking twice updates the link.
func (q *Q) LinkUserRoom(ctx context.Context, accountID, userID, roomID int64, isDefault bool, source string, now int64) error {
	_, err := q.exec(ctx, `INSERT INTO user_rooms (account_id, user_id, room_id, is_default, added_time, source) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, room_id) DO UPDATE SET is_default = excluded.is_default`,
		accountID, userID, roomID, b2i(isDefault), now, source)
	return err
}

// UserRooms lists a user's room links, default first.
func (q *Q) UserRooms(ctx context.Context, accountID, userID int64) ([]clinic.RoomLink, error) {
	rows, err := q.query(ctx, "SELECT "+roomCols+", ur.is_default, ur.added_time, ur.source FROM user_rooms ur JOIN rooms r ON r.id = ur.room_id WHERE ur.account_id = ? AND r.account_id = ? AND ur.user_id = ? ORDER BY ur.is_default DESC, ur.added_time, r.id",
		accountID, accountID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []clinic.RoomLink{}
	for rows.Next() {
		var l clinic.RoomLink
		var def int
		if err := scanRoom(rows, &l.Room, &def, &l.AddedTime, &l.Source); err != nil {
			return nil, q.d.translate(err)
		}
		l.Default = def == 1
		out = append(out, l)
	}
	return out, q.d.translate(rows.Err())
}

// FileRef is the little the profile needs to know about a file.
type FileRef struct {
	ID            int64
	CreatorUserID int64
	Category      string
	TargetType    string
	TargetID      int64
	Name          string
}

// FileByID finds a file of the clinic.
func (q *Q) FileByID(ctx context.Context, accountID, id int64) (*FileRef, error) {
	var f FileRef
	err := q.queryRow(ctx, "SELECT id, creator_user_id, category, target_type, target_id, name FROM files WHERE account_id = ? AND id = ?",
		[]any{accountID, id}, &f.ID, &f.CreatorUserID, &f.Category, &f.TargetType, &f.TargetID, &f.Name)
	return &f, err
}

// CreateFileRecord inserts a file row without content. The files feature
// will own this; until then it lets the profile photo rule be exercised.
func (q *Q) CreateFileRecord(ctx context.Context, accountID, creator int64, category, targetType string, targetID int64, name string, now int64) (int64, error) {
	return q.insert(ctx, "INSERT INTO files (account_id, creator_user_id, category, target_type, target_id, name, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
		accountID, creator, category, targetType, targetID, name, now)
}

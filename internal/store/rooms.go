package store

import (
	"context"
	"encoding/json"

	"teleclinic/internal/clinic"
)

const roomCols = "r.id, r.account_id, r.code, r.slug, r.name, r.domain, r.active, r.settings, r.created, r.modified"

func scanRoom(sc interface{ Scan(...any) error }, r *clinic.Room, more ...any) error {
	var active int
	var settings string
	err := sc.Scan(append([]any{&r.ID, &r.AccountID, &r.Code, &r.Slug, &r.Name, &r.Domain, &active, &settings, &r.Created, &r.Modified}, more...)...)
	r.Active = active == 1
	if err == nil {
		_ = json.Unmarshal([]byte(settings), &r.Settings)
	}
	return err
}

// CreateRoom inserts a room; a duplicate code in the clinic or slug in the
// domain is ErrConflict.
func (q *Q) CreateRoom(ctx context.Context, r *clinic.Room) error {
	defer q.changed(q.c.rooms)
	settings, _ := json.Marshal(r.Settings)
	id, err := q.insert(ctx, "INSERT INTO rooms (account_id, code, slug, name, domain, active, settings, created, modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.AccountID, r.Code, r.Slug, r.Name, r.Domain, b2i(r.Active), string(settings), r.Created, r.Modified)
	r.ID = id
	return err
}

// UpdateRoom writes a room's name, state and settings.
func (q *Q) UpdateRoom(ctx context.Context, r *clinic.Room) error {
	defer q.changed(q.c.rooms)
	settings, _ := json.Marshal(r.Settings)
	return q.mustAffect(ctx, "UPDATE rooms SET name = ?, active = ?, settings = ?, modified = ? WHERE account_id = ? AND id = ?",
		r.Name, b2i(r.Active), string(settings), r.Modified, r.AccountID, r.ID)
}

// DeleteRoom removes a room and its user links. A room that intakes or
// visits refer to cannot go (foreign keys): ErrForeignKey.
func (q *Q) DeleteRoom(ctx context.Context, accountID, id int64) error {
	defer q.changed(q.c.rooms)
	if _, err := q.exec(ctx, "DELETE FROM user_rooms WHERE account_id = ? AND room_id = ?", accountID, id); err != nil {
		return err
	}
	return q.mustAffect(ctx, "DELETE FROM rooms WHERE account_id = ? AND id = ?", accountID, id)
}

// RoomHasHistory reports whether intakes or visits refer to the room.
func (q *Q) RoomHasHistory(ctx context.Context, accountID, id int64) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT (SELECT COUNT(*) FROM intakes WHERE account_id = ? AND room_id = ?) + (SELECT COUNT(*) FROM visits WHERE account_id = ? AND room_id = ?)",
		[]any{accountID, id, accountID, id}, &n)
	return n > 0, err
}

func (q *Q) room(ctx context.Context, where string, args ...any) (*clinic.Room, error) {
	var r clinic.Room
	rows, err := q.query(ctx, "SELECT "+roomCols+" FROM rooms r WHERE "+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, firstErr(q.d.translate(rows.Err()), ErrNotFound)
	}
	return &r, scanRoom(rows, &r)
}

// RoomByCode finds a room of the clinic.
func (q *Q) RoomByCode(ctx context.Context, accountID int64, code string) (*clinic.Room, error) {
	return q.room(ctx, "r.account_id = ? AND r.code = ?", accountID, code)
}

// RoomByID finds a room of the clinic by id.
func (q *Q) RoomByID(ctx context.Context, accountID, id int64) (*clinic.Room, error) {
	return q.room(ctx, "r.account_id = ? AND r.id = ?", accountID, id)
}

// SlugTaken reports whether a room of the domain (in any clinic: slugs are
// unique per domain) uses slug.
func (q *Q) SlugTaken(ctx context.Context, domain, slug string) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM rooms WHERE domain = ? AND slug = ?", []any{domain, slug}, &n)
	return n > 0, err
}

// RoomCodeTaken reports whether the clinic has a room with this code.
func (q *Q) RoomCodeTaken(ctx context.Context, accountID int64, code string) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM rooms WHERE account_id = ? AND code = ?", []any{accountID, code}, &n)
	return n > 0, err
}

// RoomFilter selects a page of a clinic's rooms.
type RoomFilter struct {
	AccountID int64
	Search    string // substring of name, code or slug
	SortCol   string // one of the keys of roomSortCols
	Desc      bool
	Start     int
	Limit     int
}

var roomSortCols = map[string]string{"id": "r.id", "name": "lower(r.name)", "code": "r.code", "slug": "r.slug", "created": "r.created", "modified": "r.modified"}

// RoomSortable reports whether ListRooms can sort by col.
func RoomSortable(col string) bool { _, ok := roomSortCols[col]; return ok }

// ListRooms returns a page of the clinic's rooms, the number matching the
// search, and the clinic's total. The counts come with the page in one
// query (a window count and a subquery); only a page past the end needs
// them asked for on their own.
func (q *Q) ListRooms(ctx context.Context, f RoomFilter) (rooms []clinic.Room, filtered, total int, err error) {
	where, args := "r.account_id = ?", []any{f.AccountID}
	if f.Search != "" {
		where += ` AND (lower(r.name) LIKE ? ESCAPE '\' OR lower(r.code) LIKE ? ESCAPE '\' OR lower(r.slug) LIKE ? ESCAPE '\')`
		l := likeArg(f.Search)
		args = append(args, l, l, l)
	}
	order := "r.id"
	if c, ok := roomSortCols[f.SortCol]; ok {
		order = c
	}
	if f.Desc {
		order += " DESC"
	}
	rows, err := q.query(ctx, "SELECT "+roomCols+", COUNT(*) OVER (), (SELECT COUNT(*) FROM rooms WHERE account_id = ?) FROM rooms r WHERE "+where+
		" ORDER BY "+order+", r.id LIMIT ? OFFSET ?", append(append([]any{f.AccountID}, args...), f.Limit, f.Start)...)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	rooms = []clinic.Room{}
	for rows.Next() {
		var r clinic.Room
		if err := scanRoom(rows, &r, &filtered, &total); err != nil {
			return nil, 0, 0, q.d.translate(err)
		}
		rooms = append(rooms, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, q.d.translate(err)
	}
	if len(rooms) == 0 {
		if err = q.queryRow(ctx, "SELECT COUNT(*) FROM rooms WHERE account_id = ?", []any{f.AccountID}, &total); err != nil {
			return nil, 0, 0, err
		}
		if err = q.queryRow(ctx, "SELECT COUNT(*) FROM rooms r WHERE "+where, args, &filtered); err != nil {
			return nil, 0, 0, err
		}
	}
	return rooms, filtered, total, nil
}

// RoomUsers lists the users linked to a room, providers first, by name.
func (q *Q) RoomUsers(ctx context.Context, accountID, roomID int64, userType int) ([]*clinic.User, error) {
	where := ""
	args := []any{accountID, roomID}
	if userType != 0 {
		where = " AND u.type = ?"
		args = append(args, userType)
	}
	return q.users(ctx, "SELECT "+userCols+" FROM users u JOIN user_rooms ur ON ur.user_id = u.id WHERE ur.account_id = ? AND ur.room_id = ?"+where+" ORDER BY lower(u.last_name), lower(u.first_name), u.id", args...)
}

// RoomUser is one user linked to a room; ErrNotFound when that user is not
// linked to it.
func (q *Q) RoomUser(ctx context.Context, accountID, roomID, userID int64) (*clinic.User, error) {
	users, err := q.users(ctx, "SELECT "+userCols+" FROM users u JOIN user_rooms ur ON ur.user_id = u.id WHERE ur.account_id = ? AND ur.room_id = ? AND ur.user_id = ? AND u.account_id = ?",
		accountID, roomID, userID, accountID)
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, ErrNotFound
	}
	return users[0], nil
}

// UnlinkUserRoom removes a user's link to a room; ErrNotFound if none.
func (q *Q) UnlinkUserRoom(ctx context.Context, accountID, userID, roomID int64) error {
	return q.mustAffect(ctx, "DELETE FROM user_rooms WHERE account_id = ? AND user_id = ? AND room_id = ?", accountID, userID, roomID)
}

// ClearDefaultRoom unsets a user's default room, before another is made default.
func (q *Q) ClearDefaultRoom(ctx context.Context, accountID, userID int64) error {
	_, err := q.exec(ctx, "UPDATE user_rooms SET is_default = 0 WHERE account_id = ? AND user_id = ?", accountID, userID)
	return err
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

// UserInRoom reports whether a user is linked to a room.
func (q *Q) UserInRoom(ctx context.Context, accountID, userID, roomID int64) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM user_rooms WHERE account_id = ? AND user_id = ? AND room_id = ?", []any{accountID, userID, roomID}, &n)
	return n > 0, err
}

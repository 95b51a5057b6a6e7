package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"teleclinic/internal/clinic"
)

// UpsertDevice registers a device, or renames an already registered one,
// and returns the stored row.
func (q *Q) UpsertDevice(ctx context.Context, accountID int64, d *clinic.Device) error {
	_, err := q.exec(ctx, `INSERT INTO devices (account_id, user_id, device_id, device_name, type, created) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, user_id, device_id) DO UPDATE SET device_name = excluded.device_name, type = excluded.type`,
		accountID, d.UserID, d.DeviceID, d.Name, d.Type, d.Created)
	if err != nil {
		return err
	}
	return q.queryRow(ctx, "SELECT id, created FROM devices WHERE account_id = ? AND user_id = ? AND device_id = ?",
		[]any{accountID, d.UserID, d.DeviceID}, &d.ID, &d.Created)
}

// Devices lists a user's devices.
func (q *Q) Devices(ctx context.Context, accountID, userID int64) ([]*clinic.Device, error) {
	rows, err := q.query(ctx, "SELECT id, user_id, device_id, device_name, type, created FROM devices WHERE account_id = ? AND user_id = ? ORDER BY id", accountID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Device{}
	for rows.Next() {
		var d clinic.Device
		if err := rows.Scan(&d.ID, &d.UserID, &d.DeviceID, &d.Name, &d.Type, &d.Created); err != nil {
			return nil, err
		}
		out = append(out, &d)
	}
	return out, rows.Err()
}

// DeviceByDeviceID finds a user's device by the vendor's id.
func (q *Q) DeviceByDeviceID(ctx context.Context, accountID, userID int64, deviceID string) (*clinic.Device, error) {
	var d clinic.Device
	err := q.queryRow(ctx, "SELECT id, user_id, device_id, device_name, type, created FROM devices WHERE account_id = ? AND user_id = ? AND device_id = ?",
		[]any{accountID, userID, deviceID}, &d.ID, &d.UserID, &d.DeviceID, &d.Name, &d.Type, &d.Created)
	return &d, err
}

// AddReading stores a measurement and sets r.ID.
func (q *Q) AddReading(ctx context.Context, accountID int64, r *clinic.Reading) error {
	raw, err := json.Marshal(r.Values)
	if err != nil {
		return err
	}
	r.ID, err = q.insert(ctx, "INSERT INTO health_readings (account_id, user_id, device_id, type, data_type, data_class, date, time, reading, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		accountID, r.UserID, r.DeviceID, r.Type, r.DataType, r.DataClass, r.Date, r.Time, string(raw), r.Created)
	return err
}

// ReadingFilter selects a user's readings.
type ReadingFilter struct {
	DataType string
	From, To int64 // measurement time, inclusive; 0 is open
	// Before, when set, is the last reading of the page before: the page
	// is the readings after it in the list's order.
	Before *clinic.Reading
	Limit  int
}

// RecordWindow is a page of one of a patient's record's long lists (device
// readings, visit messages): the items stored in [Since, Before) (unix
// seconds; 0 leaves that end open), from the Offset-th in the list's
// order, at most Limit of them (0: none, only the count); with ID, only
// the item of that id. A page's rows are read in the order of an index,
// from its first to its last (and the Offset before it), not the rest of
// the list; the count goes through the same index over the patient's own
// items, never the clinic's.
type RecordWindow struct {
	Since, Before int64
	Offset, Limit int
	ID            int64
}

// where is w's condition on an item's id and storage time, the time in
// units of the column (1 for seconds, 1e6 for microseconds).
func (w RecordWindow) where(idCol, timeCol string, unit int64) (string, []any) {
	var cond string
	var args []any
	if w.ID != 0 {
		cond += " AND " + idCol + " = ?"
		args = append(args, w.ID)
	}
	if w.Since != 0 {
		cond += " AND " + timeCol + " >= ?"
		args = append(args, w.Since*unit)
	}
	if w.Before != 0 {
		cond += " AND " + timeCol + " < ?"
		args = append(args, w.Before*unit)
	}
	return cond, args
}

// ReadingsWindow is a window of a user's readings, newest measurement
// first as Readings has them, and how many the window's time range holds.
func (q *Q) ReadingsWindow(ctx context.Context, accountID, userID int64, w RecordWindow) ([]*clinic.Reading, int, error) {
	count, page := readingsWindow(accountID, userID, w)
	return readWindow(ctx, q, w, count, page, -1, scanReading)
}

// readWindow reads w's count, unless the caller knows it (total ≥ 0), and
// then its page when the page holds anything.
func readWindow[T any](ctx context.Context, q *Q, w RecordWindow, count, page listQuery, total int, scan func(*sql.Rows) (T, error)) ([]T, int, error) {
	if total < 0 {
		if err := q.queryRow(ctx, count.query, count.args, &total); err != nil {
			return nil, 0, err
		}
	}
	out := []T{}
	if w.Limit <= 0 || w.Offset >= total {
		return out, total, nil
	}
	rows, err := q.query(ctx, page.query, page.args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, 0, q.d.translate(err)
		}
		out = append(out, v)
	}
	return out, total, q.d.translate(rows.Err())
}

// readingsWindow is the count and the page of ReadingsWindow.
func readingsWindow(accountID, userID int64, w RecordWindow) (count, page listQuery) {
	cond, args := w.where("id", "created", 1)
	args = append([]any{accountID, userID}, args...)
	from := " FROM health_readings WHERE account_id = ? AND user_id = ?" + cond
	return listQuery{"SELECT count(*)" + from, args},
		listQuery{"SELECT " + readingCols + from +
			" ORDER BY time DESC, id DESC LIMIT ? OFFSET ?", append(slices.Clip(args), w.Limit, w.Offset)}
}

// readingCols are the columns scanReading reads.
const readingCols = "id, user_id, device_id, type, data_type, data_class, date, time, reading, created"

func scanReading(rows *sql.Rows) (*clinic.Reading, error) {
	var r clinic.Reading
	var raw string
	if err := rows.Scan(&r.ID, &r.UserID, &r.DeviceID, &r.Type, &r.DataType, &r.DataClass, &r.Date, &r.Time, &raw, &r.Created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(raw), &r.Values); err != nil {
		return nil, err
	}
	return &r, nil
}

// Reading is one of a user's readings; ErrNotFound when the user has no
// reading id.
func (q *Q) Reading(ctx context.Context, accountID, userID, id int64) (*clinic.Reading, error) {
	rs, err := q.readings(ctx, listQuery{"SELECT " + readingCols + " FROM health_readings WHERE account_id = ? AND user_id = ? AND id = ?",
		[]any{accountID, userID, id}})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return rs[0], nil
}

// Readings lists a user's readings, newest measurement first.
func (q *Q) Readings(ctx context.Context, accountID, userID int64, f ReadingFilter) ([]*clinic.Reading, error) {
	return q.readings(ctx, readingsQuery(accountID, userID, f))
}

// readings are the readings lq selects (readingCols).
func (q *Q) readings(ctx context.Context, lq listQuery) ([]*clinic.Reading, error) {
	rows, err := q.query(ctx, lq.query, lq.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Reading{}
	for rows.Next() {
		r, err := scanReading(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// readingsQuery is the statement of Readings: in the order of the index
// health_readings_user_time (migration 00024), or of health_readings_user
// for one data type, so a page reads what it returns.
func readingsQuery(accountID, userID int64, f ReadingFilter) listQuery {
	query := "SELECT " + readingCols + " FROM health_readings WHERE account_id = ? AND user_id = ?"
	args := []any{accountID, userID}
	if f.DataType != "" {
		query += " AND data_type = ?"
		args = append(args, f.DataType)
	}
	if f.From != 0 {
		query += " AND time >= ?"
		args = append(args, f.From)
	}
	if f.To != 0 {
		query += " AND time <= ?"
		args = append(args, f.To)
	}
	if b := f.Before; b != nil {
		// Measured at most at its time, and of that time stored before
		// it: the first condition is the index's range.
		query += " AND time <= ? AND (time < ? OR id < ?)"
		args = append(args, b.Time, b.Time, b.ID)
	}
	return listQuery{query + " ORDER BY time DESC, id DESC LIMIT ?", append(args, f.Limit)}
}

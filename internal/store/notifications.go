package store

import (
	"context"
	"errors"

	"teleclinic/internal/clinic"
)

const endpointCols = "id, account_id, user_id, type, address, created, modified"

func (q *Q) endpoints(ctx context.Context, query string, args ...any) ([]*clinic.Endpoint, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Endpoint{}
	for rows.Next() {
		var e clinic.Endpoint
		if err := rows.Scan(&e.ID, &e.AccountID, &e.UserID, &e.Type, &e.Address, &e.Created, &e.Modified); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, &e)
	}
	return out, q.d.translate(rows.Err())
}

// EndpointByAddress finds the endpoint of a device token or email address.
func (q *Q) EndpointByAddress(ctx context.Context, accountID int64, typ int, address string) (*clinic.Endpoint, error) {
	es, err := q.endpoints(ctx, "SELECT "+endpointCols+" FROM endpoints WHERE account_id = ? AND type = ? AND address = ?", accountID, typ, address)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, ErrNotFound
	}
	return es[0], nil
}

// CreateEndpoint inserts e; a registered address answers ErrConflict.
func (q *Q) CreateEndpoint(ctx context.Context, e *clinic.Endpoint) error {
	id, err := q.insert(ctx, "INSERT INTO endpoints (account_id, user_id, type, address, created, modified) VALUES (?, ?, ?, ?, ?, ?)",
		e.AccountID, e.UserID, e.Type, e.Address, e.Created, e.Modified)
	e.ID = id
	return err
}

// MoveEndpoint gives an address to a user (a device that changed hands).
func (q *Q) MoveEndpoint(ctx context.Context, accountID, id, userID, now int64) error {
	return q.mustAffect(ctx, "UPDATE endpoints SET user_id = ?, modified = ? WHERE account_id = ? AND id = ?", userID, now, accountID, id)
}

// UserEndpoints lists a user's endpoints, of one type when typ is not 0.
func (q *Q) UserEndpoints(ctx context.Context, accountID, userID int64, typ int) ([]*clinic.Endpoint, error) {
	if typ != 0 {
		return q.endpoints(ctx, "SELECT "+endpointCols+" FROM endpoints WHERE account_id = ? AND user_id = ? AND type = ? ORDER BY id", accountID, userID, typ)
	}
	return q.endpoints(ctx, "SELECT "+endpointCols+" FROM endpoints WHERE account_id = ? AND user_id = ? ORDER BY id", accountID, userID)
}

// UsersEndpoints lists the endpoints of several users of a clinic, of every type.
func (q *Q) UsersEndpoints(ctx context.Context, accountID int64, userIDs []int64) ([]*clinic.Endpoint, error) {
	if len(userIDs) == 0 {
		return []*clinic.Endpoint{}, nil
	}
	return q.endpoints(ctx, "SELECT "+endpointCols+" FROM endpoints WHERE account_id = ? AND user_id IN ("+placeholders(len(userIDs))+") ORDER BY id",
		append([]any{accountID}, anys(userIDs)...)...)
}

// UserEndpoint finds one of a user's endpoints.
func (q *Q) UserEndpoint(ctx context.Context, accountID, userID, id int64) (*clinic.Endpoint, error) {
	es, err := q.endpoints(ctx, "SELECT "+endpointCols+" FROM endpoints WHERE account_id = ? AND user_id = ? AND id = ?", accountID, userID, id)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, ErrNotFound
	}
	return es[0], nil
}

// DeleteEndpoint removes one of a user's endpoints.
func (q *Q) DeleteEndpoint(ctx context.Context, accountID, userID, id int64) error {
	return q.mustAffect(ctx, "DELETE FROM endpoints WHERE account_id = ? AND user_id = ? AND id = ?", accountID, userID, id)
}

const notificationCols = "id, account_id, user_id, type, title, image, visit_id, is_new, is_read, created, mtime_ms"

func (q *Q) notifications(ctx context.Context, query string, args ...any) ([]*clinic.Notification, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Notification{}
	for rows.Next() {
		var n clinic.Notification
		var isNew, read int
		if err := rows.Scan(&n.ID, &n.AccountID, &n.UserID, &n.Type, &n.Title, &n.Image, &n.VisitID, &isNew, &read, &n.Created, &n.MtimeMS); err != nil {
			return nil, q.d.translate(err)
		}
		n.IsNew, n.Read = isNew == 1, read == 1
		out = append(out, &n)
	}
	return out, q.d.translate(rows.Err())
}

// CreateNotifications inserts notifications for distinct users in one
// statement and sets their ids: one round trip however many are told.
func (q *Q) CreateNotifications(ctx context.Context, ns []*clinic.Notification) error {
	if len(ns) == 0 {
		return nil
	}
	args := make([]any, 0, 8*len(ns))
	byUser := make(map[int64]*clinic.Notification, len(ns))
	for _, n := range ns {
		args = append(args, n.AccountID, n.UserID, n.Type, n.Title, n.Image, n.VisitID, n.Created, n.MtimeMS)
		byUser[n.UserID] = n
	}
	if len(byUser) != len(ns) {
		return errors.New("store: create notifications: one per user")
	}
	// RETURNING promises no order, so ids are matched by user.
	rs, err := q.query(ctx, "INSERT INTO notifications (account_id, user_id, type, title, image, visit_id, is_new, is_read, created, mtime_ms) VALUES "+
		valueRows("(?, ?, ?, ?, ?, ?, 1, 0, ?, ?)", len(ns))+" RETURNING id, user_id", args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var id, uid int64
		if err := rs.Scan(&id, &uid); err != nil {
			return q.d.translate(err)
		}
		byUser[uid].ID, byUser[uid].IsNew = id, true
	}
	return q.d.translate(rs.Err())
}

// Notify writes notification n for each distinct user of userIDs and an
// outbox item of topic for each endpoint in push whose user was notified,
// its payload filled with the endpoint id and the notification id. It
// reports whether it queued any item.
func (q *Q) Notify(ctx context.Context, n clinic.Notification, userIDs []int64, push []*clinic.Endpoint, topic string, payload Template) (bool, error) {
	ns := make([]*clinic.Notification, 0, len(userIDs))
	byUser := make(map[int64]*clinic.Notification, len(userIDs))
	for _, uid := range userIDs {
		if byUser[uid] != nil {
			continue
		}
		un := n
		un.UserID = uid
		ns = append(ns, &un)
		byUser[uid] = &un
	}
	if err := q.CreateNotifications(ctx, ns); err != nil {
		return false, err
	}
	queued := false
	for _, e := range push {
		un := byUser[e.UserID]
		if un == nil {
			continue
		}
		it := &OutboxItem{AccountID: un.AccountID, Topic: topic, Payload: payload.Fill(e.ID, un.ID), Created: un.Created, Due: un.Created}
		if err := q.Enqueue(ctx, it); err != nil {
			return false, err
		}
		queued = true
	}
	return queued, nil
}

// UserNotifications lists a user's notifications newest first (by mtime,
// then id): those with mtime before beforeMS when it is not 0, and after
// the notification after in that order when it is not nil.
func (q *Q) UserNotifications(ctx context.Context, accountID, userID, beforeMS int64, after *clinic.Notification, limit int) ([]*clinic.Notification, error) {
	query := "SELECT " + notificationCols + " FROM notifications WHERE account_id = ? AND user_id = ?"
	args := []any{accountID, userID}
	if beforeMS > 0 {
		query += " AND mtime_ms < ?"
		args = append(args, beforeMS)
	}
	if after != nil {
		query += " AND mtime_ms <= ? AND (mtime_ms < ? OR id < ?)"
		args = append(args, after.MtimeMS, after.MtimeMS, after.ID)
	}
	return q.notifications(ctx, query+" ORDER BY mtime_ms DESC, id DESC LIMIT ?", append(args, limit)...)
}

// UserNotification finds one of a user's notifications.
func (q *Q) UserNotification(ctx context.Context, accountID, userID, id int64) (*clinic.Notification, error) {
	ns, err := q.notifications(ctx, "SELECT "+notificationCols+" FROM notifications WHERE account_id = ? AND user_id = ? AND id = ?", accountID, userID, id)
	if err != nil {
		return nil, err
	}
	if len(ns) == 0 {
		return nil, ErrNotFound
	}
	return ns[0], nil
}

// MarkNotificationRead sets a notification read (and no longer new).
func (q *Q) MarkNotificationRead(ctx context.Context, accountID, userID, id int64) error {
	return q.mustAffect(ctx, "UPDATE notifications SET is_read = 1, is_new = 0 WHERE account_id = ? AND user_id = ? AND id = ?", accountID, userID, id)
}

// Badge counts a user's new notifications.
func (q *Q) Badge(ctx context.Context, accountID, userID int64) (int, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM notifications WHERE account_id = ? AND user_id = ? AND is_new = 1", []any{accountID, userID}, &n)
	return n, err
}

// ResetBadge marks all of a user's notifications seen.
func (q *Q) ResetBadge(ctx context.Context, accountID, userID int64) error {
	_, err := q.exec(ctx, "UPDATE notifications SET is_new = 0 WHERE account_id = ? AND user_id = ? AND is_new = 1", accountID, userID)
	return err
}

// EndpointByID finds an endpoint of the clinic, whoever it belongs to: for
// the delivery worker.
func (q *Q) EndpointByID(ctx context.Context, accountID, id int64) (*clinic.Endpoint, error) {
	es, err := q.endpoints(ctx, "SELECT "+endpointCols+" FROM endpoints WHERE account_id = ? AND id = ?", accountID, id)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, ErrNotFound
	}
	return es[0], nil
}

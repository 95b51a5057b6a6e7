package store

import (
	"context"
	"strings"

	"teleclinic/internal/clinic"
)

// AppendAudit appends an entry. There is no update or delete.
func (q *Q) AppendAudit(ctx context.Context, e *clinic.AuditEntry) error {
	return q.AppendAudits(ctx, []*clinic.AuditEntry{e})
}

// AppendAudits writes entries with multi-row inserts. Chunks are powers of
// two in size, so a few statement texts serve every group size and stay
// prepared.
func (q *Q) AppendAudits(ctx context.Context, es []*clinic.AuditEntry) error {
	for len(es) > 0 {
		n := 1
		for n*2 <= len(es) && n < 256 {
			n *= 2
		}
		args := make([]any, 0, 9*n)
		for _, e := range es[:n] {
			var actor any
			if e.ActorUserID != 0 {
				actor = e.ActorUserID
			}
			args = append(args, e.AccountID, e.ActorKind, actor, e.Action, e.ObjectType, e.ObjectID, e.Outcome, e.RequestID, e.Created)
		}
		if _, err := q.exec(ctx, "INSERT INTO audit (account_id, actor_kind, actor_user_id, action, object_type, object_id, outcome, request_id, created) VALUES "+
			valueRows("(?, ?, ?, ?, ?, ?, ?, ?, ?)", n), args...); err != nil {
			return err
		}
		es = es[n:]
	}
	return nil
}

// AuditFilter selects audit entries of one clinic. Zero values do not filter.
type AuditFilter struct {
	AccountID  int64
	UserID     int64
	ObjectType string
	ObjectID   string
	Action     string
	From, To   int64 // inclusive unix seconds
	Start      int
	Limit      int
}

// ListAudit returns a page of entries, newest first, and the total count.
// Entries of one second are in the order they were inserted, which for
// reads is when the journal was flushed, up to a fraction of a second
// after their requests.
func (q *Q) ListAudit(ctx context.Context, f AuditFilter) ([]clinic.AuditEntry, int, error) {
	where := []string{"account_id = ?"}
	args := []any{f.AccountID}
	add := func(cond string, a any) { where = append(where, cond); args = append(args, a) }
	if f.UserID != 0 {
		add("actor_user_id = ?", f.UserID)
	}
	if f.ObjectType != "" {
		add("object_type = ?", f.ObjectType)
	}
	if f.ObjectID != "" {
		add("object_id = ?", f.ObjectID)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.From != 0 {
		add("created >= ?", f.From)
	}
	if f.To != 0 {
		add("created <= ?", f.To)
	}
	w := strings.Join(where, " AND ")
	var total int
	if err := q.queryRow(ctx, "SELECT COUNT(*) FROM audit WHERE "+w, args, &total); err != nil {
		return nil, 0, err
	}
	rows, err := q.query(ctx, `SELECT id, account_id, actor_kind, COALESCE(actor_user_id, 0), action, object_type, object_id, outcome, request_id, created
		FROM audit WHERE `+w+" ORDER BY created DESC, id DESC LIMIT ? OFFSET ?", append(args, f.Limit, f.Start)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []clinic.AuditEntry{}
	for rows.Next() {
		var e clinic.AuditEntry
		if err := rows.Scan(&e.ID, &e.AccountID, &e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.RequestID, &e.Created); err != nil {
			return nil, 0, q.d.translate(err)
		}
		out = append(out, e)
	}
	return out, total, q.d.translate(rows.Err())
}

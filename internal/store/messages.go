package store

import (
	"context"
	"encoding/json"

	"teleclinic/internal/clinic"
)

// Message is one entry of a visit's thread.
type Message struct {
	ID          int64
	AccountID   int64
	VisitID     int64
	Seq         int
	AuthorID    int64
	ActorType   int
	Type        string
	Content     string
	Attachments []int64
	CreatedUS   int64  // microseconds since the epoch
	AuthorName  string // the author's full name as the thread shows it; empty if the author is gone
}

// NextMessageSeq takes the next place in an open visit's thread: it
// increments the visit's message count, unless the visit is in one of the
// closed statuses, and returns the new count. On PostgreSQL the UPDATE holds
// the visit's row lock until commit, so concurrent posters queue and each
// gets the next number only after the previous message committed; a close
// that commits first makes the UPDATE match nothing (ErrNotFound).
func (q *Q) NextMessageSeq(ctx context.Context, accountID, visitID int64, closed []int) (int, error) {
	var seq int
	err := q.queryRow(ctx, "UPDATE visits SET message_count = message_count + 1 WHERE account_id = ? AND id = ? AND status NOT IN ("+placeholders(len(closed))+") RETURNING message_count",
		append([]any{accountID, visitID}, anys(closed)...), &seq)
	return seq, err
}

// AddMessage appends m at m.Seq.
func (q *Q) AddMessage(ctx context.Context, m *Message) error {
	att, _ := json.Marshal(nonNilIDs(m.Attachments))
	id, err := q.insert(ctx, "INSERT INTO visit_messages (account_id, visit_id, seq, author_id, actor_type, type, content, attachments, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		m.AccountID, m.VisitID, m.Seq, m.AuthorID, m.ActorType, m.Type, m.Content, string(att), m.CreatedUS)
	m.ID = id
	return err
}

// MessageCount is the number of messages in a visit's thread.
func (q *Q) MessageCount(ctx context.Context, accountID, visitID int64) (int, error) {
	var n int
	err := q.queryRow(ctx, "SELECT message_count FROM visits WHERE account_id = ? AND id = ?", []any{accountID, visitID}, &n)
	return n, err
}

// ListMessages returns a page of a visit's thread in seq order (newest first
// when desc), each with its author's name, and the thread's length. The page
// and the length come from one statement, so they agree: a reader that
// skips as many messages as the length says never passes over one.
func (q *Q) ListMessages(ctx context.Context, accountID, visitID int64, desc bool, skip, limit int) ([]*Message, int, error) {
	order := "ASC"
	if desc {
		order = "DESC"
	}
	rows, err := q.query(ctx, "SELECT m.id, m.seq, m.author_id, m.actor_type, m.type, m.content, m.attachments, m.created_us, "+
		"COALESCE(u.first_name, ''), COALESCE(u.last_name, ''), (SELECT message_count FROM visits WHERE account_id = ? AND id = ?) "+
		"FROM visit_messages m LEFT JOIN users u ON u.account_id = m.account_id AND u.id = m.author_id "+
		"WHERE m.account_id = ? AND m.visit_id = ? ORDER BY m.seq "+order+" LIMIT ? OFFSET ?",
		accountID, visitID, accountID, visitID, limit, skip)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out, total := []*Message{}, 0
	for rows.Next() {
		m := &Message{AccountID: accountID, VisitID: visitID}
		var att string
		var author clinic.User
		if err := rows.Scan(&m.ID, &m.Seq, &m.AuthorID, &m.ActorType, &m.Type, &m.Content, &att, &m.CreatedUS,
			&author.FirstName, &author.LastName, &total); err != nil {
			return nil, 0, q.d.translate(err)
		}
		m.AuthorName = author.FullName()
		if att != "[]" && att != "" {
			_ = json.Unmarshal([]byte(att), &m.Attachments)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, q.d.translate(err)
	}
	if len(out) == 0 {
		// A page past the end has no row to carry the length.
		total, err = q.MessageCount(ctx, accountID, visitID)
	}
	return out, total, err
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
)

// VisitParties are the fields of a visit that say who takes part in it:
// those a post's decisions (who may write, who is told) are made on.
type VisitParties struct {
	Kind                         string
	MemberID, ProviderID, RoomID int64
}

// cond is the condition that a visit's row (unaliased) still has p's
// parties, and its arguments; nothing for nil.
func (p *VisitParties) cond() (string, []any) {
	if p == nil {
		return "", nil
	}
	return " AND kind = ? AND member_id = ? AND provider_id = ? AND COALESCE(room_id, 0) = ?", []any{p.Kind, p.MemberID, p.ProviderID, p.RoomID}
}

// NextMessageSeq takes the next place in an open visit's thread: it
// increments the visit's message count, unless the visit is in one of the
// closed statuses or, with parties set, has other parties now, and returns
// the new count. On PostgreSQL the UPDATE holds the visit's row lock until
// commit, so concurrent posters queue and each gets the next number only
// after the previous message committed; a close that commits first makes
// the UPDATE match nothing (ErrNotFound).
func (q *Q) NextMessageSeq(ctx context.Context, accountID, visitID int64, closed []int, parties *VisitParties) (int, error) {
	var seq int
	same, sameArgs := parties.cond()
	err := q.queryRow(ctx, "UPDATE visits SET message_count = message_count + 1 WHERE account_id = ? AND id = ? AND NOT "+inList("status", len(closed))+same+" RETURNING message_count",
		append(append([]any{accountID, visitID}, anys(closed)...), sameArgs...), &seq)
	return seq, err
}

// AddMessage appends m at m.Seq.
func (q *Q) AddMessage(ctx context.Context, m *clinic.Message) error {
	att, _ := json.Marshal(nonNilIDs(m.Attachments))
	id, err := q.insert(ctx, "INSERT INTO visit_messages (account_id, visit_id, seq, author_id, actor_type, type, content, attachments, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		m.AccountID, m.VisitID, m.Seq, m.AuthorID, m.ActorType, m.Type, m.Content, string(att), m.CreatedUS)
	m.ID = id
	return err
}

// ThreadMessages returns the messages of a visit's thread whose places are
// from to to (inclusive), in order. Every place up to the visit's message
// count holds a committed message: the count is taken in the transaction
// that writes the message. Authors' names are not read here (UserNames):
// a message never changes, a name may.
func (q *Q) ThreadMessages(ctx context.Context, accountID, visitID int64, from, to int) ([]*clinic.Message, error) {
	rows, err := q.query(ctx, "SELECT id, seq, author_id, actor_type, type, content, attachments, created_us "+
		"FROM visit_messages WHERE account_id = ? AND visit_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
		accountID, visitID, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]*clinic.Message, 0, max(0, to-from+1))
	for rows.Next() {
		m := &clinic.Message{AccountID: accountID, VisitID: visitID}
		var att string
		if err := rows.Scan(&m.ID, &m.Seq, &m.AuthorID, &m.ActorType, &m.Type, &m.Content, &att, &m.CreatedUS); err != nil {
			return nil, q.d.translate(err)
		}
		if att != "[]" && att != "" {
			_ = json.Unmarshal([]byte(att), &m.Attachments)
		}
		out = append(out, m)
	}
	return out, q.d.translate(rows.Err())
}

// MessagesWindow is a window of the messages of rv's visits, in the order
// of the visits' ids and then of each thread, and how many the window's
// time range holds: the part of a patient's record that is their visits'
// threads. A first statement reads the ids of the visits with messages;
// the (visit_id, seq) key serves the order. The count of a window over
// whole threads is the visits' message counts (a thread's places are 1 to
// its count), so only a time range or an id is counted.
func (q *Q) MessagesWindow(ctx context.Context, rv RecordVisits, w RecordWindow) ([]*clinic.Message, int, error) {
	cond, args := rv.cond()
	rows, err := q.query(ctx, "SELECT v.id, v.message_count FROM visits v WHERE "+cond+" AND v.message_count > 0 ORDER BY v.id", args...)
	if err != nil {
		return nil, 0, err
	}
	var ids []int64
	total := 0
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return nil, 0, q.d.translate(err)
		}
		ids, total = append(ids, id), total+n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, q.d.translate(err)
	}
	if len(ids) == 0 {
		return []*clinic.Message{}, 0, nil
	}
	accountID := rv.AccountID
	if w.Since != 0 || w.Before != 0 || w.ID != 0 {
		total = -1 // counted
	}
	count, page := messagesWindow(accountID, ids, w)
	return readWindow(ctx, q, w, count, page, total, func(rows *sql.Rows) (*clinic.Message, error) {
		m := &clinic.Message{AccountID: accountID}
		var att string
		if err := rows.Scan(&m.ID, &m.VisitID, &m.Seq, &m.AuthorID, &m.ActorType, &m.Type, &m.Content, &att, &m.CreatedUS); err != nil {
			return nil, err
		}
		if att != "[]" && att != "" {
			_ = json.Unmarshal([]byte(att), &m.Attachments)
		}
		return m, nil
	})
}

// messagesWindow is the count and the page of MessagesWindow.
func messagesWindow(accountID int64, visitIDs []int64, w RecordWindow) (count, page listQuery) {
	cond, args := w.where("id", "created_us", 1e6)
	from := " FROM visit_messages WHERE " + inList("visit_id", len(visitIDs)) + " AND account_id = ?" + cond
	args = append(append(anys(visitIDs), accountID), args...)
	return listQuery{"SELECT count(*)" + from, args},
		listQuery{"SELECT id, visit_id, seq, author_id, actor_type, type, content, attachments, created_us" + from +
			" ORDER BY visit_id, seq LIMIT ? OFFSET ?", append(slices.Clip(args), w.Limit, w.Offset)}
}

// Template is a payload with holes for ids that only its row's insert
// assigns: the payload is Template[0] + the first id + Template[1] + … .
// The caller builds it from its own encoding, so the store never writes a
// payload format of its own. It exists for PostgreSQL's one-statement post
// (MessagePost.postgres), where the message's id is known only inside the
// statement.
type Template []string

// Fill puts ids in the holes.
func (t Template) Fill(ids ...int64) string {
	var b strings.Builder
	for i, part := range t {
		b.WriteString(part)
		if i < len(ids) && i < len(t)-1 {
			b.WriteString(strconv.FormatInt(ids[i], 10))
		}
	}
	return b.String()
}

// sql is t as a PostgreSQL text expression around the id expressions, with
// t's parts as arguments.
func (t Template) sql(ids ...string) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(t))
	for i, part := range t {
		if i > 0 {
			b.WriteString(" || ")
		}
		b.WriteString("?::text")
		args = append(args, part)
		if i < len(ids) && i < len(t)-1 {
			b.WriteString(" || " + ids[i] + "::text")
		}
	}
	return b.String(), args
}

// MessagePost is a new message and everything its commit writes with it.
// The caller decides all of it; the store only chooses how to write it.
// It is one value rather than a transaction of separate writes because on
// PostgreSQL the whole post is one statement, sent in a batch with the
// posts beside it (postgres_batch.go): 9 round trips became 1, and
// messages-post at 8 connections went from 1,558 to 2,331 req/s, then to
// about 3,000 with the batches (docs/design-notes.md). SQLite writes the
// same value statement by statement (Q.postMessage).
type MessagePost struct {
	// Message is the message (its ID and Seq are set by the post).
	Message *clinic.Message
	// Closed are the visit statuses whose thread takes no message: a
	// visit in one of them, or gone, makes the post ErrNotFound.
	Closed []int
	// Parties, when set, are the visit's parties as the caller saw them
	// when it decided the post: a visit whose parties differ now makes
	// the post ErrNotFound too.
	Parties *VisitParties
	// Webhook is the clinic's webhook delivery, written only if the clinic
	// has a webhook URL; its payload is WebhookPayload around the message
	// id.
	Webhook        OutboxItem
	WebhookPayload Template
	// Notification is written for each of NotifyUsers (distinct users).
	Notification clinic.Notification
	NotifyUsers  []int64
	// PushTypes are the endpoint types that are sent: each endpoint of a
	// notified user with one of them gets an outbox item, whose payload is
	// PushPayload around the endpoint id and the notification id.
	PushTypes   []int
	PushTopic   string
	PushPayload Template
	// Audit is the post's audit entry; its ObjectID is the message id.
	Audit clinic.AuditEntry
	// Announced and Pushed report whether a webhook delivery and any push
	// item were written.
	Announced, Pushed bool
}

// PostMessage writes a message post atomically: on SQLite as statements
// in a Grouped transaction, on PostgreSQL as one statement in a pipelined
// batch (sqlite.go, postgres.go).
func (s *Store) PostMessage(ctx context.Context, mp *MessagePost) error {
	defer s.writes.Add(1) // PostgreSQL's batch is no Store transaction
	return s.eng.postMessage(ctx, mp)
}

// postMessage writes mp statement by statement inside a transaction.
func (q *Q) postMessage(ctx context.Context, mp *MessagePost, push []*clinic.Endpoint) error {
	m := mp.Message
	seq, err := q.NextMessageSeq(ctx, m.AccountID, m.VisitID, mp.Closed, mp.Parties)
	if err != nil {
		return err
	}
	m.Seq = seq
	if err := q.AddMessage(ctx, m); err != nil {
		return err
	}
	wh := mp.Webhook
	wh.Payload = mp.WebhookPayload.Fill(m.ID)
	if mp.Announced, err = q.EnqueueWebhook(ctx, &wh); err != nil {
		return err
	}
	if mp.Pushed, err = q.Notify(ctx, mp.Notification, mp.NotifyUsers, push, mp.PushTopic, mp.PushPayload); err != nil {
		return err
	}
	mp.Audit.ObjectID = strconv.FormatInt(m.ID, 10)
	return q.AppendAudit(ctx, &mp.Audit)
}

// inList is "col IN (?, …)" for n arguments; with none it is FALSE, which
// SQL's empty IN () cannot say.
func inList(col string, n int) string {
	if n == 0 {
		return "FALSE"
	}
	return col + " IN (" + placeholders(n) + ")"
}

// postgres is mp as one PostgreSQL statement and its arguments. Its audit
// entry is written pending (seq -1) with a MAC over all but the message's
// id, which only the statement knows (SealAudit): the clinic's next audit
// append, the background pass or a verification chains it (AppendAudits),
// so the post stays one statement. Its row is
// the message's id and place and how many webhook and push items it wrote;
// no row means the visit is closed, gone or has other parties.
func (mp *MessagePost) postgres() (string, []any) {
	m, n, a, wh := mp.Message, &mp.Notification, &mp.Audit, &mp.Webhook
	att, _ := json.Marshal(nonNilIDs(m.Attachments))
	whPayload, whArgs := mp.WebhookPayload.sql("m.id")
	pushPayload, pushArgs := mp.PushPayload.sql("e.id", "n.id")
	var args []any
	add := func(xs ...any) { args = append(args, xs...) }
	add(m.AccountID, m.VisitID)
	add(anys(mp.Closed)...)
	same, sameArgs := mp.Parties.cond()
	add(sameArgs...)
	add(m.AccountID, m.VisitID, m.AuthorID, m.ActorType, m.Type, m.Content, string(att), m.CreatedUS)
	add(wh.Topic)
	add(whArgs...)
	add(wh.Created, wh.Due, m.AccountID)
	add(m.AccountID, n.Type, n.Title, n.Image, n.VisitID, n.Created, n.MtimeMS, nonNilIDs(mp.NotifyUsers))
	add(m.AccountID, mp.PushTopic)
	add(pushArgs...)
	add(anys(mp.PushTypes)...)
	add(a.AccountID, a.ActorKind, a.ActorUserID, a.Action, a.ObjectType, a.Outcome, a.RequestID, a.Created, a.MAC)
	return `WITH v AS (
	UPDATE visits SET message_count = message_count + 1
	WHERE account_id = ? AND id = ? AND NOT ` + inList("status", len(mp.Closed)) + same + ` RETURNING message_count),
m AS (
	INSERT INTO visit_messages (account_id, visit_id, seq, author_id, actor_type, type, content, attachments, created_us)
	SELECT ?, ?, message_count, ?, ?, ?, ?, ?, ? FROM v RETURNING id, seq),
w AS (
	INSERT INTO outbox (account_id, topic, payload, created, due)
	SELECT a.id, ?, ` + whPayload + `, ?, ? FROM m, accounts a WHERE a.id = ? AND a.webhook_url <> '' RETURNING 1),
n AS (
	INSERT INTO notifications (account_id, user_id, type, title, image, visit_id, is_new, is_read, created, mtime_ms)
	SELECT ?, u, ?, ?, ?, ?, 1, 0, ?, ? FROM m, unnest(?::bigint[]) AS u RETURNING id, account_id, user_id, created),
p AS (
	INSERT INTO outbox (account_id, topic, payload, created, due)
	SELECT ?, ?, ` + pushPayload + `, n.created, n.created
	FROM n JOIN endpoints e ON e.account_id = n.account_id AND e.user_id = n.user_id
	WHERE ` + inList("e.type", len(mp.PushTypes)) + ` RETURNING 1),
au AS (
	INSERT INTO audit (account_id, actor_kind, actor_user_id, action, object_type, object_id, outcome, request_id, created, mac, seq)
	SELECT ?, ?, NULLIF(?::bigint, 0), ?, ?, m.id::text, ?, ?, ?, ?, -1 FROM m)
SELECT m.id, m.seq, (SELECT count(*) FROM w), (SELECT count(*) FROM p) FROM m`, args
}

// MarkThreadRead records that user has been shown visit's thread up to
// place seen; a read never moves back.
func (q *Q) MarkThreadRead(ctx context.Context, accountID, visitID, userID int64, seen int) error {
	_, err := q.exec(ctx, `INSERT INTO thread_reads (account_id, visit_id, user_id, seen) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id, user_id, visit_id) DO UPDATE SET seen = excluded.seen WHERE thread_reads.seen < excluded.seen`,
		accountID, visitID, userID, seen)
	return err
}

// ThreadReads are how far user has read each of visits' threads (absent:
// not at all).
func (q *Q) ThreadReads(ctx context.Context, accountID, userID int64, visits []int64) (map[int64]int, error) {
	out := map[int64]int{}
	if len(visits) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT visit_id, seen FROM thread_reads WHERE account_id = ? AND user_id = ? AND visit_id IN ("+placeholders(len(visits))+")",
		append([]any{accountID, userID}, anys(visits)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var seen int
		if err := rows.Scan(&id, &seen); err != nil {
			return nil, q.d.translate(err)
		}
		out[id] = seen
	}
	return out, q.d.translate(rows.Err())
}

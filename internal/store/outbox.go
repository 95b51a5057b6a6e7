package store

import "context"

// OutboxItem is a side effect waiting for delivery.
type OutboxItem struct {
	ID        int64
	AccountID int64
	Topic     string
	Payload   string
	Created   int64
	Due       int64
	Attempts  int
	// EndpointID is the webhook endpoint an event's delivery goes to (0:
	// none, every other topic).
	EndpointID int64
}

// Enqueue writes an outbox row. Call it inside the transaction of the change
// that causes the side effect, so both commit or neither does.
func (q *Q) Enqueue(ctx context.Context, it *OutboxItem) error {
	id, err := q.insert(ctx, "INSERT INTO outbox (account_id, topic, payload, created, due, endpoint_id) VALUES (?, ?, ?, ?, ?, ?)",
		it.AccountID, it.Topic, it.Payload, it.Created, it.Due, nullZero(it.EndpointID))
	it.ID = id
	return err
}

// EnqueueWebhook writes a webhook delivery if the clinic has a webhook URL
// when the transaction commits, and reports whether it did: the check and
// the insert are one statement.
func (q *Q) EnqueueWebhook(ctx context.Context, it *OutboxItem) (bool, error) {
	n, err := q.affected(ctx, "INSERT INTO outbox (account_id, topic, payload, created, due) SELECT id, ?, ?, ?, ? FROM accounts WHERE id = ? AND webhook_url <> ''",
		it.Topic, it.Payload, it.Created, it.Due, it.AccountID)
	return n == 1, err
}

// ClaimOutbox claims up to limit due items of the given topics for lease
// seconds. A claim is a conditional UPDATE per item, so of several workers (in
// one process or several) exactly one gets each item; an item whose worker
// died is claimable again once its lease runs out.
func (q *Q) ClaimOutbox(ctx context.Context, topics []string, now, lease int64, limit int) ([]OutboxItem, error) {
	args := append([]any{now, now}, anys(topics)...)
	rows, err := q.query(ctx, "SELECT id, account_id, topic, payload, created, due, attempts, COALESCE(endpoint_id, 0) FROM outbox WHERE done IS NULL AND due <= ? AND claimed_until <= ? AND topic IN ("+placeholders(len(topics))+") ORDER BY due, id LIMIT ?",
		append(args, limit)...)
	if err != nil {
		return nil, err
	}
	var cands []OutboxItem
	for rows.Next() {
		var it OutboxItem
		if err := rows.Scan(&it.ID, &it.AccountID, &it.Topic, &it.Payload, &it.Created, &it.Due, &it.Attempts, &it.EndpointID); err != nil {
			rows.Close()
			return nil, q.d.translate(err)
		}
		cands = append(cands, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, q.d.translate(err)
	}
	var won []OutboxItem
	for _, it := range cands {
		n, err := q.affected(ctx, "UPDATE outbox SET claimed_until = ?, attempts = attempts + 1 WHERE id = ? AND done IS NULL AND claimed_until <= ?", now+lease, it.ID, now)
		if err != nil {
			return won, err
		}
		if n == 1 {
			it.Attempts++
			won = append(won, it)
		}
	}
	return won, nil
}

// FinishOutbox marks an item delivered (or given up on, with its last
// error). status is the receiver's HTTP status, 0 when there was none.
func (q *Q) FinishOutbox(ctx context.Context, id, now int64, status int, lastErr string) error {
	_, err := q.exec(ctx, "UPDATE outbox SET done = ?, claimed_until = 0, last_status = ?, last_error = ? WHERE id = ?", now, status, lastErr, id)
	return err
}

// RetryOutbox releases a claimed item to be tried again at due.
func (q *Q) RetryOutbox(ctx context.Context, id, due int64, status int, lastErr string) error {
	_, err := q.exec(ctx, "UPDATE outbox SET due = ?, claimed_until = 0, last_status = ?, last_error = ? WHERE id = ?", due, status, lastErr, id)
	return err
}

// OutboxRecord is an outbox item with its delivery state, for the clinic's
// list of webhook deliveries.
type OutboxRecord struct {
	OutboxItem
	ClaimedUntil int64
	Done         int64 // 0 while pending
	LastStatus   int
	LastError    string
}

const outboxRecordCols = "id, account_id, topic, payload, created, due, attempts, claimed_until, COALESCE(done, 0), last_status, last_error, COALESCE(endpoint_id, 0)"

func (q *Q) outboxRecords(ctx context.Context, query string, args ...any) ([]*OutboxRecord, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*OutboxRecord{}
	for rows.Next() {
		var r OutboxRecord
		if err := rows.Scan(&r.ID, &r.AccountID, &r.Topic, &r.Payload, &r.Created, &r.Due, &r.Attempts, &r.ClaimedUntil, &r.Done, &r.LastStatus, &r.LastError, &r.EndpointID); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, &r)
	}
	return out, q.d.translate(rows.Err())
}

// ListOutbox lists a clinic's items of one topic, newest first, those with
// an id below beforeID when it is not 0.
func (q *Q) ListOutbox(ctx context.Context, accountID int64, topic string, beforeID int64, limit int) ([]*OutboxRecord, error) {
	if beforeID > 0 {
		return q.outboxRecords(ctx, "SELECT "+outboxRecordCols+" FROM outbox WHERE account_id = ? AND topic = ? AND id < ? ORDER BY id DESC LIMIT ?", accountID, topic, beforeID, limit)
	}
	return q.outboxRecords(ctx, "SELECT "+outboxRecordCols+" FROM outbox WHERE account_id = ? AND topic = ? ORDER BY id DESC LIMIT ?", accountID, topic, limit)
}

// EndpointOutbox lists the deliveries to one of a clinic's webhook
// endpoints, newest first, those with an id below beforeID when it is
// not 0.
func (q *Q) EndpointOutbox(ctx context.Context, accountID, endpointID, beforeID int64, limit int) ([]*OutboxRecord, error) {
	if beforeID > 0 {
		return q.outboxRecords(ctx, "SELECT "+outboxRecordCols+" FROM outbox WHERE account_id = ? AND endpoint_id = ? AND id < ? ORDER BY id DESC LIMIT ?", accountID, endpointID, beforeID, limit)
	}
	return q.outboxRecords(ctx, "SELECT "+outboxRecordCols+" FROM outbox WHERE account_id = ? AND endpoint_id = ? ORDER BY id DESC LIMIT ?", accountID, endpointID, limit)
}

// OutboxRecordByID finds one of a clinic's items of a topic.
func (q *Q) OutboxRecordByID(ctx context.Context, accountID int64, topic string, id int64) (*OutboxRecord, error) {
	rs, err := q.outboxRecords(ctx, "SELECT "+outboxRecordCols+" FROM outbox WHERE account_id = ? AND topic = ? AND id = ?", accountID, topic, id)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return rs[0], nil
}

// RequeueOutbox makes an item due now with a fresh set of attempts, unless a
// worker holds it at this moment (reported as false).
func (q *Q) RequeueOutbox(ctx context.Context, accountID int64, topic string, id, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE outbox SET done = NULL, due = ?, attempts = 0, claimed_until = 0, last_status = 0, last_error = '' WHERE account_id = ? AND topic = ? AND id = ? AND claimed_until <= ?",
		now, accountID, topic, id, now)
	return n == 1, err
}

// OutboxBacklog counts undelivered items.
func (q *Q) OutboxBacklog(ctx context.Context) (int, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM outbox WHERE done IS NULL", nil, &n)
	return n, err
}

// OutboxBacklogByTopic counts the undelivered outbox items of every clinic by
// topic, with how long the oldest due one has waited (seconds; 0 when none
// is due yet). It is for the operator's metrics, not for any clinic.
func (q *Q) OutboxBacklogByTopic(ctx context.Context, now int64) (map[string][2]int64, error) {
	rows, err := q.query(ctx, `SELECT topic, COUNT(*), COALESCE(MIN(CASE WHEN due <= ? THEN due END), 0) FROM outbox WHERE done IS NULL GROUP BY topic`, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var topic string
		var n, oldest int64
		if err := rows.Scan(&topic, &n, &oldest); err != nil {
			return nil, err
		}
		age := int64(0)
		if oldest > 0 {
			age = now - oldest
		}
		out[topic] = [2]int64{n, age}
	}
	return out, rows.Err()
}

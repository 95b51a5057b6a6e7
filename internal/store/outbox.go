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
}

// Enqueue writes an outbox row. Call it inside the transaction of the change
// that causes the side effect, so both commit or neither does.
func (q *Q) Enqueue(ctx context.Context, it *OutboxItem) error {
	id, err := q.insert(ctx, "INSERT INTO outbox (account_id, topic, payload, created, due) VALUES (?, ?, ?, ?, ?)",
		it.AccountID, it.Topic, it.Payload, it.Created, it.Due)
	it.ID = id
	return err
}

// ClaimOutbox claims up to limit due items of the given topics for lease
// seconds. A claim is a conditional UPDATE per item, so of several workers (in
// one process or several) exactly one gets each item; an item whose worker
// died is claimable again once its lease runs out.
func (q *Q) ClaimOutbox(ctx context.Context, topics []string, now, lease int64, limit int) ([]OutboxItem, error) {
	args := append([]any{now, now}, anys(topics)...)
	rows, err := q.query(ctx, "SELECT id, account_id, topic, payload, created, due, attempts FROM outbox WHERE done IS NULL AND due <= ? AND claimed_until <= ? AND topic IN ("+placeholders(len(topics))+") ORDER BY due, id LIMIT ?",
		append(args, limit)...)
	if err != nil {
		return nil, err
	}
	var cands []OutboxItem
	for rows.Next() {
		var it OutboxItem
		if err := rows.Scan(&it.ID, &it.AccountID, &it.Topic, &it.Payload, &it.Created, &it.Due, &it.Attempts); err != nil {
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

// FinishOutbox marks an item delivered (or given up on, with its last error).
func (q *Q) FinishOutbox(ctx context.Context, id, now int64, lastErr string) error {
	_, err := q.exec(ctx, "UPDATE outbox SET done = ?, last_error = ? WHERE id = ?", now, lastErr, id)
	return err
}

// RetryOutbox releases a claimed item to be tried again at due.
func (q *Q) RetryOutbox(ctx context.Context, id, due int64, lastErr string) error {
	_, err := q.exec(ctx, "UPDATE outbox SET due = ?, claimed_until = 0, last_error = ? WHERE id = ?", due, lastErr, id)
	return err
}

// OutboxBacklog counts undelivered items.
func (q *Q) OutboxBacklog(ctx context.Context) (int, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM outbox WHERE done IS NULL", nil, &n)
	return n, err
}

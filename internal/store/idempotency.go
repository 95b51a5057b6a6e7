package store

import (
	"context"
	"errors"

	"teleclinic/internal/clinic"
)

// Idempotency keys (migration 00011_idempotency.sql).

// ClaimIdempotencyKey makes r the request of its key, unless another
// request holds the key: then it returns that one's record (in flight or
// finished) and false. Before the claim, the clinic's keys created before
// expired go, and so does this key's in-flight record if it began before
// stale (its process died before it answered).
func (q *Q) ClaimIdempotencyKey(ctx context.Context, r *clinic.IdempotencyRecord, expired, stale int64) (bool, *clinic.IdempotencyRecord, error) {
	if _, err := q.exec(ctx, "DELETE FROM idempotency_keys WHERE account_id = ? AND created < ?", r.AccountID, expired); err != nil {
		return false, nil, err
	}
	if _, err := q.exec(ctx, "DELETE FROM idempotency_keys WHERE account_id = ? AND caller = ? AND idem_key = ? AND status = 0 AND created < ?",
		r.AccountID, r.Caller, r.Key, stale); err != nil {
		return false, nil, err
	}
	n, err := q.affected(ctx, `INSERT INTO idempotency_keys (account_id, caller, idem_key, fingerprint, created)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, r.AccountID, r.Caller, r.Key, r.Fingerprint, r.Created)
	if err != nil || n == 1 {
		return n == 1, nil, err
	}
	got := &clinic.IdempotencyRecord{AccountID: r.AccountID, Caller: r.Caller, Key: r.Key}
	err = q.queryRow(ctx, "SELECT fingerprint, status, content_type, body, created FROM idempotency_keys WHERE account_id = ? AND caller = ? AND idem_key = ?",
		[]any{r.AccountID, r.Caller, r.Key}, &got.Fingerprint, &got.Status, &got.ContentType, &got.Body, &got.Created)
	if errors.Is(err, ErrNotFound) {
		// It expired or was released between the insert and the read: the
		// caller tries again.
		return false, nil, ErrConflict
	}
	return false, got, err
}

// CountIdempotencyKeys counts caller's keys in a clinic made since since.
func (q *Q) CountIdempotencyKeys(ctx context.Context, accountID int64, caller string, since int64) (int, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM idempotency_keys WHERE account_id = ? AND caller = ? AND created >= ?", []any{accountID, caller, since}, &n)
	return n, err
}

// FinishIdempotencyKey stores the answer of the request that holds r's key.
func (q *Q) FinishIdempotencyKey(ctx context.Context, r *clinic.IdempotencyRecord) error {
	_, err := q.exec(ctx, "UPDATE idempotency_keys SET status = ?, content_type = ?, body = ? WHERE account_id = ? AND caller = ? AND idem_key = ? AND status = 0",
		r.Status, r.ContentType, string(r.Body), r.AccountID, r.Caller, r.Key)
	return err
}

// ReleaseIdempotencyKey forgets an in-flight key whose request ended with
// nothing to replay, so that a retry runs again.
func (q *Q) ReleaseIdempotencyKey(ctx context.Context, r *clinic.IdempotencyRecord) error {
	_, err := q.exec(ctx, "DELETE FROM idempotency_keys WHERE account_id = ? AND caller = ? AND idem_key = ? AND status = 0",
		r.AccountID, r.Caller, r.Key)
	return err
}

package store

import "context"

// Sign-in attempts (migration 00012_throttle.sql).

// CountThrottleAttempt counts an attempt of bucket at now, in its current
// window if that began at or after since, else in a new one starting now,
// and returns the window's count and start. Counting before the attempt
// is judged keeps concurrent attempts within the limit; a success gives
// its count back (RefundThrottleAttempt). Windows that ended go.
func (q *Q) CountThrottleAttempt(ctx context.Context, accountID int64, bucket string, now, since int64) (int, int64, error) {
	if _, err := q.exec(ctx, "DELETE FROM throttle WHERE window_start < ?", since); err != nil {
		return 0, 0, err
	}
	var n int
	var start int64
	err := q.queryRow(ctx, `INSERT INTO throttle (account_id, bucket, window_start, failures) VALUES (?, ?, ?, 1)
		ON CONFLICT (account_id, bucket) DO UPDATE SET
			failures = CASE WHEN throttle.window_start < ? THEN 1 ELSE throttle.failures + 1 END,
			window_start = CASE WHEN throttle.window_start < ? THEN ? ELSE throttle.window_start END
		RETURNING failures, window_start`,
		[]any{accountID, bucket, now, since, since, now}, &n, &start)
	return n, start, err
}

// ThrottleCount is bucket's count in the window that began at or after
// since, and that window's start (0, 0 when there is none).
func (q *Q) ThrottleCount(ctx context.Context, accountID int64, bucket string, since int64) (int, int64, error) {
	var n int
	var start int64
	err := q.queryRow(ctx, "SELECT failures, window_start FROM throttle WHERE account_id = ? AND bucket = ? AND window_start >= ?",
		[]any{accountID, bucket, since}, &n, &start)
	if err == ErrNotFound {
		return 0, 0, nil
	}
	return n, start, err
}

// RefundThrottleAttempt takes back an attempt that succeeded.
func (q *Q) RefundThrottleAttempt(ctx context.Context, accountID int64, bucket string) error {
	_, err := q.exec(ctx, "UPDATE throttle SET failures = failures - 1 WHERE account_id = ? AND bucket = ? AND failures > 0", accountID, bucket)
	return err
}

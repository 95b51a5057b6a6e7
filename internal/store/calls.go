package store

import (
	"context"
	"errors"

	"teleclinic/internal/clinic"
)

// The rows of peer-to-peer calls (migration 00010_calls.sql).

// LockCall makes sure visit's call row exists and takes its lock for the
// rest of the transaction, returning the call's next signal number. Every
// signal and every join goes through it, so a visit's signals commit in
// number order and its joins one at a time.
func (q *Q) LockCall(ctx context.Context, accountID, visitID int64) (int64, error) {
	if _, err := q.exec(ctx, "INSERT INTO calls (account_id, visit_id) VALUES (?, ?) ON CONFLICT DO NOTHING", accountID, visitID); err != nil {
		return 0, err
	}
	var seq int64
	err := q.queryRow(ctx, "UPDATE calls SET seq = seq + 1 WHERE account_id = ? AND visit_id = ? RETURNING seq", []any{accountID, visitID}, &seq)
	return seq, err
}

// AddCallSignal stores a signal numbered by LockCall in the same transaction.
func (q *Q) AddCallSignal(ctx context.Context, s *clinic.CallSignal) error {
	_, err := q.exec(ctx, "INSERT INTO call_signals (account_id, visit_id, seq, from_peer, to_peer, kind, body, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		s.AccountID, s.VisitID, s.Seq, s.From, s.To, s.Kind, s.Body, s.Created)
	return err
}

// CallSignals are the signals for peer after number after, oldest first:
// those addressed to it and those to all, less its own.
func (q *Q) CallSignals(ctx context.Context, accountID, visitID int64, peer string, after int64, limit int) ([]clinic.CallSignal, error) {
	rows, err := q.query(ctx, `SELECT seq, from_peer, to_peer, kind, body, created FROM call_signals
		WHERE account_id = ? AND visit_id = ? AND seq > ? AND from_peer <> ? AND (to_peer = ? OR to_peer = '')
		ORDER BY seq LIMIT ?`, accountID, visitID, after, peer, peer, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []clinic.CallSignal
	for rows.Next() {
		s := clinic.CallSignal{AccountID: accountID, VisitID: visitID}
		if err := rows.Scan(&s.Seq, &s.From, &s.To, &s.Kind, &s.Body, &s.Created); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, s)
	}
	return out, q.d.translate(rows.Err())
}

// PruneCallSignals deletes visit's signals made before before: they were
// read long ago, and they hold the peers' network addresses.
func (q *Q) PruneCallSignals(ctx context.Context, accountID, visitID, before int64) error {
	_, err := q.exec(ctx, "DELETE FROM call_signals WHERE account_id = ? AND visit_id = ? AND created < ?", accountID, visitID, before)
	return err
}

// SweepCallSignals deletes every clinic's signals made before before: the
// server's own upkeep (no caller's query), so it is not scoped to one
// clinic. It returns how many went.
func (q *Q) SweepCallSignals(ctx context.Context, before int64) (int64, error) {
	return q.affected(ctx, "DELETE FROM call_signals WHERE created < ?", before)
}

// QueuedCallSignals counts visit's stored signals from peer from to peer
// to ("": to all). A queue per sender and recipient: one participant's
// flood fills only its own, never another's way to the same peer.
func (q *Q) QueuedCallSignals(ctx context.Context, accountID, visitID int64, from, to string) (int, error) {
	var n int
	var err error
	if to == "" {
		err = q.queryRow(ctx, "SELECT COUNT(*) FROM call_signals WHERE account_id = ? AND visit_id = ? AND from_peer = ? AND to_peer = ''", []any{accountID, visitID, from}, &n)
	} else {
		err = q.queryRow(ctx, "SELECT COUNT(*) FROM call_signals WHERE account_id = ? AND visit_id = ? AND from_peer = ? AND to_peer = ?", []any{accountID, visitID, from, to}, &n)
	}
	return n, err
}

// AddCallPeer stores a peer that joins.
func (q *Q) AddCallPeer(ctx context.Context, c *clinic.CallPeer) error {
	_, err := q.exec(ctx, "INSERT INTO call_peers (account_id, visit_id, peer, user_id, name, role, joined, seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		c.AccountID, c.VisitID, c.Peer, c.UserID, c.Name, c.Role, c.Joined, c.Seen)
	return err
}

// CallPeers are the peers of visit's call still in it: not left, and seen
// at or after seenSince.
func (q *Q) CallPeers(ctx context.Context, accountID, visitID, seenSince int64) ([]clinic.CallPeer, error) {
	rows, err := q.query(ctx, `SELECT peer, user_id, name, role, joined, seen FROM call_peers
		WHERE account_id = ? AND visit_id = ? AND left_at = 0 AND seen >= ? ORDER BY joined, peer`, accountID, visitID, seenSince)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []clinic.CallPeer
	for rows.Next() {
		c := clinic.CallPeer{AccountID: accountID, VisitID: visitID}
		if err := rows.Scan(&c.Peer, &c.UserID, &c.Name, &c.Role, &c.Joined, &c.Seen); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, c)
	}
	return out, q.d.translate(rows.Err())
}

// CallPeer finds one peer of visit's call, in it or gone.
func (q *Q) CallPeer(ctx context.Context, accountID, visitID int64, peer string) (*clinic.CallPeer, error) {
	c := clinic.CallPeer{AccountID: accountID, VisitID: visitID, Peer: peer}
	err := q.queryRow(ctx, "SELECT user_id, name, role, joined, seen, left_at FROM call_peers WHERE account_id = ? AND visit_id = ? AND peer = ?",
		[]any{accountID, visitID, peer}, &c.UserID, &c.Name, &c.Role, &c.Joined, &c.Seen, &c.Left)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// SeeCallPeer records that a peer in the call is still there; it reports
// false for a peer that has left.
func (q *Q) SeeCallPeer(ctx context.Context, accountID, visitID int64, peer string, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE call_peers SET seen = ? WHERE account_id = ? AND visit_id = ? AND peer = ? AND left_at = 0", now, accountID, visitID, peer)
	return n == 1, err
}

// LeaveCallPeer marks a peer gone; it reports false when it already was.
func (q *Q) LeaveCallPeer(ctx context.Context, accountID, visitID int64, peer string, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE call_peers SET left_at = ? WHERE account_id = ? AND visit_id = ? AND peer = ? AND left_at = 0", now, accountID, visitID, peer)
	return n == 1, err
}

// EndCall deletes visit's call: its peers and its signals.
func (q *Q) EndCall(ctx context.Context, accountID, visitID int64) error {
	_, err := q.exec(ctx, "DELETE FROM calls WHERE account_id = ? AND visit_id = ?", accountID, visitID)
	return err
}

// CallInvite is a provider's one-time invitation into a visit's call.
type CallInvite struct {
	AccountID, VisitID, InvitedBy int64
	TokenHash                     string
	Created, Expires              int64
	// InterpreterID names the clinic's interpreter the link was sent to
	// (0: a guest of the provider's choosing).
	InterpreterID int64
}

// AddCallInvite records invitation in.
func (q *Q) AddCallInvite(ctx context.Context, in CallInvite) error {
	_, err := q.exec(ctx, "INSERT INTO call_invites (token_hash, account_id, visit_id, invited_by, created, expires, interpreter_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
		in.TokenHash, in.AccountID, in.VisitID, in.InvitedBy, in.Created, in.Expires, in.InterpreterID)
	return err
}

// UseCallInvite accepts the invitation tokenHash of the clinic, once: it
// returns the invitation, or ErrNotFound when there is no such
// invitation, or it was used or has expired.
func (q *Q) UseCallInvite(ctx context.Context, accountID int64, tokenHash string, now int64) (*CallInvite, error) {
	in := CallInvite{AccountID: accountID, TokenHash: tokenHash}
	err := q.queryRow(ctx, "UPDATE call_invites SET used_at = ? WHERE token_hash = ? AND account_id = ? AND used_at = 0 AND expires > ? RETURNING visit_id, invited_by, created, expires, interpreter_id",
		[]any{now, tokenHash, accountID, now}, &in.VisitID, &in.InvitedBy, &in.Created, &in.Expires, &in.InterpreterID)
	if err != nil {
		return nil, err
	}
	return &in, nil
}

// CallInviteOpen reports whether the invitation can still be accepted.
func (q *Q) CallInviteOpen(ctx context.Context, accountID int64, tokenHash string, now int64) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM call_invites WHERE token_hash = ? AND account_id = ? AND used_at = 0 AND expires > ?", []any{tokenHash, accountID, now}, &n)
	return n == 1, err
}

// AddCallGuest makes user a guest of visit's call: the one invitation in
// brought.
func (q *Q) AddCallGuest(ctx context.Context, in *CallInvite, userID, now int64) error {
	_, err := q.exec(ctx, "INSERT INTO call_guests (account_id, visit_id, user_id, invited_by, created, interpreter_id) VALUES (?, ?, ?, ?, ?, ?)",
		in.AccountID, in.VisitID, userID, in.InvitedBy, now, in.InterpreterID)
	return err
}

// CallGuest reports whether user is a guest of visit's call, and the
// interpreter they came as (0: none).
func (q *Q) CallGuest(ctx context.Context, accountID, visitID, userID int64) (guest bool, interpreterID int64, err error) {
	err = q.queryRow(ctx, "SELECT interpreter_id FROM call_guests WHERE account_id = ? AND visit_id = ? AND user_id = ?", []any{accountID, visitID, userID}, &interpreterID)
	if errors.Is(err, ErrNotFound) {
		return false, 0, nil
	}
	return err == nil, interpreterID, err
}

// CallSignalBySeq finds signal seq of visit's call.
func (q *Q) CallSignalBySeq(ctx context.Context, accountID, visitID, seq int64) (*clinic.CallSignal, error) {
	s := clinic.CallSignal{AccountID: accountID, VisitID: visitID, Seq: seq}
	err := q.queryRow(ctx, "SELECT from_peer, to_peer, kind, body, created FROM call_signals WHERE account_id = ? AND visit_id = ? AND seq = ?",
		[]any{accountID, visitID, seq}, &s.From, &s.To, &s.Kind, &s.Body, &s.Created)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// CallSignalsOfKind are visit's signals of kind to peer after number
// after, oldest first.
func (q *Q) CallSignalsOfKind(ctx context.Context, accountID, visitID int64, kind, to string, after int64) ([]clinic.CallSignal, error) {
	rows, err := q.query(ctx, `SELECT seq, from_peer, body, created FROM call_signals
		WHERE account_id = ? AND visit_id = ? AND kind = ? AND to_peer = ? AND seq > ? ORDER BY seq`, accountID, visitID, kind, to, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []clinic.CallSignal
	for rows.Next() {
		s := clinic.CallSignal{AccountID: accountID, VisitID: visitID, Kind: kind, To: to}
		if err := rows.Scan(&s.Seq, &s.From, &s.Body, &s.Created); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, s)
	}
	return out, q.d.translate(rows.Err())
}

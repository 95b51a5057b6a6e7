package store

import (
	"context"

	"teleclinic/internal/clinic"
)

// The text messages' rows (app/sms.go).

// SMSSettings are a clinic's sender; ErrNotFound when it has none.
func (q *Q) SMSSettings(ctx context.Context, accountID int64) (*clinic.SMSSettings, error) {
	var s clinic.SMSSettings
	err := q.queryRow(ctx, `SELECT account_id, provider, account_sid, auth_token, from_number, quiet_start, quiet_end, timezone, modified
		FROM sms_settings WHERE account_id = ?`, []any{accountID},
		&s.AccountID, &s.Provider, &s.AccountSID, &s.SealedToken, &s.From, &s.QuietStart, &s.QuietEnd, &s.Timezone, &s.Modified)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// PutSMSSettings stores a clinic's sender, replacing what it had.
func (q *Q) PutSMSSettings(ctx context.Context, s *clinic.SMSSettings) error {
	_, err := q.exec(ctx, `INSERT INTO sms_settings (account_id, provider, account_sid, auth_token, from_number, quiet_start, quiet_end, timezone, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET provider = excluded.provider, account_sid = excluded.account_sid, auth_token = excluded.auth_token,
		from_number = excluded.from_number, quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end, timezone = excluded.timezone,
		modified = excluded.modified`,
		s.AccountID, s.Provider, s.AccountSID, s.SealedToken, s.From, s.QuietStart, s.QuietEnd, s.Timezone, s.Modified)
	return err
}

// SMSConsent is a person's consent to texts; ErrNotFound when they gave none.
func (q *Q) SMSConsent(ctx context.Context, accountID, userID int64) (*clinic.SMSConsent, error) {
	c := clinic.SMSConsent{AccountID: accountID, UserID: userID}
	err := q.queryRow(ctx, "SELECT phone, consented FROM sms_consents WHERE account_id = ? AND user_id = ?", []any{accountID, userID}, &c.Phone, &c.Consented)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// PutSMSConsent records a person's yes (a new number replaces the old,
// with its own time).
func (q *Q) PutSMSConsent(ctx context.Context, c *clinic.SMSConsent) error {
	_, err := q.exec(ctx, `INSERT INTO sms_consents (account_id, user_id, phone, consented) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id, user_id) DO UPDATE SET phone = excluded.phone, consented = excluded.consented`,
		c.AccountID, c.UserID, c.Phone, c.Consented)
	return err
}

// DeleteSMSConsent withdraws a person's consent; false when there was none.
func (q *Q) DeleteSMSConsent(ctx context.Context, accountID, userID int64) (bool, error) {
	n, err := q.affected(ctx, "DELETE FROM sms_consents WHERE account_id = ? AND user_id = ?", accountID, userID)
	return n > 0, err
}

// SetSMSOptOut records (stop) or lifts (!stop) a number's STOP.
func (q *Q) SetSMSOptOut(ctx context.Context, accountID int64, phone string, stop bool, now int64) error {
	if !stop {
		_, err := q.exec(ctx, "DELETE FROM sms_optouts WHERE account_id = ? AND phone = ?", accountID, phone)
		return err
	}
	_, err := q.exec(ctx, "INSERT INTO sms_optouts (account_id, phone, created) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", accountID, phone, now)
	return err
}

// SMSOptedOut reports whether phone texted STOP to the clinic (and not
// START since).
func (q *Q) SMSOptedOut(ctx context.Context, accountID int64, phone string) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM sms_optouts WHERE account_id = ? AND phone = ?", []any{accountID, phone}, &n)
	return n > 0, err
}

// AddSMSLog writes a delivery log entry and sets its id.
func (q *Q) AddSMSLog(ctx context.Context, e *clinic.SMSLogEntry) error {
	id, err := q.insert(ctx, `INSERT INTO sms_log (account_id, user_id, phone, kind, sid, status, error_code, error, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.AccountID, e.UserID, e.Phone, e.Kind, e.SID, e.Status, e.ErrorCode, e.Error, e.Created, e.Updated)
	e.ID = id
	return err
}

// UpdateSMSLog records what became of a clinic's text id.
func (q *Q) UpdateSMSLog(ctx context.Context, e *clinic.SMSLogEntry) error {
	return q.mustAffect(ctx, "UPDATE sms_log SET phone = ?, sid = ?, status = ?, error_code = ?, error = ?, updated = ? WHERE account_id = ? AND id = ?",
		e.Phone, e.SID, e.Status, e.ErrorCode, e.Error, e.Updated, e.AccountID, e.ID)
}

// SMSStatusBySID records a provider's delivery report of text sid;
// false when the clinic sent no such text.
func (q *Q) SMSStatusBySID(ctx context.Context, accountID int64, sid, status string, code int, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE sms_log SET status = ?, error_code = ?, updated = ? WHERE account_id = ? AND sid = ?", status, code, now, accountID, sid)
	return n > 0, err
}

// SMSLog is a page of a clinic's delivery log, newest first, before id
// before (0: from the newest).
func (q *Q) SMSLog(ctx context.Context, accountID, before int64, limit int) ([]*clinic.SMSLogEntry, error) {
	if before <= 0 {
		before = 1 << 62
	}
	rows, err := q.query(ctx, `SELECT id, account_id, user_id, phone, kind, sid, status, error_code, error, created, updated
		FROM sms_log WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT ?`, accountID, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.SMSLogEntry{}
	for rows.Next() {
		var e clinic.SMSLogEntry
		if err := rows.Scan(&e.ID, &e.AccountID, &e.UserID, &e.Phone, &e.Kind, &e.SID, &e.Status, &e.ErrorCode, &e.Error, &e.Created, &e.Updated); err != nil {
			return nil, err
		}
		out = append(out, &e)
	}
	return out, rows.Err()
}

// UserBySMSPhone is a person of the clinic who said yes to texts at phone
// (the most recent yes, when several share it).
func (q *Q) UserBySMSPhone(ctx context.Context, accountID int64, phone string) (*clinic.User, error) {
	var id int64
	if err := q.queryRow(ctx, "SELECT user_id FROM sms_consents WHERE account_id = ? AND phone = ? ORDER BY consented DESC LIMIT 1",
		[]any{accountID, phone}, &id); err != nil {
		return nil, err
	}
	return q.UserByID(ctx, accountID, id)
}

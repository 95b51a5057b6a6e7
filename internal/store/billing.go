package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"teleclinic/internal/clinic"
)

// BillingSettings is a clinic's card processor.
type BillingSettings struct {
	Processor      string // "sandbox" or "stripe"
	PublishableKey string
	SealedSecret   string
	Modified       int64
}

// BillingSettings reads a clinic's processor; a clinic that never set one
// has the sandbox.
func (q *Q) BillingSettings(ctx context.Context, accountID int64) (*BillingSettings, error) {
	var b BillingSettings
	err := q.queryRow(ctx, "SELECT processor, publishable_key, sealed_secret, modified FROM billing_settings WHERE account_id = ?",
		[]any{accountID}, &b.Processor, &b.PublishableKey, &b.SealedSecret, &b.Modified)
	if errors.Is(err, ErrNotFound) {
		return &BillingSettings{Processor: "sandbox"}, nil
	}
	return &b, err
}

// PutBillingSettings saves a clinic's processor.
func (q *Q) PutBillingSettings(ctx context.Context, accountID int64, b *BillingSettings) error {
	_, err := q.exec(ctx, `INSERT INTO billing_settings (account_id, processor, publishable_key, sealed_secret, modified) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET processor = excluded.processor, publishable_key = excluded.publishable_key,
		sealed_secret = excluded.sealed_secret, modified = excluded.modified`,
		accountID, b.Processor, b.PublishableKey, b.SealedSecret, b.Modified)
	return err
}

// BillingCustomer is the processor's customer for a patient, or "".
func (q *Q) BillingCustomer(ctx context.Context, accountID, userID int64, processor string) (string, error) {
	var ref string
	err := q.queryRow(ctx, "SELECT customer_ref FROM billing_customers WHERE account_id = ? AND user_id = ? AND processor = ?",
		[]any{accountID, userID, processor}, &ref)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return ref, err
}

// PutBillingCustomer records a patient's customer unless one was recorded
// first, and returns the one that stays.
func (q *Q) PutBillingCustomer(ctx context.Context, accountID, userID int64, processor, ref string, now int64) (string, error) {
	if _, err := q.exec(ctx, `INSERT INTO billing_customers (account_id, user_id, processor, customer_ref, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (account_id, user_id, processor) DO NOTHING`, accountID, userID, processor, ref, now); err != nil {
		return "", err
	}
	return q.BillingCustomer(ctx, accountID, userID, processor)
}

// SourceScope names whose cards: a patient's, in a room, for a provider
// (0: the room's own), with one processor.
type SourceScope struct {
	AccountID, UserID, RoomID, ProviderID int64
	Processor                             string
}

const sourceCols = "id, user_id, room_id, provider_id, processor, payment_method, brand, last4, exp_month, exp_year, is_default, created, modified"

func scanSources(rows *sql.Rows) ([]*clinic.PaymentSource, error) {
	out := []*clinic.PaymentSource{}
	for rows.Next() {
		var s clinic.PaymentSource
		var def int
		if err := rows.Scan(&s.ID, &s.UserID, &s.RoomID, &s.ProviderID, &s.Processor, &s.PaymentMethod, &s.Brand, &s.Last4,
			&s.ExpMonth, &s.ExpYear, &def, &s.Created, &s.Modified); err != nil {
			return nil, err
		}
		s.IsDefault = def == 1
		out = append(out, &s)
	}
	return out, rows.Err()
}

// PaymentSources lists a scope's cards, the default first.
func (q *Q) PaymentSources(ctx context.Context, sc SourceScope) ([]*clinic.PaymentSource, error) {
	rows, err := q.query(ctx, "SELECT "+sourceCols+` FROM payment_sources
		WHERE account_id = ? AND user_id = ? AND room_id = ? AND provider_id = ? AND processor = ? ORDER BY is_default DESC, id`,
		sc.AccountID, sc.UserID, sc.RoomID, sc.ProviderID, sc.Processor)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanSources(rows)
}

// PaymentSource finds one of a patient's cards.
func (q *Q) PaymentSource(ctx context.Context, accountID, userID, id int64) (*clinic.PaymentSource, error) {
	rows, err := q.query(ctx, "SELECT "+sourceCols+" FROM payment_sources WHERE account_id = ? AND user_id = ? AND id = ?", accountID, userID, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := scanSources(rows)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out[0], nil
}

// AddPaymentSource saves a card; the scope's first card becomes its
// default. Two first cards saved at once meet the partial unique index, and
// the transaction retries as a second card.
func (q *Q) AddPaymentSource(ctx context.Context, accountID int64, s *clinic.PaymentSource) error {
	var n int
	if err := q.queryRow(ctx, "SELECT COUNT(*) FROM payment_sources WHERE account_id = ? AND user_id = ? AND room_id = ? AND provider_id = ? AND processor = ? AND is_default = 1",
		[]any{accountID, s.UserID, s.RoomID, s.ProviderID, s.Processor}, &n); err != nil {
		return err
	}
	s.IsDefault = n == 0
	id, err := q.insert(ctx, `INSERT INTO payment_sources (account_id, user_id, room_id, provider_id, processor, payment_method, brand, last4, exp_month, exp_year, is_default, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		accountID, s.UserID, s.RoomID, s.ProviderID, s.Processor, s.PaymentMethod, s.Brand, s.Last4, s.ExpMonth, s.ExpYear, b2i(s.IsDefault), s.Created, s.Modified)
	if errors.Is(err, ErrConflict) {
		return &driverError{ErrRetry, err}
	}
	s.ID = id
	return err
}

// MakeDefaultSource makes a card its scope's default.
func (q *Q) MakeDefaultSource(ctx context.Context, accountID int64, s *clinic.PaymentSource, now int64) error {
	if _, err := q.exec(ctx, `UPDATE payment_sources SET is_default = 0, modified = ?
		WHERE account_id = ? AND user_id = ? AND room_id = ? AND provider_id = ? AND processor = ? AND is_default = 1 AND id <> ?`,
		now, accountID, s.UserID, s.RoomID, s.ProviderID, s.Processor, s.ID); err != nil {
		return err
	}
	return q.mustAffect(ctx, "UPDATE payment_sources SET is_default = 1, modified = ? WHERE account_id = ? AND user_id = ? AND id = ?", now, accountID, s.UserID, s.ID)
}

// DeletePaymentSource removes a card; when it was the default, the scope's
// oldest other card becomes the default.
func (q *Q) DeletePaymentSource(ctx context.Context, accountID int64, s *clinic.PaymentSource, now int64) error {
	if err := q.mustAffect(ctx, "DELETE FROM payment_sources WHERE account_id = ? AND user_id = ? AND id = ?", accountID, s.UserID, s.ID); err != nil {
		return err
	}
	if !s.IsDefault {
		return nil
	}
	_, err := q.exec(ctx, `UPDATE payment_sources SET is_default = 1, modified = ? WHERE id = (
		SELECT MIN(id) FROM payment_sources WHERE account_id = ? AND user_id = ? AND room_id = ? AND provider_id = ? AND processor = ?)`,
		now, accountID, s.UserID, s.RoomID, s.ProviderID, s.Processor)
	return err
}

const couponCols = "id, code, percent_off_bp, valid_until, max_redemptions, redemptions, active, created, modified"

func scanCoupon(sc interface{ Scan(...any) error }) (*clinic.Coupon, error) {
	var c clinic.Coupon
	var active int
	err := sc.Scan(&c.ID, &c.Code, &c.PercentOffBP, &c.ValidUntil, &c.MaxRedemptions, &c.Redemptions, &active, &c.Created, &c.Modified)
	c.Active = active == 1
	return &c, err
}

// CreateCoupon adds a coupon; a code already used (even deactivated) is
// ErrConflict, so a code on a receipt always names one coupon.
func (q *Q) CreateCoupon(ctx context.Context, accountID int64, c *clinic.Coupon) error {
	id, err := q.insert(ctx, `INSERT INTO coupons (account_id, code, percent_off_bp, valid_until, max_redemptions, redemptions, active, created, modified)
		VALUES (?, ?, ?, ?, ?, 0, 1, ?, ?)`, accountID, c.Code, c.PercentOffBP, c.ValidUntil, c.MaxRedemptions, c.Created, c.Modified)
	c.ID, c.Active = id, true
	return err
}

// Coupons lists a clinic's coupons, newest first.
func (q *Q) Coupons(ctx context.Context, accountID int64) ([]*clinic.Coupon, error) {
	rows, err := q.query(ctx, "SELECT "+couponCols+" FROM coupons WHERE account_id = ? ORDER BY id DESC", accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Coupon{}
	for rows.Next() {
		c, err := scanCoupon(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CouponByCode finds a coupon by its (upper-case) code.
func (q *Q) CouponByCode(ctx context.Context, accountID int64, code string) (*clinic.Coupon, error) {
	rows, err := q.query(ctx, "SELECT "+couponCols+" FROM coupons WHERE account_id = ? AND code = ?", accountID, code)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, ErrNotFound
	}
	return scanCoupon(rows)
}

// DeactivateCoupon stops a coupon from being used again.
func (q *Q) DeactivateCoupon(ctx context.Context, accountID int64, code string, now int64) error {
	return q.mustAffect(ctx, "UPDATE coupons SET active = 0, modified = ? WHERE account_id = ? AND code = ?", now, accountID, code)
}

// RedeemCoupon uses a coupon once if it is active, unexpired and not used
// up; false means it was not (another use may just have taken the last).
func (q *Q) RedeemCoupon(ctx context.Context, accountID, id, now int64) (bool, error) {
	n, err := q.affected(ctx, `UPDATE coupons SET redemptions = redemptions + 1, modified = ?
		WHERE account_id = ? AND id = ? AND active = 1 AND (valid_until = 0 OR valid_until >= ?) AND (max_redemptions = 0 OR redemptions < max_redemptions)`,
		now, accountID, id, now)
	return n == 1, err
}

// ReleaseCoupon gives back a use whose charge failed.
func (q *Q) ReleaseCoupon(ctx context.Context, accountID, id, now int64) error {
	_, err := q.exec(ctx, "UPDATE coupons SET redemptions = redemptions - 1, modified = ? WHERE account_id = ? AND id = ? AND redemptions > 0", now, accountID, id)
	return err
}

const invoiceCols = `id, kind, intake_id, member_id, visit_id, room_id, source_id, processor, consultation, currency, amount, discount, amount_due,
	coupon_id, coupon_code, percent_off_bp, status, charge_ref, failure_code, failure_message, refunded, refund_ref, attempt_started, created, modified`

func scanInvoices(rows *sql.Rows) ([]*clinic.Invoice, error) {
	out := []*clinic.Invoice{}
	for rows.Next() {
		var v clinic.Invoice
		var cons string
		if err := rows.Scan(&v.ID, &v.Kind, &v.IntakeID, &v.MemberID, &v.VisitID, &v.RoomID, &v.SourceID, &v.Processor, &cons, &v.Currency, &v.Amount,
			&v.Discount, &v.AmountDue, &v.CouponID, &v.CouponCode, &v.PercentOffBP, &v.Status, &v.ChargeRef, &v.FailureCode, &v.FailureMessage,
			&v.Refunded, &v.RefundRef, &v.AttemptStarted, &v.Created, &v.Modified); err != nil {
			return nil, err
		}
		v.Consultation = json.RawMessage(cons)
		out = append(out, &v)
	}
	return out, rows.Err()
}

// CreateInvoice records a new pending invoice for an intake. When the
// intake already has one that did not fail, nothing is written and
// ErrConflict says so: the caller answers with the existing one.
func (q *Q) CreateInvoice(ctx context.Context, accountID int64, v *clinic.Invoice) error {
	id, err := q.insert(ctx, `INSERT INTO invoices (account_id, intake_id, member_id, visit_id, room_id, source_id, processor, consultation, currency,
		amount, discount, amount_due, coupon_id, coupon_code, percent_off_bp, status, attempt_started, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, intake_id) WHERE status <> 'failed' AND kind = 'visit' DO NOTHING`,
		accountID, v.IntakeID, v.MemberID, v.VisitID, v.RoomID, v.SourceID, v.Processor, string(v.Consultation), v.Currency,
		v.Amount, v.Discount, v.AmountDue, v.CouponID, v.CouponCode, v.PercentOffBP, v.Status, v.AttemptStarted, v.Created, v.Modified)
	if errors.Is(err, ErrNotFound) {
		return ErrConflict
	}
	v.ID = id
	return err
}

// CreateFeeInvoice writes v, a fee invoice of a visit, unless the visit
// has a fee of that kind that did not fail: then it answers ErrConflict.
func (q *Q) CreateFeeInvoice(ctx context.Context, accountID int64, v *clinic.Invoice) error {
	id, err := q.insert(ctx, `INSERT INTO invoices (account_id, kind, intake_id, member_id, visit_id, room_id, source_id, processor, consultation, currency,
		amount, discount, amount_due, status, failure_code, failure_message, attempt_started, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (account_id, visit_id, kind) WHERE status <> 'failed' AND kind <> 'visit' DO NOTHING`,
		accountID, v.Kind, v.IntakeID, v.MemberID, v.VisitID, v.RoomID, v.SourceID, v.Processor, string(v.Consultation), v.Currency,
		v.Amount, v.Discount, v.AmountDue, v.Status, v.FailureCode, v.FailureMessage, v.AttemptStarted, v.Created, v.Modified)
	if errors.Is(err, ErrNotFound) {
		return ErrConflict
	}
	v.ID = id
	return err
}

// FeeInvoice is visit visitID's fee of kind that did not fail.
func (q *Q) FeeInvoice(ctx context.Context, accountID, visitID int64, kind string) (*clinic.Invoice, error) {
	out, err := q.invoices(ctx, "account_id = ? AND visit_id = ? AND kind = ? AND status <> 'failed'", []any{accountID, visitID, kind}, 1)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out[0], nil
}

// ClaimInvoiceCharge takes over a pending invoice whose charge attempt
// started before staleBefore (its process died or timed out); true means
// this caller now makes the attempt.
func (q *Q) ClaimInvoiceCharge(ctx context.Context, accountID, id, staleBefore, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE invoices SET attempt_started = ?, modified = ? WHERE account_id = ? AND id = ? AND status = 'pending' AND attempt_started < ?",
		now, now, accountID, id, staleBefore)
	return n == 1, err
}

// FinishInvoice records how a charge or refund ended: the invoice moves
// from one status to another only if it is still in the first.
func (q *Q) FinishInvoice(ctx context.Context, accountID int64, v *clinic.Invoice, from string) error {
	return q.mustAffect(ctx, `UPDATE invoices SET status = ?, charge_ref = ?, failure_code = ?, failure_message = ?, refunded = ?, refund_ref = ?, modified = ?
		WHERE account_id = ? AND id = ? AND status = ?`,
		v.Status, v.ChargeRef, v.FailureCode, v.FailureMessage, v.Refunded, v.RefundRef, v.Modified, accountID, v.ID, from)
}

// MoveInvoice changes an invoice's status if it is in the expected one;
// false means another call moved it first.
func (q *Q) MoveInvoice(ctx context.Context, accountID, id int64, from, to string, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE invoices SET status = ?, modified = ? WHERE account_id = ? AND id = ? AND status = ?", to, now, accountID, id, from)
	return n == 1, err
}

// InvoiceByID finds an invoice of the clinic.
func (q *Q) InvoiceByID(ctx context.Context, accountID, id int64) (*clinic.Invoice, error) {
	out, err := q.invoices(ctx, "account_id = ? AND id = ?", []any{accountID, id}, 1)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out[0], nil
}

// OpenInvoiceForIntake finds the intake's invoice that did not fail.
func (q *Q) OpenInvoiceForIntake(ctx context.Context, accountID, intakeID int64) (*clinic.Invoice, error) {
	out, err := q.invoices(ctx, "account_id = ? AND intake_id = ? AND status <> 'failed' AND kind = 'visit'", []any{accountID, intakeID}, 1)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out[0], nil
}

// InvoiceFilter narrows GET /billing/invoices; zero fields do not filter.
type InvoiceFilter struct {
	MemberID, VisitID, IntakeID int64
	Before                      int64 // ids below this (paging)
	Limit                       int
}

// Invoices lists a clinic's invoices, newest first.
func (q *Q) Invoices(ctx context.Context, accountID int64, f InvoiceFilter) ([]*clinic.Invoice, error) {
	where := []string{"account_id = ?"}
	args := []any{accountID}
	for _, c := range []struct {
		col string
		v   int64
	}{{"member_id", f.MemberID}, {"visit_id", f.VisitID}, {"intake_id", f.IntakeID}} {
		if c.v != 0 {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.Before > 0 {
		where = append(where, "id < ?")
		args = append(args, f.Before)
	}
	return q.invoices(ctx, strings.Join(where, " AND "), args, f.Limit)
}

func (q *Q) invoices(ctx context.Context, where string, args []any, limit int) ([]*clinic.Invoice, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := q.query(ctx, "SELECT "+invoiceCols+" FROM invoices WHERE "+where+" ORDER BY id DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanInvoices(rows)
}

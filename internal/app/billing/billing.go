package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
	"teleclinic/internal/store"
)

// Invoice statuses.
const (
	InvoicePending   = "pending"   // written; the charge is being made
	InvoicePaid      = "paid"      // charged (or nothing was due)
	InvoiceFailed    = "failed"    // the processor refused the card
	InvoiceRefunding = "refunding" // a refund is being made
	InvoiceRefunded  = "refunded"
)

// chargeLease is how long a pending invoice's charge attempt is left to the
// call that started it. After that a retry takes it over and charges with
// the same idempotency key, so the processor still makes one charge.
const chargeLease = 2 * time.Minute

// processorTimeout bounds one call to the card processor. Calls run without
// the request's cancellation: a patient closing the page must not leave a
// charge made but unrecorded.
const processorTimeout = 60 * time.Second

// Processor returns the clinic's card processor: Stripe with its keys once
// its admin saved them, else the sandbox.
func (s *Service) processor(ctx context.Context, accountID int64) (payments.Processor, error) {
	bs, err := s.core.Read().BillingSettings(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("billing settings: %w", err)
	}
	if bs.Processor != "stripe" {
		return s.cfg.Sandbox, nil
	}
	secret, err := s.core.Unseal(bs.SealedSecret)
	if err != nil {
		return nil, fmt.Errorf("billing settings: %w", err)
	}
	return payments.NewStripe(payments.StripeConfig{SecretKey: string(secret), PublishableKey: bs.PublishableKey, APIURL: s.cfg.StripeAPIURL}), nil
}

// BillingInfo is what a browser needs to tokenize cards.
type BillingInfo struct {
	Processor      string
	PublishableKey string
	Sandbox        bool
	SecretKeySet   bool
}

// BillingSettings is GET /billing/settings.
func (s *Service) BillingSettings(ctx context.Context, p *clinic.Principal) (*BillingInfo, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err != nil {
		return nil, err
	}
	return &BillingInfo{Processor: proc.Name(), PublishableKey: proc.PublishableKey(), Sandbox: proc.Sandbox(), SecretKeySet: proc.Name() == "stripe"}, nil
}

// ProcessorInput is POST /billing/processor (admin).
type ProcessorInput struct {
	Processor      string // "sandbox" or "stripe"
	SecretKey      string
	PublishableKey string
}

// SetProcessor chooses a clinic's card processor. Stripe keys must be a
// pair of the same mode; the secret is sealed at rest and never shown again.
func (s *Service) SetProcessor(ctx context.Context, p *clinic.Principal, in ProcessorInput) (*BillingInfo, error) {
	if err := app.RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := app.CheckFields(app.Line("processor", in.Processor, 32), app.Line("secret_key", in.SecretKey, app.MaxLineChars),
		app.Line("publishable_key", in.PublishableKey, app.MaxLineChars)); err != nil {
		return nil, err
	}
	bs := &store.BillingSettings{Processor: strings.ToLower(strings.TrimSpace(in.Processor)), Modified: s.core.Unix()}
	switch bs.Processor {
	case "sandbox":
	case "stripe":
		sk, pk := strings.TrimSpace(in.SecretKey), strings.TrimSpace(in.PublishableKey)
		mode := func(k string, prefixes ...string) string {
			for _, pre := range prefixes {
				for _, m := range []string{"test", "live"} {
					if strings.HasPrefix(k, pre+"_"+m+"_") && len(k) > len(pre)+6 {
						return m
					}
				}
			}
			return ""
		}
		skMode, pkMode := mode(sk, "sk", "rk"), mode(pk, "pk")
		switch {
		case skMode == "":
			return nil, clinic.Errorf(clinic.EInvalid, "secret_key must be a Stripe secret or restricted key (sk_test_…, sk_live_…).")
		case pkMode == "":
			return nil, clinic.Errorf(clinic.EInvalid, "publishable_key must be a Stripe publishable key (pk_test_…, pk_live_…).")
		case skMode != pkMode:
			return nil, clinic.Errorf(clinic.EInvalid, "secret_key is a %s key and publishable_key a %s key; give a pair of the same mode.", skMode, pkMode)
		}
		sealed, err := s.core.Seal([]byte(sk))
		if err != nil {
			return nil, err
		}
		bs.PublishableKey, bs.SealedSecret = pk, sealed
	default:
		return nil, clinic.Errorf(clinic.EInvalid, "processor must be sandbox or stripe.")
	}
	err := s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.PutBillingSettings(ctx, p.Account.ID, bs); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "billing.processor.update", "account", p.Account.Code, app.OutcomeOK)
	})
	if err != nil {
		return nil, app.StoreErr("billing settings", err, "")
	}
	return s.BillingSettings(ctx, p)
}

// SourceInput names a card scope: a room by code and optionally a provider.
type SourceInput struct {
	RoomCode   string
	ProviderID int64
}

// sourceScope resolves a scope for the calling patient, with the clinic's
// processor.
func (s *Service) sourceScope(ctx context.Context, p *clinic.Principal, in SourceInput) (store.SourceScope, payments.Processor, error) {
	if p.User == nil {
		return store.SourceScope{}, nil, clinic.Errorf(clinic.EForbidden, "Payment sources belong to a user; use a user token.")
	}
	if strings.TrimSpace(in.RoomCode) == "" {
		return store.SourceScope{}, nil, clinic.Errorf(clinic.EInvalid, "room_code is required.")
	}
	r, err := s.core.RoomByCode(ctx, p, in.RoomCode)
	if err != nil {
		return store.SourceScope{}, nil, err
	}
	sc := store.SourceScope{AccountID: p.Account.ID, UserID: p.User.ID, RoomID: r.ID}
	if in.ProviderID != 0 {
		prov, err := s.core.ProviderByID(ctx, p, in.ProviderID)
		if err != nil {
			return store.SourceScope{}, nil, err
		}
		sc.ProviderID = prov.ID
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err != nil {
		return store.SourceScope{}, nil, err
	}
	sc.Processor = proc.Name()
	return sc, proc, nil
}

// Sources is GET /billing/sources: the caller's cards in a scope, the
// default first. Cards saved with another processor than the clinic's
// current one cannot be charged and are not listed.
func (s *Service) Sources(ctx context.Context, p *clinic.Principal, in SourceInput, typ string) ([]*clinic.PaymentSource, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	sc, _, err := s.sourceScope(ctx, p, in)
	if err != nil {
		return nil, err
	}
	if typ != "" && typ != "card" {
		return []*clinic.PaymentSource{}, nil
	}
	out, err := s.core.Read().PaymentSources(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("payment sources: %w", err)
	}
	return out, s.core.Audit(ctx, p, "billing.source.list", "user", i64s(p.User.ID), app.OutcomeOK)
}

// AddSource is POST /billing/sources: the processor turns the browser's
// token into a card saved on the patient's customer, and we keep its
// reference. The scope's first card becomes its default.
func (s *Service) AddSource(ctx context.Context, p *clinic.Principal, in SourceInput, typ, token string) (*clinic.PaymentSource, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	sc, proc, err := s.sourceScope(ctx, p, in)
	if err != nil {
		return nil, err
	}
	switch {
	case typ == "":
		return nil, clinic.Errorf(clinic.EInvalid, "type is required (card).")
	case typ != "card":
		return nil, clinic.Errorf(clinic.EInvalid, "type %q is not supported; only card.", typ)
	case strings.TrimSpace(token) == "":
		return nil, clinic.Errorf(clinic.EInvalid, "token is required: the card processor's token for the card.")
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), processorTimeout)
	defer cancel()
	customer, err := s.customer(pctx, p, proc)
	if err != nil {
		return nil, err
	}
	card, err := proc.AttachCard(pctx, customer, strings.TrimSpace(token))
	if err != nil {
		err = processorErr(err, "save the card")
		return nil, s.core.AuditOutcome(ctx, p, "billing.source.add", "user", i64s(p.User.ID), err)
	}
	now := s.core.Unix()
	src := &clinic.PaymentSource{UserID: p.User.ID, RoomID: sc.RoomID, ProviderID: sc.ProviderID, Processor: sc.Processor,
		PaymentMethod: card.PaymentMethod, Brand: card.Brand, Last4: card.Last4, ExpMonth: card.ExpMonth, ExpYear: card.ExpYear, Created: now, Modified: now}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.AddPaymentSource(ctx, p.Account.ID, src); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "billing.source.add", "payment_source", i64s(src.ID), app.OutcomeOK)
	})
	if err != nil {
		return nil, app.StoreErr("save card", err, "")
	}
	return src, nil
}

// customer finds or makes the processor's customer for the calling patient.
func (s *Service) customer(ctx context.Context, p *clinic.Principal, proc payments.Processor) (string, error) {
	ref, err := s.core.Read().BillingCustomer(ctx, p.Account.ID, p.User.ID, proc.Name())
	if err != nil || ref != "" {
		return ref, err
	}
	ref, err = proc.EnsureCustomer(ctx, "", payments.Customer{Email: p.User.Email, Name: strings.TrimSpace(p.User.FirstName + " " + p.User.LastName),
		AccountCode: p.Account.Code, UserID: i64s(p.User.ID)})
	if err != nil {
		return "", processorErr(err, "create the customer")
	}
	// Two first cards at once may both make a customer; the first recorded
	// one is kept and used by both.
	return s.core.Write().PutBillingCustomer(ctx, p.Account.ID, p.User.ID, proc.Name(), ref, s.core.Unix())
}

// Source is GET /billing/sources/{id}. A room_code or provider_id given
// must be the card's scope.
func (s *Service) Source(ctx context.Context, p *clinic.Principal, id int64, in SourceInput) (*clinic.PaymentSource, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	src, err := s.ownSource(ctx, p, id, in)
	if err != nil {
		return nil, err
	}
	return src, s.core.Audit(ctx, p, "billing.source.get", "payment_source", i64s(src.ID), app.OutcomeOK)
}

func (s *Service) ownSource(ctx context.Context, p *clinic.Principal, id int64, in SourceInput) (*clinic.PaymentSource, error) {
	if p.User == nil {
		return nil, clinic.Errorf(clinic.EForbidden, "Payment sources belong to a user; use a user token.")
	}
	notFound := clinic.Errorf(clinic.ENotFound, "Payment source not found.")
	src, err := s.core.Read().PaymentSource(ctx, p.Account.ID, p.User.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("payment source: %w", err)
	}
	if in.RoomCode != "" {
		r, err := s.core.Read().RoomByCode(ctx, p.Account.ID, in.RoomCode)
		if err != nil || r.ID != src.RoomID {
			return nil, notFound
		}
	}
	if in.ProviderID != 0 && in.ProviderID != src.ProviderID {
		return nil, notFound
	}
	return src, nil
}

// UpdateSource is PUT /billing/sources/{id}: is_default true makes the
// card its scope's default. A scope always keeps one default while it has
// cards, so the default cannot be unset, only replaced.
func (s *Service) UpdateSource(ctx context.Context, p *clinic.Principal, id int64, in SourceInput, isDefault *bool) (*clinic.PaymentSource, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	src, err := s.ownSource(ctx, p, id, in)
	if err != nil {
		return nil, err
	}
	if isDefault == nil || *isDefault == src.IsDefault {
		return src, nil
	}
	if !*isDefault {
		return nil, clinic.Errorf(clinic.EInvalid, "This card is the default; make another card the default instead.")
	}
	now := s.core.Unix()
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.MakeDefaultSource(ctx, p.Account.ID, src, now); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "billing.source.update", "payment_source", i64s(src.ID), app.OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, clinic.Errorf(clinic.EConflict, "Another card was made the default at the same time; try again.")
	}
	if err != nil {
		return nil, app.StoreErr("payment source", err, "Payment source not found.")
	}
	src.IsDefault, src.Modified = true, now
	return src, nil
}

// DeleteSource is DELETE /billing/sources/{id}. Deleting the default makes
// the scope's oldest other card the default. The card is removed from the
// processor's customer after the commit.
func (s *Service) DeleteSource(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := app.RequireUser(p); err != nil {
		return err
	}
	src, err := s.ownSource(ctx, p, id, SourceInput{})
	if err != nil {
		return err
	}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.DeletePaymentSource(ctx, p.Account.ID, src, s.core.Unix()); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "billing.source.delete", "payment_source", i64s(src.ID), app.OutcomeOK)
	})
	if err != nil {
		return app.StoreErr("payment source", err, "Payment source not found.")
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err == nil && proc.Name() == src.Processor {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), processorTimeout)
		defer cancel()
		err = proc.DetachCard(pctx, src.PaymentMethod)
	}
	if err != nil {
		s.log.Warn("card deleted here but not detached at the processor", "account", p.Account.Code, "source", src.ID, "err", err)
	}
	return nil
}

// CouponInput is POST /billing/coupons.
type CouponInput struct {
	Code           string
	PercentOff     string
	ValidUntil     string // unix seconds, RFC 3339, or a date (valid through its end, UTC)
	MaxRedemptions int64
}

var couponCode = regexp.MustCompile(`^[A-Z0-9][A-Z0-9_-]{2,39}$`)

// normCoupon is a coupon code as stored: codes are case-insensitive.
func normCoupon(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

// CreateCoupon is POST /billing/coupons (admin).
func (s *Service) CreateCoupon(ctx context.Context, p *clinic.Principal, in CouponInput) (*clinic.Coupon, error) {
	if err := app.RequireAdmin(p); err != nil {
		return nil, err
	}
	code := normCoupon(in.Code)
	if !couponCode.MatchString(code) {
		return nil, clinic.Errorf(clinic.EInvalid, "code must be 3 to 40 letters, digits, '-' or '_'.")
	}
	pct, err := strconv.ParseFloat(strings.TrimSpace(in.PercentOff), 64)
	bp := int(math.Round(pct * 100))
	if err != nil || pct <= 0 || pct > 100 || math.Abs(pct*100-float64(bp)) > 1e-6 {
		return nil, clinic.Errorf(clinic.EInvalid, "percent_off must be a number above 0 and at most 100, with at most two decimals.")
	}
	until, err := parseUntil(in.ValidUntil)
	if err != nil {
		return nil, err
	}
	if until != 0 && until < s.core.Unix() {
		return nil, clinic.Errorf(clinic.EInvalid, "valid_until is in the past.")
	}
	if in.MaxRedemptions < 0 || in.MaxRedemptions > 1e9 {
		return nil, clinic.Errorf(clinic.EInvalid, "max_redemptions must be 0 (no limit) or more.")
	}
	now := s.core.Unix()
	c := &clinic.Coupon{Code: code, PercentOffBP: bp, ValidUntil: until, MaxRedemptions: int(in.MaxRedemptions), Created: now, Modified: now}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateCoupon(ctx, p.Account.ID, c); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "coupon.create", "coupon", code, app.OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, clinic.Errorf(clinic.EConflict, "Coupon %s already exists; codes are never reused.", code)
	}
	return c, app.StoreErr("coupon", err, "")
}

func parseUntil(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.Unix(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.Add(24*time.Hour - time.Second).Unix(), nil
	}
	return 0, clinic.Errorf(clinic.EInvalid, "valid_until must be unix seconds, an RFC 3339 time or a date (YYYY-MM-DD).")
}

// Coupons is GET /billing/coupons (admin).
func (s *Service) Coupons(ctx context.Context, p *clinic.Principal) ([]*clinic.Coupon, error) {
	if err := app.RequireAdmin(p); err != nil {
		return nil, err
	}
	out, err := s.core.Read().Coupons(ctx, p.Account.ID)
	return out, app.StoreErr("coupons", err, "")
}

// DeactivateCoupon is DELETE /billing/coupons/{code} (admin): the coupon
// stays on the invoices that used it and can no longer be used.
func (s *Service) DeactivateCoupon(ctx context.Context, p *clinic.Principal, code string) (*clinic.Coupon, error) {
	if err := app.RequireAdmin(p); err != nil {
		return nil, err
	}
	code = normCoupon(code)
	var c *clinic.Coupon
	err := s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.DeactivateCoupon(ctx, p.Account.ID, code, s.core.Unix()); err != nil {
			return err
		}
		var err error
		if c, err = q.CouponByCode(ctx, p.Account.ID, code); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "coupon.deactivate", "coupon", code, app.OutcomeOK)
	})
	return c, app.StoreErr("coupon", err, "Coupon not found.")
}

// couponCheck says whether a coupon may be used now, and why not.
func (s *Service) couponCheck(c *clinic.Coupon) string {
	switch {
	case !c.Active:
		return "inactive"
	case c.ValidUntil != 0 && s.core.Unix() > c.ValidUntil:
		return "expired"
	case c.MaxRedemptions > 0 && c.Redemptions >= c.MaxRedemptions:
		return "used_up"
	}
	return ""
}

var couponReasons = map[string]string{
	"unknown":  "is not a coupon of this clinic",
	"inactive": "is no longer offered",
	"expired":  "has expired",
	"used_up":  "has been used as many times as it may be",
}

// InvoiceInput is POST /billing/invoices/process.
type InvoiceInput struct {
	IntakeID      int64
	PromoCode     string
	CreateInvoice bool
	SourceID      int64 // a card of the patient's; 0: the scope's default card
}

// CouponView is a coupon as applied to an invoice.
type CouponView struct {
	Code         string
	PercentOffBP int
	Valid        bool
	Reason       string // "", unknown, inactive, expired, used_up
}

// InvoiceView is the preview of an intake's bill and, once created, the
// invoice. Amounts are minor units.
type InvoiceView struct {
	Currency     string
	Consultation clinic.Consultation
	Coupon       *CouponView
	Amount       int64
	Discount     int64
	AmountDue    int64
	Invoice      *clinic.Invoice
	RoomCode     string
}

// ProcessInvoice is POST /billing/invoices/process: the bill of an intake's
// consultation with an optional coupon and, with create_invoice, the charge
// of the patient's card. An intake is charged at most once: its invoice is
// written (with the coupon's use) before the charge, a unique index lets
// only one call write it, and the others answer with that invoice.
func (s *Service) ProcessInvoice(ctx context.Context, p *clinic.Principal, in InvoiceInput) (*InvoiceView, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	it, err := s.billableIntake(ctx, p, in.IntakeID)
	if err != nil {
		return nil, err
	}
	if in.CreateInvoice {
		// A repeat (a retry after a lost answer, a second tap) answers with
		// the intake's invoice, whatever has become of its coupon since.
		if v, err := s.repeatInvoice(ctx, p, it); v != nil || err != nil {
			return v, err
		}
	}
	v, coupon, err := s.preview(ctx, p, it, in.PromoCode)
	if err != nil {
		return nil, err
	}
	if !in.CreateInvoice {
		if inv, err := s.core.Read().OpenInvoiceForIntake(ctx, p.Account.ID, it.ID); err == nil {
			v.Invoice = inv
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("invoice: %w", err)
		}
		return v, nil
	}
	if v.Coupon != nil && !v.Coupon.Valid {
		// A concurrent call may have written the invoice, and used the
		// coupon up, since the look above.
		if v, err := s.repeatInvoice(ctx, p, it); v != nil || err != nil {
			return v, err
		}
		return nil, clinic.Errorf(clinic.EInvalid, "Coupon %s %s; no invoice was created.", v.Coupon.Code, couponReasons[v.Coupon.Reason])
	}
	inv, created, err := s.createInvoice(ctx, p, it, v, coupon, in.SourceID)
	if err != nil {
		return nil, err
	}
	if inv.Status == InvoicePending {
		if inv, err = s.charge(ctx, p, inv, created); err != nil {
			return nil, err
		}
	}
	return invoiceView(inv, v.RoomCode), nil
}

// repeatInvoice answers a repeated process of an intake that has its
// invoice: that invoice as the first success showed it, charged first if
// its charge was left pending by a call that did not finish. It is nil,
// nil when the intake has no invoice (or only failed ones).
func (s *Service) repeatInvoice(ctx context.Context, p *clinic.Principal, it *clinic.Intake) (*InvoiceView, error) {
	inv, err := s.core.Read().OpenInvoiceForIntake(ctx, p.Account.ID, it.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("invoice: %w", err)
	}
	roomCode := ""
	if r, err := s.core.Read().RoomByID(ctx, p.Account.ID, inv.RoomID); err == nil {
		roomCode = r.Code
	}
	if inv.Status == InvoicePending {
		if inv, err = s.charge(ctx, p, inv, false); err != nil {
			return nil, err
		}
	}
	return invoiceView(inv, roomCode), nil
}

// billableIntake finds an intake the caller may pay for: the patient's own,
// or any for the clinic admin.
func (s *Service) billableIntake(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Intake, error) {
	if id == 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "intake_id is required.")
	}
	notFound := clinic.Errorf(clinic.ENotFound, "Intake not found.")
	it, err := s.core.Read().IntakeByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	switch {
	case p.IsAdmin(), p.User != nil && p.User.ID == it.MemberID:
		return it, nil
	case app.IsProvider(p):
		return nil, clinic.Errorf(clinic.EForbidden, "Only the patient or the clinic admin may pay for an intake.")
	}
	return nil, notFound
}

// preview prices an intake: its consultation from the room, the coupon's
// discount. The coupon is returned for redemption.
func (s *Service) preview(ctx context.Context, p *clinic.Principal, it *clinic.Intake, promo string) (*InvoiceView, *clinic.Coupon, error) {
	r, err := s.core.Read().RoomByID(ctx, p.Account.ID, it.RoomID)
	if err != nil {
		return nil, nil, app.StoreErr("room", err, "The intake's room no longer exists.")
	}
	cons := r.Settings.Consultations
	if len(cons) == 0 {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "Room %s offers no consultation to bill.", r.Code)
	}
	c := cons[0]
	if it.ConsultationID != "" {
		found := false
		for _, rc := range cons {
			if rc.ID == it.ConsultationID {
				c, found = rc, true
			}
		}
		if !found {
			return nil, nil, clinic.Errorf(clinic.EInvalid, "The intake's consultation %q is no longer offered by room %s.", it.ConsultationID, r.Code)
		}
	}
	currency := strings.ToUpper(strings.TrimSpace(r.Settings.Currency))
	if currency == "" {
		currency = "USD"
	}
	amount, ok := payments.ToMinor(c.Amount, currency)
	if !ok {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "Room %s prices consultation %s at %v, which %s cannot express.", r.Code, c.ID, c.Amount, currency)
	}
	if !c.Charge {
		// A consultation the room does not charge for is shown with its
		// price and nothing due.
		amount = 0
	}
	v := &InvoiceView{Currency: currency, Consultation: c, Amount: amount, AmountDue: amount, RoomCode: r.Code}
	var coupon *clinic.Coupon
	if code := normCoupon(promo); code != "" {
		v.Coupon = &CouponView{Code: code}
		coupon, err = s.core.Read().CouponByCode(ctx, p.Account.ID, code)
		switch {
		case errors.Is(err, store.ErrNotFound):
			v.Coupon.Reason, coupon = "unknown", nil
		case err != nil:
			return nil, nil, fmt.Errorf("coupon: %w", err)
		default:
			v.Coupon.PercentOffBP = coupon.PercentOffBP
			v.Coupon.Reason = s.couponCheck(coupon)
		}
		v.Coupon.Valid = v.Coupon.Reason == ""
		if v.Coupon.Valid {
			v.Discount = (amount*int64(coupon.PercentOffBP) + 5000) / 10000
			v.AmountDue = amount - v.Discount
		}
	}
	return v, coupon, nil
}

// createInvoice writes the intake's invoice and redeems its coupon in one
// transaction. When the intake already has an invoice that did not fail,
// that one is returned and created is false.
func (s *Service) createInvoice(ctx context.Context, p *clinic.Principal, it *clinic.Intake, v *InvoiceView, coupon *clinic.Coupon, sourceID int64) (*clinic.Invoice, bool, error) {
	if inv, err := s.core.Read().OpenInvoiceForIntake(ctx, p.Account.ID, it.ID); err == nil {
		return inv, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, fmt.Errorf("invoice: %w", err)
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err != nil {
		return nil, false, err
	}
	var src *clinic.PaymentSource
	if v.AmountDue > 0 {
		if src, err = s.chargeSource(ctx, p, it, proc.Name(), sourceID); err != nil {
			return nil, false, err
		}
	}
	cons, _ := json.Marshal(v.Consultation)
	now := s.core.Unix()
	inv := &clinic.Invoice{Kind: clinic.InvoiceVisit, IntakeID: it.ID, MemberID: it.MemberID, VisitID: it.VisitID, RoomID: it.RoomID, Processor: proc.Name(),
		Consultation: cons, Currency: v.Currency, Amount: v.Amount, Discount: v.Discount, AmountDue: v.AmountDue,
		Status: InvoicePending, AttemptStarted: now, Created: now, Modified: now}
	if src != nil {
		inv.SourceID = src.ID
	} else {
		inv.Status = InvoicePaid // nothing is due: nothing to charge
	}
	if coupon != nil {
		inv.CouponID, inv.CouponCode, inv.PercentOffBP = coupon.ID, coupon.Code, coupon.PercentOffBP
	}
	created := true
	errCouponGone := clinic.Errorf(clinic.EInvalid, "Coupon %s %s; no invoice was created.", inv.CouponCode, couponReasons["used_up"])
	err = s.core.Tx(ctx, func(q *store.Q) error {
		created = true
		err := q.CreateInvoice(ctx, p.Account.ID, inv)
		if errors.Is(err, store.ErrConflict) {
			created = false
			existing, err := q.OpenInvoiceForIntake(ctx, p.Account.ID, it.ID)
			if err != nil {
				return err
			}
			*inv = *existing
			return nil
		}
		if err != nil {
			return err
		}
		if coupon != nil {
			ok, err := q.RedeemCoupon(ctx, p.Account.ID, coupon.ID, now)
			if err != nil {
				return err
			}
			if !ok {
				return errCouponGone
			}
		}
		return s.core.AuditIn(ctx, q, p, "invoice.create", "invoice", i64s(inv.ID), app.OutcomeOK)
	})
	if err != nil {
		return nil, false, app.StoreErr("invoice", err, "")
	}
	return inv, created, nil
}

// chargeSource is the card an intake is charged to: the one named, else the
// default card for the intake's room and provider, else the room's own.
func (s *Service) chargeSource(ctx context.Context, p *clinic.Principal, it *clinic.Intake, processor string, sourceID int64) (*clinic.PaymentSource, error) {
	if sourceID != 0 {
		src, serr := s.core.Read().PaymentSource(ctx, p.Account.ID, it.MemberID, sourceID)
		if errors.Is(serr, store.ErrNotFound) || (serr == nil && src.Processor != processor) {
			return nil, clinic.Errorf(clinic.EInvalid, "source_id is not a saved card of the patient.")
		}
		return src, serr
	}
	for _, prov := range []int64{it.ProviderID, 0} {
		srcs, err := s.core.Read().PaymentSources(ctx, store.SourceScope{AccountID: p.Account.ID, UserID: it.MemberID, RoomID: it.RoomID, ProviderID: prov, Processor: processor})
		if err != nil {
			return nil, fmt.Errorf("payment sources: %w", err)
		}
		if len(srcs) > 0 && srcs[0].IsDefault {
			return srcs[0], nil
		}
		if prov == 0 {
			break
		}
	}
	return nil, clinic.Errorf(clinic.EInvalid, "No card is saved for this room; save one with POST /billing/sources first.")
}

// charge makes a pending invoice's charge, if no other call is making it,
// and records how it ended. The idempotency key is the invoice's, so a
// charge retried after a crash or a lapsed lease is still one charge.
func (s *Service) charge(ctx context.Context, p *clinic.Principal, inv *clinic.Invoice, mine bool) (*clinic.Invoice, error) {
	now := s.core.Unix()
	// The call that wrote the invoice holds its attempt; another takes it
	// over only once the lease has lapsed.
	if !mine {
		ok, err := s.core.Write().ClaimInvoiceCharge(ctx, p.Account.ID, inv.ID, now-int64(chargeLease/time.Second), now)
		if err != nil {
			return nil, fmt.Errorf("invoice: %w", err)
		}
		if !ok {
			// Another call is charging it and answers with the outcome.
			return nil, clinic.Errorf(clinic.EConflict, "Invoice %d is being charged by another request; process it again in a moment for its outcome.", inv.ID)
		}
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err != nil {
		return nil, err
	}
	if proc.Name() != inv.Processor {
		return nil, clinic.Errorf(clinic.EConflict, "Invoice %d was started with the %s processor; the clinic now uses %s.", inv.ID, inv.Processor, proc.Name())
	}
	src, err := s.core.Read().PaymentSource(ctx, p.Account.ID, inv.MemberID, inv.SourceID)
	var customer string
	if err == nil {
		customer, err = s.core.Read().BillingCustomer(ctx, p.Account.ID, inv.MemberID, inv.Processor)
	}
	var ch *payments.Charge
	if err == nil {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), processorTimeout)
		defer cancel()
		var cons clinic.Consultation
		_ = json.Unmarshal(inv.Consultation, &cons)
		ch, err = proc.Charge(pctx, payments.ChargeRequest{Customer: customer, PaymentMethod: src.PaymentMethod, Amount: inv.AmountDue,
			Currency: inv.Currency, Description: cons.Description, IdempotencyKey: fmt.Sprintf("invoice-%s-%d", p.Account.Code, inv.ID),
			Metadata: map[string]string{"account_code": p.Account.Code, "invoice_id": i64s(inv.ID), "intake_id": i64s(inv.IntakeID)}})
	} else if errors.Is(err, store.ErrNotFound) {
		err = &payments.CardError{Code: "resource_missing", Message: "The card this invoice was to be charged to was deleted."}
	}
	out := *inv
	out.Modified = s.core.Unix()
	outcome := app.OutcomeOf(err) // ok, or the refusal (the only error that gets past the switch)
	ce, declined := payments.AsCardError(err)
	switch {
	case err == nil:
		out.Status, out.ChargeRef = InvoicePaid, ch.ID
	case declined:
		out.Status, out.FailureCode, out.FailureMessage = InvoiceFailed, ce.Code, ce.Message
	default:
		// The processor did not answer: the charge may or may not exist.
		// The invoice stays pending; a retry after the lease charges with
		// the same key and learns the outcome.
		s.log.Error("charge: processor did not answer", "account", p.Account.Code, "invoice", inv.ID, "err", err)
		return nil, clinic.Errorf(clinic.EUnavailable, "The card processor did not answer. Invoice %d stays pending; process it again in a few minutes to complete it.", inv.ID)
	}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.FinishInvoice(ctx, p.Account.ID, &out, InvoicePending); err != nil {
			return err
		}
		if out.Status == InvoiceFailed && out.CouponID != 0 {
			// The coupon was not used after all.
			if err := q.ReleaseCoupon(ctx, p.Account.ID, out.CouponID, out.Modified); err != nil {
				return err
			}
		}
		if out.Status == InvoicePaid && out.ChargeRef != "" {
			if err := s.core.Emit(ctx, q, p.Account.ID, app.EventPaymentSucceeded, paymentHook(&out)); err != nil {
				return err
			}
		}
		return s.core.AuditIn(ctx, q, p, "invoice.charge", "invoice", i64s(inv.ID), outcome)
	})
	if err != nil {
		return nil, app.StoreErr("invoice", err, "")
	}
	if declined {
		return nil, clinic.Errorf(clinic.EPayment, "%s Invoice %d failed (%s); nothing was charged.", ce.Message, inv.ID, ce.Code)
	}
	return &out, nil
}

func invoiceView(inv *clinic.Invoice, roomCode string) *InvoiceView {
	v := &InvoiceView{Currency: inv.Currency, Amount: inv.Amount, Discount: inv.Discount, AmountDue: inv.AmountDue, Invoice: inv, RoomCode: roomCode}
	_ = json.Unmarshal(inv.Consultation, &v.Consultation)
	if inv.CouponCode != "" {
		v.Coupon = &CouponView{Code: inv.CouponCode, PercentOffBP: inv.PercentOffBP, Valid: true}
	}
	return v
}

// InvoiceQuery is GET /billing/invoices.
type InvoiceQuery struct {
	MemberID, VisitID, IntakeID int64 // 0: any
	Before                      int64
	Limit                       int
}

// Invoices is GET /billing/invoices: the admin sees the clinic's, a
// patient their own.
func (s *Service) Invoices(ctx context.Context, p *clinic.Principal, in InvoiceQuery) (clinic.Page[*clinic.Invoice], error) {
	var none clinic.Page[*clinic.Invoice]
	if err := app.RequireUser(p); err != nil {
		return none, err
	}
	f := store.InvoiceFilter{Before: in.Before, Limit: min(max(in.Limit, 1), 200)}
	if in.Limit == 0 {
		f.Limit = 50
	}
	f.MemberID, f.VisitID, f.IntakeID = in.MemberID, in.VisitID, in.IntakeID
	switch {
	case p.IsAdmin():
	case app.IsPatient(p):
		if f.MemberID != 0 && f.MemberID != p.User.ID {
			return clinic.Page[*clinic.Invoice]{Items: []*clinic.Invoice{}}, nil
		}
		f.MemberID = p.User.ID
	default:
		return none, clinic.Errorf(clinic.EForbidden, "Only the clinic admin and patients see invoices.")
	}
	if err := s.invoiceCursor(ctx, p, f); err != nil {
		return none, err
	}
	size := f.Limit
	f.Limit++
	invs, err := s.core.Read().Invoices(ctx, p.Account.ID, f)
	if err != nil {
		return none, fmt.Errorf("invoices: %w", err)
	}
	return clinic.PageOf(invs, size, func(inv *clinic.Invoice) int64 { return inv.ID }), s.core.Audit(ctx, p, "invoice.list", "account", p.Account.Code, app.OutcomeOK)
}

// invoiceCursor refuses a before that is not an invoice of the list f
// reads (the clinic's, or the patient's own): a page after it would be a
// guess, as the other keyset lists answer.
func (s *Service) invoiceCursor(ctx context.Context, p *clinic.Principal, f store.InvoiceFilter) error {
	if f.Before == 0 {
		return nil
	}
	bad := clinic.Errorf(clinic.EInvalid, "before must be the id of the last invoice of the page before.")
	if f.Before < 0 {
		return bad
	}
	inv, err := s.core.Read().InvoiceByID(ctx, p.Account.ID, f.Before)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return bad
	case err != nil:
		return fmt.Errorf("invoices: %w", err)
	case f.MemberID != 0 && inv.MemberID != f.MemberID:
		return bad
	}
	return nil
}

// RefundInvoice is POST /billing/invoices/{id}/refund (admin): all of a
// paid invoice or part of it (amount in major units), once. The invoice
// moves to refunding by a conditional UPDATE, so two refunds at once make
// one; the refund's idempotency key is the invoice's.
func (s *Service) RefundInvoice(ctx context.Context, p *clinic.Principal, id int64, amountStr string) (*clinic.Invoice, error) {
	if err := app.RequireAdmin(p); err != nil {
		return nil, err
	}
	inv, err := s.core.Read().InvoiceByID(ctx, p.Account.ID, id)
	if err != nil {
		return nil, app.StoreErr("invoice", err, "Invoice not found.")
	}
	return s.refund(ctx, p, inv, amountStr)
}

// refund gives back amountStr (all of it when "") of paid invoice inv, on
// behalf of p: the admin, or a patient whose cancellation the clinic's
// policy refunds.
func (s *Service) refund(ctx context.Context, p *clinic.Principal, inv *clinic.Invoice, amountStr string) (*clinic.Invoice, error) {
	if inv.Status != InvoicePaid {
		return nil, clinic.Errorf(clinic.EConflict, "Invoice %d is %s; only a paid invoice can be refunded.", inv.ID, inv.Status)
	}
	if inv.ChargeRef == "" {
		return nil, clinic.Errorf(clinic.EConflict, "Nothing was charged for invoice %d.", inv.ID)
	}
	amount := inv.AmountDue
	if s := strings.TrimSpace(amountStr); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		n, ok := payments.ToMinor(f, inv.Currency)
		if err != nil || !ok || n <= 0 || n > inv.AmountDue {
			return nil, clinic.Errorf(clinic.EInvalid, "amount must be more than 0 and at most the amount charged (%s %v).", inv.Currency, payments.ToMajor(inv.AmountDue, inv.Currency))
		}
		amount = n
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err != nil {
		return nil, err
	}
	if proc.Name() != inv.Processor {
		return nil, clinic.Errorf(clinic.EConflict, "Invoice %d was charged with the %s processor; refund it there.", inv.ID, inv.Processor)
	}
	ok, err := s.core.Write().MoveInvoice(ctx, p.Account.ID, inv.ID, InvoicePaid, InvoiceRefunding, s.core.Unix())
	if err != nil {
		return nil, fmt.Errorf("invoice: %w", err)
	}
	if !ok {
		return nil, clinic.Errorf(clinic.EConflict, "Invoice %d is already being refunded.", inv.ID)
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), processorTimeout)
	defer cancel()
	re, rerr := proc.Refund(pctx, payments.RefundRequest{Charge: inv.ChargeRef, Amount: amount, IdempotencyKey: fmt.Sprintf("refund-%s-%d", p.Account.Code, inv.ID)})
	out := *inv
	out.Modified = s.core.Unix()
	if rerr == nil {
		out.Status, out.Refunded, out.RefundRef = InvoiceRefunded, re.Amount, re.ID
	} else {
		out.Status = InvoicePaid // as it was; a retry uses the same key
	}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.FinishInvoice(ctx, p.Account.ID, &out, InvoiceRefunding); err != nil {
			return err
		}
		if out.Status == InvoiceRefunded {
			if err := s.core.Emit(ctx, q, p.Account.ID, app.EventPaymentRefunded, paymentHook(&out)); err != nil {
				return err
			}
		}
		return s.core.AuditIn(ctx, q, p, "invoice.refund", "invoice", i64s(inv.ID), app.OutcomeOf(rerr))
	})
	if err != nil {
		return nil, app.StoreErr("invoice", err, "")
	}
	if ce, ok := payments.AsCardError(rerr); ok {
		return nil, clinic.Errorf(clinic.EPayment, "The processor refused the refund: %s", ce.Message)
	} else if rerr != nil {
		s.log.Error("refund: processor did not answer", "account", p.Account.Code, "invoice", inv.ID, "err", rerr)
		return nil, clinic.Errorf(clinic.EUnavailable, "The card processor did not answer; invoice %d is still paid. Try the refund again.", inv.ID)
	}
	return &out, nil
}

// processorErr makes a processor's refusal a client error and anything
// else (network, credentials) an unavailable processor.
func processorErr(err error, what string) error {
	if ce, ok := payments.AsCardError(err); ok {
		if ce.Code == "resource_missing" || ce.Code == "invalid_request" || ce.Code == "" {
			return clinic.Errorf(clinic.EInvalid, "The card processor could not %s: %s", what, ce.Message)
		}
		return clinic.Errorf(clinic.EPayment, "%s", ce.Message)
	}
	return clinic.Errorf(clinic.EUnavailable, "The card processor could not %s; try again later.", what)
}

// PaymentHook is the data of payment.succeeded and payment.refunded: the
// invoice, its patient, what was charged and refunded (minor units).
type PaymentHook struct {
	InvoiceID string `json:"invoice_id"`
	PatientID string `json:"patient_id"`
	IntakeID  string `json:"intake_id,omitempty"`
	Currency  string `json:"currency"`
	Amount    int64  `json:"amount"`
	Refunded  int64  `json:"refunded"`
	Status    string `json:"status"`
}

func paymentHook(inv *clinic.Invoice) PaymentHook {
	h := PaymentHook{InvoiceID: i64s(inv.ID), PatientID: i64s(inv.MemberID), Currency: inv.Currency, Amount: inv.AmountDue, Refunded: inv.Refunded, Status: inv.Status}
	if inv.IntakeID != 0 {
		h.IntakeID = i64s(inv.IntakeID)
	}
	return h
}

// Due is what a booking for an intake must pay before its time is booked:
// the intake's bill (its consultation's price, less its coupon), unless it
// is paid; nil when nothing is due (a room with nothing to bill, a free
// consultation, a paid invoice). The portal's pay step and FHIR's $book
// ask it alike.
func (s *Service) Due(ctx context.Context, p *clinic.Principal, intakeID int64) (*InvoiceView, error) {
	bill, err := s.ProcessInvoice(ctx, p, InvoiceInput{IntakeID: intakeID})
	switch {
	case clinic.ErrorCode(err) == clinic.EInvalid: // a room with nothing to bill
		return nil, nil
	case err != nil:
		return nil, err
	case bill.AmountDue > 0 && (bill.Invoice == nil || bill.Invoice.Status != InvoicePaid):
		return bill, nil
	}
	return nil, nil
}

// FirstPrice is what an intake not yet filed in room r would be billed,
// as preview prices one with no consultation chosen: the room's first
// consultation, when it charges; nil when nothing would be due.
func FirstPrice(r *clinic.Room) *InvoiceView {
	cons := r.Settings.Consultations
	if len(cons) == 0 || !cons[0].Charge || cons[0].Amount <= 0 {
		return nil
	}
	currency := strings.ToUpper(strings.TrimSpace(r.Settings.Currency))
	if currency == "" {
		currency = "USD"
	}
	amount, ok := payments.ToMinor(cons[0].Amount, currency)
	if !ok {
		return nil
	}
	return &InvoiceView{Currency: currency, Consultation: cons[0], Amount: amount, AmountDue: amount, RoomCode: r.Code}
}

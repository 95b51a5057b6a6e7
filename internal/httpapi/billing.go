package httpapi

import (
	"encoding/json"
	"net/http"

	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
)

// billingSettingsOut is GET /billing/settings: the spec's `processor` and
// the original's `stripe` form (docs/compat.md), with the same key.
type billingSettingsOut struct {
	Processor processorOut   `json:"processor"`
	Stripe    publishableOut `json:"stripe"`
}

type processorOut struct {
	Name           string `json:"name"`
	PublishableKey string `json:"publishable_key"`
	Sandbox        bool   `json:"sandbox"`
	SecretKeySet   bool   `json:"secret_key_set,omitempty"`
}

type publishableOut struct {
	PublishableKey string `json:"publishable_key"`
}

func toProcessor(b *billing.BillingInfo) processorOut {
	return processorOut{Name: b.Processor, PublishableKey: b.PublishableKey, Sandbox: b.Sandbox, SecretKeySet: b.SecretKeySet}
}

func (s *Server) billingSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	b, err := s.billing.BillingSettings(r.Context(), c.p)
	if err != nil {
		return err
	}
	return ok(w, billingSettingsOut{Processor: toProcessor(b), Stripe: publishableOut{PublishableKey: b.PublishableKey}})
}

func (s *Server) getProcessor(w http.ResponseWriter, r *http.Request, c *call) error {
	b, err := s.billing.BillingSettings(r.Context(), c.p)
	if err != nil {
		return err
	}
	return ok(w, toProcessor(b))
}

func (s *Server) setProcessor(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	b, err := s.billing.SetProcessor(r.Context(), c.p, billing.ProcessorInput{Processor: q.Str("processor"), SecretKey: q.Str("secret_key"), PublishableKey: q.Str("publishable_key")})
	if err != nil {
		return err
	}
	return ok(w, toProcessor(b))
}

// sourceOut is the spec's payment source.
type sourceOut struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Brand      string `json:"brand"`
	Last4      string `json:"last4"`
	ExpMonth   int    `json:"exp_month"`
	ExpYear    int    `json:"exp_year"`
	IsDefault  bool   `json:"is_default"`
	ProviderID string `json:"provider_id"`
	Created    int64  `json:"created"`
}

func toSource(src *clinic.PaymentSource) sourceOut {
	return sourceOut{ID: id(src.ID), Type: "card", Brand: src.Brand, Last4: src.Last4, ExpMonth: src.ExpMonth, ExpYear: src.ExpYear,
		IsDefault: src.IsDefault, ProviderID: id(src.ProviderID), Created: src.Created}
}

func sourceInput(c *call) (billing.SourceInput, error) {
	prov, err := refID(c, "provider_id")
	return billing.SourceInput{RoomCode: c.params.Str("room_code"), ProviderID: prov}, err
}

func (s *Server) listSources(w http.ResponseWriter, r *http.Request, c *call) error {
	sin, err := sourceInput(c)
	if err != nil {
		return err
	}
	srcs, err := s.billing.Sources(r.Context(), c.p, sin, c.params.Str("type"))
	if err != nil {
		return err
	}
	out := make([]sourceOut, len(srcs))
	for i, src := range srcs {
		out[i] = toSource(src)
	}
	return ok(w, out)
}

func (s *Server) addSource(w http.ResponseWriter, r *http.Request, c *call) error {
	sin, err := sourceInput(c)
	if err != nil {
		return err
	}
	src, err := s.billing.AddSource(r.Context(), c.p, sin, c.params.Str("type"), c.params.Str("token"))
	if err != nil {
		return err
	}
	return ok(w, toSource(src))
}

func (s *Server) getSource(w http.ResponseWriter, r *http.Request, c *call) error {
	sourceID, err := pathID(c, "id", "Payment source")
	if err != nil {
		return err
	}
	sin, err := sourceInput(c)
	if err != nil {
		return err
	}
	src, err := s.billing.Source(r.Context(), c.p, sourceID, sin)
	if err != nil {
		return err
	}
	return ok(w, toSource(src))
}

func (s *Server) updateSource(w http.ResponseWriter, r *http.Request, c *call) error {
	def, err := c.params.Bool("is_default")
	if err != nil {
		return err
	}
	sourceID, err := pathID(c, "id", "Payment source")
	if err != nil {
		return err
	}
	sin, err := sourceInput(c)
	if err != nil {
		return err
	}
	src, err := s.billing.UpdateSource(r.Context(), c.p, sourceID, sin, def)
	if err != nil {
		return err
	}
	return ok(w, toSource(src))
}

func (s *Server) deleteSource(w http.ResponseWriter, r *http.Request, c *call) error {
	sourceID, err := pathID(c, "id", "Payment source")
	if err != nil {
		return err
	}
	if err := s.billing.DeleteSource(r.Context(), c.p, sourceID); err != nil {
		return err
	}
	return ok(w, []any{})
}

// couponOut is a coupon as the admin sees it.
type couponOut struct {
	ID             string  `json:"id"`
	Code           string  `json:"code"`
	PercentOff     float64 `json:"percent_off"`
	ValidUntil     int64   `json:"valid_until"`
	MaxRedemptions int     `json:"max_redemptions"`
	Redemptions    int     `json:"redemptions"`
	Active         bool    `json:"active"`
	Created        int64   `json:"created"`
	Modified       int64   `json:"modified"`
}

func toCoupon(c *clinic.Coupon) couponOut {
	return couponOut{ID: c.Code, Code: c.Code, PercentOff: float64(c.PercentOffBP) / 100, ValidUntil: c.ValidUntil, MaxRedemptions: c.MaxRedemptions,
		Redemptions: c.Redemptions, Active: c.Active, Created: c.Created, Modified: c.Modified}
}

func (s *Server) createCoupon(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	maxN, err := q.Int("max_redemptions", 0)
	if err != nil {
		return err
	}
	cp, err := s.billing.CreateCoupon(r.Context(), c.p, billing.CouponInput{Code: q.Str("code"), PercentOff: q.Str("percent_off"), ValidUntil: q.Str("valid_until"), MaxRedemptions: maxN})
	if err != nil {
		return err
	}
	return ok(w, toCoupon(cp))
}

func (s *Server) listCoupons(w http.ResponseWriter, r *http.Request, c *call) error {
	cps, err := s.billing.Coupons(r.Context(), c.p)
	if err != nil {
		return err
	}
	out := make([]couponOut, len(cps))
	for i, cp := range cps {
		out[i] = toCoupon(cp)
	}
	return ok(w, out)
}

func (s *Server) deactivateCoupon(w http.ResponseWriter, r *http.Request, c *call) error {
	cp, err := s.billing.DeactivateCoupon(r.Context(), c.p, c.params.Str("code"))
	if err != nil {
		return err
	}
	return ok(w, toCoupon(cp))
}

// previewOut is the spec's invoice preview; `invoice` appears once the
// intake has one.
type previewOut struct {
	Currency     string          `json:"currency"`
	Consultation consultationOut `json:"consultation"`
	Coupon       *couponApplied  `json:"coupon"`
	Amount       float64         `json:"amount"`
	Discount     float64         `json:"discount"`
	AmountDue    float64         `json:"amount_due"`
	Invoice      *invoiceOut     `json:"invoice,omitempty"`
}

type consultationOut struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Amount      float64 `json:"amount"`
	Duration    int     `json:"duration"`
}

type couponApplied struct {
	ID         string  `json:"id"`
	PercentOff float64 `json:"percent_off"`
	Valid      bool    `json:"valid"`
	Reason     string  `json:"reason,omitempty"`
}

// invoiceOut is an invoice: amounts in major units, as the room prices them.
type invoiceOut struct {
	ID             string          `json:"id"`
	Kind           string          `json:"kind"`
	Status         string          `json:"status"`
	IntakeID       string          `json:"intake_id"`
	VisitID        string          `json:"visit_id"`
	MemberID       string          `json:"member_id"`
	Currency       string          `json:"currency"`
	Consultation   consultationOut `json:"consultation"`
	CouponCode     string          `json:"coupon_code"`
	PercentOff     float64         `json:"percent_off"`
	Amount         float64         `json:"amount"`
	Discount       float64         `json:"discount"`
	AmountDue      float64         `json:"amount_due"`
	AmountRefunded float64         `json:"amount_refunded"`
	SourceID       string          `json:"source_id"`
	Processor      string          `json:"processor"`
	ChargeID       string          `json:"charge_id"`
	RefundID       string          `json:"refund_id"`
	FailureCode    string          `json:"failure_code"`
	FailureMessage string          `json:"failure_message"`
	Created        int64           `json:"created"`
	Modified       int64           `json:"modified"`
}

func toConsultation(c clinic.Consultation) consultationOut {
	return consultationOut{ID: c.ID, Description: c.Description, Amount: c.Amount, Duration: c.Duration}
}

func toInvoice(inv *clinic.Invoice) *invoiceOut {
	m := func(n int64) float64 { return payments.ToMajor(n, inv.Currency) }
	var cons clinic.Consultation
	_ = json.Unmarshal(inv.Consultation, &cons)
	out := &invoiceOut{ID: id(inv.ID), Kind: inv.Kind, Status: inv.Status, IntakeID: id(inv.IntakeID), MemberID: id(inv.MemberID), Currency: inv.Currency,
		Consultation: toConsultation(cons), CouponCode: inv.CouponCode, PercentOff: float64(inv.PercentOffBP) / 100,
		Amount: m(inv.Amount), Discount: m(inv.Discount), AmountDue: m(inv.AmountDue), AmountRefunded: m(inv.Refunded),
		Processor: inv.Processor, ChargeID: inv.ChargeRef, RefundID: inv.RefundRef, FailureCode: inv.FailureCode, FailureMessage: inv.FailureMessage,
		Created: inv.Created, Modified: inv.Modified}
	if inv.VisitID != 0 {
		out.VisitID = id(inv.VisitID)
	}
	if inv.SourceID != 0 {
		out.SourceID = id(inv.SourceID)
	}
	return out
}

func (s *Server) processInvoice(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	create, err := q.Flag("create_invoice")
	if err != nil {
		return err
	}
	in := billing.InvoiceInput{PromoCode: q.First("promo_code", "coupon"), CreateInvoice: create}
	if err := readRefs(c, ref{dst: &in.IntakeID, name: "intake_id"}, ref{dst: &in.SourceID, name: "source_id"}); err != nil {
		return err
	}
	v, err := s.billing.ProcessInvoice(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	m := func(n int64) float64 { return payments.ToMajor(n, v.Currency) }
	out := previewOut{Currency: v.Currency, Consultation: toConsultation(v.Consultation), Amount: m(v.Amount), Discount: m(v.Discount), AmountDue: m(v.AmountDue)}
	if v.Coupon != nil {
		out.Coupon = &couponApplied{ID: v.Coupon.Code, PercentOff: float64(v.Coupon.PercentOffBP) / 100, Valid: v.Coupon.Valid, Reason: v.Coupon.Reason}
	}
	if v.Invoice != nil {
		out.Invoice = toInvoice(v.Invoice)
	}
	return ok(w, out)
}

func (s *Server) listInvoices(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	before, limit, err := q.Keyset("before")
	if err != nil {
		return err
	}
	in := billing.InvoiceQuery{Before: before, Limit: limit}
	if err := readRefs(c, ref{dst: &in.MemberID, name: "member_id"}, ref{dst: &in.VisitID, name: "visit_id"}, ref{dst: &in.IntakeID, name: "intake_id"}); err != nil {
		return err
	}
	invs, err := s.billing.Invoices(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	nextLink(w, r, "before", invs.Next)
	out := make([]*invoiceOut, len(invs.Items))
	for i, inv := range invs.Items {
		out[i] = toInvoice(inv)
	}
	return ok(w, out)
}

func (s *Server) refundInvoice(w http.ResponseWriter, r *http.Request, c *call) error {
	invoiceID, err := pathID(c, "id", "Invoice")
	if err != nil {
		return err
	}
	inv, err := s.billing.RefundInvoice(r.Context(), c.p, invoiceID, c.params.Str("amount"))
	if err != nil {
		return err
	}
	return ok(w, toInvoice(inv))
}

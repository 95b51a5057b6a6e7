package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/payments"
	"teleclinic/internal/testenv"

	"github.com/google/go-cmp/cmp"
)

// billingSetup is a clinic whose room "main" charges: consultation 1 at
// 25.00 USD, 2 at 40.50, 3 free (charge false).
func billingSetup(t *testing.T) (*testenv.Env, *clinicSetup, *payments.Sandbox) {
	t.Helper()
	clock := testenv.NewClock()
	sb := payments.NewSandbox(clock.Now)
	e := testenv.New(t, testenv.Options{Clock: clock, Config: func(c *app.Config) { c.Sandbox = sb }})
	s := newClinicSetup(t, e, "alpha")
	mustOK(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(`{
		"payment": {"currency": "usd", "consultations": [
			{"id": "1", "description": "15-min Consultation", "duration": 15, "amount": 25, "charge": true},
			{"id": "2", "description": "Follow-up", "duration": 30, "amount": 40.5, "charge": true},
			{"id": "3", "description": "Free triage", "duration": 5, "amount": 10, "charge": false}]}}`)}))
	return e, s, sb
}

func TestBilling_Settings(t *testing.T) {
	t.Parallel()
	e, s, _ := billingSetup(t)
	h := userHeaders(s.c, s.pat.Token)
	d := decode[client.BillingSettings](t, e.Do(testenv.Req{Path: "/api_v3/billing/settings.json", Header: h})).Data
	if p := d.Processor; p.Name != "sandbox" || !p.Sandbox || p.PublishableKey != "pk_test_sandbox" || d.Stripe.PublishableKey != "pk_test_sandbox" {
		t.Fatalf("%+v", d)
	}
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/billing/settings", Header: acctHeaders(s.c)}), 401, 401)

	set := func(h map[string]string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/processor", Header: h, Form: q(kv...)})
	}
	wantErr(t, set(h, "processor", "sandbox"), 401, 401) // admin routes take the admin token only
	wantErr(t, set(adminHeaders(s.c), "processor", "paypal"), 400, 400)
	wantErr(t, set(adminHeaders(s.c), "processor", "stripe", "secret_key", "sk_test_abc", "publishable_key", "pk_live_abc"), 400, 400)
	wantErr(t, set(adminHeaders(s.c), "processor", "stripe", "secret_key", "nope", "publishable_key", "pk_test_abc"), 400, 400)
	res := set(adminHeaders(s.c), "processor", "stripe", "secret_key", "sk_test_51secretvalue", "publishable_key", "pk_test_51public")
	if p := dataOf[client.Processor](t, res); p.Name != "stripe" || p.SecretKeySet == nil || !*p.SecretKeySet || !p.Sandbox {
		t.Fatalf("%s", res.Raw)
	}
	if strings.Contains(string(res.Raw), "sk_test") {
		t.Fatal("the secret key was shown")
	}
	if n := count(t, e, "SELECT COUNT(*) FROM billing_settings WHERE sealed_secret LIKE '%sk_test%'"); n != 0 {
		t.Fatal("the secret key is stored in the clear")
	}
	if d := decode[client.BillingSettings](t, e.Do(testenv.Req{Path: "/api_v3/billing/settings", Header: h})).Data; d.Stripe.PublishableKey != "pk_test_51public" || d.Processor.Name != "stripe" {
		t.Fatalf("%+v", d)
	}
	// Another clinic still has the sandbox.
	other := e.NewClinic("beta", true)
	mustRoom(t, e, other, js(`{"domain": "beta.clinic.test", "name": "Main", "code": "main"}`))
	op := mustSSO(t, e, other, "200", "p", "P", "Q")
	if d := decode[client.BillingSettings](t, e.Do(testenv.Req{Path: "/api_v3/billing/settings", Header: userHeaders(other, op.Token)})).Data; d.Processor.Name != "sandbox" {
		t.Fatalf("%+v", d)
	}
	if p := dataOf[client.Processor](t, set(adminHeaders(s.c), "processor", "sandbox")); p.Name != "sandbox" {
		t.Fatalf("%+v", p)
	}
}

func TestBilling_Sources(t *testing.T) {
	t.Parallel()
	e, s, _ := billingSetup(t)
	h := userHeaders(s.c, s.pat.Token)
	add := func(query []string, form ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/sources.json", Header: h, Query: q(query...), Form: q(form...)})
	}
	main := []string{"room_code", "main"}
	wantErr(t, add(nil, "type", "card", "token", "tok_visa"), 400, 400)
	wantErr(t, add([]string{"room_code", "nope"}, "type", "card", "token", "tok_visa"), 404, 404)
	wantErr(t, add(main, "token", "tok_visa"), 400, 400)
	wantErr(t, add(main, "type", "bank_account", "token", "tok_visa"), 400, 400)
	wantErr(t, add(main, "type", "card"), 400, 400)
	wantErr(t, add(main, "type", "card", "token", "tok_unknown"), 400, 400)
	wantErr(t, add(main, "type", "card", "token", "4242424242424242"), 400, 400)
	res := add(main, "type", "card", "token", "tok_chargeDeclined")
	wantErr(t, res, 402, 402)
	if !strings.Contains(messageOf(res), "declined") {
		t.Fatalf("%s", res.Raw)
	}
	if res := add(main, "type", "card", "token", "tok_chargeDeclinedExpiredCard"); res.Status != 402 || !strings.Contains(string(res.Raw), "expired") {
		t.Fatalf("%s", res.Raw)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM payment_sources"); n != 0 {
		t.Fatalf("refused cards were saved: %d", n)
	}

	visa := s.addCard(t, s.pat, "tok_visa")
	if !visa.IsDefault || visa.Brand != "visa" || visa.Last4 != "4242" || visa.Type != "card" || visa.ExpMonth != 12 {
		t.Fatalf("first card: %+v", visa)
	}
	// A JSON body with the scope in the query, as clients send it.
	mc := dataOf[client.PaymentSource](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/sources", Header: h, Query: q(main...), JSON: js(`{"type": "card", "token": "pm_card_mastercard"}`)}))
	if mc.IsDefault || mc.Last4 != "4444" {
		t.Fatalf("second card: %+v", mc)
	}
	sources := func(kv ...string) []client.PaymentSource {
		t.Helper()
		return dataOf[[]client.PaymentSource](t, e.Do(testenv.Req{Path: "/api_v3/billing/sources", Header: h, Query: q(kv...)}))
	}
	if list := sources("room_code", "main", "type", "card"); len(list) != 2 || list[0].Id != visa.Id || list[1].Id != mc.Id {
		t.Fatalf("%+v", list)
	}
	if l := sources("room_code", "main", "type", "ach"); len(l) != 0 {
		t.Fatalf("%+v", l)
	}
	// A provider's scope is its own, with its own default.
	docScope := []string{"room_code", "main", "provider_id", s.doc.UserID}
	if l := sources(docScope...); len(l) != 0 {
		t.Fatalf("provider scope: %+v", l)
	}
	amex := s.addCard(t, s.pat, "tok_amex", "provider_id", s.doc.UserID)
	if !amex.IsDefault || amex.ProviderId == nil || *amex.ProviderId != s.doc.UserID {
		t.Fatalf("%+v", amex)
	}
	wantErr(t, add([]string{"room_code", "main", "provider_id", "999999"}, "type", "card", "token", "tok_visa"), 400, 400)

	src := "/api_v3/billing/sources/"
	if got := dataOf[client.PaymentSource](t, e.Do(testenv.Req{Path: src + visa.Id, Header: h, Query: q("room_code", "main")})); got.Last4 != "4242" {
		t.Fatalf("%+v", got)
	}
	wantErr(t, e.Do(testenv.Req{Path: src + visa.Id, Header: h, Query: q(docScope...)}), 404, 404)
	// Another patient sees nothing of them.
	h2 := userHeaders(s.c, s.pat2.Token)
	wantErr(t, e.Do(testenv.Req{Path: src + visa.Id, Header: h2}), 404, 404)
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: src + visa.Id, Header: h2}), 404, 404)
	if l := dataOf[[]client.PaymentSource](t, e.Do(testenv.Req{Path: "/api_v3/billing/sources", Header: h2, Query: q(main...)})); len(l) != 0 {
		t.Fatalf("%+v", l)
	}

	// Defaults: one per scope.
	put := func(id string, body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PUT", Path: src + id, Header: h, JSON: js(body)})
	}
	if got := dataOf[client.PaymentSource](t, put(mc.Id, `{"is_default": true, "room_code": "main"}`)); !got.IsDefault {
		t.Fatalf("%+v", got)
	}
	wantErr(t, put(mc.Id, `{"is_default": false}`), 400, 400)
	if list := sources(main...); list[0].Id != mc.Id || !list[0].IsDefault || list[1].IsDefault {
		t.Fatalf("%+v", list)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM payment_sources WHERE is_default = 1"); n != 2 {
		t.Fatalf("%d defaults over two scopes", n)
	}
	// Deleting the default promotes the other; deleting the last leaves none.
	res = e.Do(testenv.Req{Method: "DELETE", Path: src + mc.Id + ".json", Header: h})
	if res.Status != 200 || strings.TrimSpace(string(res.Raw)) != `{"data":[]}` {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	if list := sources(main...); len(list) != 1 || list[0].Id != visa.Id || !list[0].IsDefault {
		t.Fatalf("%+v", list)
	}
	mustOK(t, e.Do(testenv.Req{Method: "DELETE", Path: src + visa.Id, Header: h}))
	if l := sources(main...); len(l) != 0 {
		t.Fatalf("%+v", l)
	}
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: src + visa.Id, Header: h}), 404, 404)

	// First cards saved at once: still one default.
	got := raceStatuses(t, []string{e.URL}, 8, testenv.Req{Method: "POST", Path: "/api_v3/billing/sources", Header: h2, Query: q(main...), Form: q("type", "card", "token", "tok_visa")})
	if got[200] != 8 {
		t.Fatalf("%v", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM payment_sources WHERE user_id = ? AND is_default = 1", s.pat2.UserID); n != 1 {
		t.Fatalf("%d defaults after concurrent first cards", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM billing_customers WHERE user_id = ?", s.pat2.UserID); n != 1 {
		t.Fatalf("%d customers for one patient", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action LIKE 'billing.source.%'"); n < 10 {
		t.Fatalf("card changes not audited: %d", n)
	}
}

func TestBilling_Coupons(t *testing.T) {
	t.Parallel()
	e, s, _ := billingSetup(t)
	a := adminHeaders(s.c)
	create := func(kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/coupons", Header: a, Form: q(kv...)})
	}
	for _, bad := range [][]string{
		{"percent_off", "10"}, {"code", "x", "percent_off", "10"}, {"code", "has space", "percent_off", "10"},
		{"code", "SAVE", "percent_off", "0"}, {"code", "SAVE", "percent_off", "101"}, {"code", "SAVE", "percent_off", "12.345"},
		{"code", "SAVE", "percent_off", "ten"}, {"code", "SAVE", "percent_off", "10", "valid_until", "2020-01-01"},
		{"code", "SAVE", "percent_off", "10", "valid_until", "soon"}, {"code", "SAVE", "percent_off", "10", "max_redemptions", "-1"},
	} {
		wantErr(t, create(bad...), 400, 400)
	}
	d := dataOf[client.Coupon](t, create("code", "save10", "percent_off", "12.5", "valid_until", "2026-12-31", "max_redemptions", "3"))
	if d.Code != "SAVE10" || d.Id != "SAVE10" || d.PercentOff != 12.5 || !d.Active ||
		d.MaxRedemptions != 3 || int64(d.ValidUntil) != time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC).Unix() {
		t.Fatalf("%+v", d)
	}
	wantErr(t, create("code", "SAVE10", "percent_off", "5"), 409, 409)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/coupons", Header: userHeaders(s.c, s.pat.Token), Form: q("code", "MINE", "percent_off", "100")}), 401, 401)
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/billing/coupons", Header: userHeaders(s.c, s.doc.Token)}), 401, 401)
	if l := dataOf[[]client.Coupon](t, e.Do(testenv.Req{Path: "/api_v3/billing/coupons", Header: a})); len(l) != 1 || l[0].Code != "SAVE10" {
		t.Fatalf("%+v", l)
	}
	if d := dataOf[client.Coupon](t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/billing/coupons/save10", Header: a})); d.Active {
		t.Fatalf("%+v", d)
	}
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/billing/coupons/NOPE", Header: a}), 404, 404)
	wantErr(t, create("code", "SAVE10", "percent_off", "5"), 409, 409)
}

// TestBilling_Invoices: previews with and without coupons, the refusals,
// a charge made once, what nothing due costs, a declined card, the lists
// by role and refunds, as steps over one clinic (invoiceScript).
func TestBilling_Invoices(t *testing.T) {
	t.Parallel()
	e, s, sb := billingSetup(t)
	c := &invoiceScript{e: e, s: s, sb: sb, admin: adminHeaders(s.c)}
	for _, kv := range [][]string{
		{"code", "SAVE10", "percent_off", "10"},
		{"code", "SOON", "percent_off", "50", "valid_until", fmt.Sprint(e.Clock.Now().Add(time.Minute).Unix())},
		{"code", "ONCE", "percent_off", "20", "max_redemptions", "1"},
		{"code", "GONE", "percent_off", "20"},
		{"code", "FREE", "percent_off", "100"},
	} {
		if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/coupons", Header: c.admin, Form: q(kv...)}); res.Status != 200 {
			t.Fatalf("coupon %v: %s", kv, res.Raw)
		}
	}
	mustOK(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/billing/coupons/GONE", Header: c.admin}))
	e.Clock.Advance(2 * time.Minute) // SOON has expired
	c.follow = s.intake(t, s.pat, "consultation_id", "2")
	testenv.Steps(t, []testenv.Step{
		{Name: "OKPreview", Run: c.preview},
		{Name: "OKCouponPreviews", Run: c.couponPreviews},
		{Name: "ErrIntake", Run: c.intakeRefused},
		{Name: "ErrNoCardWritesNothing", Run: c.noCard},
		{Name: "OKChargedOnce", Run: c.chargedOnce},
		{Name: "OKNothingDueChargesNothing", Run: c.nothingDue},
		{Name: "OKDeclinedCardThenPaid", Run: c.declinedThenPaid},
		{Name: "OKListsByRole", Run: c.lists},
		{Name: "OKRefundOnce", Run: c.refunds},
	})
}

// invoiceScript is TestBilling_Invoices' clinic and what its steps made.
type invoiceScript struct {
	e      *testenv.Env
	s      *clinicSetup
	sb     *payments.Sandbox
	admin  map[string]string
	follow string         // the patient's intake for the follow-up (consultation 2, 40.50)
	first  string         // an intake of the room's first consultation (25.00)
	paid   client.Invoice // the follow-up's invoice
	failed string         // pat2's declined invoice
}

func (c *invoiceScript) previewOf(t *testing.T, who string, kv ...string) client.InvoicePreview {
	t.Helper()
	return decode[client.InvoicePreview](t, c.s.process(who, kv...))
}

// A preview of the follow-up: its consultation and price, no coupon, no
// invoice.
func (c *invoiceScript) preview(t *testing.T) {
	d := c.previewOf(t, c.s.pat.Token, "intake_id", c.follow).Data
	if diff := cmp.Diff(client.BilledConsultation{Id: "2", Description: "Follow-up", Amount: 40.5, Duration: 30}, d.Consultation); diff != "" {
		t.Errorf("consultation (-want +got):\n%s", diff)
	}
	if d.Currency != "USD" || d.AmountDue != 40.5 || d.Coupon != nil || d.Invoice != nil {
		t.Errorf("preview: %+v", d)
	}
}

// A valid coupon takes its share off; an unknown, expired or inactive one
// is named with its reason, changes nothing, and cannot be invoiced.
func (c *invoiceScript) couponPreviews(t *testing.T) {
	d := c.previewOf(t, c.s.pat.Token, "intake_id", c.follow, "promo_code", "save10").Data
	if d.Coupon == nil || d.Coupon.Id != "SAVE10" || !d.Coupon.Valid || d.Coupon.PercentOff != 10 || d.Discount != 4.05 || d.AmountDue != 36.45 {
		t.Errorf("SAVE10: %+v (coupon %+v)", d, d.Coupon)
	}
	for code, reason := range map[string]string{"NOPE": "unknown", "SOON": "expired", "GONE": "inactive"} {
		d := c.previewOf(t, c.s.pat.Token, "intake_id", c.follow, "promo_code", code).Data
		if d.Coupon == nil || d.Coupon.Valid || d.Coupon.Reason == nil || string(*d.Coupon.Reason) != reason || d.AmountDue != 40.5 {
			t.Errorf("%s: %+v (coupon %+v)", code, d, d.Coupon)
		}
		wantErr(t, c.s.process(c.s.pat.Token, "intake_id", c.follow, "promo_code", code, "create_invoice", "1"), 400, 400)
	}
}

// The intake is required, must exist and be the caller's; a provider may
// not bill it.
func (c *invoiceScript) intakeRefused(t *testing.T) {
	s := c.s
	wantErr(t, s.process(s.pat.Token), 400, 400)
	wantErr(t, s.process(s.pat.Token, "intake_id", "999999"), 404, 404)
	wantErr(t, s.process(s.pat2.Token, "intake_id", c.follow), 404, 404)
	wantErr(t, s.process(s.doc.Token, "intake_id", c.follow), 403, 403)
}

// Without a card nothing is written: no invoice, no redemption.
func (c *invoiceScript) noCard(t *testing.T) {
	wantErr(t, c.s.process(c.s.pat.Token, "intake_id", c.follow, "promo_code", "SAVE10", "create_invoice", "1"), 400, 400)
	if n := count(t, c.e, "SELECT COUNT(*) FROM invoices"); n != 0 {
		t.Errorf("%d invoices", n)
	}
	if n := count(t, c.e, "SELECT redemptions FROM coupons WHERE code = 'SAVE10'"); n != 0 {
		t.Errorf("coupon used without an invoice: %d", n)
	}
}

// With a card (and a JSON body), the invoice is charged once: asked again,
// or previewed, it is the same invoice, and the coupon is redeemed once.
func (c *invoiceScript) chargedOnce(t *testing.T) {
	s := c.s
	s.addCard(t, s.pat, "tok_visa")
	res := c.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process.json", Header: userHeaders(s.c, s.pat.Token),
		JSON: js(`{"intake_id": "` + c.follow + `", "promo_code": "SAVE10", "create_invoice": 1}`)})
	d := decode[client.InvoicePreview](t, res).Data
	if d.Invoice == nil {
		t.Fatalf("no invoice: %s", res.Raw)
	}
	inv := *d.Invoice
	type charged struct {
		Status            client.InvoiceStatus
		AmountDue         float64
		Coupon, Intake    string
		Member            string
		AnswerDue         float64
		SandboxChargeID   bool
		LedgerCalls       int
		LedgerMinorAmount int64
	}
	calls, charges := c.sb.Ledger()
	got := charged{Status: inv.Status, AmountDue: inv.AmountDue, Coupon: deref(inv.CouponCode), Intake: inv.IntakeId, Member: inv.MemberId,
		AnswerDue: d.AmountDue, SandboxChargeID: strings.HasPrefix(deref(inv.ChargeId), "pi_sbx_"), LedgerCalls: calls, LedgerMinorAmount: charges[deref(inv.ChargeId)]}
	want := charged{Status: "paid", AmountDue: 36.45, Coupon: "SAVE10", Intake: c.follow, Member: s.pat.UserID, AnswerDue: 36.45,
		SandboxChargeID: true, LedgerCalls: 1, LedgerMinorAmount: 3645}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the charge (-want +got):\n%s", diff)
	}
	c.paid = inv
	again := c.previewOf(t, s.pat.Token, "intake_id", c.follow, "create_invoice", "1").Data.Invoice
	preview := c.previewOf(t, s.pat.Token, "intake_id", c.follow).Data.Invoice
	if again == nil || preview == nil || again.Id != inv.Id || preview.Id != inv.Id || again.Status != "paid" {
		t.Errorf("asked again: %+v, previewed: %+v", again, preview)
	}
	if calls, _ := c.sb.Ledger(); calls != 1 {
		t.Errorf("charged again: %d calls", calls)
	}
	if n := count(t, c.e, "SELECT redemptions FROM coupons WHERE code = 'SAVE10'"); n != 1 {
		t.Errorf("redemptions %d", n)
	}
}

// An intake without a consultation is billed for the room's first; one
// naming no consultation of the room is refused. Nothing due (a free
// consultation, a 100% coupon) is paid with nothing charged.
func (c *invoiceScript) nothingDue(t *testing.T) {
	s := c.s
	c.first = s.intake(t, s.pat)
	if d := c.previewOf(t, s.pat.Token, "intake_id", c.first).Data; d.Consultation.Id != "1" || d.AmountDue != 25 {
		t.Errorf("the room's first consultation: %+v", d)
	}
	wantErr(t, c.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes/" + c.first, Header: userHeaders(s.c, s.pat.Token), Form: q("consultation", "9")}), 400, 400)
	free := s.intake(t, s.pat, "consultation", "3")
	if d := c.previewOf(t, s.pat.Token, "intake_id", free, "create_invoice", "1").Data; d.AmountDue != 0 || d.Invoice == nil || d.Invoice.Status != "paid" || deref(d.Invoice.ChargeId) != "" {
		t.Errorf("a free consultation: %+v (invoice %+v)", d, d.Invoice)
	}
	if d := c.previewOf(t, s.pat.Token, "intake_id", c.first, "promo_code", "FREE", "create_invoice", "1").Data; d.AmountDue != 0 || d.Discount != 25 || d.Invoice == nil || d.Invoice.Status != "paid" {
		t.Errorf("a 100%% coupon: %+v (invoice %+v)", d, d.Invoice)
	}
	if calls, _ := c.sb.Ledger(); calls != 1 {
		t.Errorf("charged for nothing due: %d calls", calls)
	}
}

// A declined card leaves a failed invoice and gives the coupon back; a
// later call with a good card charges.
func (c *invoiceScript) declinedThenPaid(t *testing.T) {
	s := c.s
	s.addCard(t, s.pat2, "tok_chargeCustomerFail")
	intake := s.intake(t, s.pat2)
	res := s.process(s.pat2.Token, "intake_id", intake, "promo_code", "ONCE", "create_invoice", "1")
	wantErr(t, res, 402, 402)
	if !strings.Contains(messageOf(res), "declined") {
		t.Errorf("the refusal: %s", res.Raw)
	}
	if n := count(t, c.e, "SELECT COUNT(*) FROM invoices WHERE intake_id = ? AND status = 'failed' AND failure_code = 'card_declined'", intake); n != 1 {
		t.Errorf("%d failed invoices", n)
	}
	if n := count(t, c.e, "SELECT redemptions FROM coupons WHERE code = 'ONCE'"); n != 0 {
		t.Errorf("a failed charge used the coupon: %d", n)
	}
	good := s.addCard(t, s.pat2, "tok_visa")
	mustOK(t, c.e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/billing/sources/" + good.Id, Header: userHeaders(s.c, s.pat2.Token), Form: q("is_default", "1")}))
	inv := c.previewOf(t, s.pat2.Token, "intake_id", intake, "promo_code", "ONCE", "create_invoice", "1").Data.Invoice
	if inv == nil || inv.Status != "paid" || inv.AmountDue != 20 || deref(inv.SourceId) != good.Id {
		t.Errorf("with a good card: %+v", inv)
	}
}

// The admin sees every invoice, a patient their own (never another's), a
// provider none; filters and limits apply.
func (c *invoiceScript) lists(t *testing.T) {
	s := c.s
	list := func(h map[string]string, path string, kv ...string) []client.Invoice {
		t.Helper()
		return decode[client.InvoiceList](t, c.e.Do(testenv.Req{Path: path, Header: h, Query: q(kv...)})).Data
	}
	if all := list(c.admin, "/api_v3/billing/invoices"); len(all) != 5 {
		t.Errorf("the admin's list: %d invoices", len(all))
	}
	mine := list(userHeaders(s.c, s.pat2.Token), "/api_v3/billing/invoices.json")
	if len(mine) != 2 || mine[0].Status != "paid" || mine[1].Status != "failed" || deref(mine[1].FailureMessage) == "" {
		t.Fatalf("pat2's list: %+v", mine)
	}
	c.failed = mine[1].Id
	if l := list(userHeaders(s.c, s.pat2.Token), "/api_v3/billing/invoices", "member_id", s.pat.UserID); len(l) != 0 {
		t.Errorf("another patient's invoices: %+v", l)
	}
	if l := list(c.admin, "/api_v3/billing/invoices", "intake_id", c.follow); len(l) != 1 || l[0].Id != c.paid.Id {
		t.Errorf("by intake: %+v", l)
	}
	// Pages by before with the Link: the pages hold the whole list once, in
	// its order, and an exactly full last page names no next one.
	var want []string
	for _, inv := range list(c.admin, "/api_v3/billing/invoices") {
		want = append(want, inv.Id)
	}
	for _, limit := range []int{1, 2, 5} {
		got, pages := pageWalk{path: "/api_v3/billing/invoices", query: q("limit", fmt.Sprint(limit)), header: c.admin, cursor: "before", idKey: "id", limit: limit}.walk(t, c.e)
		if diff := cmp.Diff(want, idsOf(got, "id")); diff != "" || pages != (len(want)+limit-1)/limit {
			t.Errorf("%d a page, %d pages (-want +got):\n%s", limit, pages, diff)
		}
	}
	// A before that is no invoice of the list is refused, as in every
	// keyset list: another patient's invoice is no place in a patient's.
	for _, before := range []string{"999999", "-1", "soon"} {
		wantErr(t, c.e.Do(testenv.Req{Path: "/api_v3/billing/invoices", Header: c.admin, Query: q("before", before)}), 400, 400)
	}
	wantErr(t, c.e.Do(testenv.Req{Path: "/api_v3/billing/invoices", Header: userHeaders(s.c, s.pat2.Token), Query: q("before", c.paid.Id)}), 400, 400)
	wantErr(t, c.e.Do(testenv.Req{Path: "/api_v3/billing/invoices", Header: c.admin, Query: q("member_id", "x")}), 400, 400)
	wantErr(t, c.e.Do(testenv.Req{Path: "/api_v3/billing/invoices", Header: userHeaders(s.c, s.doc.Token)}), 403, 403)
}

// Refunds are the admin's, of a paid invoice, up to what was paid, once;
// every invoice step is audited.
func (c *invoiceScript) refunds(t *testing.T) {
	refund := func(h map[string]string, id string, kv ...string) *testenv.Resp {
		return c.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/" + id + "/refund", Header: h, Form: q(kv...)})
	}
	wantErr(t, refund(userHeaders(c.s.c, c.s.pat.Token), c.paid.Id), 401, 401)
	wantErr(t, refund(c.admin, c.paid.Id, "amount", "99"), 400, 400)
	inv := decode[client.InvoiceResponse](t, refund(c.admin, c.paid.Id, "amount", "10")).Data
	if inv.Status != "refunded" || inv.AmountRefunded != 10 || !strings.HasPrefix(deref(inv.RefundId), "re_sbx_") {
		t.Errorf("the refund: %+v", inv)
	}
	wantErr(t, refund(c.admin, c.paid.Id), 409, 409)
	wantErr(t, refund(c.admin, c.failed), 409, 409)
	wantErr(t, refund(c.admin, "999999"), 404, 404)
	if n := count(t, c.e, "SELECT COUNT(*) FROM audit WHERE action IN ('invoice.create', 'invoice.charge', 'invoice.refund')"); n < 8 {
		t.Errorf("invoices not audited: %d", n)
	}
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestBilling_ChargeOnce: twenty calls at once to invoice one intake make one
// invoice and one charge; every call answers with that invoice.
func TestBilling_ChargeOnce(t *testing.T) {
	t.Parallel()
	e, s, sb := billingSetup(t)
	s.addCard(t, s.pat, "tok_visa")
	it := s.intake(t, s.pat)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]int{}
	var conflicts []string
	start := make(chan struct{})
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := testenv.Do(t, e.URL, testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process", Header: userHeaders(s.c, s.pat.Token),
				Form: q("intake_id", it, "create_invoice", "1")})
			mu.Lock()
			defer mu.Unlock()
			switch res.Status {
			case 200:
				ids[invoiceIn(t, res).Id]++
			case 409: // the charge is in flight in another call; the message names the invoice
				conflicts = append(conflicts, messageOf(res))
			default:
				ids[fmt.Sprintf("status %d", res.Status)]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("answers: %v, conflicts %v", ids, conflicts)
	}
	for id := range ids {
		for _, m := range conflicts {
			if !strings.Contains(m, "Invoice "+id+" is being charged") {
				t.Fatalf("409 %q does not name invoice %s", m, id)
			}
		}
	}
	calls, charges := sb.Ledger()
	if calls != 1 || len(charges) != 1 {
		t.Fatalf("%d charge calls, %v", calls, charges)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM invoices"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
	// Whoever answered while the charge was in flight saw it pending; it is
	// paid now.
	inv := invoiceIn(t, s.process(s.pat.Token, "intake_id", it))
	if inv.Status != "paid" {
		t.Fatalf("%+v", inv)
	}

	// A process that died after the processor charged but before it
	// recorded the charge leaves the invoice pending. Within the lease the
	// invoice is left alone; after it, a retry charges with the same
	// idempotency key and the processor answers with the same charge.
	if _, err := e.Store.DB().Exec(e.Store.Rebind("UPDATE invoices SET status = 'pending', charge_ref = '', attempt_started = ? WHERE id = ?"), e.Clock.Now().Unix(), inv.Id); err != nil {
		t.Fatal(err)
	}
	if res := s.process(s.pat.Token, "intake_id", it, "create_invoice", "1"); res.Status != 409 {
		t.Fatalf("taken over within the lease: %d %s", res.Status, res.Raw)
	}
	e.Clock.Advance(3 * time.Minute)
	got := invoiceIn(t, s.process(s.pat.Token, "intake_id", it, "create_invoice", "1"))
	if got.Status != "paid" || deref(got.ChargeId) != deref(inv.ChargeId) || got.Id != inv.Id {
		t.Fatalf("retry after the lease: %+v, first %+v", got, inv)
	}
	if calls, charges := sb.Ledger(); calls != 2 || len(charges) != 1 {
		t.Fatalf("%d charge calls, %v", calls, charges)
	}
}

// TestBilling_CouponOnce: a coupon with max_redemptions 1 used by ten
// patients at once discounts exactly one invoice.
func TestBilling_CouponOnce(t *testing.T) {
	t.Parallel()
	e, s, _ := billingSetup(t)
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/coupons", Header: adminHeaders(s.c), Form: q("code", "FIRST", "percent_off", "50", "max_redemptions", "1")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	type patient struct {
		sess   *session
		intake string
	}
	var pats []patient
	for i := range 10 {
		p := mustSSO(t, e, s.c, "200", fmt.Sprintf("cp%d", i), "P", fmt.Sprint(i))
		s.addCard(t, p, "tok_visa")
		pats = append(pats, patient{p, s.intake(t, p)})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{}
	start := make(chan struct{})
	for _, p := range pats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := testenv.Do(t, e.URL, testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process", Header: userHeaders(s.c, p.sess.Token),
				Form: q("intake_id", p.intake, "promo_code", "FIRST", "create_invoice", "1")})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case res.Status == 200 && previewIn(t, res).Discount == 12.5:
				got["discounted"]++
			case res.Status == 400 && strings.Contains(messageOf(res), "FIRST"):
				got["refused"]++
			default:
				got[fmt.Sprintf("%d %s", res.Status, res.Raw)]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if got["discounted"] != 1 || got["refused"] != 9 {
		t.Fatalf("%v", got)
	}
	if n := count(t, e, "SELECT redemptions FROM coupons WHERE code = 'FIRST'"); n != 1 {
		t.Fatalf("redemptions %d", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM invoices WHERE coupon_code = 'FIRST'"); n != 1 {
		t.Fatalf("%d discounted invoices", n)
	}
}

// TestBilling_RepeatAnswersTheInvoice: ten concurrent processes of one
// intake with a coupon that may be used once all answer with its one
// invoice (or 409 naming it while its charge is in flight); the coupon is
// counted once; and a repeat after the coupon is deactivated answers
// exactly what the first success did.
func TestBilling_RepeatAnswersTheInvoice(t *testing.T) {
	t.Parallel()
	e, s, sb := billingSetup(t)
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/coupons", Header: adminHeaders(s.c), Form: q("code", "ONCE", "percent_off", "50", "max_redemptions", "1")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	s.addCard(t, s.pat, "tok_visa")
	it := s.intake(t, s.pat)
	var wg sync.WaitGroup
	var mu sync.Mutex
	bodies := map[string]int{}
	var conflicts []string
	start := make(chan struct{})
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := testenv.Do(t, e.URL, testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process", Header: userHeaders(s.c, s.pat.Token),
				Form: q("intake_id", it, "promo_code", "ONCE", "create_invoice", "1")})
			mu.Lock()
			defer mu.Unlock()
			switch res.Status {
			case 200:
				p := previewIn(t, res)
				inv := invoiceIn(t, res)
				bodies[fmt.Sprintf("invoice %v %v, discount %v", inv.Id, inv.Status, p.Discount)]++
			case 409:
				conflicts = append(conflicts, messageOf(res))
			default:
				bodies[fmt.Sprintf("%d %s", res.Status, res.Raw)]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(bodies) != 1 {
		t.Fatalf("answers: %v, conflicts %v", bodies, conflicts)
	}
	for b := range bodies {
		if !strings.Contains(b, "paid, discount 12.5") {
			t.Fatalf("answer %q", b)
		}
	}
	for _, m := range conflicts {
		if !strings.Contains(m, "is being charged") {
			t.Fatalf("409 %q", m)
		}
	}
	if n := count(t, e, "SELECT redemptions FROM coupons WHERE code = 'ONCE'"); n != 1 {
		t.Fatalf("redemptions %d", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM invoices"); n != 1 {
		t.Fatalf("%d invoices", n)
	}
	if calls, charges := sb.Ledger(); calls != 1 || len(charges) != 1 {
		t.Fatalf("%d charge calls, %v", calls, charges)
	}

	first := s.process(s.pat.Token, "intake_id", it, "promo_code", "ONCE", "create_invoice", "1")
	if res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/billing/coupons/ONCE", Header: adminHeaders(s.c)}); res.Status != 200 {
		t.Fatalf("deactivate: %d %s", res.Status, res.Raw)
	}
	again := s.process(s.pat.Token, "intake_id", it, "promo_code", "ONCE", "create_invoice", "1")
	if first.Status != 200 || again.Status != 200 || string(first.Raw) != string(again.Raw) {
		t.Fatalf("repeat after the coupon was deactivated:\n%d %s\nfirst:\n%d %s", again.Status, again.Raw, first.Status, first.Raw)
	}
	if n := count(t, e, "SELECT redemptions FROM coupons WHERE code = 'ONCE'"); n != 1 {
		t.Fatalf("redemptions %d after repeats", n)
	}
}

// previewIn is an invoice answer's data. It reports a body that is not
// one with t.Errorf, so goroutines other than the test's may call it.
func previewIn(t *testing.T, res *testenv.Resp) invoicePreview {
	var p struct {
		Data invoicePreview `json:"data"`
	}
	if err := json.Unmarshal(res.Raw, &p); err != nil {
		t.Errorf("%v: %s", err, res.Raw)
	}
	return p.Data
}

// invoicePreview is the part of POST /billing/invoices/process's answer
// the concurrent tests read.
type invoicePreview struct {
	Discount float64         `json:"discount"`
	Invoice  *client.Invoice `json:"invoice"`
}

// invoiceIn is an invoice answer's invoice (empty when it has none, which
// previewIn's caller sees in the status it checks).
func invoiceIn(t *testing.T, res *testenv.Resp) client.Invoice {
	if inv := previewIn(t, res).Invoice; inv != nil {
		return *inv
	}
	t.Errorf("no invoice: %s", res.Raw)
	return client.Invoice{}
}

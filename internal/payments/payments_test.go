package payments

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPayments_ToMinor(t *testing.T) {
	cases := []struct {
		amount   float64
		currency string
		want     int64
		ok       bool
	}{
		{25, "USD", 2500, true},
		{25.5, "USD", 2550, true},
		{0.1 + 0.2, "USD", 30, true},
		{19.99, "EUR", 1999, true},
		{1.005, "USD", 0, false},
		{500, "JPY", 500, true},
		{500.5, "JPY", 0, false},
		{1.234, "KWD", 1234, true},
		{-1, "USD", 0, false},
	}
	for _, c := range cases {
		got, ok := ToMinor(c.amount, c.currency)
		if got != c.want || ok != c.ok {
			t.Errorf("ToMinor(%v, %s) = %d, %v; want %d, %v", c.amount, c.currency, got, ok, c.want, c.ok)
		}
	}
	if ToMajor(2550, "USD") != 25.5 || ToMajor(500, "JPY") != 500 {
		t.Fatal("ToMajor")
	}
}

func TestPayments_Sandbox(t *testing.T) {
	ctx := context.Background()
	s := NewSandbox(func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) })
	cus, err := s.EnsureCustomer(ctx, "", Customer{UserID: "1"})
	if err != nil || !strings.HasPrefix(cus, "cus_sbx_") {
		t.Fatalf("customer %q %v", cus, err)
	}
	card, err := s.AttachCard(ctx, cus, "tok_visa")
	if err != nil || card.Brand != "visa" || card.Last4 != "4242" || card.ExpYear != 2028 {
		t.Fatalf("visa %+v %v", card, err)
	}
	for tok, code := range map[string]string{"tok_chargeDeclined": "card_declined", "tok_chargeDeclinedExpiredCard": "expired_card", "tok_bogus": "resource_missing", "4242424242424242": "resource_missing"} {
		_, err := s.AttachCard(ctx, cus, tok)
		if ce, ok := AsCardError(err); !ok || ce.Code != code {
			t.Errorf("%s: %v, want %s", tok, err, code)
		}
	}
	req := ChargeRequest{Customer: cus, PaymentMethod: card.PaymentMethod, Amount: 2500, Currency: "USD", IdempotencyKey: "k1"}
	c1, err := s.Charge(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := s.Charge(ctx, req)
	if c1.ID != c2.ID {
		t.Fatalf("the same key gave two charges: %s %s", c1.ID, c2.ID)
	}
	req.Amount = 100
	if _, err := s.Charge(ctx, req); err == nil {
		t.Fatal("a key reused for another amount was accepted")
	}
	fail, _ := s.AttachCard(ctx, cus, "pm_card_chargeCustomerFail")
	if _, err := s.Charge(ctx, ChargeRequest{Customer: cus, PaymentMethod: fail.PaymentMethod, Amount: 100, Currency: "USD", IdempotencyKey: "k2"}); err == nil {
		t.Fatal("chargeCustomerFail was charged")
	}
	if _, err := s.Refund(ctx, RefundRequest{Charge: c1.ID, Amount: 2600, IdempotencyKey: "r1"}); err == nil {
		t.Fatal("refunded more than charged")
	}
	if re, err := s.Refund(ctx, RefundRequest{Charge: c1.ID, Amount: 2500, IdempotencyKey: "r1"}); err != nil || re.Amount != 2500 {
		t.Fatalf("refund %+v %v", re, err)
	}
	calls, charges := s.Ledger()
	if calls != 4 || len(charges) != 1 {
		t.Fatalf("ledger: %d calls, %v", calls, charges)
	}
}

// stripeMock starts stripe-mock on a loopback port, or skips when it is not
// installed (.ci/run installs it with go install).
func stripeMock(t *testing.T) string {
	if u := os.Getenv("TELECLINIC_STRIPE_MOCK_URL"); u != "" {
		return u
	}
	bin, err := exec.LookPath("stripe-mock")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "stripe-mock")
		if _, err := os.Stat(bin); err != nil {
			t.Skip("stripe-mock is not installed (go install github.com/stripe/stripe-mock@v0.203.0); the Stripe contract test is skipped")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-http-addr", addr, "-https-addr", "127.0.0.1:") // HTTPS on a port of its own, not the default 12112
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	for i := 0; ; i++ {
		if resp, err := http.Get(url + "/v1/customers"); err == nil {
			resp.Body.Close()
			return url
		}
		if i > 100 {
			t.Fatal("stripe-mock did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStripe_Contract drives the Stripe adapter against stripe-mock, which
// checks every request against Stripe's OpenAPI description and answers with
// its fixtures.
func TestStripe_Contract(t *testing.T) {
	url := stripeMock(t)
	ctx := context.Background()
	s := NewStripe(StripeConfig{SecretKey: "sk_test_123", PublishableKey: "pk_test_123", APIURL: url})
	if !s.Sandbox() || s.PublishableKey() != "pk_test_123" || s.Name() != "stripe" {
		t.Fatal("settings")
	}
	cus, err := s.EnsureCustomer(ctx, "", Customer{Email: "pat@example.com", Name: "Pat", AccountCode: "clinic", UserID: "7"})
	if err != nil || !strings.HasPrefix(cus, "cus_") {
		t.Fatalf("customer %q %v", cus, err)
	}
	for _, tok := range []string{"tok_visa", "pm_card_visa"} {
		card, err := s.AttachCard(ctx, cus, tok)
		if err != nil || !strings.HasPrefix(card.PaymentMethod, "pm_") || card.Last4 == "" || card.Brand == "" || card.ExpYear == 0 {
			t.Fatalf("%s: %+v %v", tok, card, err)
		}
	}
	// stripe-mock answers every PaymentIntent with its fixture's status
	// (requires_payment_method), so the request is checked here and the
	// status rule in TestStripe_Declined.
	pi, err := s.createIntent(ctx, ChargeRequest{Customer: cus, PaymentMethod: "pm_card_visa", Amount: 2500, Currency: "USD", IdempotencyKey: "invoice-1", Description: "15-min Consultation", Metadata: map[string]string{"invoice_id": "1"}})
	if err != nil || !strings.HasPrefix(pi.ID, "pi_") || pi.Amount != 2500 || pi.Currency != "usd" {
		t.Fatalf("payment intent %+v %v", pi, err)
	}
	if _, err := s.Charge(ctx, ChargeRequest{Customer: cus, PaymentMethod: "pm_card_visa", Amount: 2500, Currency: "USD", IdempotencyKey: "invoice-1"}); err == nil {
		t.Fatal("a payment that did not succeed was taken as a charge")
	}
	re, err := s.Refund(ctx, RefundRequest{Charge: pi.ID, Amount: 2500, IdempotencyKey: "refund-1"})
	if err != nil || !strings.HasPrefix(re.ID, "re_") {
		t.Fatalf("refund %+v %v", re, err)
	}
	if err := s.DetachCard(ctx, "pm_card_visa"); err != nil {
		t.Fatal(err)
	}
}

// TestStripe_Declined checks that Stripe's card errors reach the clinic as
// CardErrors with their codes, and that idempotency keys are sent.
func TestStripe_Declined(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(402)
		fmt.Fprint(w, `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds."}}`)
	}))
	defer srv.Close()
	s := NewStripe(StripeConfig{SecretKey: "sk_test_x", APIURL: srv.URL})
	_, err := s.Charge(context.Background(), ChargeRequest{Customer: "cus_1", PaymentMethod: "pm_1", Amount: 100, Currency: "USD", IdempotencyKey: "invoice-9"})
	ce, ok := AsCardError(err)
	if !ok || ce.Code != "card_declined" || ce.DeclineCode != "insufficient_funds" {
		t.Fatalf("%v", err)
	}
	if len(keys) != 1 || keys[0] != "invoice-9" {
		t.Fatalf("idempotency keys sent: %v", keys)
	}
}

// TestStripe_Succeeded checks that only a succeeded PaymentIntent is a charge.
func TestStripe_Succeeded(t *testing.T) {
	status := "succeeded"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"pi_1","object":"payment_intent","amount":100,"currency":"usd","status":%q}`, status)
	}))
	defer srv.Close()
	s := NewStripe(StripeConfig{SecretKey: "sk_live_x", APIURL: srv.URL})
	if s.Sandbox() {
		t.Fatal("a live key is not a sandbox")
	}
	req := ChargeRequest{Customer: "cus_1", PaymentMethod: "pm_1", Amount: 100, Currency: "USD", IdempotencyKey: "invoice-1"}
	if ch, err := s.Charge(context.Background(), req); err != nil || ch.ID != "pi_1" || ch.Amount != 100 {
		t.Fatalf("%+v %v", ch, err)
	}
	status = "requires_action"
	if _, err := s.Charge(context.Background(), req); err == nil {
		t.Fatal("a payment waiting for authentication was taken as a charge")
	} else if ce, ok := AsCardError(err); !ok || ce.Code != "authentication_required" {
		t.Fatal(err)
	}
}

// TestStripe_Retries: an answer Stripe marks as safe to retry (a 5xx, a
// 409) is sent again with the same idempotency key, at most twice more;
// a refusal is not; a POST without a key of its own gets one, the same on
// each attempt.
func TestStripe_Retries(t *testing.T) {
	var keys []string
	fails := 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if r.Header.Get("Stripe-Version") == "" || r.Header.Get("Authorization") != "Bearer sk_test_x" {
			t.Errorf("headers %v", r.Header)
		}
		w.Header().Set("Content-Type", "application/json")
		if fails > 0 {
			fails--
			w.WriteHeader([]int{500, 409}[fails%2])
			fmt.Fprint(w, `{"error":{"type":"api_error","message":"try again"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"re_1","object":"refund","amount":100}`)
	}))
	defer srv.Close()
	s := NewStripe(StripeConfig{SecretKey: "sk_test_x", APIURL: srv.URL})
	s.retryPause = func(int) time.Duration { return 0 }
	re, err := s.Refund(context.Background(), RefundRequest{Charge: "pi_1", Amount: 100, IdempotencyKey: "refund-7"})
	if err != nil || re.ID != "re_1" || len(keys) != 3 || keys[0] != "refund-7" || keys[2] != "refund-7" {
		t.Fatalf("%+v %v, keys %v", re, err, keys)
	}
	// Three failures: the third answer is the error.
	keys, fails = nil, 3
	if _, err := s.Refund(context.Background(), RefundRequest{Charge: "pi_1", Amount: 100, IdempotencyKey: "refund-8"}); err == nil || len(keys) != 3 {
		t.Fatalf("%v after %d attempts", err, len(keys))
	}
	// No key of its own: one is made, and kept across the retry.
	keys, fails = nil, 1
	if err := s.DetachCard(context.Background(), "pm_1"); err != nil || len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("%v, keys %v", err, keys)
	}
}

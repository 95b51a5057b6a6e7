package payments

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Sandbox is the zero-configuration processor. It behaves like a card
// processor's test mode: it accepts the processor's well-known test tokens
// and refuses everything else, and it moves no money.
//
// Its ids carry what it needs to know (the card a payment method stands for;
// a charge id derived from its idempotency key), so it needs no state and
// gives the same answers to every server process and after a restart. It also
// keeps a ledger of the charges made in this process, for tests and demos.
type Sandbox struct {
	Now func() time.Time

	mu      sync.Mutex
	calls   int
	charges map[string]int64 // charge id → amount
	refunds map[string]int64 // charge id → refunded
}

// NewSandbox makes a sandbox processor.
func NewSandbox(now func() time.Time) *Sandbox {
	return &Sandbox{Now: now, charges: map[string]int64{}, refunds: map[string]int64{}}
}

// sandboxCard is a test card: what a token or payment method stands for.
type sandboxCard struct {
	kind, brand, last4 string
	attachErr          *CardError // refused when saved
	chargeErr          *CardError // saved, refused when charged
}

var (
	declined = &CardError{Code: "card_declined", DeclineCode: "generic_decline", Message: "Your card was declined."}
	expired  = &CardError{Code: "expired_card", DeclineCode: "expired_card", Message: "Your card has expired."}
	noFunds  = &CardError{Code: "card_declined", DeclineCode: "insufficient_funds", Message: "Your card has insufficient funds."}
)

// sandboxCards are the test tokens (tok_…) and payment methods (pm_card_…)
// the sandbox accepts, named as the processor's test mode names them.
var sandboxCards = map[string]sandboxCard{
	"visa":                            {kind: "visa", brand: "visa", last4: "4242"},
	"mastercard":                      {kind: "mastercard", brand: "mastercard", last4: "4444"},
	"amex":                            {kind: "amex", brand: "amex", last4: "8431"},
	"chargeDeclined":                  {kind: "chargeDeclined", brand: "visa", last4: "0002", attachErr: declined},
	"chargeDeclinedInsufficientFunds": {kind: "chargeDeclinedInsufficientFunds", brand: "visa", last4: "9995", attachErr: noFunds},
	"chargeDeclinedExpiredCard":       {kind: "chargeDeclinedExpiredCard", brand: "visa", last4: "0069", attachErr: expired},
	"chargeCustomerFail":              {kind: "chargeCustomerFail", brand: "visa", last4: "0341", chargeErr: declined},
}

// SandboxTokens lists the tokens the sandbox accepts, for documentation.
func SandboxTokens() []string {
	return []string{"tok_visa", "tok_mastercard", "tok_amex", "tok_chargeDeclined", "tok_chargeDeclinedInsufficientFunds",
		"tok_chargeDeclinedExpiredCard", "tok_chargeCustomerFail"}
}

func (s *Sandbox) Name() string           { return "sandbox" }
func (s *Sandbox) PublishableKey() string { return "pk_test_sandbox" }
func (s *Sandbox) Sandbox() bool          { return true }

func (s *Sandbox) EnsureCustomer(_ context.Context, ref string, _ Customer) (string, error) {
	if ref != "" {
		return ref, nil
	}
	return "cus_sbx_" + randHex(12), nil
}

func (s *Sandbox) AttachCard(_ context.Context, customer, token string) (*Card, error) {
	if !strings.HasPrefix(customer, "cus_sbx_") {
		return nil, &CardError{Code: "resource_missing", Message: fmt.Sprintf("No such customer: '%s'", customer)}
	}
	var name string
	switch {
	case strings.HasPrefix(token, "tok_"):
		name = strings.TrimPrefix(token, "tok_")
	case strings.HasPrefix(token, "pm_card_"):
		name = strings.TrimPrefix(token, "pm_card_")
	}
	c, ok := sandboxCards[name]
	if !ok {
		return nil, &CardError{Code: "resource_missing", Message: fmt.Sprintf("No such token: '%s'. The sandbox accepts only the test tokens (%s).", token, strings.Join(SandboxTokens(), ", "))}
	}
	if c.attachErr != nil {
		return nil, c.attachErr
	}
	return &Card{PaymentMethod: "pm_sbx_" + c.kind + "_" + randHex(8), Brand: c.brand, Last4: c.last4, ExpMonth: 12, ExpYear: s.Now().Year() + 2}, nil
}

func (s *Sandbox) DetachCard(_ context.Context, pm string) error {
	if _, ok := sandboxCardOf(pm); !ok {
		return &CardError{Code: "resource_missing", Message: fmt.Sprintf("No such PaymentMethod: '%s'", pm)}
	}
	return nil
}

func sandboxCardOf(pm string) (sandboxCard, bool) {
	rest, ok := strings.CutPrefix(pm, "pm_sbx_")
	if !ok {
		return sandboxCard{}, false
	}
	kind, _, _ := strings.Cut(rest, "_")
	c, ok := sandboxCards[kind]
	return c, ok
}

func (s *Sandbox) Charge(_ context.Context, r ChargeRequest) (*Charge, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	c, ok := sandboxCardOf(r.PaymentMethod)
	switch {
	case !ok:
		return nil, &CardError{Code: "resource_missing", Message: fmt.Sprintf("No such PaymentMethod: '%s'", r.PaymentMethod)}
	case !strings.HasPrefix(r.Customer, "cus_sbx_"):
		return nil, &CardError{Code: "resource_missing", Message: fmt.Sprintf("No such customer: '%s'", r.Customer)}
	case r.Amount <= 0:
		return nil, fmt.Errorf("sandbox: amount must be positive, got %d", r.Amount)
	case r.IdempotencyKey == "":
		return nil, fmt.Errorf("sandbox: a charge needs an idempotency key")
	case c.chargeErr != nil:
		return nil, c.chargeErr
	}
	id := "pi_sbx_" + keyHash(r.IdempotencyKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.charges[id]; ok && prev != r.Amount {
		return nil, fmt.Errorf("sandbox: idempotency key %q was used for another amount", r.IdempotencyKey)
	}
	s.charges[id] = r.Amount
	return &Charge{ID: id, Amount: r.Amount}, nil
}

func (s *Sandbox) Refund(_ context.Context, r RefundRequest) (*Refund, error) {
	if !strings.HasPrefix(r.Charge, "pi_sbx_") {
		return nil, &CardError{Code: "resource_missing", Message: fmt.Sprintf("No such charge: '%s'", r.Charge)}
	}
	if r.Amount <= 0 || r.IdempotencyKey == "" {
		return nil, fmt.Errorf("sandbox: a refund needs a positive amount and an idempotency key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if charged, ok := s.charges[r.Charge]; ok && r.Amount > charged {
		return nil, &CardError{Code: "amount_too_large", Message: "Refund amount is greater than the charge."}
	}
	s.refunds[r.Charge] = r.Amount
	return &Refund{ID: "re_sbx_" + keyHash(r.IdempotencyKey), Amount: r.Amount}, nil
}

// Ledger is what the sandbox charged in this process: how many charge calls
// it answered, and the distinct charges with their amounts.
func (s *Sandbox) Ledger() (calls int, charges map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.charges))
	for k, v := range s.charges {
		out[k] = v
	}
	return s.calls, out
}

func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:12])
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

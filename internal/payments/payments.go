// Package payments charges patients' cards through a card processor. The
// clinic server keeps only references (customer, payment method, charge and
// refund ids) and the card's display details; card numbers never reach it —
// the processor's browser library turns them into a token first.
package payments

import (
	"context"
	"errors"
	"fmt"
)

// Processor is a card processor as the clinic sees it. Every call that moves
// money takes an idempotency key: the same key always names the same charge or
// refund, so a retry after a crash or a timeout never charges twice.
type Processor interface {
	// Name is "sandbox" or "stripe".
	Name() string
	// PublishableKey is the key the browser library tokenizes cards with.
	PublishableKey() string
	// Sandbox reports whether no real money moves.
	Sandbox() bool
	// EnsureCustomer returns the processor's customer for a patient of a
	// clinic, creating it when ref is empty.
	EnsureCustomer(ctx context.Context, ref string, c Customer) (string, error)
	// AttachCard turns a browser token (or payment method id) into a card
	// saved on the customer.
	AttachCard(ctx context.Context, customer, token string) (*Card, error)
	// DetachCard removes a saved card from its customer.
	DetachCard(ctx context.Context, paymentMethod string) error
	// Charge takes an amount from a saved card.
	Charge(ctx context.Context, c ChargeRequest) (*Charge, error)
	// Refund returns all or part of a charge.
	Refund(ctx context.Context, r RefundRequest) (*Refund, error)
}

// Customer describes the patient a processor customer stands for.
type Customer struct {
	Email       string
	Name        string
	AccountCode string
	UserID      string
}

// Card is a saved card: its processor id and what a patient recognises it by.
type Card struct {
	PaymentMethod string
	Brand         string
	Last4         string
	ExpMonth      int
	ExpYear       int
}

// ChargeRequest charges Amount minor units of Currency from a saved card.
type ChargeRequest struct {
	Customer       string
	PaymentMethod  string
	Amount         int64
	Currency       string // ISO 4217, upper case
	Description    string
	IdempotencyKey string
	Metadata       map[string]string
}

// Charge is a completed charge.
type Charge struct {
	ID     string
	Amount int64
}

// RefundRequest returns Amount minor units of a charge.
type RefundRequest struct {
	Charge         string
	Amount         int64
	IdempotencyKey string
}

// Refund is a completed refund.
type Refund struct {
	ID     string
	Amount int64
}

// CardError is the processor refusing a card: declined, expired, a bad
// token. Code is the processor's code (card_declined, expired_card, …).
type CardError struct {
	Code        string
	DeclineCode string
	Message     string
}

func (e *CardError) Error() string {
	if e.DeclineCode != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.DeclineCode, e.Message)
	}
	return e.Code + ": " + e.Message
}

// AsCardError unwraps a CardError.
func AsCardError(err error) (*CardError, bool) {
	var ce *CardError
	ok := errors.As(err, &ce)
	return ce, ok
}

// zeroDecimal and threeDecimal list the currencies whose minor unit is not a
// hundredth (the processors' own lists).
var (
	zeroDecimal  = map[string]bool{"BIF": true, "CLP": true, "DJF": true, "GNF": true, "JPY": true, "KMF": true, "KRW": true, "MGA": true, "PYG": true, "RWF": true, "UGX": true, "VND": true, "VUV": true, "XAF": true, "XOF": true, "XPF": true}
	threeDecimal = map[string]bool{"BHD": true, "JOD": true, "KWD": true, "OMR": true, "TND": true}
)

// Exponent is the number of decimals of a currency's minor unit.
func Exponent(currency string) int {
	switch {
	case zeroDecimal[currency]:
		return 0
	case threeDecimal[currency]:
		return 3
	}
	return 2
}

// ToMinor turns an amount in major units (25.5 dollars) into minor units
// (2550 cents), rounding half away from zero. ok is false when the amount
// has more decimals than the currency has or is out of range.
func ToMinor(amount float64, currency string) (int64, bool) {
	scale := 1.0
	for range Exponent(currency) {
		scale *= 10
	}
	v := amount * scale
	if v < 0 || v > 1e12 {
		return 0, false
	}
	n := int64(v + 0.5)
	if d := v - float64(n); d > 1e-6 || d < -1e-6 {
		return 0, false
	}
	return n, true
}

// ToMajor turns minor units back into the API's number.
func ToMajor(minor int64, currency string) float64 {
	scale := 1.0
	for range Exponent(currency) {
		scale *= 10
	}
	return float64(minor) / scale
}

package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
)

// Stripe charges through a clinic's own Stripe account: a customer per
// patient and clinic, payment methods attached from the browser's token,
// PaymentIntents confirmed off-session for charges, refunds against them.
type Stripe struct {
	publishable string
	live        bool
	c           *stripe.Client
}

// StripeConfig is a clinic's Stripe account. APIURL is empty for Stripe
// itself; tests point it at stripe-mock.
type StripeConfig struct {
	SecretKey      string
	PublishableKey string
	APIURL         string
	HTTPClient     *http.Client
}

// NewStripe makes the Stripe processor for one clinic's keys.
func NewStripe(cfg StripeConfig) *Stripe {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	bc := &stripe.BackendConfig{HTTPClient: hc, LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelError}, MaxNetworkRetries: stripe.Int64(2)}
	if cfg.APIURL != "" {
		bc.URL = stripe.String(cfg.APIURL)
	}
	return &Stripe{
		publishable: cfg.PublishableKey,
		live:        strings.HasPrefix(cfg.SecretKey, "sk_live_") || strings.HasPrefix(cfg.SecretKey, "rk_live_"),
		c:           stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc))),
	}
}

func (s *Stripe) Name() string           { return "stripe" }
func (s *Stripe) PublishableKey() string { return s.publishable }

// Sandbox is true for test-mode keys: Stripe moves no money with them.
func (s *Stripe) Sandbox() bool { return !s.live }

func (s *Stripe) EnsureCustomer(ctx context.Context, ref string, c Customer) (string, error) {
	if ref != "" {
		return ref, nil
	}
	params := &stripe.CustomerCreateParams{Email: nonEmpty(c.Email), Name: nonEmpty(c.Name)}
	params.AddMetadata("account_code", c.AccountCode)
	params.AddMetadata("user_id", c.UserID)
	// The same patient of the same clinic is one customer even when two
	// first cards are saved at once.
	params.SetIdempotencyKey("customer-" + c.AccountCode + "-" + c.UserID)
	cus, err := s.c.V1Customers.Create(ctx, params)
	if err != nil {
		return "", stripeErr("create customer", err)
	}
	return cus.ID, nil
}

func (s *Stripe) AttachCard(ctx context.Context, customer, token string) (*Card, error) {
	pmID := token
	if strings.HasPrefix(token, "tok_") {
		// A token from the older card element: make it a payment method.
		pm, err := s.c.V1PaymentMethods.Create(ctx, &stripe.PaymentMethodCreateParams{
			Type: stripe.String(string(stripe.PaymentMethodTypeCard)),
			Card: &stripe.PaymentMethodCreateCardParams{Token: stripe.String(token)},
		})
		if err != nil {
			return nil, stripeErr("create payment method", err)
		}
		pmID = pm.ID
	}
	pm, err := s.c.V1PaymentMethods.Attach(ctx, pmID, &stripe.PaymentMethodAttachParams{Customer: stripe.String(customer)})
	if err != nil {
		return nil, stripeErr("attach payment method", err)
	}
	if pm.Card == nil {
		return nil, &CardError{Code: "payment_method_unexpected_type", Message: "Only cards can be saved."}
	}
	return &Card{PaymentMethod: pm.ID, Brand: string(pm.Card.Brand), Last4: pm.Card.Last4, ExpMonth: int(pm.Card.ExpMonth), ExpYear: int(pm.Card.ExpYear)}, nil
}

func (s *Stripe) DetachCard(ctx context.Context, pm string) error {
	_, err := s.c.V1PaymentMethods.Detach(ctx, pm, &stripe.PaymentMethodDetachParams{})
	return stripeErr("detach payment method", err)
}

func (s *Stripe) Charge(ctx context.Context, r ChargeRequest) (*Charge, error) {
	pi, err := s.createIntent(ctx, r)
	if err != nil {
		return nil, stripeErr("charge", err)
	}
	if pi.Status != stripe.PaymentIntentStatusSucceeded {
		// Off-session charges cannot answer a bank's challenge; the patient
		// has to use another card.
		return nil, &CardError{Code: "authentication_required", Message: fmt.Sprintf("The card's bank asks for authentication (payment status %s).", pi.Status)}
	}
	return &Charge{ID: pi.ID, Amount: pi.Amount}, nil
}

// createIntent creates and confirms the PaymentIntent of a charge.
func (s *Stripe) createIntent(ctx context.Context, r ChargeRequest) (*stripe.PaymentIntent, error) {
	params := &stripe.PaymentIntentCreateParams{
		Amount:             stripe.Int64(r.Amount),
		Currency:           stripe.String(strings.ToLower(r.Currency)),
		Customer:           stripe.String(r.Customer),
		PaymentMethod:      stripe.String(r.PaymentMethod),
		PaymentMethodTypes: []*string{stripe.String("card")},
		Confirm:            stripe.Bool(true),
		OffSession:         stripe.Bool(true),
		Description:        nonEmpty(r.Description),
	}
	for k, v := range r.Metadata {
		params.AddMetadata(k, v)
	}
	params.SetIdempotencyKey(r.IdempotencyKey)
	return s.c.V1PaymentIntents.Create(ctx, params)
}

func (s *Stripe) Refund(ctx context.Context, r RefundRequest) (*Refund, error) {
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(r.Charge), Amount: stripe.Int64(r.Amount)}
	params.SetIdempotencyKey(r.IdempotencyKey)
	re, err := s.c.V1Refunds.Create(ctx, params)
	if err != nil {
		return nil, stripeErr("refund", err)
	}
	return &Refund{ID: re.ID, Amount: re.Amount}, nil
}

// stripeErr turns Stripe's refusals of a card or request into CardErrors
// (the patient or clinic can act on them) and leaves everything else
// (network, authentication, Stripe's own failures) an error of ours.
func stripeErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *stripe.Error
	if errors.As(err, &se) {
		switch se.Type {
		case stripe.ErrorTypeCard, stripe.ErrorTypeInvalidRequest:
			return &CardError{Code: string(se.Code), DeclineCode: string(se.DeclineCode), Message: se.Msg}
		}
		return fmt.Errorf("stripe %s: %s (%s, status %d)", op, se.Msg, se.Type, se.HTTPStatusCode)
	}
	return fmt.Errorf("stripe %s: %w", op, err)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return stripe.String(s)
}

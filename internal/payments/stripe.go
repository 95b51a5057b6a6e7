package payments

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Stripe charges through a clinic's own Stripe account: a customer per
// patient and clinic, payment methods attached from the browser's token,
// PaymentIntents confirmed off-session for charges, refunds against them.
//
// It speaks Stripe's REST API directly (form-encoded requests, JSON
// answers) for the six calls it makes, rather than through stripe-go,
// whose typed surface of the whole API was 10 MB of the 54 MB binary
// (docs/performance.md, "The first build"). stripe-mock checks every
// request against Stripe's OpenAPI description (TestStripe_Contract), and
// the API version is pinned, so the answers' shape does not move.
type Stripe struct {
	publishable string
	live        bool
	secret      string
	base        string
	hc          *http.Client
	// retryPause is the wait before retry n (1, 2); tests shorten it.
	retryPause func(n int) time.Duration
}

// StripeConfig is a clinic's Stripe account. APIURL is empty for Stripe
// itself; tests point it at stripe-mock.
type StripeConfig struct {
	SecretKey      string
	PublishableKey string
	APIURL         string
	HTTPClient     *http.Client
}

// stripeAPIVersion is the version of Stripe's API the requests and the
// answers' fields are written for (Stripe-Version on every request).
const stripeAPIVersion = "2026-03-25.dahlia"

// stripeRetries is how many times a request is sent again after a network
// failure or an answer Stripe marks as safe to retry (409, 5xx,
// Stripe-Should-Retry): every POST carries an idempotency key, so a retry
// never charges twice.
const stripeRetries = 2

// NewStripe makes the Stripe processor for one clinic's keys.
func NewStripe(cfg StripeConfig) *Stripe {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	base := strings.TrimSuffix(cfg.APIURL, "/")
	if base == "" {
		base = "https://api.stripe.com"
	}
	return &Stripe{
		publishable: cfg.PublishableKey,
		live:        strings.HasPrefix(cfg.SecretKey, "sk_live_") || strings.HasPrefix(cfg.SecretKey, "rk_live_"),
		secret:      cfg.SecretKey,
		base:        base,
		hc:          hc,
		retryPause: func(n int) time.Duration {
			return min(500*time.Millisecond*time.Duration(1+n*n), 5*time.Second)
		},
	}
}

func (s *Stripe) Name() string           { return "stripe" }
func (s *Stripe) PublishableKey() string { return s.publishable }

// Sandbox is true for test-mode keys: Stripe moves no money with them.
func (s *Stripe) Sandbox() bool { return !s.live }

// stripeCustomer, stripePaymentMethod, paymentIntent and stripeRefund are
// the fields of Stripe's objects the adapter reads.
type stripeCustomer struct {
	ID string `json:"id"`
}

type stripePaymentMethod struct {
	ID   string `json:"id"`
	Card *struct {
		Brand    string `json:"brand"`
		Last4    string `json:"last4"`
		ExpMonth int    `json:"exp_month"`
		ExpYear  int    `json:"exp_year"`
	} `json:"card"`
}

type paymentIntent struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
}

type stripeRefund struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

func (s *Stripe) EnsureCustomer(ctx context.Context, ref string, c Customer) (string, error) {
	if ref != "" {
		return ref, nil
	}
	form := url.Values{"metadata[account_code]": {c.AccountCode}, "metadata[user_id]": {c.UserID}}
	setIf(form, "email", c.Email)
	setIf(form, "name", c.Name)
	var cus stripeCustomer
	// The same patient of the same clinic is one customer even when two
	// first cards are saved at once.
	if err := s.post(ctx, "/v1/customers", form, "customer-"+c.AccountCode+"-"+c.UserID, &cus); err != nil {
		return "", stripeErr("create customer", err)
	}
	return cus.ID, nil
}

func (s *Stripe) AttachCard(ctx context.Context, customer, token string) (*Card, error) {
	pmID := token
	if strings.HasPrefix(token, "tok_") {
		// A token from the older card element: make it a payment method.
		var pm stripePaymentMethod
		if err := s.post(ctx, "/v1/payment_methods", url.Values{"type": {"card"}, "card[token]": {token}}, "", &pm); err != nil {
			return nil, stripeErr("create payment method", err)
		}
		pmID = pm.ID
	}
	var pm stripePaymentMethod
	if err := s.post(ctx, "/v1/payment_methods/"+url.PathEscape(pmID)+"/attach", url.Values{"customer": {customer}}, "", &pm); err != nil {
		return nil, stripeErr("attach payment method", err)
	}
	if pm.Card == nil {
		return nil, &CardError{Code: "payment_method_unexpected_type", Message: "Only cards can be saved."}
	}
	return &Card{PaymentMethod: pm.ID, Brand: pm.Card.Brand, Last4: pm.Card.Last4, ExpMonth: pm.Card.ExpMonth, ExpYear: pm.Card.ExpYear}, nil
}

func (s *Stripe) DetachCard(ctx context.Context, pm string) error {
	var out stripePaymentMethod
	return stripeErr("detach payment method", s.post(ctx, "/v1/payment_methods/"+url.PathEscape(pm)+"/detach", url.Values{}, "", &out))
}

func (s *Stripe) Charge(ctx context.Context, r ChargeRequest) (*Charge, error) {
	pi, err := s.createIntent(ctx, r)
	if err != nil {
		return nil, stripeErr("charge", err)
	}
	if pi.Status != "succeeded" {
		// Off-session charges cannot answer a bank's challenge; the patient
		// has to use another card.
		return nil, &CardError{Code: "authentication_required", Message: fmt.Sprintf("The card's bank asks for authentication (payment status %s).", pi.Status)}
	}
	return &Charge{ID: pi.ID, Amount: pi.Amount}, nil
}

// createIntent creates and confirms the PaymentIntent of a charge.
func (s *Stripe) createIntent(ctx context.Context, r ChargeRequest) (*paymentIntent, error) {
	form := url.Values{
		"amount":                  {strconv.FormatInt(r.Amount, 10)},
		"currency":                {strings.ToLower(r.Currency)},
		"customer":                {r.Customer},
		"payment_method":          {r.PaymentMethod},
		"payment_method_types[0]": {"card"},
		"confirm":                 {"true"},
		"off_session":             {"true"},
	}
	setIf(form, "description", r.Description)
	for k, v := range r.Metadata {
		form.Set("metadata["+k+"]", v)
	}
	var pi paymentIntent
	if err := s.post(ctx, "/v1/payment_intents", form, r.IdempotencyKey, &pi); err != nil {
		return nil, err
	}
	return &pi, nil
}

func (s *Stripe) Refund(ctx context.Context, r RefundRequest) (*Refund, error) {
	var re stripeRefund
	form := url.Values{"payment_intent": {r.Charge}, "amount": {strconv.FormatInt(r.Amount, 10)}}
	if err := s.post(ctx, "/v1/refunds", form, r.IdempotencyKey, &re); err != nil {
		return nil, stripeErr("refund", err)
	}
	return &Refund{ID: re.ID, Amount: re.Amount}, nil
}

// stripeError is Stripe's error object, with the answer's status.
type stripeError struct {
	Type        string `json:"type"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	Message     string `json:"message"`
	Status      int    `json:"-"`
}

func (e *stripeError) Error() string {
	return fmt.Sprintf("%s (%s, status %d)", e.Message, e.Type, e.Status)
}

// post sends one form-encoded POST and decodes the answer into out. A POST
// without an idempotency key of its own gets a random one, so its retries
// are safe too.
func (s *Stripe) post(ctx context.Context, path string, form url.Values, idem string, out any) error {
	if idem == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		idem = "teleclinic-" + hex.EncodeToString(b)
	}
	body := form.Encode()
	for attempt := 0; ; attempt++ {
		retry, err := s.send(ctx, path, body, idem, out)
		if err == nil || !retry || attempt == stripeRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(s.retryPause(attempt + 1)):
		}
	}
}

// send makes one attempt; retry says whether another may follow (Stripe's
// rules: a network failure, 409, 5xx, or Stripe-Should-Retry).
func (s *Stripe) send(ctx context.Context, path, body, idem string, out any) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, strings.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+s.secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Stripe-Version", stripeAPIVersion)
	req.Header.Set("Idempotency-Key", idem)
	res, err := s.hc.Do(req)
	if err != nil {
		return ctx.Err() == nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return true, err
	}
	if res.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			return false, fmt.Errorf("an answer that is not JSON: %.200s", raw)
		}
		return false, nil
	}
	var env struct {
		Error *stripeError `json:"error"`
	}
	se := &stripeError{Type: "api_error", Message: strings.TrimSpace(string(raw))}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		se = env.Error
	}
	se.Status = res.StatusCode
	switch res.Header.Get("Stripe-Should-Retry") {
	case "true":
		return true, se
	case "false":
		return false, se
	}
	return res.StatusCode == http.StatusConflict || res.StatusCode >= 500, se
}

// stripeErr turns Stripe's refusals of a card or request into CardErrors
// (the patient or clinic can act on them) and leaves everything else
// (network, authentication, Stripe's own failures) an error of ours.
func stripeErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *stripeError
	if errors.As(err, &se) {
		switch se.Type {
		case "card_error", "invalid_request_error":
			return &CardError{Code: se.Code, DeclineCode: se.DeclineCode, Message: se.Message}
		}
		return fmt.Errorf("stripe %s: %s (%s, status %d)", op, se.Message, se.Type, se.Status)
	}
	return fmt.Errorf("stripe %s: %w", op, err)
}

func setIf(form url.Values, key, v string) {
	if v != "" {
		form.Set(key, v)
	}
}

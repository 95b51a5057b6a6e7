package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/clinic"
)

// Throttling of sign-in attempts (docs/design-notes.md, "Throttling"):
// password logins, activation and reset links and their requests, and API
// key checks are counted per clinic and user name (or per clinic) and per
// client address, in windows of ThrottleWindow, in the database so every
// process shares them. Past a limit the attempt is refused with 429 and
// Retry-After before it is judged, the right password included: guessing
// cannot continue by luck. A successful attempt gives its count back.
const (
	defaultLoginAttempts   = 10
	defaultAddressAttempts = 100
	defaultThrottleWindow  = 15 * time.Minute
)

// ThrottleKey is one counter an attempt counts against: at most Limit
// attempts in the throttle's window.
type ThrottleKey struct {
	AccountID int64 // 0: across clinics (a client address)
	Bucket    string
	Limit     int
}

// attemptKeys are the counters of a sign-in attempt of kind ("login",
// "mail" for link requests, "link" for link uses, "sso:<code>" for API key
// checks) in p's clinic: for name, if any, and the caller's address.
func (a *App) attemptKeys(p *clinic.Principal, kind, name string) []ThrottleKey {
	var keys []ThrottleKey
	if a.cfg.LoginAttempts > 0 {
		acct := int64(0)
		if p.Account != nil {
			acct = p.Account.ID
		}
		keys = append(keys, ThrottleKey{acct, kind + ":" + strings.ToLower(strings.TrimSpace(name)), a.cfg.LoginAttempts})
	}
	if a.cfg.AddressAttempts > 0 && p.ClientAddr != "" {
		keys = append(keys, ThrottleKey{0, "addr:" + p.ClientAddr, a.cfg.AddressAttempts})
	}
	return keys
}

// checkFailures refuses an attempt (429) when a key has reached its limit
// of failures; failedAttempt counts one. API key checks use the pair: an
// integrator's server signs many patients in at once from one address,
// and counting its attempts in flight (as countAttempt does) would
// throttle it; guesses made at once may then pass the limit by as many as
// run together.
func (a *App) checkFailures(ctx context.Context, keys []ThrottleKey) error {
	now := a.now()
	since := now.Add(-a.cfg.ThrottleWindow).Unix()
	var wait int64
	for _, k := range keys {
		n, start, err := a.store.Read().ThrottleCount(ctx, k.AccountID, k.Bucket, since)
		if err != nil {
			return fmt.Errorf("throttle: %w", err)
		}
		if n >= k.Limit {
			wait = max(wait, start+int64(a.cfg.ThrottleWindow/time.Second)-now.Unix())
		}
	}
	return tooManyAttempts(wait)
}

// tooManyAttempts is the 429 of an attempt that must wait seconds, or nil
// when it need not.
func tooManyAttempts(wait int64) error {
	if wait <= 0 {
		return nil
	}
	e := clinic.Errorf(clinic.ETooMany, "Too many attempts; try again in %d seconds.", wait)
	e.RetryAfter = wait
	return e
}

func (a *App) failedAttempt(ctx context.Context, keys []ThrottleKey) {
	now := a.now()
	since := now.Add(-a.cfg.ThrottleWindow).Unix()
	for _, k := range keys {
		if _, _, err := a.store.Write().CountThrottleAttempt(context.WithoutCancel(ctx), k.AccountID, k.Bucket, now.Unix(), since); err != nil {
			a.log.Error("throttle: count", "err", err)
		}
	}
}

// countAttempt counts an attempt against each key and refuses it (429)
// when one is past its limit. It returns what to call if the attempt
// succeeds.
func (a *App) countAttempt(ctx context.Context, keys []ThrottleKey) (succeeded func(), err error) {
	now := a.now()
	since := now.Add(-a.cfg.ThrottleWindow).Unix()
	var wait int64
	for _, k := range keys {
		n, start, err := a.store.Write().CountThrottleAttempt(ctx, k.AccountID, k.Bucket, now.Unix(), since)
		if err != nil {
			return nil, fmt.Errorf("throttle: %w", err)
		}
		if n > k.Limit {
			wait = max(wait, start+int64(a.cfg.ThrottleWindow/time.Second)-now.Unix())
		}
	}
	if err := tooManyAttempts(wait); err != nil {
		return nil, err
	}
	return func() {
		for _, k := range keys {
			if err := a.store.Write().RefundThrottleAttempt(context.WithoutCancel(ctx), k.AccountID, k.Bucket); err != nil {
				a.log.Error("throttle: refund", "err", err)
			}
		}
	}, nil
}

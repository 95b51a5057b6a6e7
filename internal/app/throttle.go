package app

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"teleclinic/internal/clinic"
)

// Throttling of sign-in attempts (docs/design-notes.md, "Throttling"):
// password logins, activation and reset links and their requests, API key
// checks and the admin's sign-in are counted per clinic, what was tried
// (a user name, or the kind of secret) and client address together, and
// per client address across clinics, in windows of ThrottleWindow, in the
// database so every process shares them. An attacker does not share the
// victim's address, so their failures never hold the victim back. Past a
// limit a password is refused with 429 and Retry-After before it is
// judged, the right one included (from that address, guessing cannot go
// on by luck); a random secret (an API secret, the admin token) is judged
// first and the right one always passes, since it cannot be guessed. A
// successful attempt gives its count back. An IPv6 address counts by its
// /64, the block one subscriber holds.
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
// checks) in p's clinic: for name, if any, from the caller's address, and
// the caller's address across clinics.
func (a *App) attemptKeys(p *clinic.Principal, kind, name string) []ThrottleKey {
	var keys []ThrottleKey
	addr := AddressBlock(p.ClientAddr)
	if a.cfg.LoginAttempts > 0 {
		acct := int64(0)
		if p.Account != nil {
			acct = p.Account.ID
		}
		keys = append(keys, ThrottleKey{acct, kind + ":" + strings.ToLower(strings.TrimSpace(name)) + "@" + addr, a.cfg.LoginAttempts})
	}
	if a.cfg.AddressAttempts > 0 && addr != "" {
		keys = append(keys, ThrottleKey{0, "addr:" + addr, a.cfg.AddressAttempts})
	}
	return keys
}

// AddressBlock is what a client address counts as: an IPv4 address
// itself, an IPv6 address its /64 (one subscriber's block: a client
// choosing among its addresses is still one client).
func AddressBlock(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Unmap().Is4() {
		if err == nil {
			return ip.Unmap().String()
		}
		return addr
	}
	prefix, _ := ip.Prefix(64)
	return prefix.String()
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

// refusedSecret answers a wrong random secret: 429 once a key has
// reached its limit of failures (not counted again), else refused, with
// the failure counted against keys.
func (a *App) refusedSecret(ctx context.Context, keys []ThrottleKey, refused error) error {
	if err := a.checkFailures(ctx, keys); err != nil {
		return err
	}
	a.failedAttempt(ctx, keys)
	return refused
}

package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Idempotency keys, with Stripe's semantics (docs/design-notes.md,
// "Idempotency keys"): a POST, PUT or DELETE sent with an Idempotency-Key
// runs once per caller and key; a retry with the same parameters replays
// the first answer; the same key with other parameters is refused (422);
// a retry while the first is in flight is refused (409). Keys are scoped
// to the clinic and the caller and kept for IdempotencyKeep.
const (
	IdempotencyKeep = 24 * time.Hour
	// idempotencyStale is how long an in-flight key holds: past it, the
	// process that took it is taken to have died before it answered, and
	// a retry runs again.
	idempotencyStale  = 5 * time.Minute
	maxIdempotencyKey = 255
	// MaxIdempotencyKeys bounds the keys one caller holds in a clinic
	// (they live IdempotencyKeep): an integrator's retries use a key per
	// request, and a day of a busy one's writes fits; past it, 429.
	MaxIdempotencyKeys = 10000
)

// Idempotent is a request that holds its key: FinishIdempotent stores its
// answer.
type Idempotent struct{ rec clinic.IdempotencyRecord }

// BeginIdempotent claims key for p's request, whose method, path and
// parameters hash to fingerprint. It returns the claim when the request is
// to run, or the stored answer to replay. Any caller that is signed in may
// use keys; each sees only their own.
//
// A caller with no credential but the clinic's code (a password login, a
// reset request, a guest's join) has no key space of its own: shared, its
// keys would let one client replay another's answer, or learn from a 422
// what another sent. Its Idempotency-Key is ignored (neither a claim nor a
// replay): the request runs as any other.
func (a *App) BeginIdempotent(ctx context.Context, p *clinic.Principal, key, fingerprint string) (*Idempotent, *clinic.IdempotencyRecord, error) {
	if err := RequireAccount(p); err != nil {
		return nil, nil, err
	}
	if p.Kind == clinic.CredAccountCode {
		return nil, nil, nil
	}
	if err := CheckFields(Line("Idempotency-Key", key, maxIdempotencyKey)); err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(key) == "" {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "Idempotency-Key is empty.")
	}
	now := a.now()
	r := clinic.IdempotencyRecord{AccountID: p.Account.ID, Caller: idempotencyCaller(p), Key: key, Fingerprint: fingerprint, Created: now.Unix()}
	held, err := a.store.Read().CountIdempotencyKeys(ctx, r.AccountID, r.Caller, now.Add(-IdempotencyKeep).Unix())
	if err != nil {
		return nil, nil, fmt.Errorf("idempotency key: %w", err)
	}
	if held >= MaxIdempotencyKeys {
		return nil, nil, &clinic.Error{Code: clinic.ETooMany, RetryAfter: 3600,
			Message: fmt.Sprintf("This caller holds %d Idempotency-Keys from the last 24 hours, the most kept; send requests without one, or wait.", held)}
	}
	for try := 0; ; try++ {
		claimed, got, err := a.store.Write().ClaimIdempotencyKey(ctx, &r, now.Add(-IdempotencyKeep).Unix(), now.Add(-idempotencyStale).Unix())
		if errors.Is(err, store.ErrConflict) && try < 3 {
			continue
		}
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("idempotency key: %w", err)
		case claimed:
			return &Idempotent{rec: r}, nil, nil
		case got.Fingerprint != fingerprint:
			return nil, nil, clinic.Errorf(clinic.EMismatch, "Idempotency-Key %q was used with other parameters (or another method or path); use a new key for a new request.", key)
		case got.Status == 0:
			return nil, nil, clinic.Errorf(clinic.EConflict, "A request with Idempotency-Key %q is still in progress; retry when it has finished.", key)
		}
		body, err := a.openAnswer(got)
		if err != nil {
			a.log.Warn("idempotency: a stored answer cannot be opened (was the server key changed?)", "account_id", got.AccountID, "err", err)
			return nil, nil, clinic.Errorf(clinic.EConflict, "The answer stored for Idempotency-Key %q cannot be read back (the server's key has changed since); send the request with a new key.", key)
		}
		got.Body = body
		return nil, got, nil
	}
}

// FinishIdempotent stores the answer of the request that holds its key, to
// be replayed to retries. An answer that says the server failed (5xx) is
// not kept: the key is released, so that a retry runs again.
func (a *App) FinishIdempotent(ctx context.Context, in *Idempotent, status int, contentType string, body []byte) error {
	r := in.rec
	if status >= 500 || body == nil {
		return a.store.Write().ReleaseIdempotencyKey(context.WithoutCancel(ctx), &r)
	}
	sealed, err := a.sealFor(body, answerAAD(&r))
	if err != nil {
		return fmt.Errorf("idempotency: seal: %w", err)
	}
	r.Status, r.ContentType, r.Body = status, contentType, []byte(sealedAnswer+sealed)
	return a.store.Write().FinishIdempotencyKey(context.WithoutCancel(ctx), &r)
}

// A stored answer may carry a secret (an SSO's access and refresh tokens,
// a webhook's signing secret), so it is kept sealed: AES-GCM under a key
// derived from the server key, bound to its clinic, caller and key. A
// replay opens it; a leaked database row does not. sealedAnswer marks it
// (an answer stored before sealing, within the last day, is plain).
const sealedAnswer = "sealed:v1:"

func answerAAD(r *clinic.IdempotencyRecord) string {
	return "idempotency:" + fmt.Sprint(r.AccountID) + ":" + r.Caller + ":" + r.Key
}

// openAnswer is a stored answer's body as it was sent.
func (a *App) openAnswer(r *clinic.IdempotencyRecord) ([]byte, error) {
	sealed, ok := strings.CutPrefix(string(r.Body), sealedAnswer)
	if !ok {
		return r.Body, nil
	}
	return a.unsealFor(sealed, answerAAD(r))
}

// idempotencyCaller names whose keys a request's are: the credential kind
// and the acting user, so a patient's key never meets the admin's or
// another patient's.
func idempotencyCaller(p *clinic.Principal) string {
	return fmt.Sprintf("%d:%d", p.Kind, p.UserID())
}

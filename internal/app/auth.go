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

// Credentials are what a request presented, as the headers carry them.
type Credentials struct {
	AccountCode string // X-AccountCode
	APIToken    string // X-ApiToken: admin token or user access token
	APIKey      string // X-ApiKey
	APISecret   string // X-ApiSecret
	RequestID   string
	ClientAddr  string // the client's IP address
	// Portal says the token is a portal session's cookie: only there is a
	// session that opens one visit (visitlinks.go) a credential.
	Portal bool
	// FHIR says the request is to the FHIR API: only there is an app's
	// SMART access token a credential (smart.go).
	FHIR bool
}

// Need says which credential an endpoint accepts (spec: Authentication).
type Need int

// Credential requirements, from weakest to strongest.
const (
	NeedNone           Need = iota // GET /auth
	NeedAccountCode                // pre-login and public endpoints
	NeedAccountOptUser             // the account code; a user token too, if one is sent
	NeedAPIKey                     // POST /users/sso
	NeedUser                       // a user token, or the admin token acting as the clinic's admin user
	NeedAdmin                      // the admin token only
)

func unauthenticated(format string, args ...any) error {
	return clinic.Errorf(clinic.EUnauthenticated, format, args...)
}

// Authenticate checks the credentials an endpoint needs and returns who is
// calling. It never reveals whether a token exists in another clinic: every
// mismatch is the same "invalid credentials" answer.
func (a *App) Authenticate(ctx context.Context, c Credentials, need Need) (*clinic.Principal, error) {
	p := &clinic.Principal{RequestID: c.RequestID, ClientAddr: c.ClientAddr}
	switch need {
	case NeedNone:
		return p, nil
	case NeedAccountCode:
		acct, err := a.accountFromCode(ctx, c.AccountCode)
		if err != nil {
			return nil, err
		}
		p.Account, p.Kind = acct, clinic.CredAccountCode
		return p, nil
	case NeedAPIKey:
		return a.authAPIKey(ctx, c, p)
	case NeedAccountOptUser:
		if c.APIToken == "" {
			return a.Authenticate(ctx, c, NeedAccountCode)
		}
		if c.AccountCode == "" {
			return nil, unauthenticated("Missing X-AccountCode.")
		}
		need = NeedUser
	}
	if c.APIToken == "" {
		return nil, unauthenticated("Missing API token: send X-ApiToken.")
	}
	if looksLikeJWT(c.APIToken) {
		// An app's SMART access token (smart.go): for the FHIR API only.
		if !c.FHIR || need != NeedUser {
			return nil, unauthenticated("An app's access token opens the FHIR API only.")
		}
		return a.appPrincipal(ctx, c, p, c.APIToken)
	}
	h := HashSecret(c.APIToken)
	// User tokens are by far the most common, so they are looked up first.
	t, u, err := a.tokenUser(ctx, h)
	switch {
	case err == nil:
		if need == NeedAdmin {
			return nil, unauthenticated("This endpoint requires the clinic admin token; a user token is not accepted.")
		}
		return a.userPrincipal(ctx, c, p, t, u)
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	acct, err := a.store.Read().AccountByAdminTokenHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unauthenticated("Invalid or expired API token.")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	// The admin token must come with its own clinic's code (spec: X-ApiToken + X-AccountCode).
	if c.AccountCode == "" {
		return nil, unauthenticated("Missing X-AccountCode.")
	}
	if c.AccountCode != acct.Code {
		return nil, unauthenticated("Invalid or expired API token.")
	}
	admin, err := a.store.Read().AdminUser(ctx, acct.ID)
	if err != nil {
		return nil, fmt.Errorf("authenticate: admin user: %w", err)
	}
	p.Account, p.Kind, p.User = acct, clinic.CredAdminToken, admin
	return p, nil
}

func (a *App) accountFromCode(ctx context.Context, code string) (*clinic.Account, error) {
	if code == "" {
		return nil, unauthenticated("Missing X-AccountCode.")
	}
	acct, err := a.accountByCode(ctx, code)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unauthenticated("Unknown account code.")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return acct, nil
}

func (a *App) authAPIKey(ctx context.Context, c Credentials, p *clinic.Principal) (*clinic.Principal, error) {
	if c.AccountCode == "" {
		return nil, unauthenticated("Missing X-AccountCode.")
	}
	if c.APIKey == "" || c.APISecret == "" {
		// A key alone is not a credential (docs/compat.md).
		return nil, unauthenticated("This endpoint requires X-ApiKey and X-ApiSecret.")
	}
	// A clinic's key checks are counted under its code, known or not, so
	// that guessing reveals nothing about which codes exist. The key and
	// secret are random and cannot be guessed: they are judged first, and
	// the right pair passes whatever others failed (app/throttle.go); a
	// wrong one past the limit is a 429.
	keys := a.attemptKeys(p, "sso:"+strings.ToLower(c.AccountCode), "")
	id, secretHash, err := a.store.Read().AccountAPISecretHash(ctx, c.AccountCode, HashSecret(c.APIKey))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if err != nil || !equalHash(secretHash, HashSecret(c.APISecret)) {
		return nil, a.refusedSecret(ctx, keys, unauthenticated("Invalid API key or secret."))
	}
	acct, err := a.accountByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	p.Account, p.Kind = acct, clinic.CredAPIKey
	return p, nil
}

// tokenUser finds a token by hash and its user (store.TokenUser, through
// the store's user cache). ErrNotFound when there is no such token.
func (a *App) tokenUser(ctx context.Context, hash string) (*store.TokenAuth, *clinic.User, error) {
	return a.store.TokenUser(ctx, hash)
}

// userPrincipal validates an access token found by hash: kind, revocation,
// absolute and idle expiry, the user's status, and the clinic. It moves the
// token's idle clock forward.
func (a *App) userPrincipal(ctx context.Context, c Credentials, p *clinic.Principal, t *store.TokenAuth, u *clinic.User) (*clinic.Principal, error) {
	now := a.Unix()
	if err := a.checkAccess(t, u, now); err != nil {
		return nil, err
	}
	acct, err := a.accountByID(ctx, t.AccountID)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	// A user token names its clinic by itself; a contradicting header is a
	// failure, never a cross-clinic read (docs/compat.md).
	if c.AccountCode != "" && c.AccountCode != acct.Code {
		return nil, unauthenticated("Invalid or expired API token.")
	}
	lastUsed := t.LastUsed
	if now-t.LastUsed >= a.touchInterval() {
		if err := a.store.Write().TouchToken(ctx, t.ID, now, now-a.touchInterval()+1); err != nil {
			return nil, fmt.Errorf("authenticate: touch: %w", err)
		}
		lastUsed = now
	}
	if t.VisitID != 0 && !c.Portal {
		return nil, unauthenticated("Invalid or expired API token.")
	}
	p.Account, p.Kind, p.User, p.TokenID, p.VisitScope = acct, clinic.CredUserToken, u, t.ID, t.VisitID
	p.Until = min(t.Expires, lastUsed+int64(a.cfg.UserTokenIdle/time.Second))
	// The admin user's tokens are only ever the admin's portal sessions
	// (AdminSignIn): no other way issues one (SSO and sign-up refuse its
	// type, and it has no password).
	if u.Type == clinic.UserAdmin {
		p.Kind = clinic.CredAdminSession
	}
	return p, nil
}

// checkAccess says whether an access token is usable now.
func (a *App) checkAccess(t *store.TokenAuth, u *clinic.User, now int64) error {
	switch {
	case t.Kind != store.TokenAccess:
		return unauthenticated("Invalid or expired API token.")
	case t.Revoked != 0:
		return unauthenticated("Invalid or expired API token.")
	case now >= t.Expires:
		return unauthenticated("Expired API token: log in again.")
	case now-t.LastUsed >= int64(a.cfg.UserTokenIdle/time.Second):
		return unauthenticated("Expired API token (idle): refresh it or log in again.")
	case u.Status == clinic.StatusDisabled || !u.Active:
		return unauthenticated("This user is disabled.")
	}
	return nil
}

// touchInterval is how stale last_used may get before a request rewrites it:
// often enough that idle expiry is precise to a twentieth of the idle period,
// rarely enough that a busy token costs no write per request.
func (a *App) touchInterval() int64 {
	iv := int64(a.cfg.UserTokenIdle/time.Second) / 20
	return min(max(iv, 1), 60)
}

package app

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// SMART App Launch: the rules of the clinic's authorization server. The
// protocol is the smart package's (on zitadel/oidc); what an app may be
// registered as, what a person may grant it, and what its token is worth
// are decided here.
//
// A token is a JWT signed with the server's key (RS256), whose jti names
// its row: the row is what counts (revoked with its client, or when its
// refresh token is used), the JWT is how a client carries it.

// The lifetimes of the protocol's artifacts.
const (
	OAuthRequestTTL = 10 * time.Minute    // from the app's redirect to the code's exchange
	OAuthAccessTTL  = time.Hour           // an access token
	OAuthRefreshTTL = 90 * 24 * time.Hour // a refresh token (offline_access), renewed by each use
	maxOAuthClients = 100                 // a clinic's registered apps
)

// OAuthIssuer is the authorization server's issuer: the server's address
// and /oauth.
func (a *App) OAuthIssuer() string { return strings.TrimRight(a.BaseURL(), "/") + "/oauth" }

// OAuthClientInput is an app the admin registers.
type OAuthClientInput struct {
	Name         string
	Kind         string   // public, confidential or backend
	RedirectURIs []string // public and confidential: where the person is sent back, exactly
	JWKS         string   // backend: its public keys (a JSON Web Key Set)
	Scopes       []string // backend: the system scopes it may have
}

// RegisteredClient is a new client, with its secret (a confidential app's)
// shown once.
type RegisteredClient struct {
	*clinic.OAuthClient
	Secret string
}

// RegisterOAuthClient registers an app of the clinic (admin). Its client
// id is made here; a confidential app's secret is shown once and kept
// hashed.
func (a *App) RegisterOAuthClient(ctx context.Context, p *clinic.Principal, in OAuthClientInput) (*RegisteredClient, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.Name)
	if err := CheckFields(Line("name", name, 100)); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "name (what the consent page calls the app) is required.")
	}
	c := &clinic.OAuthClient{AccountID: p.Account.ID, ClientID: RandomHex(16), Name: name, Kind: in.Kind, Created: a.Unix()}
	out := &RegisteredClient{OAuthClient: c}
	switch in.Kind {
	case clinic.ClientPublic, clinic.ClientConfidential:
		for _, u := range in.RedirectURIs {
			if u = strings.TrimSpace(u); u != "" {
				if err := checkRedirectURI(u); err != nil {
					return nil, err
				}
				c.RedirectURIs = append(c.RedirectURIs, u)
			}
		}
		if len(c.RedirectURIs) == 0 {
			return nil, clinic.Errorf(clinic.EInvalid, "redirect_uris (where the app takes the person back, exactly as it sends them) is required.")
		}
		if in.Kind == clinic.ClientConfidential {
			out.Secret = NewSecret()
			c.SecretHash = HashSecret(out.Secret)
		}
	case clinic.ClientBackend:
		var set jose.JSONWebKeySet
		if err := json.Unmarshal([]byte(in.JWKS), &set); err != nil || len(set.Keys) == 0 {
			return nil, clinic.Errorf(clinic.EInvalid, "jwks (the service's public keys, a JSON Web Key Set) is required.")
		}
		for _, k := range set.Keys {
			if !k.IsPublic() || k.KeyID == "" {
				return nil, clinic.Errorf(clinic.EInvalid, "jwks holds public keys only, each with its kid.")
			}
		}
		c.JWKS = in.JWKS
		for _, s := range in.Scopes {
			sc, ok := ParseScope(s)
			if !ok || sc.Level != "system" {
				return nil, clinic.Errorf(clinic.EInvalid, "scopes: %q is not a system scope (system/Patient.rs, system/*.rs).", s)
			}
			if !sc.within("rs") {
				return nil, clinic.Errorf(clinic.EInvalid, "scopes: a backend service reads (r, s); %q asks for more.", s)
			}
			c.Scopes = append(c.Scopes, s)
		}
		if len(c.Scopes) == 0 {
			return nil, clinic.Errorf(clinic.EInvalid, "scopes (the system scopes the service may have, such as system/*.rs) is required.")
		}
	default:
		return nil, clinic.Errorf(clinic.EInvalid, "kind is public, confidential or backend.")
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		have, err := q.OAuthClients(ctx, p.Account.ID)
		if err != nil {
			return err
		}
		if len(have) >= maxOAuthClients {
			return clinic.Errorf(clinic.EConflict, "A clinic registers at most %d apps; revoke one first.", maxOAuthClients)
		}
		if err := q.CreateOAuthClient(ctx, c); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "oauth.client.create", "oauth_client", i64s(c.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("oauth client", err, "")
	}
	return out, nil
}

// checkRedirectURI admits an absolute https address, or http on the
// machine itself (an app in development).
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Fragment != "" || len(raw) > 2048:
		return clinic.Errorf(clinic.EInvalid, "redirect_uris: %q is not an absolute address without a fragment.", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return clinic.Errorf(clinic.EInvalid, "redirect_uris: %q must be https (http only on localhost or 127.0.0.1, for development).", raw)
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// OAuthClients lists the clinic's apps (admin), revoked ones included.
func (a *App) OAuthClients(ctx context.Context, p *clinic.Principal) ([]*clinic.OAuthClient, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	cs, err := a.store.Read().OAuthClients(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("oauth clients: %w", err)
	}
	if cs == nil {
		cs = []*clinic.OAuthClient{}
	}
	return cs, nil
}

// RevokeOAuthClient revokes one of the clinic's apps (admin), and every
// token it holds: its next request is refused.
func (a *App) RevokeOAuthClient(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		found, err := q.RevokeOAuthClient(ctx, p.Account.ID, id, a.Unix())
		if err != nil {
			return err
		}
		if !found {
			return store.ErrNotFound
		}
		return a.AuditIn(ctx, q, p, "oauth.client.revoke", "oauth_client", i64s(id), OutcomeOK)
	})
	return StoreErr("oauth client", err, "No such app.")
}

// AppGrant is an app a person allowed, still holding a token of theirs.
type AppGrant struct {
	ClientID, Name string
	Granted        int64
}

// MyApps lists the apps the caller allowed that still hold a token of
// theirs.
func (a *App) MyApps(ctx context.Context, p *clinic.Principal) ([]AppGrant, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	cs, when, err := a.store.Read().OAuthGrantsOf(ctx, p.Account.ID, p.UserID(), a.Unix())
	if err != nil {
		return nil, fmt.Errorf("my apps: %w", err)
	}
	out := []AppGrant{}
	for i, c := range cs {
		out = append(out, AppGrant{ClientID: c.ClientID, Name: c.Name, Granted: when[i]})
	}
	return out, nil
}

// DisconnectApp takes back the caller's permission from an app: every
// token it holds of theirs is revoked (its next request is refused; it
// asks again to come back). Audited as oauth.revoke.
func (a *App) DisconnectApp(ctx context.Context, p *clinic.Principal, clientID string) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	return a.store.Tx(ctx, func(q *store.Q) error {
		n, err := q.RevokeOAuthGrant(ctx, p.Account.ID, p.UserID(), clientID, a.Unix())
		if err != nil {
			return err
		}
		if n == 0 {
			return clinic.Errorf(clinic.ENotFound, "This app holds no permission of yours.")
		}
		return a.AuditIn(ctx, q, p, "oauth.revoke", "oauth_client", clientID, OutcomeOK)
	})
}

// The authorization server's steps. They take no principal: the protocol
// authenticates the app (client id, secret, assertion, code, PKCE) before
// it calls them, and a person only through ApproveOAuthRequest.

// OAuthClient is a registered app that is not revoked.
func (a *App) OAuthClient(ctx context.Context, clientID string) (*clinic.OAuthClient, error) {
	c, err := a.store.Read().OAuthClientByClientID(ctx, clientID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.Revoked != 0) {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "No such app, or it was revoked.")
	}
	if err != nil {
		return nil, fmt.Errorf("oauth client: %w", err)
	}
	return c, nil
}

// CheckOAuthSecret checks a confidential app's secret.
func (a *App) CheckOAuthSecret(ctx context.Context, clientID, secret string) error {
	c, err := a.OAuthClient(ctx, clientID)
	if err != nil {
		return err
	}
	if c.Kind != clinic.ClientConfidential || !equalHash(c.SecretHash, HashSecret(secret)) {
		return clinic.Errorf(clinic.EUnauthenticated, "The app's secret does not match.")
	}
	return nil
}

// StartOAuthRequest keeps an authorize request the protocol checked, in
// its app's clinic, until OAuthRequestTTL.
func (a *App) StartOAuthRequest(ctx context.Context, r *clinic.OAuthRequest) error {
	c, err := a.OAuthClient(ctx, r.ClientID)
	if err != nil {
		return err
	}
	r.ID, r.AccountID, r.Expires = RandomHex(16), c.AccountID, a.Unix()+int64(OAuthRequestTTL/time.Second)
	return a.store.Write().CreateOAuthRequest(ctx, r)
}

// OAuthRequest is an authorize request in flight.
func (a *App) OAuthRequest(ctx context.Context, id string) (*clinic.OAuthRequest, error) {
	r, err := a.store.Read().OAuthRequestByID(ctx, id, a.Unix())
	return r, StoreErr("oauth request", err, "This sign-in request has ended; start again from the app.")
}

// OAuthRequestClinic is the clinic of a request in flight: whom the
// consent page asks to sign in, before it shows anything of the request.
func (a *App) OAuthRequestClinic(ctx context.Context, id string) (*clinic.Account, error) {
	r, err := a.OAuthRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	return a.accountByID(ctx, r.AccountID)
}

// OAuthRequestByCode is the approved request a code was issued for.
func (a *App) OAuthRequestByCode(ctx context.Context, code string) (*clinic.OAuthRequest, error) {
	r, err := a.store.Write().OAuthRequestByCode(ctx, HashSecret(code), a.Unix())
	return r, StoreErr("oauth code", err, "The code is not valid, or was used.")
}

// SaveOAuthCode ties a code to an approved request, once.
func (a *App) SaveOAuthCode(ctx context.Context, id, code string) error {
	ok, err := a.store.Write().SaveOAuthCode(ctx, id, HashSecret(code))
	if err == nil && !ok {
		err = clinic.Errorf(clinic.EConflict, "This request has no approval, or already has its code.")
	}
	return err
}

// EndOAuthRequest forgets a request whose code was exchanged (a code is
// used once), and those expired.
func (a *App) EndOAuthRequest(ctx context.Context, id string) error {
	return a.store.Write().DeleteOAuthRequest(ctx, id, a.Unix())
}

// OAuthConsent is what the consent page shows of a request.
type OAuthConsent struct {
	Request *clinic.OAuthRequest
	Client  *clinic.OAuthClient
	Params  OAuthParams
	// Granted are the scopes the person may grant; Refused those their
	// role does not hold, with why (a Refused… code).
	Granted []string
	Refused map[string]string
}

// OAuthParams are the authorize parameters the consent decides on.
type OAuthParams struct {
	Scopes      []string `json:"scopes"`
	RedirectURI string   `json:"redirect_uri"`
	State       string   `json:"state"`
}

// OAuthConsentFor is the consent a signed-in person gives (or not) to a
// request of their clinic: the app, and each scope it asked for, held or
// not by the person's role.
func (a *App) OAuthConsentFor(ctx context.Context, p *clinic.Principal, id string) (*OAuthConsent, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	r, err := a.OAuthRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.AccountID != p.Account.ID {
		return nil, clinic.Errorf(clinic.EForbidden, "This app is another clinic's: sign in to that clinic to approve it.")
	}
	c, err := a.OAuthClient(ctx, r.ClientID)
	if err != nil {
		return nil, err
	}
	out := &OAuthConsent{Request: r, Client: c, Refused: map[string]string{}}
	if err := json.Unmarshal(r.Params, &out.Params); err != nil {
		return nil, fmt.Errorf("oauth request params: %w", err)
	}
	for _, s := range out.Params.Scopes {
		if why := roleRefuses(p, s); why != "" {
			out.Refused[s] = why
		} else {
			out.Granted = append(out.Granted, s)
		}
	}
	return out, nil
}

// ApproveOAuthRequest records the person's approval: the scopes their role
// holds are granted (never more), and a patient's launch is in their own
// record. Audited as oauth.grant on the app.
func (a *App) ApproveOAuthRequest(ctx context.Context, p *clinic.Principal, id string) (*OAuthConsent, error) {
	cs, err := a.OAuthConsentFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	r := cs.Request
	r.UserID, r.Scopes, r.AuthTime = p.UserID(), cs.Granted, a.Unix()
	if IsPatient(p) {
		r.PatientID = p.UserID()
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		ok, err := q.ApproveOAuthRequest(ctx, r)
		if err != nil {
			return err
		}
		if !ok {
			return clinic.Errorf(clinic.EConflict, "This request was already decided; start again from the app.")
		}
		return a.AuditIn(ctx, q, p, "oauth.grant", "oauth_client", cs.Client.ClientID, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("oauth grant", err, "")
	}
	return cs, nil
}

// DenyOAuthRequest records that the person refused the app, and forgets
// the request.
func (a *App) DenyOAuthRequest(ctx context.Context, p *clinic.Principal, id string) (*OAuthConsent, error) {
	cs, err := a.OAuthConsentFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.DeleteOAuthRequest(ctx, id, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "oauth.grant", "oauth_client", cs.Client.ClientID, outcomeDenied)
	})
	return cs, err
}

// TokenFrom is what a token is issued from, and uses up: an approved
// request (its code is exchanged once) or a refresh token's row (it
// renews once); neither for a backend service's assertion.
type TokenFrom struct {
	Request   string // the request whose code is exchanged
	Refreshed string // the token row whose refresh token is used
}

// IssueOAuthToken stores a new access token row for t (its ID made here)
// and, when refresh is set, a refresh token, returned. What it is issued
// from is used up in the same transaction, conditionally: of two
// exchanges of one code, or two uses of one refresh token, at once or
// one after the other, one gets a token and the other is refused with
// nothing issued.
func (a *App) IssueOAuthToken(ctx context.Context, t *clinic.OAuthToken, refresh bool, from TokenFrom) (string, error) {
	now := a.Unix()
	t.ID, t.Created, t.Expires = RandomHex(16), now, now+int64(OAuthAccessTTL/time.Second)
	var secret string
	if refresh {
		secret = NewSecret()
		t.RefreshHash, t.RefreshExpires = HashSecret(secret), now+int64(OAuthRefreshTTL/time.Second)
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		if from.Request != "" {
			ok, err := q.ConsumeOAuthRequest(ctx, from.Request)
			if err != nil {
				return err
			}
			if !ok {
				return clinic.Errorf(clinic.EUnauthenticated, "The code was used already.")
			}
		}
		if from.Refreshed != "" {
			ok, err := q.RevokeOAuthToken(ctx, from.Refreshed, now)
			if err != nil {
				return err
			}
			if !ok {
				return clinic.Errorf(clinic.EUnauthenticated, "The refresh token was already used.")
			}
		}
		if err := q.CreateOAuthToken(ctx, t); err != nil {
			return err
		}
		p := &clinic.Principal{Account: &clinic.Account{ID: t.AccountID}, Kind: clinic.CredUserToken, Grant: &clinic.Grant{ClientID: t.ClientID}}
		if t.UserID == 0 {
			p.Kind = clinic.CredAPIKey
		} else {
			p.User = &clinic.User{ID: t.UserID}
		}
		return a.AuditIn(ctx, q, p, "oauth.token", "oauth_client", t.ClientID, OutcomeOK)
	})
	if err != nil {
		return "", StoreErr("oauth token", err, "")
	}
	return secret, nil
}

// OAuthTokenByRefresh is the live token a refresh token renews.
func (a *App) OAuthTokenByRefresh(ctx context.Context, refresh string) (*clinic.OAuthToken, error) {
	t, err := a.store.Read().OAuthTokenByRefresh(ctx, HashSecret(refresh))
	if errors.Is(err, store.ErrNotFound) || (err == nil && (t.Revoked != 0 || t.RefreshExpires <= a.Unix())) {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "The refresh token is not valid, or was used.")
	}
	if err != nil {
		return nil, fmt.Errorf("oauth refresh: %w", err)
	}
	if _, err := a.OAuthClient(ctx, t.ClientID); err != nil {
		return nil, err
	}
	return t, nil
}

// RevokeOAuthToken revokes the token a refresh token or a token id names
// (RFC 7009: an unknown token is not an error).
func (a *App) RevokeOAuthToken(ctx context.Context, tokenOrRefresh string) error {
	t, err := a.store.Read().OAuthTokenByRefresh(ctx, HashSecret(tokenOrRefresh))
	if errors.Is(err, store.ErrNotFound) {
		t, err = a.store.Read().OAuthTokenByID(ctx, tokenOrRefresh)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("oauth revoke: %w", err)
	}
	_, err = a.store.Write().RevokeOAuthToken(ctx, t.ID, a.Unix())
	return err
}

// OAuthToken is a live token row by its id.
func (a *App) OAuthToken(ctx context.Context, id string) (*clinic.OAuthToken, error) {
	t, err := a.store.Read().OAuthTokenByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (t.Revoked != 0 || t.Expires <= a.Unix())) {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "The token is not valid.")
	}
	return t, err
}

// OAuthUser is the person a token is for, with their clinic.
func (a *App) OAuthUser(ctx context.Context, accountID, userID int64) (*clinic.User, *clinic.Account, error) {
	acct, err := a.accountByID(ctx, accountID)
	if err != nil {
		return nil, nil, fmt.Errorf("oauth user: %w", err)
	}
	u, err := a.store.Read().UserByID(ctx, accountID, userID)
	if err != nil {
		return nil, nil, StoreErr("oauth user", err, "No such user.")
	}
	return u, acct, nil
}

// oauthKey is the server's token signing key, read (or made, the first
// time) once: it never changes while the server runs.
type oauthKey struct {
	mu  sync.Mutex
	key *rsa.PrivateKey
	id  string
}

// OAuthSigningKey is the key tokens are signed with, and its id.
func (a *App) OAuthSigningKey(ctx context.Context) (*rsa.PrivateKey, string, error) {
	a.oauthKey.mu.Lock()
	defer a.oauthKey.mu.Unlock()
	if a.oauthKey.key != nil {
		return a.oauthKey.key, a.oauthKey.id, nil
	}
	id, sealed, err := a.store.Read().OAuthKey(ctx)
	if errors.Is(err, store.ErrNotFound) {
		if err := a.addOAuthKey(ctx); err != nil {
			return nil, "", err
		}
		id, sealed, err = a.store.Write().OAuthKey(ctx)
	}
	if err != nil {
		return nil, "", fmt.Errorf("oauth key: %w", err)
	}
	raw, err := a.Unseal(sealed)
	if err != nil {
		return nil, "", fmt.Errorf("oauth key: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, "", errors.New("oauth key: not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("oauth key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, "", errors.New("oauth key: not RSA")
	}
	a.oauthKey.key, a.oauthKey.id = rk, id
	return rk, id, nil
}

// addOAuthKey makes a signing key and stores it, sealed.
func (a *App) addOAuthKey(ctx context.Context) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	sealed, err := a.Seal(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: mustPKCS8(key)}))
	if err != nil {
		return err
	}
	if err := a.store.Write().AddOAuthKey(ctx, RandomHex(8), sealed, a.Unix()); err != nil {
		return fmt.Errorf("oauth key: %w", err)
	}
	return nil
}

func mustPKCS8(k *rsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err) // an RSA key always marshals
	}
	return b
}

// looksLikeJWT says whether a bearer token is an app's (a JWT) rather than
// one of the API's own tokens (hex).
func looksLikeJWT(tok string) bool {
	return strings.Count(tok, ".") == 2 && strings.HasPrefix(tok, "eyJ")
}

// appPrincipal authenticates an app's access token: signed by this
// server, not expired, its row live and its app not revoked. The
// principal is the person (or, for a backend service, the clinic) with
// the app's grant, which every FHIR operation checks besides the role.
func (a *App) appPrincipal(ctx context.Context, c Credentials, p *clinic.Principal, tok string) (*clinic.Principal, error) {
	key, _, err := a.OAuthSigningKey(ctx)
	if err != nil {
		return nil, err
	}
	// The signature and issuer are the JWT's to prove; its times are the
	// row's to decide (they were written on the app's clock, the JWT's on
	// the library's wall clock).
	claims := jwt.RegisteredClaims{}
	_, err = jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	if err != nil || claims.ID == "" || claims.Issuer != a.OAuthIssuer() {
		return nil, unauthenticated("Invalid or expired access token.")
	}
	t, err := a.store.Read().OAuthTokenByID(ctx, claims.ID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (t.Revoked != 0 || t.Expires <= a.Unix())) {
		return nil, unauthenticated("Invalid or expired access token.")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if _, err := a.OAuthClient(ctx, t.ClientID); err != nil {
		return nil, unauthenticated("The app's access was revoked.")
	}
	acct, err := a.accountByID(ctx, t.AccountID)
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if c.AccountCode != "" && c.AccountCode != acct.Code {
		return nil, unauthenticated("Invalid or expired access token.")
	}
	p.Account, p.Until = acct, t.Expires
	p.Grant = &clinic.Grant{ClientID: t.ClientID, Scopes: t.Scopes, PatientID: t.PatientID}
	if t.UserID == 0 {
		// A backend service acts for the clinic, as far as its system
		// scopes reach.
		p.Kind, p.User = clinic.CredAdminToken, nil
		admin, err := a.store.Read().AdminUser(ctx, acct.ID)
		if err != nil {
			return nil, fmt.Errorf("authenticate: admin user: %w", err)
		}
		p.User = admin
		return p, nil
	}
	u, err := a.store.Read().UserByID(ctx, acct.ID, t.UserID)
	if err != nil || !u.Active {
		return nil, unauthenticated("Invalid or expired access token.")
	}
	p.Kind, p.User = clinic.CredUserToken, u
	return p, nil
}

// Scope is a SMART scope of the v2 syntax (patient/Observation.rs), or v1
// (.read, .write, .*) read as v2.
type Scope struct {
	Level string // patient, user or system
	Type  string // a resource type, or *
	Perms string // of c, r, u, d, s in that order
}

// ParseScope reads a resource scope; false for any other (openid,
// launch/patient, …).
func ParseScope(s string) (Scope, bool) {
	level, rest, ok := strings.Cut(s, "/")
	if !ok || (level != "patient" && level != "user" && level != "system") {
		return Scope{}, false
	}
	typ, perms, ok := strings.Cut(rest, ".")
	if !ok || typ == "" {
		return Scope{}, false
	}
	switch perms {
	case "read":
		perms = "rs"
	case "write":
		perms = "cud"
	case "*":
		perms = "cruds"
	default:
		for i := range len(perms) {
			if !strings.ContainsRune("cruds", rune(perms[i])) || strings.Count(perms, perms[i:i+1]) > 1 {
				return Scope{}, false
			}
		}
	}
	if perms == "" {
		return Scope{}, false
	}
	return Scope{Level: level, Type: typ, Perms: perms}, true
}

// within says whether every permission of s is one of perms.
func (s Scope) within(perms string) bool {
	for _, c := range s.Perms {
		if !strings.ContainsRune(perms, c) {
			return false
		}
	}
	return true
}

// otherScopes are the scopes that name no resource: who the person is,
// their launch's patient, a refresh token.
var otherScopes = []string{"openid", "fhirUser", "profile", "launch", "launch/patient", "offline_access", "online_access"}

// SupportedScopes are the SMART scopes the configuration lists: the v2
// resource scopes of each level and the launch's.
var SupportedScopes = []string{"fhirUser", "launch/patient", "patient/*.rs", "user/*.rs", "system/*.rs",
	"patient/Appointment.cruds", "user/Appointment.cruds", "patient/Patient.rus"}

// OAuthCryptoSeed is a secret of this server the authorization server
// derives its own key from.
func (a *App) OAuthCryptoSeed() string { return a.mac("oauth-crypto", "") }

// VerifyClientAssertion authenticates a backend service by its signed
// assertion (SMART Backend Services): signed with a key the admin
// registered for it (RS384, ES384 or RS256), issued by and about the
// service, for tokenURL, expiring within five minutes, and used once.
func (a *App) VerifyClientAssertion(ctx context.Context, assertion, tokenURL string) (*clinic.OAuthClient, error) {
	refuse := func(why string) (*clinic.OAuthClient, error) {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "The client assertion is refused: %s.", why)
	}
	sig, err := jose.ParseSignedCompact(assertion, []jose.SignatureAlgorithm{jose.RS384, jose.ES384, jose.RS256})
	if err != nil || len(sig.Signatures) != 1 {
		return refuse("not a JWT signed with RS384, ES384 or RS256")
	}
	var claims struct {
		Iss string           `json:"iss"`
		Sub string           `json:"sub"`
		Aud jwt.ClaimStrings `json:"aud"`
		Exp int64            `json:"exp"`
		Jti string           `json:"jti"`
	}
	if err := json.Unmarshal(sig.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return refuse("its claims are not JSON")
	}
	c, err := a.OAuthClient(ctx, claims.Iss)
	if err != nil || c.Kind != clinic.ClientBackend {
		return refuse("iss is no backend service of a clinic here")
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(c.JWKS), &set); err != nil {
		return nil, fmt.Errorf("client keys: %w", err)
	}
	keys := set.Key(sig.Signatures[0].Header.KeyID)
	if len(keys) == 0 {
		return refuse("its kid names none of the service's keys")
	}
	if _, err := sig.Verify(keys[0].Key); err != nil {
		return refuse("the signature does not verify")
	}
	now := a.Unix()
	switch {
	case claims.Sub != claims.Iss:
		return refuse("sub must be the client id, as iss is")
	case !slices.Contains(claims.Aud, tokenURL):
		return refuse("aud must be the token endpoint, " + tokenURL)
	case claims.Exp <= now || claims.Exp > now+300:
		return refuse("exp must be within the next five minutes")
	case claims.Jti == "":
		return refuse("jti is required")
	}
	err = a.store.Write().UseOAuthAssertion(ctx, c.ClientID+" "+claims.Jti, claims.Exp, now)
	if errors.Is(err, store.ErrConflict) {
		return refuse("its jti was used before")
	}
	if err != nil {
		return nil, fmt.Errorf("client assertion: %w", err)
	}
	return c, nil
}

// KnownScope says whether s is a scope this server grants (a resource
// scope, or one of otherScopes).
func KnownScope(s string) bool {
	_, ok := ParseScope(s)
	return ok || slices.Contains(otherScopes, s)
}

// rolePerms is what a person's role may do to a type through the FHIR API
// at most: read and search everything their role reads; a patient updates
// their own Patient; patients and providers book and cancel Appointments.
// A scope asking more is refused, so a grant never widens the role.
func rolePerms(p *clinic.Principal, typ string) string {
	switch {
	case typ == "Appointment":
		return "crus"
	case typ == "Patient" && IsPatient(p):
		return "rus"
	}
	return "rs"
}

// Why a person's role cannot grant a scope (OAuthConsent.Refused).
const (
	RefusedUnknown   = "unknown"    // not a scope this server knows
	RefusedSystem    = "system"     // a backend service's, registered by the admin
	RefusedNoPatient = "no-patient" // patient/ scopes of a provider, who has no patient chosen
	RefusedWriteAll  = "write-all"  // every type may be read and searched, not written
	RefusedRole      = "role"       // more than rolePerms
)

// roleRefuses says why the person's role cannot grant scope s ("" when it
// can).
func roleRefuses(p *clinic.Principal, s string) string {
	if slices.Contains(otherScopes, s) {
		return ""
	}
	sc, ok := ParseScope(s)
	switch {
	case !ok:
		return RefusedUnknown
	case sc.Level == "system":
		return RefusedSystem
	case sc.Level == "patient" && !IsPatient(p):
		return RefusedNoPatient
	case sc.Type == "*" && !sc.within("rs"):
		return RefusedWriteAll
	case !sc.within(rolePerms(p, sc.Type)):
		return RefusedRole
	}
	return ""
}

// GrantAllows says whether an app's grant lets it do perm (one of c, r,
// u, d, s) to resources of typ; a credential with no grant (the API's own
// tokens) is not narrowed.
func GrantAllows(g *clinic.Grant, typ string, perm byte) bool {
	if g == nil {
		return true
	}
	for _, s := range g.Scopes {
		if sc, ok := ParseScope(s); ok && (sc.Type == "*" || sc.Type == typ) && strings.IndexByte(sc.Perms, perm) >= 0 {
			return true
		}
	}
	return false
}

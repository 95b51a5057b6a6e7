package smart

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// storage is the authorization server's op.Storage: each method is one
// step of the protocol, kept by app (its rules, its rows, its audit).
type storage struct{ app *app.App }

// notFound is the error op treats as "no such thing" rather than a fault.
type notFound struct{ error }

func (notFound) IsNotFound() {}

// params is what of an authorize request the token step needs back.
type params struct {
	app.OAuthParams
	Nonce         string `json:"nonce,omitempty"`
	Challenge     string `json:"code_challenge"`
	ChallengeHow  string `json:"code_challenge_method"`
	ResponseType  string `json:"response_type"`
	ResponseMode  string `json:"response_mode,omitempty"`
	RequestedAuth int64  `json:"-"`
}

// authRequest is an app.OAuthRequest as op reads one.
type authRequest struct {
	r *clinic.OAuthRequest
	p params
}

func (a *authRequest) GetID() string          { return a.r.ID }
func (a *authRequest) GetACR() string         { return "" }
func (a *authRequest) GetAMR() []string       { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string  { return []string{a.r.ClientID} }
func (a *authRequest) GetAuthTime() time.Time { return time.Unix(a.r.AuthTime, 0) }
func (a *authRequest) GetClientID() string    { return a.r.ClientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.p.Challenge, Method: oidc.CodeChallengeMethod(a.p.ChallengeHow)}
}
func (a *authRequest) GetNonce() string                   { return a.p.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.p.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseType(a.p.ResponseType) }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseMode(a.p.ResponseMode) }
func (a *authRequest) GetState() string                   { return a.p.State }
func (a *authRequest) Done() bool                         { return a.r.AuthTime != 0 }

// GetScopes are the scopes granted once the person approved (those their
// role holds), the scopes asked for before.
func (a *authRequest) GetScopes() []string {
	if a.Done() {
		return a.r.Scopes
	}
	return a.p.Scopes
}

func (a *authRequest) GetSubject() string {
	if a.r.UserID == 0 {
		return ""
	}
	return strconv.FormatInt(a.r.UserID, 10)
}

func (s *storage) CreateAuthRequest(ctx context.Context, in *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	// SMART App Launch 2: every authorization code is bound by PKCE with
	// S256; plain is not accepted.
	if in.CodeChallenge == "" || in.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method=S256.")
	}
	p := params{OAuthParams: app.OAuthParams{Scopes: in.Scopes, RedirectURI: in.RedirectURI, State: in.State},
		Nonce: in.Nonce, Challenge: in.CodeChallenge, ChallengeHow: string(in.CodeChallengeMethod),
		ResponseType: string(in.ResponseType), ResponseMode: string(in.ResponseMode)}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	r := &clinic.OAuthRequest{ClientID: in.ClientID, Params: raw}
	if err := s.app.StartOAuthRequest(ctx, r); err != nil {
		return nil, err
	}
	return &authRequest{r: r, p: p}, nil
}

func (s *storage) wrap(r *clinic.OAuthRequest, err error) (op.AuthRequest, error) {
	if err != nil {
		return nil, notFound{err}
	}
	out := &authRequest{r: r}
	if err := json.Unmarshal(r.Params, &out.p); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	return s.wrap(s.app.OAuthRequest(ctx, id))
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	return s.wrap(s.app.OAuthRequestByCode(ctx, code))
}

func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	return s.app.SaveOAuthCode(ctx, id, code)
}

func (s *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	return s.app.EndOAuthRequest(ctx, id)
}

// token is the row a token request will be issued as (its person, the
// launch's patient and the scopes granted), and what it uses up.
func token(req op.TokenRequest, now int64) (*clinic.OAuthToken, app.TokenFrom, error) {
	t := &clinic.OAuthToken{Scopes: req.GetScopes(), AuthTime: now}
	switch r := req.(type) {
	case *authRequest:
		t.AccountID, t.ClientID, t.UserID, t.PatientID, t.AuthTime = r.r.AccountID, r.r.ClientID, r.r.UserID, r.r.PatientID, r.r.AuthTime
		return t, app.TokenFrom{Request: r.r.ID}, nil
	case *refreshRequest:
		old := r.t
		t.AccountID, t.ClientID, t.UserID, t.PatientID, t.AuthTime = old.AccountID, old.ClientID, old.UserID, old.PatientID, old.AuthTime
		return t, app.TokenFrom{Refreshed: old.ID}, nil
	case *serviceRequest:
		t.AccountID, t.ClientID = r.c.AccountID, r.c.ClientID
		return t, app.TokenFrom{}, nil
	}
	return nil, app.TokenFrom{}, errors.New("smart: a token request of an unknown kind")
}

// expiry is the token row's expiry as op counts it: op measures a token's
// life against the wall clock, the rows against the app's (the same in
// production, apart in tests).
func (s *storage) expiry(t *clinic.OAuthToken) time.Time {
	return time.Now().Add(time.Duration(t.Expires-s.app.Unix()) * time.Second)
}

func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	t, from, err := token(req, s.app.Unix())
	if err != nil {
		return "", time.Time{}, err
	}
	if _, err := s.app.IssueOAuthToken(ctx, t, false, from); err != nil {
		return "", time.Time{}, oidc.ErrInvalidGrant().WithParent(err).WithDescription("%s", clinic.ErrorMessage(err))
	}
	return t.ID, s.expiry(t), nil
}

// CreateAccessAndRefreshTokens issues a token and its refresh token; from
// a refresh token, the row it renewed is revoked in the same transaction
// (rotation: each refresh token is used once).
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, _ string) (string, string, time.Time, error) {
	t, from, err := token(req, s.app.Unix())
	if err != nil {
		return "", "", time.Time{}, err
	}
	refresh, err := s.app.IssueOAuthToken(ctx, t, true, from)
	if err != nil {
		return "", "", time.Time{}, oidc.ErrInvalidGrant().WithParent(err).WithDescription("%s", clinic.ErrorMessage(err))
	}
	return t.ID, refresh, s.expiry(t), nil
}

// refreshRequest is a live token row a refresh token renews.
type refreshRequest struct{ t *clinic.OAuthToken }

func (r *refreshRequest) GetAMR() []string       { return []string{"pwd"} }
func (r *refreshRequest) GetAudience() []string  { return []string{r.t.ClientID} }
func (r *refreshRequest) GetAuthTime() time.Time { return time.Unix(r.t.AuthTime, 0) }
func (r *refreshRequest) GetClientID() string    { return r.t.ClientID }
func (r *refreshRequest) GetScopes() []string    { return r.t.Scopes }
func (r *refreshRequest) GetSubject() string     { return strconv.FormatInt(r.t.UserID, 10) }

// SetCurrentScopes narrows a refresh to fewer scopes (never more: op
// checks they were granted).
func (r *refreshRequest) SetCurrentScopes(scopes []string) { r.t.Scopes = scopes }

func (s *storage) TokenRequestByRefreshToken(ctx context.Context, refresh string) (op.RefreshTokenRequest, error) {
	t, err := s.app.OAuthTokenByRefresh(ctx, refresh)
	if err != nil {
		return nil, op.ErrInvalidRefreshToken
	}
	return &refreshRequest{t: t}, nil
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(ctx context.Context, tokenOrID, _, _ string) *oidc.Error {
	if err := s.app.RevokeOAuthToken(ctx, tokenOrID); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

func (s *storage) GetRefreshTokenInfo(ctx context.Context, _ string, refresh string) (string, string, error) {
	t, err := s.app.OAuthTokenByRefresh(ctx, refresh)
	if err != nil {
		return "", "", op.ErrInvalidRefreshToken
	}
	return strconv.FormatInt(t.UserID, 10), t.ID, nil
}

// signingKey is the server's RS256 key, as op signs with it.
type signingKey struct {
	key *rsa.PrivateKey
	id  string
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

// publicKey is the key's public half, as the key set shows it.
type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func (s *storage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	k, id, err := s.app.OAuthSigningKey(ctx)
	if err != nil {
		return nil, err
	}
	return signingKey{k, id}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(ctx context.Context) ([]op.Key, error) {
	k, id, err := s.app.OAuthSigningKey(ctx)
	if err != nil {
		return nil, err
	}
	return []op.Key{publicKey{signingKey{k, id}}}, nil
}

func (s *storage) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	c, err := s.app.OAuthClient(ctx, clientID)
	if err != nil {
		return nil, oidc.ErrInvalidClient().WithDescription("%s", clinic.ErrorMessage(err))
	}
	return &client{c: c}, nil
}

func (s *storage) AuthorizeClientIDSecret(ctx context.Context, clientID, secret string) error {
	return s.app.CheckOAuthSecret(ctx, clientID, secret)
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token: the person's name and, with
// the fhirUser scope, their FHIR resource (SMART's fhirUser claim).
func (s *storage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	var account, user int64
	switch r := req.(type) {
	case *authRequest:
		account, user = r.r.AccountID, r.r.UserID
	case *refreshRequest:
		account, user = r.t.AccountID, r.t.UserID
	}
	return s.userinfo(ctx, info, account, user, scopes)
}

func (s *storage) userinfo(ctx context.Context, info *oidc.UserInfo, account, user int64, scopes []string) error {
	if user == 0 {
		return nil
	}
	u, _, err := s.app.OAuthUser(ctx, account, user)
	if err != nil {
		return err
	}
	info.Subject = strconv.FormatInt(u.ID, 10)
	if slices.Contains(scopes, oidc.ScopeProfile) || slices.Contains(scopes, "fhirUser") {
		info.Name, info.GivenName, info.FamilyName = u.FirstName+" "+u.LastName, u.FirstName, u.LastName
	}
	if slices.Contains(scopes, "fhirUser") {
		info.AppendClaims("fhirUser", fhirUser(s.app, u))
	}
	return nil
}

// fhirUser is the person's FHIR resource, absolute.
func fhirUser(a *app.App, u *clinic.User) string {
	typ := "Patient"
	if u.Type == clinic.UserProvider {
		typ = "Practitioner"
	}
	return fhirBase(a) + typ + "/" + strconv.FormatInt(u.ID, 10)
}

func (s *storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	t, err := s.app.OAuthToken(ctx, tokenID)
	if err != nil {
		return err
	}
	return s.userinfo(ctx, info, t.AccountID, t.UserID, t.Scopes)
}

func (s *storage) SetIntrospectionFromToken(ctx context.Context, out *oidc.IntrospectionResponse, tokenID, _, clientID string) error {
	t, err := s.app.OAuthToken(ctx, tokenID)
	if err != nil {
		return nil // inactive
	}
	out.Active, out.Scope, out.ClientID = true, t.Scopes, t.ClientID
	out.Expiration = oidc.FromTime(s.expiry(t))
	if t.UserID != 0 {
		out.Subject = strconv.FormatInt(t.UserID, 10)
	}
	if t.PatientID != 0 {
		out.Claims = map[string]any{"patient": strconv.FormatInt(t.PatientID, 10)}
	}
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetKeyByIDAndClientID is a backend service's public key, of those the
// admin registered for it.
func (s *storage) GetKeyByIDAndClientID(ctx context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	c, err := s.app.OAuthClient(ctx, clientID)
	if err != nil || c.Kind != clinic.ClientBackend {
		return nil, notFound{errors.New("no such backend service")}
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(c.JWKS), &set); err != nil {
		return nil, err
	}
	for _, k := range set.Key(keyID) {
		return &k, nil
	}
	return nil, notFound{errors.New("no key of that kid")}
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, oidc.ErrUnsupportedGrantType().WithDescription("the JWT bearer grant is not offered; backend services use client_credentials")
}

func (s *storage) Health(context.Context) error { return nil }

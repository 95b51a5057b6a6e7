// Package smart is the clinic's SMART App Launch door: the OAuth 2
// authorization server an app signs a person in through (authorization
// code with PKCE, through the portal's sign-in and a consent page) or a
// backend service authenticates to (client_credentials with a
// private_key_jwt assertion), and the SMART configuration that names it.
//
// The protocol is zitadel/oidc's (package op): parsing, validation, code
// and token issuance, discovery and keys. What an app is, what a person
// may grant, and what a token is worth are app's (app/smart.go); this
// package maps one onto the other (storage.go, client.go) and adds what
// SMART asks beyond OpenID Connect: the token response's patient and
// fhirUser, PKCE required for every client, and the
// .well-known/smart-configuration.
package smart

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// Server is the authorization server over a.
type Server struct {
	*op.LegacyServer
	app     *app.App
	handler http.Handler
}

// fhirBase is the FHIR API's base address, with its slash: what an app
// names as aud and what fhirUser is relative to.
func fhirBase(a *app.App) string { return strings.TrimRight(a.BaseURL(), "/") + "/fhir/R4/" }

// New is the authorization server of a, whose issuer is a.OAuthIssuer().
// It fails only on an issuer op refuses (not an absolute address).
func New(a *app.App) (*Server, error) {
	st := &storage{app: a}
	key := sha256.Sum256([]byte(a.OAuthIssuer() + "\x00" + a.OAuthCryptoSeed()))
	cfg := &op.Config{
		CryptoKey:               key,
		CodeMethodS256:          true,
		AuthMethodPost:          false,
		AuthMethodPrivateKeyJWT: true,
		GrantTypeRefreshToken:   true,
		SupportedScopes:         append([]string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeOfflineAccess}, app.SupportedScopes...),
		SupportedClaims:         append(op.DefaultSupportedClaims, "fhirUser"),
	}
	opts := []op.Option{
		op.WithCustomEndpoints(op.NewEndpoint("authorize"), op.NewEndpoint("token"), op.NewEndpoint("userinfo"),
			op.NewEndpoint("revoke"), op.NewEndpoint("end_session"), op.NewEndpoint("keys")),
		op.WithCustomIntrospectionEndpoint(op.NewEndpoint("introspect")),
	}
	if strings.HasPrefix(a.OAuthIssuer(), "http://") {
		opts = append(opts, op.WithAllowInsecure()) // a server on http (development, tests)
	}
	provider, err := op.NewProvider(cfg, st, op.StaticIssuer(a.OAuthIssuer()), opts...)
	if err != nil {
		return nil, err
	}
	s := &Server{LegacyServer: op.NewLegacyServer(provider, provider.Endpoints()), app: a}
	s.handler = http.StripPrefix("/oauth", op.RegisterLegacyServer(s, op.AuthorizeCallbackHandler(provider)))
	return s, nil
}

// ServeHTTP answers the authorization server's addresses (/oauth/…). An
// authorize request must name this server's FHIR API as its aud, as
// SMART asks, so a token is never sent to another server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/oauth/authorize" {
		if aud := r.URL.Query().Get("aud"); strings.TrimRight(aud, "/")+"/" != fhirBase(s.app) {
			http.Error(w, "aud must be this server's FHIR base, "+fhirBase(s.app)+" (SMART App Launch).", http.StatusBadRequest)
			return
		}
	}
	s.handler.ServeHTTP(w, r)
}

// CallbackURL is where the consent page sends the person once they
// approved request id: op issues the code there.
func (s *Server) CallbackURL(id string) string {
	return s.app.OAuthIssuer() + "/authorize/callback?id=" + id
}

// configuration is /.well-known/smart-configuration (SMART App Launch 2.x).
type configuration struct {
	Issuer                string   `json:"issuer"`
	JWKSURI               string   `json:"jwks_uri"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
	TokenAuthSigningAlgs  []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	GrantTypes            []string `json:"grant_types_supported"`
	RevocationEndpoint    string   `json:"revocation_endpoint"`
	IntrospectionEndpoint string   `json:"introspection_endpoint"`
	UserinfoEndpoint      string   `json:"userinfo_endpoint"`
	ScopesSupported       []string `json:"scopes_supported"`
	ResponseTypes         []string `json:"response_types_supported"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	Capabilities          []string `json:"capabilities"`
	ManagementEndpoint    string   `json:"management_endpoint,omitempty"`
}

// Configuration is GET /fhir/R4/.well-known/smart-configuration.
func (s *Server) Configuration(w http.ResponseWriter, r *http.Request) {
	iss := s.app.OAuthIssuer()
	c := configuration{Issuer: iss, JWKSURI: iss + "/keys", AuthorizationEndpoint: iss + "/authorize", TokenEndpoint: iss + "/token",
		TokenAuthMethods:     []string{"none", "client_secret_basic", "private_key_jwt"},
		TokenAuthSigningAlgs: []string{"RS384", "ES384", "RS256"},
		GrantTypes:           []string{"authorization_code", "refresh_token", "client_credentials"},
		RevocationEndpoint:   iss + "/revoke", IntrospectionEndpoint: iss + "/introspect", UserinfoEndpoint: iss + "/userinfo",
		ScopesSupported: append([]string{"openid", "profile", "offline_access"}, app.SupportedScopes...),
		ResponseTypes:   []string{"code"}, CodeChallengeMethods: []string{"S256"},
		Capabilities: []string{"launch-standalone", "client-public", "client-confidential-symmetric", "client-confidential-asymmetric",
			"context-standalone-patient", "permission-offline", "permission-patient", "permission-user", "permission-v2", "sso-openid-connect"},
		ManagementEndpoint: strings.TrimRight(s.app.BaseURL(), "/") + "/admin"}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_ = json.NewEncoder(w).Encode(c)
}

// tokenResponse is the token response with SMART's launch context: the
// patient the token is for and the person's FHIR resource.
type tokenResponse struct {
	*oidc.AccessTokenResponse
	Patient  string `json:"patient,omitempty"`
	FHIRUser string `json:"fhirUser,omitempty"`
}

// CodeExchange exchanges a code, with its PKCE verifier always: op skips
// the check for a confidential client that sends none, SMART does not.
func (s *Server) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	if r.Data.CodeVerifier == "" {
		return nil, oidc.ErrInvalidGrant().WithDescription("code_verifier is required (PKCE).")
	}
	resp, err := s.LegacyServer.CodeExchange(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.withContext(ctx, resp)
}

// RefreshToken renews a token (and rotates the refresh token), with the
// launch context.
func (s *Server) RefreshToken(ctx context.Context, r *op.ClientRequest[oidc.RefreshTokenRequest]) (*op.Response, error) {
	resp, err := s.LegacyServer.RefreshToken(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.withContext(ctx, resp)
}

// VerifyClient authenticates a backend service's client_credentials
// request by its assertion (SMART Backend Services), and any other
// request as op does.
func (s *Server) VerifyClient(ctx context.Context, r *op.Request[op.ClientCredentials]) (op.Client, error) {
	if oidc.GrantType(r.Form.Get("grant_type")) == oidc.GrantTypeClientCredentials {
		if r.Data.ClientAssertionType != oidc.ClientAssertionTypeJWTAssertion {
			return nil, oidc.ErrInvalidClient().WithDescription("A backend service authenticates with client_assertion_type=" + oidc.ClientAssertionTypeJWTAssertion + ".")
		}
		c, err := s.app.VerifyClientAssertion(ctx, r.Data.ClientAssertion, s.app.OAuthIssuer()+"/token")
		if err != nil {
			return nil, oidc.ErrInvalidClient().WithDescription("%s", clinic.ErrorMessage(err))
		}
		return &client{c: c}, nil
	}
	return s.LegacyServer.VerifyClient(ctx, r)
}

// withContext adds the token's launch context to a token response: the
// row the access token names says which patient and person it is for.
func (s *Server) withContext(ctx context.Context, resp *op.Response) (*op.Response, error) {
	data, ok := resp.Data.(*oidc.AccessTokenResponse)
	if !ok {
		return resp, nil
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(data.AccessToken, &claims); err != nil {
		return nil, err // a token this server just signed
	}
	t, err := s.app.OAuthToken(ctx, claims.ID)
	if err != nil {
		return nil, err
	}
	out := &tokenResponse{AccessTokenResponse: data}
	if t.PatientID != 0 {
		out.Patient = strconv.FormatInt(t.PatientID, 10)
	}
	if t.UserID != 0 && slices.Contains(t.Scopes, "fhirUser") {
		u, _, err := s.app.OAuthUser(ctx, t.AccountID, t.UserID)
		if err != nil {
			return nil, err
		}
		out.FHIRUser = fhirUser(s.app, u)
	}
	resp.Data = out
	return resp, nil
}

package smart

import (
	"context"
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// client is a registered app as op reads one.
type client struct{ c *clinic.OAuthClient }

func (c *client) GetID() string                    { return c.c.ClientID }
func (c *client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }

func (c *client) ApplicationType() op.ApplicationType {
	if c.c.Kind == clinic.ClientPublic {
		return op.ApplicationTypeUserAgent
	}
	return op.ApplicationTypeWeb
}

func (c *client) AuthMethod() oidc.AuthMethod {
	switch c.c.Kind {
	case clinic.ClientConfidential:
		return oidc.AuthMethodBasic
	case clinic.ClientBackend:
		return oidc.AuthMethodPrivateKeyJWT
	}
	return oidc.AuthMethodNone
}

func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *client) GrantTypes() []oidc.GrantType {
	if c.c.Kind == clinic.ClientBackend {
		return []oidc.GrantType{oidc.GrantTypeClientCredentials}
	}
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

// LoginURL is the portal's consent page, where the person signs in to
// their clinic and approves the app.
func (c *client) LoginURL(id string) string { return "/oauth/consent/" + url.PathEscape(id) }

func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration      { return time.Hour }

// DevMode lets an app whose every address is on the machine itself (an
// app in development) be sent back over http; the address must still be
// registered exactly.
func (c *client) DevMode() bool {
	for _, raw := range c.c.RedirectURIs {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || !slices.Contains([]string{"localhost", "127.0.0.1", "::1"}, u.Hostname()) {
			return false
		}
	}
	return len(c.c.RedirectURIs) > 0
}

func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// IsScopeAllowed keeps the SMART scopes through op's filter; which of them
// are granted is the person's consent's (app.ApproveOAuthRequest).
func (c *client) IsScopeAllowed(scope string) bool { return app.KnownScope(scope) }

func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }

// serviceRequest is a backend service's client_credentials request: the
// system scopes asked for, of those the admin registered for it.
type serviceRequest struct {
	c      *clinic.OAuthClient
	scopes []string
}

func (r *serviceRequest) GetSubject() string    { return "" }
func (r *serviceRequest) GetAudience() []string { return []string{r.c.ClientID} }
func (r *serviceRequest) GetScopes() []string   { return r.scopes }

// ClientCredentials is client_credentials with a secret, which no client
// here has: a backend service authenticates with a signed assertion
// (server.VerifyClient).
func (s *storage) ClientCredentials(context.Context, string, string) (op.Client, error) {
	return nil, oidc.ErrInvalidClient().WithDescription("Backend services authenticate with a private_key_jwt client assertion.")
}

// ClientCredentialsTokenRequest grants a backend service the scopes it
// asked for that the admin registered for it; asking for none grants
// them all.
func (s *storage) ClientCredentialsTokenRequest(ctx context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	c, err := s.app.OAuthClient(ctx, clientID)
	if err != nil || c.Kind != clinic.ClientBackend {
		return nil, oidc.ErrInvalidClient()
	}
	scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == "" })
	if len(scopes) == 0 {
		return &serviceRequest{c: c, scopes: c.Scopes}, nil
	}
	for _, sc := range scopes {
		if !slices.Contains(c.Scopes, sc) {
			return nil, oidc.ErrInvalidScope().WithDescription("The service is not registered for %s.", sc)
		}
	}
	return &serviceRequest{c: c, scopes: scopes}, nil
}

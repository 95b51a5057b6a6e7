package httpapi

import (
	"net/http"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
)

// The apps a clinic admin registers for SMART App Launch (app/smart.go);
// the authorization server itself is package smart's, mounted by
// protocol routes (routes.go).

type smartClientOut struct {
	ID           int64    `json:"id,string"`
	ClientID     string   `json:"client_id"`
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	RedirectURIs []string `json:"redirect_uris"`
	Scopes       []string `json:"scopes"`
	JWKS         string   `json:"jwks,omitempty"`
	Revoked      int64    `json:"revoked"`
	Created      int64    `json:"created"`
	// ClientSecret is a confidential app's, shown when it is registered
	// and never again.
	ClientSecret string `json:"client_secret,omitempty"`
}

func toSmartClient(c *clinic.OAuthClient) smartClientOut {
	if c.RedirectURIs == nil {
		c.RedirectURIs = []string{}
	}
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	return smartClientOut{ID: c.ID, ClientID: c.ClientID, Name: c.Name, Kind: c.Kind, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes,
		JWKS: c.JWKS, Revoked: c.Revoked, Created: c.Created}
}

func (s *Server) listSmartClients(w http.ResponseWriter, r *http.Request, c *call) error {
	cs, err := s.app.OAuthClients(r.Context(), c.p)
	if err != nil {
		return err
	}
	out := make([]smartClientOut, len(cs))
	for i, cl := range cs {
		out[i] = toSmartClient(cl)
	}
	return ok(w, out)
}

// createSmartClient is POST /smart/clients: name, kind, redirect_uris (a
// JSON list, or one per line, or redirect_uris[] in a form), jwks and
// scopes for a backend service.
func (s *Server) createSmartClient(w http.ResponseWriter, r *http.Request, c *call) error {
	in := app.OAuthClientInput{Name: c.params.Str("name"), Kind: c.params.Str("kind"), JWKS: c.params.Str("jwks")}
	if _, err := c.params.JSON("redirect_uris", &in.RedirectURIs); err != nil {
		in.RedirectURIs = splitList(c.params.List("redirect_uris"))
	}
	if _, err := c.params.JSON("scopes", &in.Scopes); err != nil {
		in.Scopes = splitList(c.params.List("scopes"))
	}
	rc, err := s.app.RegisterOAuthClient(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	out := toSmartClient(rc.OAuthClient)
	out.ClientSecret = rc.Secret
	return edge.WriteJSON(w, http.StatusCreated, envelope{Data: out})
}

// splitList reads list parameters that may each hold several values,
// one per line or space separated.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, strings.Fields(v)...)
	}
	return out
}

func (s *Server) revokeSmartClient(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := pathID(c, "id", "App")
	if err != nil {
		return err
	}
	if err := s.app.RevokeOAuthClient(r.Context(), c.p, id); err != nil {
		return err
	}
	return ok(w, true)
}

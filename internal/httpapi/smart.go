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

// The EHRs a clinic launches Teleclinic from (app/ehrlaunch.go).

type ehrOut struct {
	ID        int64  `json:"id,string"`
	ISS       string `json:"iss"`
	ClientID  string `json:"client_id"`
	HasSecret bool   `json:"has_secret"`
	RoomID    int64  `json:"room_id,string"`
	LaunchURL string `json:"launch_url"`
	Created   int64  `json:"created"`
}

func (s *Server) toEHR(c *clinic.EHRConnection) ehrOut {
	return ehrOut{ID: c.ID, ISS: c.ISS, ClientID: c.ClientID, HasSecret: c.SealedSecret != "", RoomID: c.RoomID, Created: c.Created,
		LaunchURL: s.app.EHRLaunchURL()}
}

func (s *Server) listEHRs(w http.ResponseWriter, r *http.Request, c *call) error {
	cs, err := s.app.EHRConnections(r.Context(), c.p)
	if err != nil {
		return err
	}
	out := make([]ehrOut, len(cs))
	for i, e := range cs {
		out[i] = s.toEHR(e)
	}
	return ok(w, out)
}

// connectEHR is POST /smart/ehrs: iss, client_id, client_secret (for a
// confidential client), room_code.
func (s *Server) connectEHR(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	e, err := s.app.ConnectEHR(r.Context(), c.p, app.EHRInput{ISS: q.Str("iss"), ClientID: q.Str("client_id"), Secret: q.Str("client_secret"), RoomCode: q.Str("room_code")})
	if err != nil {
		return err
	}
	return edge.WriteJSON(w, http.StatusCreated, envelope{Data: s.toEHR(e)})
}

func (s *Server) disconnectEHR(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := pathID(c, "id", "EHR")
	if err != nil {
		return err
	}
	if err := s.app.DisconnectEHR(r.Context(), c.p, id); err != nil {
		return err
	}
	return ok(w, true)
}

// linkEHRUser is POST /smart/ehrs/{id}/links: fhir_user, provider_id.
func (s *Server) linkEHRUser(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := pathID(c, "id", "EHR")
	if err != nil {
		return err
	}
	var provider int64
	if err := readRefs(c, ref{dst: &provider, name: "provider_id"}); err != nil {
		return err
	}
	if err := s.app.LinkEHRUser(r.Context(), c.p, id, c.params.Str("fhir_user"), provider); err != nil {
		return err
	}
	return ok(w, true)
}

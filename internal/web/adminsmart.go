package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The admin page's SMART sections: the apps the clinic registered for its
// FHIR API, and the EHRs it launches Teleclinic from.

type adminEHR struct {
	*clinic.EHRConnection
	Room string
}

// adminSmart loads the clinic's apps and EHRs.
func (s *Server) adminSmart(ctx context.Context, p *clinic.Principal, _ adminQuery, page *adminPage) error {
	apps, err := s.app.OAuthClients(ctx, p)
	if err != nil {
		return err
	}
	ehrs, err := s.app.EHRConnections(ctx, p)
	if err != nil {
		return err
	}
	page.Apps, page.EHRLaunchURL = apps, s.app.EHRLaunchURL()
	page.EHRRedirect = strings.TrimSuffix(s.app.EHRLaunchURL(), "/launch") + "/callback"
	page.SmartConfig = strings.TrimRight(s.app.BaseURL(), "/") + "/fhir/R4/.well-known/smart-configuration"
	rooms := map[int64]string{}
	all, err := s.app.ListRooms(ctx, p, app.RoomQuery{Limit: 1000, SortCol: "name"})
	if err != nil {
		return err
	}
	for _, r := range all.Rooms {
		rooms[r.ID] = r.Name
		page.EHRRooms = append(page.EHRRooms, adminRoom{Code: r.Code, Name: r.Name})
	}
	for _, e := range ehrs {
		page.EHRs = append(page.EHRs, adminEHR{EHRConnection: e, Room: rooms[e.RoomID]})
	}
	return nil
}

// adminApp is POST /admin/apps: an app registered; a confidential app's
// secret is shown once.
func (s *Server) adminApp(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	in := app.OAuthClientInput{Name: r.PostFormValue("name"), Kind: r.PostFormValue("kind"), JWKS: strings.TrimSpace(r.PostFormValue("jwks")),
		RedirectURIs: strings.Fields(r.PostFormValue("redirect_uris")), Scopes: strings.Fields(r.PostFormValue("scopes"))}
	c, err := s.app.RegisterOAuthClient(r.Context(), p, in)
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	page := adminPage{Notice: noticeWords["app"]}
	if c.Secret != "" {
		page.Shown, page.ShownWhat = c.Secret, "client secret of the app "+c.Name+" (client id "+c.ClientID+")"
	}
	return s.showAdmin(w, r, http.StatusOK, page)
}

// adminAppRevoke is POST /admin/apps/{id}/revoke.
func (s *Server) adminAppRevoke(w http.ResponseWriter, r *http.Request) error {
	return s.adminByID(w, r, "No such app.", s.app.RevokeOAuthClient, "/admin?done=app-revoked#apps")
}

// adminByID applies do to the path's id as the signed-in admin and sends
// them back to done; a refusal is shown on the admin page, a path id that
// is not a number is notFound.
func (s *Server) adminByID(w http.ResponseWriter, r *http.Request, notFound string, do func(context.Context, *clinic.Principal, int64) error, done string) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return clinic.Errorf(clinic.ENotFound, "%s", notFound)
	}
	if err := do(r.Context(), p, id); err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, done, http.StatusSeeOther)
	return nil
}

// adminEHRConnect is POST /admin/ehrs.
func (s *Server) adminEHRConnect(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	_, err = s.app.ConnectEHR(r.Context(), p, app.EHRInput{ISS: r.PostFormValue("iss"), ClientID: r.PostFormValue("client_id"),
		Secret: r.PostFormValue("client_secret"), RoomCode: r.PostFormValue("room_code")})
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=ehr#ehrs", http.StatusSeeOther)
	return nil
}

// adminEHRDelete is POST /admin/ehrs/{id}/delete.
func (s *Server) adminEHRDelete(w http.ResponseWriter, r *http.Request) error {
	return s.adminByID(w, r, "No such EHR.", s.app.DisconnectEHR, "/admin?done=ehr-removed#ehrs")
}

// adminEHRLink is POST /admin/ehrs/{id}/links: an EHR user linked to a
// provider.
func (s *Server) adminEHRLink(w http.ResponseWriter, r *http.Request) error {
	provider, _ := strconv.ParseInt(r.PostFormValue("provider_id"), 10, 64)
	return s.adminByID(w, r, "No such EHR.", func(ctx context.Context, p *clinic.Principal, id int64) error {
		return s.app.LinkEHRUser(ctx, p, id, r.PostFormValue("fhir_user"), provider)
	}, "/admin?done=ehr-linked#ehrs")
}

package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
)

// tokenObject is the spec's session token object.
type tokenObject struct {
	UserID       string       `json:"user_id"`
	Token        string       `json:"token"`
	Expiry       int64        `json:"expiry"`
	RefreshToken refreshToken `json:"refresh_token"`
}

type refreshToken struct {
	UserID  string `json:"user_id"`
	Token   string `json:"token"`
	Expiry  int64  `json:"expiry"`
	Created int64  `json:"created"`
}

func toToken(s *app.Session) tokenObject {
	return tokenObject{UserID: id(s.UserID), Token: s.Token, Expiry: s.Expiry,
		RefreshToken: refreshToken{UserID: id(s.UserID), Token: s.Refresh, Expiry: s.RefreshExpiry, Created: s.RefreshCreated}}
}

// loggedIn is a user with a new login: SSO, login and activation answer it.
type loggedIn struct {
	userProfile
	Token tokenObject `json:"token"`
	Vsee  *videoInfo  `json:"vsee,omitempty"`
}

type videoInfo struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

func (s *Server) sso(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	typ, err := q.Int("type", 0)
	if err != nil {
		return err
	}
	disable, err := q.Flag("disable_emails")
	if err != nil {
		return err
	}
	withVideo := false
	for _, f := range q.List("fields") {
		withVideo = withVideo || f == "vsee"
	}
	res, err := s.app.SSO(r.Context(), c.p, app.SSOInput{
		FirstName: q.Str("first_name"), LastName: q.Str("last_name"), Type: int(typ), Code: q.Str("code"),
		DOB: q.Str("dob"), Email: q.Str("email"), Username: q.Str("username"), DisableEmails: disable,
		Gender: q.Str("gender"), StreetAddr: q.Str("street_addr"), City: q.Str("city"), State: q.Str("state"),
		Zip: q.Str("zip"), Phone: q.Str("phone"), WithVideo: withVideo,
	})
	if err != nil {
		return err
	}
	out := loggedIn{userProfile: toProfile(res.Profile), Token: toToken(res.Session)}
	if res.Video != nil {
		out.Vsee = &videoInfo{ID: res.Video.ID, Token: res.Video.Token}
	}
	return ok(w, out)
}

func (s *Server) authRedirect(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	oneTime, err := q.Flag("one_time_token")
	if err != nil {
		return err
	}
	noNav, err := q.Flag("disable_navigation")
	if err != nil {
		return err
	}
	to, err := s.app.AuthRedirect(r.Context(), c.p.RequestID, q.Str("sso_token"), q.Str("next"), oneTime, noNav)
	if err != nil {
		return err
	}
	// The address carries a token: keep it out of caches and referrers.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusFound)
	return nil
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, c *call) error {
	prof, sess, err := s.app.Login(r.Context(), c.p, loginParam(c), c.params.Str("password"))
	if err != nil {
		return err
	}
	return ok(w, loggedIn{userProfile: toProfile(prof), Token: toToken(sess)})
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.Logout(r.Context(), c.p, c.params.List("tokens")); err != nil {
		return err
	}
	return ok(w, true)
}

// refreshed is the answer of POST /tokens/refresh: {"data":{"token":{…}}}.
type refreshed struct {
	Token tokenObject `json:"token"`
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c *call) error {
	sess, err := s.app.Refresh(r.Context(), c.p, c.params.Str("refresh_token"))
	if err != nil {
		return err
	}
	return ok(w, refreshed{Token: toToken(sess)})
}

// loginParam is who a login or mail request names: a username or an email.
func loginParam(c *call) string {
	if v := c.params.Str("username"); v != "" {
		return v
	}
	return c.params.Str("email")
}

func (s *Server) requestActivation(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.RequestActivation(r.Context(), c.p, loginParam(c)); err != nil {
		return err
	}
	return ok(w, true)
}

func (s *Server) activate(w http.ResponseWriter, r *http.Request, c *call) error {
	prof, sess, err := s.app.Activate(r.Context(), c.p, c.params.Str("token"), c.params.Str("password"))
	if err != nil {
		return err
	}
	return ok(w, loggedIn{userProfile: toProfile(prof), Token: toToken(sess)})
}

func (s *Server) requestReset(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.RequestReset(r.Context(), c.p, loginParam(c)); err != nil {
		return err
	}
	return ok(w, true)
}

func (s *Server) confirmReset(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.ResetPassword(r.Context(), c.p, c.params.Str("token"), c.params.Str("password")); err != nil {
		return err
	}
	return ok(w, true)
}

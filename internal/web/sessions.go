package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
)

// A browser session is an access token in an HttpOnly cookie (docs/design-notes.md,
// "Credentials and sessions"):
// idle and absolute expiry, logout and revocation are the token's, on
// every process. A second cookie, which grants nothing, remembers that the
// session was opened with disable_navigation=1 (the portal inside an
// integrator's own frame or app: no portal navigation on its pages).

func (s *Server) sessionCookie() string {
	if s.cfg.Secure {
		return "__Host-tc_session"
	}
	return "tc_session"
}

func (s *Server) navCookie() string {
	if s.cfg.Secure {
		return "__Host-tc_nonav"
	}
	return "tc_nonav"
}

func (s *Server) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.cfg.Secure, SameSite: http.SameSiteLaxMode}
	if maxAge > 0 {
		c.Expires = time.Now().Add(maxAge)
		c.MaxAge = int(maxAge / time.Second)
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// principal is the signed-in user of r, through the same check as an API
// request with the cookie's token; unauthenticated when there is none. A
// page asks once: the handler and the layout share the answer.
func (s *Server) principal(r *http.Request) (*clinic.Principal, error) {
	st, _ := r.Context().Value(pageStateKey{}).(*pageState)
	if st != nil && st.checked {
		return st.p, st.err
	}
	p, err := s.sessionPrincipal(r.Context(), s.sessionCredentials(r))
	var scope int64
	if err == nil && !app.VisitScopeAllows(p.VisitScope, r.URL.Path) {
		// A session a mailed link started opens its visit alone.
		scope, p, err = p.VisitScope, nil, clinic.Errorf(clinic.EForbidden, "%s", oneVisitOnly)
	} else if err == nil {
		scope = p.VisitScope
	}
	if st != nil {
		st.p, st.err, st.checked, st.scope = p, err, true, scope
	}
	if err == nil {
		edge.From(r.Context()).SetPrincipal(p)
	}
	return p, err
}

// sessionCredentials are r's session cookie as the API's credentials;
// no token when there is no cookie.
func (s *Server) sessionCredentials(r *http.Request) app.Credentials {
	creds := app.Credentials{RequestID: edge.RequestID(r.Context()), ClientAddr: edge.ClientAddr(r), Portal: true}
	if c, err := r.Cookie(s.sessionCookie()); err == nil {
		creds.APIToken = c.Value
	}
	return creds
}

// sessionPrincipal is the signed-in user of a session's credentials.
func (s *Server) sessionPrincipal(ctx context.Context, creds app.Credentials) (*clinic.Principal, error) {
	if creds.APIToken == "" {
		return nil, clinic.Errorf(clinic.EUnauthenticated, "Sign in first.")
	}
	return s.app.Authenticate(ctx, creds, app.NeedUser)
}

// oneVisitOnly is the refusal of a page to a session a mailed link
// started (app/visitlinks.go), which opens its visit alone.
const oneVisitOnly = "The link you opened signs you into one visit only: open it from the menu, or sign in to see the rest."

// pageState is what one page request learns once and uses twice.
type pageState struct {
	checked bool
	p       *clinic.Principal
	err     error
	// scope is the one visit the session opens (0: not so bounded),
	// known even on a page the session may not open.
	scope int64
}

// visitScope is the one visit r's session opens, 0 when it is not so
// bounded (or r has no session).
func (s *Server) visitScope(r *http.Request) int64 {
	if _, err := s.principal(r); err != nil && clinic.ErrorCode(err) != clinic.EForbidden {
		return 0
	}
	st, _ := r.Context().Value(pageStateKey{}).(*pageState)
	if st == nil {
		return 0
	}
	return st.scope
}

type pageStateKey struct{}

// withPageState gives r a pageState.
func withPageState(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), pageStateKey{}, &pageState{}))
}

// accountPrincipal is a caller who named a clinic and nothing more, as the
// API's account-code endpoints see one.
func (s *Server) accountPrincipal(r *http.Request, code string) (*clinic.Principal, error) {
	return s.app.Authenticate(r.Context(), app.Credentials{AccountCode: code, RequestID: edge.RequestID(r.Context()), ClientAddr: edge.ClientAddr(r)}, app.NeedAccountCode)
}

// auth is GET /auth?sso_token=…&next=…: the end of the spec's redirect
// login. The token in the address is exchanged for the session's own
// (app.PortalSession), and the browser goes to next, a path on this site.
// A browser signed in as someone else is asked first (a link from another
// site must not swap a provider's session for a patient's unseen): the
// page's form sends the same link by POST /auth, which a cross-site form
// cannot (the guard), and which switches.
func (s *Server) auth(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	next := q.Get("next")
	if next == "" {
		next = "/visits"
	}
	if !app.LocalPath(next) {
		return clinic.Errorf(clinic.EInvalid, "This sign-in link sends you to another site, so it was not followed. Ask the site that sent you for a new link.")
	}
	linkErr := func(err error) error {
		if clinic.ErrorCode(err) == clinic.EUnauthenticated {
			return clinic.Errorf(clinic.EUnauthenticated, "This sign-in link has expired or was used already. Go back to the site that sent you and open it again.")
		}
		return err
	}
	token := q.Get("sso_token")
	if cur, err := s.principal(r); err == nil && r.Method == http.MethodGet {
		u, err := s.app.SignInLinkUser(r.Context(), edge.RequestID(r.Context()), token)
		if err != nil {
			return linkErr(err)
		}
		if u.ID != cur.User.ID {
			s.render(w, r, http.StatusOK, "switch", switchPage{Current: cur.User.FullName(), Other: u.FullName(), Stay: homeOf(cur),
				Token: token, Next: next, OneTime: q.Get("one_time_token"), NoNav: q.Get("disable_navigation")})
			return nil
		}
	}
	sess, err := s.app.PortalSession(r.Context(), edge.RequestID(r.Context()), token, q.Get("one_time_token") == "1")
	if err != nil {
		return linkErr(err)
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	if q.Get("disable_navigation") == "1" {
		s.setCookie(w, s.navCookie(), "1", s.cfg.SessionMax)
	} else {
		s.setCookie(w, s.navCookie(), "", 0)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// switchPage asks a browser signed in as Current whether to sign in as
// Other, the user of the link it opened.
type switchPage struct {
	Current, Other, Stay        string
	Token, Next, OneTime, NoNav string
}

// homeOf is where p's pages start: the administration, the dashboard or
// the visits.
func homeOf(p *clinic.Principal) string {
	switch {
	case p.VisitScope != 0:
		return "/visits/start/" + strconv.FormatInt(p.VisitScope, 10)
	case p.IsAdmin():
		return "/admin"
	case p.User.Type == clinic.UserProvider:
		return "/providers/dashboard"
	}
	return "/visits"
}

type signinPage struct {
	Clinic, Login, Next, Error string
}

// signinForm is the password sign-in of providers and staff (patients of
// an integrator arrive signed in through /auth).
// home is the portal's root: a signed-in person's own start (the admin's
// page, a provider's dashboard, a patient's visits), else the sign-in.
func (s *Server) home(w http.ResponseWriter, r *http.Request) error {
	to := "/signin"
	if p, err := s.principal(r); err == nil {
		to = homeOf(p)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// clinicShort is /c/{account_code}: the clinic's home (/u/…), where its
// rooms are, for an address a person shortens by hand.
func (s *Server) clinicShort(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, "/u/"+url.PathEscape(r.PathValue("account_code")), http.StatusSeeOther)
	return nil
}

func (s *Server) signinForm(w http.ResponseWriter, r *http.Request) error {
	next := r.URL.Query().Get("next")
	if !app.LocalPath(next) {
		next = ""
	}
	s.render(w, r, http.StatusOK, "signin", signinPage{Clinic: r.URL.Query().Get("clinic"), Next: next})
	return nil
}

func (s *Server) signin(w http.ResponseWriter, r *http.Request) error {
	in := signinPage{Clinic: strings.TrimSpace(r.PostFormValue("clinic")), Login: strings.TrimSpace(r.PostFormValue("login")), Next: r.PostFormValue("next")}
	if !app.LocalPath(in.Next) {
		in.Next = "/visits"
	}
	again := func(msg string) error {
		in.Error = msg
		s.render(w, r, http.StatusUnauthorized, "signin", in)
		return nil
	}
	p, err := s.accountPrincipal(r, in.Clinic)
	if err != nil {
		return again(s.localeOf(r).T("No clinic has that code. Check the clinic code your clinic gave you."))
	}
	prof, sess, err := s.app.Login(r.Context(), p, in.Login, r.PostFormValue("password"))
	if err != nil {
		if code := clinic.ErrorCode(err); code == clinic.EInvalid || code == clinic.EUnauthenticated {
			return again(s.localeOf(r).T("That username or email and password do not match. Check them and try again."))
		}
		return err
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	s.setCookie(w, s.navCookie(), "", 0)
	if r.PostFormValue("next") == "" && prof.User.Type == clinic.UserProvider {
		in.Next = "/providers/dashboard"
	}
	http.Redirect(w, r, in.Next, http.StatusSeeOther)
	return nil
}

// signout ends the session's login (its token family, as POST
// /users/logout does) and forgets the cookies.
func (s *Server) signout(w http.ResponseWriter, r *http.Request) error {
	if p, err := s.principal(r); err == nil {
		if err := s.app.Logout(r.Context(), p, nil); err != nil {
			return err
		}
	}
	s.setCookie(w, s.sessionCookie(), "", 0)
	s.setCookie(w, s.navCookie(), "", 0)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}

package web

import (
	"net/http"
	"strings"

	"teleclinic/internal/clinic"
)

// The pages the emailed links open: /activate (an invited provider, or a
// patient the clinic created, sets a first password and is signed in) and
// /reset-password (a new password, then the sign-in page). Both take the
// clinic's code and the link's one-time token (app.Activate,
// app.ResetPassword, as the API's POST /users/activate and
// /users/password/reset/confirm).

type activatePage struct {
	Action, Clinic, Token string
	Reset                 bool
	Error                 string
}

func (s *Server) activateForm(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	s.render(w, r, http.StatusOK, "activate", activatePage{Action: r.URL.Path, Clinic: q.Get("account"), Token: q.Get("token"), Reset: r.URL.Path == "/reset-password"})
	return nil
}

func (s *Server) activate(w http.ResponseWriter, r *http.Request) error {
	page := activatePage{Action: r.URL.Path, Clinic: strings.TrimSpace(r.PostFormValue("account")), Token: r.PostFormValue("token"),
		Reset: r.URL.Path == "/reset-password"}
	again := func(status int, msg string) error {
		page.Error = msg
		s.render(w, r, status, "activate", page)
		return nil
	}
	if page.Clinic == "" || page.Token == "" {
		return again(http.StatusBadRequest, "This link is not whole: open it from the email again (all of it).")
	}
	password := r.PostFormValue("password")
	if password != r.PostFormValue("password2") {
		return again(http.StatusBadRequest, "The two passwords differ: type the same one twice.")
	}
	p, err := s.accountPrincipal(r, page.Clinic)
	if err != nil {
		return again(http.StatusNotFound, "This link names no clinic. Open the link from the email again.")
	}
	if page.Reset {
		if err := s.app.ResetPassword(r.Context(), p, page.Token, password); err != nil {
			if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.ENotFound, clinic.EUnauthenticated, clinic.ETooMany); ok {
				return again(status, msg)
			}
			return err
		}
		http.Redirect(w, r, "/signin?clinic="+page.Clinic, http.StatusSeeOther)
		return nil
	}
	prof, sess, err := s.app.Activate(r.Context(), p, page.Token, password)
	if err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.ENotFound, clinic.EUnauthenticated, clinic.ETooMany); ok {
			return again(status, msg)
		}
		return err
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	s.setCookie(w, s.navCookie(), "", 0)
	next := "/visits"
	if prof.User.Type == clinic.UserProvider {
		next = "/providers/dashboard"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

package web

import (
	"net/http"
	"net/url"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
)

// The link an email about a visit carries (app/visitlinks.go): its page
// asks for a press before the link is used, so that mail scanners, which
// fetch every link of a message, do not spend it; the press signs the
// browser into that visit alone. A link used already offers a fresh one
// by email.

type visitLinkPage struct {
	Clinic, Action string
	Start          int64
	// Open: the link still opens the visit; Expired or used otherwise.
	Open, Expired bool
	// Email and Phone are where a fresh link goes, masked (by email, by
	// text); Sent once one was asked.
	Email, Phone string
	Sent         bool
	Error        string
}

func visitLinkView(r *http.Request, st *app.VisitLinkState) visitLinkPage {
	return visitLinkPage{Clinic: st.Account.Name, Action: "/v/" + url.PathEscape(r.PathValue("token")), Start: st.Visit.Start,
		Open: !st.Used && !st.Expired, Expired: st.Expired, Email: st.Email, Phone: st.Phone}
}

// visitLink is GET /v/{token}. A browser already signed in as the link's
// person, for that visit or for all of theirs, goes straight to it.
func (s *Server) visitLink(w http.ResponseWriter, r *http.Request) error {
	st, err := s.app.VisitLink(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	if p, err := s.principal(r); err == nil && p.UserID() == st.User.ID && (p.VisitScope == 0 || p.VisitScope == st.Visit.ID) {
		http.Redirect(w, r, visitPath(st.Visit.ID), http.StatusSeeOther)
		return nil
	}
	s.render(w, r, http.StatusOK, "visitlink", visitLinkView(r, st))
	return nil
}

// openVisitLink is POST /v/{token}: the link is used, and the browser is
// signed into its visit alone.
func (s *Server) openVisitLink(w http.ResponseWriter, r *http.Request) error {
	sess, st, err := s.app.OpenVisitLink(r.Context(), edge.RequestID(r.Context()), edge.ClientAddr(r), r.PathValue("token"))
	if err != nil {
		if st == nil || clinic.ErrorCode(err) != clinic.EUnauthenticated {
			return err
		}
		view := visitLinkView(r, st)
		view.Open = false
		s.render(w, r, http.StatusGone, "visitlink", view)
		return nil
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	s.setCookie(w, s.navCookie(), "", 0)
	http.Redirect(w, r, visitPath(st.Visit.ID), http.StatusSeeOther)
	return nil
}

// visitLinkAgain is POST /v/{token}/again: a fresh link by email and by
// text, to the address and number the clinic has.
func (s *Server) visitLinkAgain(w http.ResponseWriter, r *http.Request) error {
	token := r.PathValue("token")
	st, err := s.app.VisitLink(r.Context(), token)
	if err != nil {
		return err
	}
	if err := s.app.ResendVisitLink(r.Context(), edge.RequestID(r.Context()), edge.ClientAddr(r), token); err != nil {
		return err
	}
	view := visitLinkView(r, st)
	view.Open, view.Sent = false, true
	s.render(w, r, http.StatusOK, "visitlink", view)
	return nil
}

func visitPath(id int64) string { return "/visits/start/" + strconv.FormatInt(id, 10) }

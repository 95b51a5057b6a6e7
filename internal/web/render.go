package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"teleclinic/internal/clinic"
)

// layout is what every page is drawn in; view is the page's own data.
type layout struct {
	Title string
	// Nav is false on sessions opened with disable_navigation=1.
	Nav bool
	// Session says the browser holds a session cookie (whether it is
	// still good is for the page's own check): the navigation offers
	// signing out rather than in.
	Session bool
	// Provider adds the dashboard to the navigation, Admin the
	// administration.
	Provider, Admin bool
	View            any
}

// parseTemplates reads each page template with the layout.
func (s *Server) parseTemplates() error {
	funcs := template.FuncMap{
		"unixtime": func(sec int64) string {
			if sec == 0 {
				return ""
			}
			return time.Unix(sec, 0).UTC().Format("2 Jan 2006, 15:04 UTC")
		},
		"micros": func(us int64) string { return time.UnixMicro(us).UTC().Format("2 Jan 15:04") },
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		// Parts shared by pages (_name.html) come with every page.
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return fmt.Errorf("portal template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return nil
}

// render draws page with its view in the layout. The page is drawn into a
// buffer first, so a template error is a 500 page, not half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, view any) {
	t := s.pages[page]
	nav := true
	if c, err := r.Cookie(s.navCookie()); err == nil && c.Value == "1" {
		nav = false
	}
	c, err := r.Cookie(s.sessionCookie())
	lay := layout{Title: pageTitles[page], Nav: nav, Session: err == nil && c.Value != "", View: view}
	if lay.Session && nav {
		if p, err := s.principal(r); err == nil {
			lay.Provider, lay.Admin = p.User.Type == clinic.UserProvider, p.IsAdmin()
		}
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout.html", lay); err != nil {
		s.log.Error("portal render", "page", page, "err", err)
		http.Error(w, "The page could not be drawn.", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

var pageTitles = map[string]string{
	"error": "Something is not right", "signin": "Sign in", "visits": "Your visits", "visit": "Visit", "clinic": "Clinic", "room": "Room", "dashboard": "Dashboard",
	"adminsignin": "Admin sign-in", "admin": "Administration", "adminroom": "Room settings", "rotated": "New admin token", "chart": "Patient chart", "pay": "Payment", "book": "Choose a time",
	"invite": "Join a video call", "call": "Video call",
}

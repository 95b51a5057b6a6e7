package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
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
	// OneVisit, for a session a mailed link started, is its visit's
	// page: the navigation offers that and signing out, nothing else.
	OneVisit string
	// Zone is the viewer's time zone, every time on the page is in;
	// ZoneFrom says where it came from: "profile", "browser" (the tz
	// cookie static/live.js sets) or "default" (UTC, until the browser
	// has said).
	Zone, ZoneFrom string
	// Lang is the page's language tag; Languages, on a translated page,
	// are the others to switch to.
	Lang      string
	Languages []languageLink
	View      any
}

// languageLink is one language of the language switch.
type languageLink struct {
	Tag, Name, Href string
	Current         bool
}

// zoneCookie holds the browser's own IANA time zone (static/live.js sets
// it from Intl), used when the profile names none.
const zoneCookie = "tz"

// viewerZone is where the viewer's times are shown: the profile's zone,
// else the browser's, else UTC; and which of them it is.
func viewerZone(r *http.Request, u *clinic.User) (*time.Location, string) {
	if u != nil && u.Timezone != "" {
		if z, err := time.LoadLocation(u.Timezone); err == nil {
			return z, "profile"
		}
	}
	if c, err := r.Cookie(zoneCookie); err == nil && c.Value != "" && len(c.Value) < 64 && c.Value != "Local" {
		if z, err := time.LoadLocation(c.Value); err == nil {
			return z, "browser"
		}
	}
	return time.UTC, "default"
}

// pageFuncs are the templates' functions that depend on the viewer: t, the
// text of a message in the page's language, and the time formats, in the
// viewer's zone and language: at (unix seconds), atUS (microseconds), day
// and clock, and iso (the instant for a <time datetime>).
func pageFuncs(z *time.Location, loc *locale.Locale) template.FuncMap {
	at := func(sec int64) string {
		if sec == 0 {
			return ""
		}
		return loc.At(time.Unix(sec, 0).In(z))
	}
	return template.FuncMap{
		"t":     loc.T,
		"at":    at,
		"atUS":  func(us int64) string { return at(us / 1e6) },
		"day":   func(sec int64) string { return loc.Day(time.Unix(sec, 0).In(z)) },
		"clock": func(sec int64) string { return loc.Clock(time.Unix(sec, 0).In(z)) },
		"iso":   func(sec int64) string { return time.Unix(sec, 0).UTC().Format(time.RFC3339) },
		"zone":  func() string { return loc.ZoneName(z) },
		// waited says a wait in seconds in words: "under a minute",
		// "7 min", "1 h 5 min".
		"waited": func(sec int64) string {
			switch m := sec / 60; {
			case m < 1:
				return "under a minute"
			case m < 60:
				return strconv.FormatInt(m, 10) + " min"
			default:
				return strconv.FormatInt(m/60, 10) + " h " + strconv.FormatInt(m%60, 10) + " min"
			}
		},
	}
}

// parseTemplates reads each page template with the layout.
func (s *Server) parseTemplates() error {
	// Parsed with UTC's and English's funcs; render gives each page the
	// viewer's.
	funcs := pageFuncs(time.UTC, s.locales.Default())
	funcs["inc"] = func(n int) int { return n + 1 }
	// lines splits text into its non-empty lines, for paragraphs.
	funcs["lines"] = func(text string) []string {
		var out []string
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
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
	loc := s.localeOf(r)
	lay := layout{Title: pageTitles[page], Nav: nav, Session: err == nil && c.Value != "", View: view, Lang: loc.Tag.String()}
	if translated(r) {
		lay.Languages = s.languageLinks(r, loc)
	}
	var user *clinic.User
	if scope := s.visitScope(r); lay.Session && scope != 0 {
		lay.OneVisit = "/visits/start/" + strconv.FormatInt(scope, 10)
	}
	if lay.Session {
		if p, err := s.principal(r); err == nil {
			user = p.User
			lay.Provider, lay.Admin = nav && p.User.Type == clinic.UserProvider, nav && p.IsAdmin()
		}
	}
	zone, from := viewerZone(r, user)
	lay.Zone, lay.ZoneFrom = zone.String(), from
	// The page's own copy, with its viewer's time funcs; a clone shares
	// the parsed trees, so this costs a map, not a parse.
	t, err = t.Clone()
	if err != nil {
		s.log.Error("portal render", "page", page, "err", err)
		http.Error(w, "The page could not be drawn.", http.StatusInternalServerError)
		return
	}
	t.Funcs(pageFuncs(zone, loc))
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
	"invite": "Join a video call", "visitlink": "Your visit", "call": "Video call", "activate": "Choose your password",
	"switch": "Switch account?", "profile": "Your profile", "consent": "Allow an app?", "ehrlanding": "Visit from the EHR",
}

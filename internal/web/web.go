// Package web is the portal: the pages a clinic's patients, providers and
// staff use in a browser, served by the same binary on the same rules as
// the API. A page handler reads like an API handler: the principal from the
// session cookie, the form, a call to app, then a template or a redirect.
// No rule lives here or in a template: every read and write goes through
// internal/app, with its permission checks, audit entries and outbox rows.
package web

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/live"
	"teleclinic/internal/locale"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config are the portal's settings.
type Config struct {
	// Secure marks the session cookie Secure and gives it the __Host-
	// prefix: set when the server's base URL is https.
	Secure bool
	// SessionMax is how long the browser keeps the session cookie: the
	// access token's absolute lifetime (the server ends it sooner when it
	// idles out or is revoked).
	SessionMax time.Duration
	// KeepAlive is how long a page's event stream stays quiet before it
	// sends a keep-alive and checks the session again (default
	// live.KeepAlive).
	KeepAlive time.Duration
	// Closing is done when the server starts shutting down: the pages'
	// event streams end then, rather than hold the shutdown.
	Closing context.Context
	// Parker holds the pages' event streams while they wait, with no
	// goroutine each (live.Parker; the API's, shared); nil gives each
	// stream a goroutine.
	Parker *live.Parker
	// MaxFileBytes bounds a file a page takes (the intake's attachments),
	// as POST /files bounds one (default 50 MiB).
	MaxFileBytes int64
	// StripeJS is where the payment page loads Stripe.js from when a
	// clinic takes cards with Stripe (default https://js.stripe.com/v3/;
	// tests serve a stand-in).
	StripeJS string
	// Streams bounds the event streams open at once, shared with the API
	// (default live.NewLimits(0, 0, 0)).
	Streams *live.Limits
	// Locales are the languages of the pages (default: the embedded
	// English and Spanish, locale.Load("")).
	Locales *locale.Set
}

// Server is the portal's handler. Requests for paths it does not serve go
// to next (the API).
type Server struct {
	app     *app.App
	billing *billing.Service
	calls   *calls.Service
	log     *slog.Logger
	cfg     Config
	next    http.Handler
	mux     *http.ServeMux
	pages   map[string]*template.Template
	// patterns are the registered routes, for the authorization matrix.
	patterns []string
	// guard refuses state-changing requests that a browser made for
	// another site (Sec-Fetch-Site, or Origin against Host).
	guard *http.CrossOriginProtection
	// locales are the pages' languages; scriptMessages each one's texts
	// for the scripts, by tag (GET /i18n/{tag}.js).
	locales        *locale.Set
	scriptMessages map[string][]byte
}

// New returns the portal in front of next.
func New(a *app.App, log *slog.Logger, cfg Config, next http.Handler) (*Server, error) {
	if cfg.StripeJS == "" {
		cfg.StripeJS = "https://js.stripe.com/v3/"
	}
	if cfg.Streams == nil {
		cfg.Streams = live.NewLimits(0, 0, 0)
	}
	if cfg.Locales == nil {
		l, err := locale.Load("")
		if err != nil {
			return nil, err
		}
		cfg.Locales = l
	}
	s := &Server{app: a, billing: billing.New(a.Core()), calls: calls.New(a.Core()), log: log, cfg: cfg, next: next, mux: http.NewServeMux(), pages: map[string]*template.Template{},
		guard: http.NewCrossOriginProtection(), locales: cfg.Locales}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(staticFS, "static")
	if err := s.buildScriptMessages(static); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// routes is the portal's table of contents.
func (s *Server) routes() {
	s.page("GET /auth", s.auth)
	s.page("POST /auth", s.auth)
	s.page("GET /signin", s.signinForm)
	s.page("POST /signin", s.signin)
	s.page("POST /signout", s.signout)
	s.page("GET /activate", s.activateForm)
	s.page("POST /activate", s.activate)
	s.page("GET /reset-password", s.activateForm)
	s.page("POST /reset-password", s.activate)
	s.page("POST /admin/providers", s.adminInvite)
	s.page("GET /visits", s.visits)
	s.page("GET /visits/start/{id}", s.visit)
	s.page("GET /visits/start/{id}/events", s.visitEvents)
	s.page("POST /visits/start/{id}/messages", s.postMessage)
	s.page("POST /visits/start/{id}/cancel", s.cancelVisit)
	s.page("GET /visits/start/{id}/reschedule", s.rescheduleForm)
	s.page("POST /visits/start/{id}/reschedule", s.reschedule)
	s.page("POST /visits/start/{id}/reminders", s.reminders)
	s.page("POST /visits/start/{id}/location", s.checkIn)
	s.page("POST /visits/start/{id}/text-link", s.textLink)
	s.page("POST /visits/start/{id}/note", s.saveNote)
	s.page("POST /visits/start/{id}/note/addenda", s.addAddendum)
	s.callRoute("GET /providers/diagnoses", s.diagnoses)
	s.page("GET /visits/start/{id}/calendar.ics", s.calendar)
	s.page("GET /visits/start/{id}/superbill", s.superbillHTML)
	s.page("GET /visits/start/{id}/superbill.pdf", s.superbillFile)
	s.callRoute("POST /visits/start/{id}/call/join", s.callJoin)
	s.callRoute("POST /visits/start/{id}/call/relay", s.callRelay)
	s.callRoute("GET /visits/start/{id}/call/events", s.callEvents)
	s.callRoute("POST /visits/start/{id}/call/signal", s.callSignal)
	s.callRoute("POST /visits/start/{id}/call/leave", s.callLeave)
	s.callRoute("POST /visits/start/{id}/call/end", s.callEnd)
	s.callRoute("POST /visits/start/{id}/call/invite", s.callInvite)
	s.callRoute("POST /visits/start/{id}/call/interpreter", s.callInterpreter)
	s.callRouteMax("POST /visits/start/{id}/call/recording", s.callRecording, s.maxFileBytes()+maxFormBytes)
	s.page("GET /visits/call/{id}", s.callOnly)
	s.page("GET /smart/launch", s.smartLaunch)
	s.page("GET /smart/callback", s.smartCallback)
	s.page("GET /oauth/consent/{id}", s.oauthConsent)
	s.page("POST /oauth/consent/{id}", s.oauthDecide)
	s.page("GET /v/{token}", s.visitLink)
	s.page("POST /v/{token}", s.openVisitLink)
	s.page("POST /v/{token}/again", s.visitLinkAgain)
	s.page("GET /invite/{account_code}/{token}", s.inviteForm)
	s.page("POST /invite/{account_code}/{token}", s.inviteAccept)
	s.page("GET /u/{account_code}", s.clinicHome)
	s.page("GET /c/{account_code}", s.clinicShort)
	s.page("GET /{$}", s.home)
	s.page("GET /c/{account_code}/{room_code}", s.room)
	s.page("POST /c/{account_code}/{room_code}/guest", s.guestJoin)
	s.upload("POST /c/{account_code}/{room_code}/intake", s.intake)
	s.page("GET /c/{account_code}/{room_code}/intake/{intake_id}/pay", s.pay)
	s.page("POST /c/{account_code}/{room_code}/intake/{intake_id}/pay", s.payNow)
	s.page("GET /c/{account_code}/{room_code}/intake/{intake_id}/book", s.bookForm)
	s.page("POST /c/{account_code}/{room_code}/intake/{intake_id}/book", s.book)
	s.page("GET /providers/dashboard", s.dashboard)
	s.page("GET /providers/dashboard/events", s.dashboardEvents)
	s.page("POST /providers/visits/{id}/start", s.startVisit)
	s.page("POST /providers/visits/{id}/done", s.closeEconsult)
	s.page("POST /providers/visits/{id}/{action}", s.moveVisit)
	s.page("GET /providers/patient/{user_id}", s.chart)
	s.page("POST /providers/slots", s.publishSlots)
	s.page("GET /profile", s.profile)
	s.page("POST /profile", s.saveProfile)
	s.page("POST /profile/apps/{client}/disconnect", s.disconnectApp)
	s.page("POST /profile/texts", s.saveTexts)
	s.page("GET /docs", s.docs)
	s.page("GET /lang/{tag}", s.setLanguage)
	s.page("GET /i18n/{file}", s.messagesJS)
	s.page("GET /admin/signin", s.adminSigninForm)
	s.page("POST /admin/signin", s.adminSignin)
	s.page("GET /admin", s.admin)
	s.page("GET /admin/numbers", s.adminNumbers)
	s.page("GET /admin/numbers.csv", s.adminNumbersCSV)
	s.page("POST /admin/rooms", s.adminCreateRoom)
	s.page("GET /admin/rooms/{code}", s.adminRoom)
	s.page("POST /admin/rooms/{code}", s.adminUpdateRoom)
	s.page("POST /admin/rooms/{code}/providers", s.adminLinkProvider)
	s.page("POST /admin/webhook", s.adminWebhook)
	s.page("POST /admin/endpoints", s.adminEndpoint)
	s.page("POST /admin/apps", s.adminApp)
	s.page("POST /admin/apps/{id}/revoke", s.adminAppRevoke)
	s.page("POST /admin/ehrs", s.adminEHRConnect)
	s.page("POST /admin/texts", s.adminTextsSave)
	s.page("POST /admin/interpreters", s.adminInterpreterAdd)
	s.page("POST /admin/interpreters/{id}/delete", s.adminInterpreterRemove)
	s.page("POST /admin/ehrs/{id}/delete", s.adminEHRDelete)
	s.page("POST /admin/ehrs/{id}/links", s.adminEHRLink)
	s.page("POST /admin/endpoints/{id}/delete", s.adminEndpointDelete)
	s.page("POST /admin/deliveries/{id}/redeliver", s.adminRedeliver)
	s.page("POST /admin/rotate", s.adminRotate)
	s.page("POST /admin/payments/{id}/refund", s.adminRefund)
	s.upload("POST /admin/codes", s.adminCodes)
	s.page("POST /admin/providers/{id}/{change}", s.adminStanding)
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(http.FileServerFS(static))))
}

// maxFormBytes bounds a page's form body.
const maxFormBytes = 64 << 10

// pageFunc is a page handler: it writes the page or returns an error,
// which ServeHTTP answers as a page.
type pageFunc func(w http.ResponseWriter, r *http.Request) error

// maxAttachments bounds the files one form sends, maxIntakeBytes what
// they weigh together.
const (
	maxAttachments = 5
	maxIntakeBytes = 50 << 20
)

// page registers a page handler. A page's form is a few fields: a body
// past maxFormBytes is refused before it is read (net/http's own bound
// for forms is 10 MB).
func (s *Server) page(pattern string, h pageFunc) { s.handle(pattern, h, false) }

// upload registers a page whose form may also carry files
// (multipart/form-data): up to maxAttachments files of MaxFileBytes each.
func (s *Server) upload(pattern string, h pageFunc) { s.handle(pattern, h, true) }

// maxFileBytes is the largest file a page takes (the API's upload limit).
func (s *Server) maxFileBytes() int64 {
	if s.cfg.MaxFileBytes <= 0 {
		return 50 << 20
	}
	return s.cfg.MaxFileBytes
}

// Patterns lists the portal's routes (method and pattern), as the
// authorization matrix test checks each has a row.
func (s *Server) Patterns() []string { return s.patterns }

func (s *Server) handle(pattern string, h pageFunc, files bool) {
	s.patterns = append(s.patterns, pattern)
	fileMax := s.maxFileBytes()
	s.mux.Handle(pattern, s.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withPageState(r)
		multipart := files && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data")
		limit := int64(maxFormBytes)
		if multipart {
			limit += maxAttachments * fileMax
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if r.Method == http.MethodPost {
			var err error
			if multipart {
				err = r.ParseMultipartForm(8 << 20)
			} else {
				err = r.ParseForm()
			}
			if err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					s.fail(w, r, clinic.Errorf(clinic.ETooLarge, "That form is larger than this page takes: shorten what you wrote, or send smaller files (at most %d of %d MB), and send it again.", maxAttachments, fileMax>>20))
				} else {
					s.fail(w, r, clinic.Errorf(clinic.EInvalid, "That form could not be read: send it again from the page."))
				}
				return
			}
		}
		if err := formText(r); err != nil {
			s.fail(w, r, err)
			return
		}
		if r.MultipartForm != nil {
			defer r.MultipartForm.RemoveAll()
			for _, fh := range r.MultipartForm.File["attachments"] {
				if fh.Size > fileMax {
					s.fail(w, r, clinic.Errorf(clinic.ETooLarge, "%s is larger than the clinic takes (%d MB).", fh.Filename, fileMax>>20))
					return
				}
			}
		}
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})))
}

// formText refuses a form (400) any of whose fields, or their names, is
// not text (app.FormText), before a page reads it: a NUL or an invalid
// byte is never half-stored, nor left to fail later (a move between
// databases, a PostgreSQL write).
func formText(r *http.Request) error {
	check := func(vals map[string][]string) error {
		for k, vs := range vals {
			if err := app.FormText("A field's name", k); err != nil {
				return err
			}
			for _, v := range vs {
				if err := app.FormText("“"+clipName(k)+"”", v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return check(r.Form) // a multipart form's values are in it too
}

// clipName is a field's name as a message names it.
func clipName(k string) string {
	if r := []rune(k); len(r) > 40 {
		return string(r[:40])
	}
	return k
}

// ServeHTTP sends the portal's paths to its pages and the rest to the API.
// The edge in front has given the request its id, its log line, its
// metrics and its panic recovery; the portal names its route and how it
// answers an error.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := edge.From(r.Context())
	_, pattern := s.mux.Handler(r)
	if pattern == "" {
		info.SetReply(s.reply) // the API, if it takes the request, says otherwise
		if s.hostRoom(w, r) {
			info.SetRoute(hostRoomRoute)
			return
		}
		s.next.ServeHTTP(w, r)
		return
	}
	info.SetRoute(pattern)
	info.SetReply(s.reply)
	s.securePage(w)
	s.mux.ServeHTTP(w, r)
}

// securePage sets the headers every page carries.
func (s *Server) securePage(w http.ResponseWriter) {
	h := w.Header()
	// Pages run no inline script and load nothing from elsewhere; no
	// other site may frame them; and no address a page was reached by
	// (which may carry a token) leaves it in a Referer.
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

// pageCSP is every page's Content-Security-Policy but the Stripe payment
// page's (stripeCSP).
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// staticFiles serves the embedded assets for a day: they change only with
// the binary.
func staticFiles(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		h.ServeHTTP(w, r)
	})
}

// fail answers err as a page: a caller who is not signed in is sent to
// sign in and back; the others see what went wrong in words, with the
// status the API would give (edge.ProblemOf, which also logs an error that
// is not the product's).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	pr := edge.ProblemOf(r, err)
	if pr.Status == http.StatusUnauthorized && r.Method == http.MethodGet && r.URL.Path != "/auth" {
		// The admin's pages have their own sign-in (the clinic's code and
		// admin token); a provider's or patient's form would not open them.
		if r.URL.Path == "/admin" || strings.HasPrefix(r.URL.Path, "/admin/") {
			http.Redirect(w, r, "/admin/signin", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	pr.SetHeaders(w)
	s.reply(w, r, pr.Status, s.words(r, pr.Code, pr.Message))
}

// reply draws the error page (edge.Reply): the message, or for an internal
// error words for people with the request's id to quote.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusInternalServerError {
		msg = s.localeOf(r).T("Something went wrong on our side. Try again in a moment; if it goes on, tell the clinic this reference: %s.", edge.RequestID(r.Context()))
	}
	page := errorPage{Status: status, Message: msg}
	// The way back is the viewer's own: a guest of one call or someone
	// not signed in has no list of visits to go to.
	if p, err := s.principal(r); err == nil {
		switch {
		case p.IsAdmin():
			page.Back, page.BackLabel = "/admin", "Go to the administration"
		case p.User.Type == clinic.UserProvider:
			page.Back, page.BackLabel = "/providers/dashboard", "Go to your dashboard"
		case p.User.Type == clinic.UserMember:
			page.Back, page.BackLabel = "/visits", "Go to your visits"
		}
	}
	s.render(w, r, status, "error", page)
}

// refused is err as a message on the form that caused it, when its code is
// one of codes (the refusals the form's input can cause): the status the
// API gives it and its message, in r's language (words). For any other
// error ok is false, and the handler returns err to fail the page.
func (s *Server) refused(r *http.Request, err error, codes ...string) (status int, msg string, ok bool) {
	code := clinic.ErrorCode(err)
	if !slices.Contains(codes, code) {
		return 0, "", false
	}
	return edge.Status(code), s.words(r, code, clinic.ErrorMessage(err)), true
}

type errorPage struct {
	Status          int
	Message         string
	Back, BackLabel string
}

// docs is GET /docs: the API reference, drawn in the browser by the
// vendored Redoc from /openapi.yaml. Redoc styles itself with inline
// styles and searches in a worker, which the page's policy allows and
// nothing else does.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Security-Policy", docsCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	_, err := io.WriteString(w, docsPage)
	return err
}

const docsCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Teleclinic API reference</title>
</head>
<body>
<noscript>The API reference needs JavaScript; the document itself is <a href="/openapi.yaml">/openapi.yaml</a>.</noscript>
<div id="redoc"></div>
<script type="module" src="/static/docs.js"></script>
</body>
</html>
`

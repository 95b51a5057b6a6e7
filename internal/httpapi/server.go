// Package httpapi is Teleclinic's HTTP interface: it decodes parameters,
// authenticates, calls the app, and encodes the {"data": …} envelope or the
// error shape of the endpoint's family. It holds no rules.
package httpapi

import (
	"github.com/rs/cors"

	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/fhir"
	"teleclinic/internal/live"
	"teleclinic/internal/metrics"
	"teleclinic/internal/smart"
)

// Config holds the HTTP layer's settings.
type Config struct {
	MaxBodyBytes   int64 // JSON and form bodies; default 1 MiB
	MaxUploadBytes int64 // recording uploads; default 2 GiB
	MaxFileBytes   int64 // POST /files uploads; default 50 MiB
	// Metrics counts requests by route and status (nil: not counted, and
	// GET /metrics answers 404).
	Metrics *metrics.Registry
	// Streams bounds the event streams open at once (shared with the
	// portal; default live.NewLimits(0, 0, 0)).
	Streams *live.Limits
	// MetricsToken is the server operator's credential for GET /metrics
	// on the API's address (serve's --metrics-token), sent as
	// "Authorization: Bearer …". The metrics describe the whole server,
	// so no clinic's credential opens them; without a token that route
	// answers 404 (--metrics-addr serves them on a private listener).
	MetricsToken string
	// MaxSlotLists bounds how many slot-list answers (availability and the
	// slot lists, up to 1000 slots each) are built at once; more wait their
	// turn. Each holds a few hundred KB until it is written, so a burst of
	// them would otherwise set the process's peak memory (default
	// 4 × GOMAXPROCS, at least 8).
	MaxSlotLists int
	// KeepAlive is how long an event stream stays quiet before it sends a
	// keep-alive and checks its caller's credentials again (default
	// live.KeepAlive).
	KeepAlive time.Duration
	// Closing is done when the server starts shutting down: the event
	// streams end then, rather than hold the shutdown.
	Closing context.Context
	// Parker holds the API's event streams while they wait, with no
	// goroutine each (live.Parker); nil gives each stream a goroutine.
	Parker *live.Parker
	// CORSOrigins are the web origins whose browser apps may call the API
	// (serve's --cors-origins; "*" for any). None: no cross-origin
	// answers, and a preflight is a 405 like any unknown method.
	CORSOrigins []string
}

// Server is the HTTP handler of the whole API.
type Server struct {
	pages   messagePages // thread pages' writer
	app     *app.App
	billing *billing.Service
	calls   *calls.Service
	fhir    *fhir.Server
	smart   *smart.Server
	log     *slog.Logger
	cfg     Config
	mux     *http.ServeMux
	routes  []Route
	lists   chan struct{} // the MaxSlotLists turns
	avail   availBodies   // availability answers, each encoded once
	// handler is serve, behind the CORS layer when origins are configured.
	handler http.Handler
}

// Route is one registered endpoint, as routes.go lists it.
type Route struct {
	Method, Path string
	need         app.Need
	fam          family
	h            handlerFunc
	lim          limits
	bounded      bool // takes a MaxSlotLists turn
	// missingTokenInvalid answers a request with no X-ApiToken as 400, not
	// 401: the spec's status table says so for visit messages, whose 401
	// is for a token that is not valid.
	missingTokenInvalid bool
	// rawBody leaves the body unparsed for the handler, which reads its
	// bytes (up to the body limit): a signature covers them.
	rawBody bool
}

// handlerFunc is an endpoint: it writes its success response itself and
// returns errors for the adapter to encode.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c *call) error

// call is what a handler gets besides the request: who is calling and the
// merged parameters.
type call struct {
	p      *clinic.Principal
	params *Params
	// creds and need are what authenticated the request: an event stream
	// authenticates them again before it sends events (stillIn).
	creds app.Credentials
	need  app.Need
}

// stillIn reports whether the caller of creds is still signed in: their token not
// logged out, revoked, expired, idled out or rotated since the request
// began; and until when, by time alone (clinic.Principal.Until).
func (s *Server) stillIn(ctx context.Context, creds app.Credentials, need app.Need) (int64, error) {
	p, err := s.app.Authenticate(ctx, creds, need)
	if err != nil {
		return 0, err
	}
	return p.Until, nil
}

// New wires the API over a.
func New(a *app.App, log *slog.Logger, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = 2 << 30
	}
	if cfg.Streams == nil {
		cfg.Streams = live.NewLimits(0, 0, 0)
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 50 << 20
	}
	if cfg.MaxSlotLists <= 0 {
		cfg.MaxSlotLists = max(8, 4*runtime.GOMAXPROCS(0))
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = live.KeepAlive
	}
	b := billing.New(a.Core())
	sm, err := smart.New(a)
	if err != nil {
		// Only a base address the authorization server cannot issue
		// tokens under fails; serve refuses one at start (--base-url).
		panic("httpapi: the SMART authorization server: " + err.Error())
	}
	s := &Server{app: a, billing: b, calls: calls.New(a.Core()), fhir: fhir.New(a, b), smart: sm, log: log, cfg: cfg, mux: http.NewServeMux(), lists: make(chan struct{}, cfg.MaxSlotLists)}
	s.registerRoutes()
	s.handler = http.HandlerFunc(s.serve)
	// The FHIR API and the authorization server answer every origin: a
	// SMART app runs in the browser of whoever uses it, its credential is
	// a bearer token it holds (never a cookie), so no origin gains a
	// right by being let in.
	open := cors.New(cors.Options{
		AllowedOrigins: []string{"*"},
		AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders: []string{"Authorization", "Content-Type", "Accept", "If-Match", "If-None-Exist", "Prefer", "X-AccountCode", "X-ApiToken"},
		ExposedHeaders: []string{"Location", "ETag", "Content-Location", "X-Request-Id", "Retry-After"},
		MaxAge:         600,
	}).Handler(s.handler)
	api := s.handler
	if len(cfg.CORSOrigins) > 0 {
		// The API's credentials are headers, never cookies, so a browser
		// app on another origin sends them itself and no credentialed CORS
		// is needed.
		s.handler = cors.New(cors.Options{
			AllowedOrigins: cfg.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
			AllowedHeaders: []string{"Content-Type", "X-AccountCode", "X-ApiToken", "X-ApiKey", "X-ApiSecret", "Idempotency-Key", "X-Request-Id", "Last-Event-ID", "Authorization"},
			ExposedHeaders: []string{"X-Request-Id", "Retry-After", "Idempotent-Replayed", "Content-Disposition", "Link"},
			MaxAge:         600,
		}).Handler(s.handler)
		api = s.handler
	}
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/fhir/R4/") || strings.HasPrefix(r.URL.Path, "/oauth/") {
			open.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
	return s
}

// Routes lists the registered endpoints (for the OpenAPI consistency test).
func (s *Server) Routes() []Route { return s.routes }

func (s *Server) handle(method, path string, need app.Need, fam family, h handlerFunc) {
	s.add(Route{Method: method, Path: path, need: need, fam: fam, h: h, lim: limits{body: s.cfg.MaxBodyBytes}})
}

// handleThread registers a visit message endpoint: a user's, where a
// request without a token is a bad request (spec: Errors).
func (s *Server) handleThread(method, path string, h handlerFunc) {
	s.add(Route{Method: method, Path: path, need: app.NeedUser, fam: famCode, h: h, lim: limits{body: s.cfg.MaxBodyBytes}, missingTokenInvalid: true})
}

// handleUpload registers an endpoint that takes a file: each file part may
// take limit bytes; everything else in the request, the body limit.
func (s *Server) handleUpload(method, path string, need app.Need, fam family, limit int64, h handlerFunc) {
	s.add(Route{Method: method, Path: path, need: need, fam: fam, h: h, lim: limits{body: s.cfg.MaxBodyBytes, file: limit}})
}

// handleRaw registers an endpoint that reads its body's bytes itself.
func (s *Server) handleRaw(method, path string, need app.Need, fam family, h handlerFunc) {
	s.add(Route{Method: method, Path: path, need: need, fam: fam, h: h, lim: limits{body: s.cfg.MaxBodyBytes}, rawBody: true})
}

// handleSlotList registers an endpoint that answers a long slot list: it
// waits for one of the MaxSlotLists turns after authentication.
func (s *Server) handleSlotList(method, path string, need app.Need, fam family, h handlerFunc) {
	s.add(Route{Method: method, Path: path, need: need, fam: fam, h: h, lim: limits{body: s.cfg.MaxBodyBytes}, bounded: true})
}

// handleProtocol registers an address of a protocol h serves whole (its
// own authentication, parsing and errors): listed with the routes, so it
// is documented and in the authorization matrix like them.
func (s *Server) handleProtocol(method, path string, h http.Handler) {
	s.routes = append(s.routes, Route{Method: method, Path: path, need: app.NeedNone})
	s.mux.Handle(method+" "+path, h)
}

func (s *Server) add(rt Route) {
	s.routes = append(s.routes, rt)
	s.mux.Handle(rt.Method+" "+rt.Path, s.adapt(rt))
}

// adapt turns an endpoint into an http.Handler: authenticate, parse, call,
// and encode any error in the family's shape.
func (s *Server) adapt(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := edge.From(r.Context())
		info.SetReply(func(w http.ResponseWriter, _ *http.Request, status int, msg string) {
			writeError(w, rt.fam, status, msg)
		})
		creds := app.Credentials{
			AccountCode: strings.TrimSpace(r.Header.Get("X-AccountCode")),
			APIToken:    strings.TrimSpace(r.Header.Get("X-ApiToken")),
			APIKey:      strings.TrimSpace(r.Header.Get("X-ApiKey")),
			APISecret:   strings.TrimSpace(r.Header.Get("X-ApiSecret")),
			RequestID:   info.ID(),
			ClientAddr:  edge.ClientAddr(r),
		}
		creds.FHIR = rt.fam == famFHIR
		if rt.fam == famFHIR && creds.APIToken == "" {
			// FHIR clients send their token as a bearer token.
			if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				creds.APIToken = strings.TrimSpace(tok)
			}
		}
		var p *clinic.Principal
		var err error
		if rt.missingTokenInvalid && creds.APIToken == "" {
			err = clinic.Errorf(clinic.EInvalid, "Missing API token: send X-ApiToken.")
		} else {
			p, err = s.app.Authenticate(r.Context(), creds, rt.need)
		}
		if err == nil {
			info.SetPrincipal(p)
			if rt.rawBody {
				r.Body = http.MaxBytesReader(w, r.Body, rt.lim.body)
				err = s.runOnce(w, r, rt, &call{p: p, creds: creds, need: rt.need})
				if err != nil {
					s.fail(w, r, rt.fam, err)
				}
				return
			}
			params, perr := parseParams(r, w, rt.lim)
			if params != nil {
				defer params.RemoveFiles()
			}
			if err = perr; err == nil {
				err = s.runOnce(w, r, rt, &call{p: p, params: params, creds: creds, need: rt.need})
			}
		}
		if err != nil {
			s.fail(w, r, rt.fam, err)
		}
	})
}

// run calls the endpoint, in its turn when the route is bounded. The turn is
// held until the answer is written, since encoding is most of its memory.
func (s *Server) run(w http.ResponseWriter, r *http.Request, rt Route, c *call) error {
	if rt.bounded {
		select {
		case s.lists <- struct{}{}:
			defer func() { <-s.lists }()
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	return rt.h(w, r, c)
}

// fail encodes err in the family's shape, with the status the edge maps
// its code to; an internal error is logged there and never shown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fam family, err error) {
	pr := edge.ProblemOf(r, err)
	if pr.Code == clinic.EInternal && r.Context().Err() != nil {
		return // the client went away; nothing to answer
	}
	pr.SetHeaders(w)
	writeError(w, fam, pr.Status, pr.Message)
}

// ServeHTTP answers a request: CORS first, when configured, then serve.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serve routes the request; the edge in front has given it its id, its
// headers, its log line, its metrics and its panic recovery.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	info := edge.From(r.Context())
	info.SetReply(func(w http.ResponseWriter, _ *http.Request, status int, msg string) {
		writeError(w, famCode, status, msg)
	})
	// Clients call every route with or without a .json suffix (docs/compat.md).
	if p := r.URL.Path; strings.HasSuffix(p, ".json") && strings.HasPrefix(p, "/api") {
		r.URL.Path = strings.TrimSuffix(p, ".json")
		r.URL.RawPath = ""
	}
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		s.noRoute(w, r, h)
		return
	}
	info.SetRoute(pattern)
	s.mux.ServeHTTP(w, r)
}

// noRoute answers unknown paths with 404 and known paths with the wrong
// method with 405 and Allow, both as JSON. The mux decides which by running
// its own fallback handler into a recorder.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch rec.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		writeError(w, famCode, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s is not allowed here; allowed: %s.", r.Method, rec.header.Get("Allow")))
	case http.StatusNotFound, 0:
		writeError(w, famCode, http.StatusNotFound, "No such endpoint: "+r.Method+" "+r.URL.Path)
	default: // the mux's own redirects (path cleaning)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
	}
}

type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.status = code }

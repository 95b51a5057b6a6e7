// Package httpapi is Teleclinic's HTTP interface: it decodes parameters,
// authenticates, calls the app, and encodes the {"data": …} envelope or the
// error shape of the endpoint's family. It holds no rules.
package httpapi

import (
	"github.com/rs/cors"

	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/metrics"
)

// Config holds the HTTP layer's settings.
type Config struct {
	MaxBodyBytes   int64 // JSON and form bodies; default 1 MiB
	MaxUploadBytes int64 // recording uploads; default 2 GiB
	MaxFileBytes   int64 // POST /files uploads; default 50 MiB
	// Metrics counts requests by route and status (nil: not counted, and
	// GET /metrics answers 404).
	Metrics *metrics.Registry
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
	// Closing is closed when the server starts shutting down: the event
	// streams end then, rather than hold the shutdown.
	Closing <-chan struct{}
	// CORSOrigins are the web origins whose browser apps may call the API
	// (serve's --cors-origins; "*" for any). None: no cross-origin
	// answers, and a preflight is a 405 like any unknown method.
	CORSOrigins []string
}

// Server is the HTTP handler of the whole API.
type Server struct {
	pages  messagePages // thread pages' writer
	app    *app.App
	log    *slog.Logger
	cfg    Config
	mux    *http.ServeMux
	routes []Route
	lists  chan struct{} // the MaxSlotLists turns
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
	// authenticates them again at each keep-alive (stillIn).
	creds app.Credentials
	need  app.Need
}

// stillIn reports whether c's caller is still signed in: their token not
// revoked, expired or idled out since the request began.
func (s *Server) stillIn(ctx context.Context, c *call) error {
	_, err := s.app.Authenticate(ctx, c.creds, c.need)
	return err
}

// New wires the API over a.
func New(a *app.App, log *slog.Logger, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = 2 << 30
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
	s := &Server{app: a, log: log, cfg: cfg, mux: http.NewServeMux(), lists: make(chan struct{}, cfg.MaxSlotLists)}
	s.registerRoutes()
	s.handler = http.HandlerFunc(s.serve)
	if len(cfg.CORSOrigins) > 0 {
		// The API's credentials are headers, never cookies, so a browser
		// app on another origin sends them itself and no credentialed CORS
		// is needed.
		s.handler = cors.New(cors.Options{
			AllowedOrigins: cfg.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete},
			AllowedHeaders: []string{"Content-Type", "X-AccountCode", "X-ApiToken", "X-ApiKey", "X-ApiSecret", "Idempotency-Key", "X-Request-Id", "Last-Event-ID", "Authorization"},
			ExposedHeaders: []string{"X-Request-Id", "Retry-After", "Idempotent-Replayed", "Content-Disposition"},
			MaxAge:         600,
		}).Handler(s.handler)
	}
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

// handleSlotList registers an endpoint that answers a long slot list: it
// waits for one of the MaxSlotLists turns after authentication.
func (s *Server) handleSlotList(method, path string, need app.Need, fam family, h handlerFunc) {
	s.add(Route{Method: method, Path: path, need: need, fam: fam, h: h, lim: limits{body: s.cfg.MaxBodyBytes}, bounded: true})
}

func (s *Server) add(rt Route) {
	s.routes = append(s.routes, rt)
	s.mux.Handle(rt.Method+" "+rt.Path, s.adapt(rt))
}

// adapt turns an endpoint into an http.Handler: authenticate, parse, call,
// and encode any error in the family's shape.
func (s *Server) adapt(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := reqInfoFrom(r.Context())
		creds := app.Credentials{
			AccountCode: strings.TrimSpace(r.Header.Get("X-AccountCode")),
			APIToken:    strings.TrimSpace(r.Header.Get("X-ApiToken")),
			APIKey:      strings.TrimSpace(r.Header.Get("X-ApiKey")),
			APISecret:   strings.TrimSpace(r.Header.Get("X-ApiSecret")),
			RequestID:   info.id,
			ClientAddr:  clientAddr(r),
		}
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
			info.principal = p
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

// fail encodes err; internal errors are logged once, with the request id, and
// never shown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fam family, err error) {
	code := clinic.ErrorCode(err)
	if code == clinic.EInternal {
		if r.Context().Err() != nil {
			return // the client went away; nothing to answer
		}
		s.log.ErrorContext(r.Context(), "internal error", "request_id", reqInfoFrom(r.Context()).id, "err", err)
	}
	if secs := clinic.RetryAfter(err); secs > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	writeError(w, fam, statusOf(code), clinic.ErrorMessage(err))
}

// ServeHTTP answers a request: CORS first, when configured, then serve.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serve runs the middleware chain around the router.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &reqInfo{id: requestID(r)}
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
	sw := &statusWriter{ResponseWriter: w}
	sw.Header().Set("X-Request-Id", info.id)
	// Answers hold patient data: no cache keeps them, unless a handler
	// says otherwise for what is public (reference lists) or a signed link.
	sw.Header().Set("Cache-Control", "no-store")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic", "request_id", info.id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !sw.wrote {
				writeError(sw, famCode, http.StatusInternalServerError, "Internal error.")
			}
		}
		d := time.Since(start)
		route := info.pattern
		if route == "" {
			route = "unmatched"
		}
		s.cfg.Metrics.ObserveRequest(route, sw.status(), d)
		s.logRequest(r, sw, info, d)
	}()
	// Clients call every route with or without a .json suffix (COMPAT.md).
	if p := r.URL.Path; strings.HasSuffix(p, ".json") && strings.HasPrefix(p, "/api") {
		r.URL.Path = strings.TrimSuffix(p, ".json")
		r.URL.RawPath = ""
	}
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		s.noRoute(sw, r, h)
		return
	}
	info.pattern = pattern
	s.mux.ServeHTTP(sw, r)
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

func (s *Server) logRequest(r *http.Request, sw *statusWriter, info *reqInfo, d time.Duration) {
	attrs := []slog.Attr{
		slog.String("request_id", info.id), slog.String("method", r.Method), slog.String("route", info.pattern),
		slog.Int("status", sw.status()), slog.Duration("duration", d),
	}
	if info.principal != nil && info.principal.Account != nil {
		attrs = append(attrs, slog.String("account", info.principal.Account.Code), slog.String("credential", info.principal.Kind.String()))
	}
	if info.pattern == "" {
		attrs = append(attrs, slog.String("path", r.URL.Path))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// reqInfo travels with the request so the log line can name what the
// handlers learned (route, clinic).
type reqInfo struct {
	id        string
	pattern   string
	principal *clinic.Principal
}

type reqInfoKey struct{}

func reqInfoFrom(ctx context.Context) *reqInfo {
	if i, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

var goodRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestID keeps a caller's X-Request-Id when it is plain, so that a load
// balancer's id follows the request; otherwise it makes one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); goodRequestID.MatchString(id) {
		return id
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.status = code }

// clientAddr is the IP address the request came from. Behind a proxy,
// serve's --client-ip-header has put the client's address there.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

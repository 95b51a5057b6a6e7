// Package edge is the HTTP edge that both doors of the server, the API
// (httpapi) and the portal (web), sit behind: it gives each request its id
// (the X-Request-Id header, the log line, the audit entries), sets the
// headers every answer carries, recovers a panic into a 500 that names the
// id, writes one access-log line, counts the request by its route pattern,
// and maps the product's error codes to HTTP statuses, once for both doors.
//
// A door tells the edge what it learns while it answers: the route pattern
// it matched, the caller it authenticated, and how it answers an error in
// its own shape (JSON for the API, a page for the portal). Model:
// tailscale's tsweb.
package edge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/metrics"
)

// Edge wraps a handler with the server's edge.
type Edge struct {
	log     *slog.Logger
	metrics *metrics.Registry
	next    http.Handler
}

// New returns next behind the edge. reg may be nil (nothing is counted).
func New(next http.Handler, log *slog.Logger, reg *metrics.Registry) *Edge {
	return &Edge{log: log, metrics: reg, next: next}
}

// Reply answers an error in a door's own shape: status and a message safe
// to show.
type Reply func(w http.ResponseWriter, r *http.Request, status int, msg string)

// Info is what the edge and the door know of one request.
type Info struct {
	id        string
	route     string
	principal *clinic.Principal
	reply     Reply
	log       *slog.Logger
}

type infoKey struct{}

// From is the request's Info; a request that did not come through the edge
// (a test calling a door directly) gets a fresh one with a new id.
func From(ctx context.Context) *Info {
	if i, ok := ctx.Value(infoKey{}).(*Info); ok {
		return i
	}
	return &Info{id: newID(), log: slog.New(slog.DiscardHandler)}
}

// RequestID is the request's id.
func RequestID(ctx context.Context) string { return From(ctx).id }

// ID is the request's id.
func (i *Info) ID() string { return i.id }

// SetRoute names the route pattern the door matched ("GET /visits/{id}"):
// the log line's route and the metrics' label.
func (i *Info) SetRoute(pattern string) { i.route = pattern }

// SetPrincipal names the authenticated caller, for the log line.
func (i *Info) SetPrincipal(p *clinic.Principal) { i.principal = p }

// SetReply says how the door answers an error (a panic's 500 included).
func (i *Info) SetReply(f Reply) { i.reply = f }

// ServeHTTP runs the request through the edge.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &Info{id: requestID(r), log: e.log}
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	sw := &statusWriter{ResponseWriter: w}
	h := sw.Header()
	h.Set("X-Request-Id", info.id)
	// Answers hold patient data: no cache keeps them, unless a handler
	// says otherwise (static files, reference lists, signed links).
	h.Set("Cache-Control", "no-store")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			e.log.Error("panic", "request_id", info.id, "route", info.route, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !sw.wrote {
				info.answer(sw, r, http.StatusInternalServerError, internalMessage(info.id))
			}
		}
		d := time.Since(start)
		route := info.route
		if route == "" {
			route = "unmatched"
		}
		e.metrics.ObserveRequest(route, sw.status(), d)
		e.logRequest(r, sw, info, d)
	}()
	e.next.ServeHTTP(sw, r)
}

// answer replies through the door's Reply, or in the API's plain shape
// when no door took the request.
func (i *Info) answer(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if i.reply != nil {
		i.reply(w, r, status, msg)
		return
	}
	_ = WriteJSON(w, status, struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{status, msg})
}

// logRequest writes the request's one line: never the query or a body,
// which may carry a token or health data.
func (e *Edge) logRequest(r *http.Request, sw *statusWriter, info *Info, d time.Duration) {
	attrs := []slog.Attr{
		slog.String("request_id", info.id), slog.String("method", r.Method), slog.String("route", info.route),
		slog.Int("status", sw.status()), slog.Duration("duration", d),
	}
	if p := info.principal; p != nil && p.Account != nil {
		attrs = append(attrs, slog.String("account", p.Account.Code), slog.String("credential", p.Kind.String()))
	}
	if info.route == "" {
		attrs = append(attrs, slog.String("path", r.URL.Path))
	}
	e.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// Problem is an error as an HTTP answer.
type Problem struct {
	Status int
	// Code is the product's error code (clinic.E…).
	Code string
	// Message is safe to show: an internal error's is generic, with the
	// request id to quote.
	Message string
	// RetryAfter is the seconds a throttled or busy client should wait.
	RetryAfter int64
}

// ProblemOf is err as the answer both doors give it. An error that is not
// the product's is internal: it is logged here, once, with the request id,
// and never shown (unless the client went away, when nothing is answered
// and nothing is worth logging).
func ProblemOf(r *http.Request, err error) Problem {
	var ce *clinic.Error
	if errors.As(err, &ce) && ce.Code != clinic.EInternal {
		return Problem{Status: Status(ce.Code), Code: ce.Code, Message: ce.Message, RetryAfter: ce.RetryAfter}
	}
	info := From(r.Context())
	if r.Context().Err() == nil {
		info.log.ErrorContext(r.Context(), "internal error", "request_id", info.id, "route", info.route, "err", err)
	}
	return Problem{Status: http.StatusInternalServerError, Code: clinic.EInternal, Message: internalMessage(info.id)}
}

// SetHeaders sets the headers the problem calls for (Retry-After).
func (p Problem) SetHeaders(w http.ResponseWriter) {
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(p.RetryAfter, 10))
	}
}

func internalMessage(id string) string {
	return "Internal error. If it persists, report request " + id + "."
}

// Status maps a product error code to its HTTP status.
func Status(code string) int {
	switch code {
	case clinic.EInvalid:
		return http.StatusBadRequest
	case clinic.EUnauthenticated:
		return http.StatusUnauthorized
	case clinic.EForbidden:
		return http.StatusForbidden
	case clinic.ENotFound:
		return http.StatusNotFound
	case clinic.EConflict:
		return http.StatusConflict
	case clinic.ETooMany:
		return http.StatusTooManyRequests
	case clinic.ETooLarge:
		return http.StatusRequestEntityTooLarge
	case clinic.EPayment:
		return http.StatusPaymentRequired
	case clinic.EMismatch:
		return http.StatusUnprocessableEntity
	case clinic.EStale:
		return http.StatusPreconditionFailed
	case clinic.EBusy:
		return http.StatusServiceUnavailable
	case clinic.EUnavailable:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// Code is the product's error code that maps to status (internal for a
// status no code maps to).
func Code(status int) string {
	for _, c := range Codes {
		if Status(c) == status {
			return c
		}
	}
	return clinic.EInternal
}

// Codes are the product's error codes, for tests that hold both doors to
// the same statuses.
var Codes = []string{clinic.EInvalid, clinic.EUnauthenticated, clinic.EForbidden, clinic.ENotFound, clinic.EConflict,
	clinic.ETooMany, clinic.ETooLarge, clinic.EPayment, clinic.EMismatch, clinic.EStale, clinic.EBusy, clinic.EUnavailable, clinic.EInternal}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// ClientAddr is the IP address the request came from. Behind a proxy,
// serve's --client-ip-header has put the client's address there.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ClientIP makes the request's RemoteAddr the client's address from
// header, set by the reverse proxy in front (X-Forwarded-For: the last
// address, the one that proxy added; any other header: its value).
// Without a header, or a value that is not an IP address, the
// connection's address stays.
func ClientIP(header string, h http.Handler) http.Handler {
	if header == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(header)
		if i := strings.LastIndexByte(v, ','); i >= 0 {
			v = v[i+1:]
		}
		if ip, err := netip.ParseAddr(strings.TrimSpace(v)); err == nil {
			r2 := *r
			r2.RemoteAddr = netip.AddrPortFrom(ip, 0).String()
			r = &r2
		}
		h.ServeHTTP(w, r)
	})
}

var goodRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestID keeps a caller's X-Request-Id when it is plain, so that a load
// balancer's id follows the request; otherwise it makes one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); goodRequestID.MatchString(id) {
		return id
	}
	return newID()
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// statusWriter remembers the status the door answered with.
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

// Unwrap lets http.ResponseController reach the connection (event streams
// flush and lift their deadlines through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

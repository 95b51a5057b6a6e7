package httpapi

import (
	"crypto/subtle"
	_ "embed"
	"net/http"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// OpenAPI is the API's OpenAPI 3.0.3 document.
//
//go:embed openapi.yaml
var OpenAPI []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, c *call) error {
	w.Header().Set("Content-Type", "application/yaml")
	_, err := w.Write(OpenAPI)
	return err
}

type health struct {
	Status string `json:"status"`
}

// healthz answers load balancers: 200 while the database answers.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.Ping(r.Context()); err != nil {
		return err
	}
	return ok(w, health{Status: "ok"})
}

// metrics serves the Prometheus text format behind the operator's
// --metrics-token; a separate --metrics-addr listener serves
// MetricsHandler without one.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, c *call) error {
	if s.cfg.Metrics == nil || s.cfg.MetricsToken == "" {
		return clinic.Errorf(clinic.ENotFound, "Metrics are not served on this address: the operator sets --metrics-token, or scrapes --metrics-addr.")
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(app.HashSecret(got)), []byte(app.HashSecret(s.cfg.MetricsToken))) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
		return clinic.Errorf(clinic.EUnauthenticated, "Metrics take the server operator's token (--metrics-token) as Authorization: Bearer; no clinic's credential opens them.")
	}
	s.MetricsHandler().ServeHTTP(w, r)
	return nil
}

// MetricsHandler serves the metrics in the Prometheus exposition format
// (client_golang's handler: the text format unless the scraper asks for
// another).
func (s *Server) MetricsHandler() http.Handler {
	if s.cfg.Metrics == nil {
		return http.NotFoundHandler()
	}
	return s.cfg.Metrics.Handler()
}

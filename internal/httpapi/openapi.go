package httpapi

import (
	_ "embed"
	"net/http"
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

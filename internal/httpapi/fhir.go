package httpapi

import (
	"net/http"

	"teleclinic/internal/clinic"
)

// fhirRoute is a route of the FHIR door (package fhir): the API has
// authenticated the caller (a bearer token too, on these routes), and
// answers its errors as OperationOutcome (famFHIR).
func fhirRoute(h func(http.ResponseWriter, *http.Request, *clinic.Principal) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *call) error { return h(w, r, c.p) }
}

package httpapi

import (
	"net/http"

	"teleclinic/internal/edge"
	"teleclinic/internal/fhir"
)

// family is an endpoint family's error shape (spec: Errors).
type family int

const (
	// famCode answers {"code": <status>, "message": …}: rooms, eligibility,
	// visit messages, and our extensions.
	famCode family = iota
	// famUsers is famCode with the users endpoints' quirk: 400 and 401 bodies
	// show code 404 and a generic message. The real reason goes in "detail",
	// so a developer still learns what was wrong.
	famUsers
	// famObject answers {"error": <status text>, "message": …, "code": <status>}:
	// intakes, visits, availability.
	famObject
	// famFHIR answers a FHIR OperationOutcome (application/fhir+json).
	famFHIR
)

// envelope is every success body: {"data": …} with the list extras the
// spec names.
type envelope struct {
	Data       any     `json:"data"`
	TotalCount *int    `json:"total_count,omitempty"`
	Version    *string `json:"version,omitempty"`
}

type codeError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Detail  string `json:"detail,omitempty"`
}

type objectError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func ok(w http.ResponseWriter, data any) error {
	return edge.WriteJSON(w, http.StatusOK, envelope{Data: data})
}

func okList(w http.ResponseWriter, data any, total int) error {
	return edge.WriteJSON(w, http.StatusOK, envelope{Data: data, TotalCount: &total})
}

// pageNotAvailable is the users family's generic message (spec: Errors).
const pageNotAvailable = "Page not available."

func writeError(w http.ResponseWriter, fam family, status int, msg string) {
	var body any
	switch {
	case fam == famFHIR:
		fhir.WriteOutcome(w, status, msg)
		return
	case fam == famObject:
		body = objectError{Error: http.StatusText(status), Message: msg, Code: status}
	case fam == famUsers && (status == http.StatusBadRequest || status == http.StatusUnauthorized):
		body = codeError{Code: http.StatusNotFound, Message: pageNotAvailable, Detail: msg}
	default:
		body = codeError{Code: status, Message: msg}
	}
	_ = edge.WriteJSON(w, status, body)
}

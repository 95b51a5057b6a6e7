// Package clinic holds Teleclinic's domain types, enums and error codes. It
// imports nothing of ours, so every other package can depend on it.
package clinic

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP layer maps each to a status and to the error shape of
// the endpoint family; nothing below it knows about HTTP.
const (
	EInvalid         = "invalid"
	EUnauthenticated = "unauthenticated"
	EForbidden       = "forbidden"
	ENotFound        = "not_found"
	EConflict        = "conflict"
	ETooMany         = "too_many"
	ETooLarge        = "too_large"
	EPayment         = "payment"  // the card processor refused a card
	EMismatch        = "mismatch" // an idempotency key reused with other parameters
	EStale           = "stale"    // a change made against a version the resource no longer has (If-Match)
	EBusy            = "busy"     // the server is at a bound of its own; try again after RetryAfter
	EUnavailable     = "unavailable"
	EInternal        = "internal"
)

// Error is an error a client may see: a code from the list above and a message
// safe to show. Anything that is not an *Error is reported as internal and its
// text is only logged.
type Error struct {
	Code    string
	Message string
	// RetryAfter, on a too_many error, is how many seconds the client should
	// wait before trying again (the Retry-After header).
	RetryAfter int64
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err if it is (or wraps) an *Error, else EInternal.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the client-safe message of err, or a generic one for
// internal errors.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}

// RetryAfter returns the seconds to wait that err carries, or 0.
func RetryAfter(err error) int64 {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

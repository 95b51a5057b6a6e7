package httpapi

import (
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
)

// Ids are parsed here, once, and app receives them typed. A path id that is
// not a positive integer names nothing: it is answered as the resource's
// "not found", as an unknown id would be. A reference in a body or query
// that is not an integer is invalid input.

// pathID reads the path id name; what names the resource in the 404.
func pathID(c *call, name, what string) (int64, error) {
	n, err := strconv.ParseInt(c.params.Str(name), 10, 64)
	if err != nil || n <= 0 {
		return 0, clinic.Errorf(clinic.ENotFound, "%s not found.", what)
	}
	return n, nil
}

// userIDParam reads a user id from the path or the body; "-" (or nothing)
// is the caller.
func userIDParam(c *call, name string) (int64, error) {
	v := strings.TrimSpace(c.params.Str(name))
	if v == "-" || v == "" {
		return c.p.UserID(), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, clinic.Errorf(clinic.ENotFound, "User not found.")
	}
	return n, nil
}

// refID reads an optional id a body or query refers to, under the first of
// names that is present (clients send provider for provider_id): absent
// or empty is 0, "-" is the caller.
func refID(c *call, names ...string) (int64, error) {
	n, _, err := optRefID(c, names...)
	return n, err
}

// ref names where readRefs puts an id a body or query refers to, and the
// parameter (and the other name clients send it under, if any).
type ref struct {
	dst       *int64
	name, alt string
}

// readRefs reads each reference with refID, in order; the first one that
// is not an id is the error.
func readRefs(c *call, refs ...ref) error {
	for _, r := range refs {
		names := []string{r.name}
		if r.alt != "" {
			names = append(names, r.alt)
		}
		n, err := refID(c, names...)
		if err != nil {
			return err
		}
		*r.dst = n
	}
	return nil
}

// optRefID is refID that also says whether any of names was present.
func optRefID(c *call, names ...string) (int64, bool, error) {
	for _, name := range names {
		v, ok := c.params.StrOK(name)
		if !ok {
			continue
		}
		if strings.TrimSpace(v) == "-" {
			return c.p.UserID(), true, nil
		}
		n, err := c.params.Int(name, 0)
		if err != nil || n < 0 {
			return 0, true, clinic.Errorf(clinic.EInvalid, "%s must be an id.", name)
		}
		return n, true, nil
	}
	return 0, false, nil
}

// idList parses the ids of a list parameter; bad is the error for a value
// that is not one.
func idList(vals []string, bad func(v string) error) ([]int64, error) {
	out := make([]int64, 0, len(vals))
	for _, v := range vals {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, bad(v)
		}
		out = append(out, n)
	}
	return out, nil
}

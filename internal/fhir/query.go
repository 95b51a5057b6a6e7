package fhir

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// fhirQuery is a search's parameters: whose record, and the _lastUpdated
// bounds.
type fhirQuery struct {
	patient int64 // 0: not given
	id      string
	updated []timeBound
	// count and offset are the page: _count resources from the one at
	// offset (_offset, which the Bundle's next and previous links carry).
	count, offset int
}

// The page sizes of a search set: a patient's whole record in one answer
// (1,000 visits made 300 KB) is what _count and the next link are for.
const (
	defaultCount = 200
	maxCount     = 1000
)

// timeBound is one _lastUpdated comparison: a prefix and the range its
// value's precision covers, [lo, hi) in unix seconds.
type timeBound struct {
	prefix string
	lo, hi int64
}

func (b timeBound) holds(t int64) bool {
	switch b.prefix {
	case "gt":
		return t >= b.hi
	case "ge":
		return t >= b.lo
	case "lt":
		return t < b.lo
	case "le":
		return t < b.hi
	}
	return t >= b.lo && t < b.hi
}

// parseFHIRDate reads a FHIR date or dateTime of any precision as the range
// of seconds it covers; one without a zone is UTC.
func parseFHIRDate(v string) (lo, hi int64, ok bool) {
	layouts := []struct {
		layout string
		next   func(time.Time) time.Time
	}{
		{"2006", func(t time.Time) time.Time { return t.AddDate(1, 0, 0) }},
		{"2006-01", func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }},
		{"2006-01-02", func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }},
		{"2006-01-02T15:04Z07:00", func(t time.Time) time.Time { return t.Add(time.Minute) }},
		{"2006-01-02T15:04:05Z07:00", func(t time.Time) time.Time { return t.Add(time.Second) }},
		{"2006-01-02T15:04:05", func(t time.Time) time.Time { return t.Add(time.Second) }},
	}
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '.'); i > 0 && strings.Contains(v, "T") {
		// Fractions of a second: the second holds them.
		j := i + 1
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		v = v[:i] + v[j:]
	}
	for _, l := range layouts {
		if t, err := time.Parse(l.layout, v); err == nil {
			return t.Unix(), l.next(t).Unix(), true
		}
	}
	return 0, 0, false
}

// parseFHIRQuery reads a search's query; names are the parameters the
// type takes besides _lastUpdated and _format. An unknown parameter is
// refused rather than ignored: a filter the server silently skipped would
// answer more of a patient's record than was asked for.
func parseFHIRQuery(q url.Values, names ...string) (*fhirQuery, error) {
	out := &fhirQuery{count: defaultCount}
	for name, vals := range q {
		switch {
		case name == "_count" || name == "_offset":
			n, err := strconv.Atoi(strings.TrimSpace(vals[0]))
			switch {
			case len(vals) != 1 || err != nil:
				return nil, clinic.Errorf(clinic.EInvalid, "%s is a number, given once.", name)
			case name == "_count" && (n < 1 || n > maxCount):
				return nil, clinic.Errorf(clinic.EInvalid, "_count is from 1 to %d.", maxCount)
			case name == "_offset" && n < 0:
				return nil, clinic.Errorf(clinic.EInvalid, "_offset must not be negative.")
			case name == "_count":
				out.count = n
			default:
				out.offset = n
			}
		case name == "_format":
			for _, v := range vals {
				if !slices.Contains([]string{"json", "application/json", "application/fhir+json"}, v) {
					return nil, clinic.Errorf(clinic.EInvalid, "_format must be json: this server speaks FHIR JSON only.")
				}
			}
		case name == "_lastUpdated" || name == "_since":
			for _, v := range vals {
				prefix := "eq"
				if name == "_since" {
					prefix = "ge"
				} else if len(v) > 2 && v[0] >= 'a' && v[0] <= 'z' {
					prefix, v = v[:2], v[2:]
				}
				if !slices.Contains([]string{"eq", "gt", "ge", "lt", "le"}, prefix) {
					return nil, clinic.Errorf(clinic.EInvalid, "%s takes the prefixes eq, gt, ge, lt and le.", name)
				}
				lo, hi, ok := parseFHIRDate(v)
				if !ok {
					return nil, clinic.Errorf(clinic.EInvalid, "%s must be a FHIR date or dateTime, for example ge2026-01-01 or gt2026-01-01T10:00:00Z.", name)
				}
				out.updated = append(out.updated, timeBound{prefix: prefix, lo: lo, hi: hi})
			}
		case slices.Contains(names, name):
			if len(vals) != 1 {
				return nil, clinic.Errorf(clinic.EInvalid, "%s is given once.", name)
			}
			v := strings.TrimSpace(vals[0])
			if name == "_id" {
				out.id = v
				continue
			}
			// patient and subject name the patient: 12 or Patient/12.
			v = strings.TrimPrefix(v, "Patient/")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return nil, clinic.Errorf(clinic.EInvalid, "%s must be a patient's id, as 12 or Patient/12.", name)
			}
			if out.patient != 0 && out.patient != n {
				return nil, clinic.Errorf(clinic.EInvalid, "patient and subject name different patients.")
			}
			out.patient = n
		default:
			return nil, clinic.Errorf(clinic.EInvalid, "The search parameter %s is not supported here; see GET /fhir/R4/metadata.", name)
		}
	}
	return out, nil
}

// page is the record page of q's _lastUpdated range, for the lists read a
// page at a time: the bounds' intersection as [Since, Before).
func (q *fhirQuery) page() app.RecordPage {
	var pg app.RecordPage
	for _, b := range q.updated {
		lo, hi := b.lo, b.hi
		switch b.prefix {
		case "gt":
			lo, hi = b.hi, 0
		case "ge":
			hi = 0
		case "lt":
			lo, hi = 0, b.lo
		case "le":
			lo = 0
		}
		if hi == 0 && b.prefix != "gt" && b.prefix != "ge" {
			hi = -1 // before 1970: nothing was stored then (0 would be open)
		}
		if lo != 0 && (pg.Since == 0 || lo > pg.Since) {
			pg.Since = lo
		}
		if hi != 0 && (pg.Before == 0 || hi < pg.Before) {
			pg.Before = hi
		}
	}
	return pg
}

func (q *fhirQuery) keep(res resource) bool {
	for _, b := range q.updated {
		if !b.holds(res.updated()) {
			return false
		}
	}
	return q.id == "" || strings.HasSuffix(res.ref(), "/"+q.id)
}

// filter keeps the resources the query asks for.
func filter(rs []resource, q *fhirQuery) []resource {
	out := rs[:0]
	for _, res := range rs {
		if q.keep(res) {
			out = append(out, res)
		}
	}
	return out
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
)

// Params is the one parameter view of a request (COMPAT.md): path values,
// then the body (JSON object, url-encoded or multipart form), then the query.
// Where a name appears in both, the body wins over the query. Form names in
// bracket style (meta[target][id], id[]) are the same as dotted names
// (meta.target.id, id).
type Params struct {
	r     *http.Request
	body  map[string][]string // form bodies, keys normalised
	json  map[string]any      // a JSON object body
	query map[string][]string // keys normalised
	Files *multipart.Form     // multipart file parts, for uploads
}

// parseParams reads the body up to limit bytes. A larger body is a
// too_large error; a malformed one is invalid.
func parseParams(r *http.Request, w http.ResponseWriter, limit int64) (*Params, error) {
	p := &Params{r: r, query: normKeys(r.URL.Query())}
	if r.Body == nil || r.Body == http.NoBody {
		return p, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	switch ct {
	case "application/json":
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, bodyErr(err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			return p, nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, clinic.Errorf(clinic.EInvalid, "The body is not valid JSON.")
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, clinic.Errorf(clinic.EInvalid, "The JSON body must be an object.")
		}
		p.json = obj
	case "application/x-www-form-urlencoded":
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, bodyErr(err)
		}
		vals, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, clinic.Errorf(clinic.EInvalid, "The form body is malformed.")
		}
		p.body = normKeys(vals)
	case "multipart/form-data":
		// Up to 1 MiB of parts stays in memory; larger file parts spill to
		// temporary files, which the server removes after the request.
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, bodyErr(err)
		}
		p.body = normKeys(r.MultipartForm.Value)
		p.Files = r.MultipartForm
	}
	return p, nil
}

func bodyErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return clinic.Errorf(clinic.ETooLarge, "The request body is larger than %d bytes.", mbe.Limit)
	}
	return clinic.Errorf(clinic.EInvalid, "The request body could not be read: %v", err)
}

// normKey turns bracket names into dotted ones: meta[target][id] →
// meta.target.id, id[] → id.
func normKey(k string) string {
	if !strings.Contains(k, "[") {
		return k
	}
	k = strings.ReplaceAll(k, "[]", "")
	k = strings.ReplaceAll(k, "][", ".")
	k = strings.ReplaceAll(k, "[", ".")
	return strings.ReplaceAll(k, "]", "")
}

func normKeys(in map[string][]string) map[string][]string {
	out := make(map[string][]string, len(in))
	for k, v := range in {
		nk := normKey(k)
		out[nk] = append(out[nk], v...)
	}
	return out
}

// lookup finds name in the body then the query. JSON values keep their type.
func (p *Params) lookup(name string) (any, bool) {
	if v := p.r.PathValue(name); v != "" {
		return v, true
	}
	if p.json != nil {
		if v, ok := jsonPath(p.json, name); ok {
			return v, true
		}
	}
	if v, ok := p.body[name]; ok {
		return v, true
	}
	if v, ok := p.query[name]; ok {
		return v, true
	}
	return nil, false
}

// jsonPath finds "a.b.c" as a flat key or as nested objects.
func jsonPath(obj map[string]any, name string) (any, bool) {
	if v, ok := obj[name]; ok {
		return v, true
	}
	head, rest, found := strings.Cut(name, ".")
	if !found {
		return nil, false
	}
	sub, ok := obj[head].(map[string]any)
	if !ok {
		return nil, false
	}
	return jsonPath(sub, rest)
}

// Has reports whether the request names the parameter at all.
func (p *Params) Has(name string) bool { _, ok := p.lookup(name); return ok }

// Str returns a parameter as text: JSON numbers as written, booleans as
// "1"/"0", the first of repeated form values.
func (p *Params) Str(name string) string {
	s, _ := p.StrOK(name)
	return s
}

// StrOK is Str that also says whether the parameter was present.
func (p *Params) StrOK(name string) (string, bool) {
	v, ok := p.lookup(name)
	if !ok {
		return "", false
	}
	return scalar(v), true
}

// Opt returns a pointer to the parameter's text, nil when absent: for
// updates where absent means "leave as it is".
func (p *Params) Opt(name string) *string {
	s, ok := p.StrOK(name)
	if !ok {
		return nil
	}
	return &s
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "1"
		}
		return "0"
	case []string:
		if len(x) > 0 {
			return x[0]
		}
	case []any:
		if len(x) > 0 {
			return scalar(x[0])
		}
	case nil:
		return ""
	}
	return ""
}

// List returns a parameter given as a JSON array, repeated form values, or a
// comma-separated list, as trimmed non-empty strings.
func (p *Params) List(name string) []string {
	v, ok := p.lookup(name)
	if !ok {
		return nil
	}
	var raw []string
	switch x := v.(type) {
	case []string:
		raw = x
	case []any:
		for _, e := range x {
			raw = append(raw, scalar(e))
		}
	default:
		raw = []string{scalar(x)}
	}
	var out []string
	for _, s := range raw {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// Bool reads a lenient boolean: 1/true/yes/on and 0/false/no/off. Absent is
// nil.
func (p *Params) Bool(name string) (*bool, error) {
	s, ok := p.StrOK(name)
	if !ok || strings.TrimSpace(s) == "" {
		return nil, nil
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		t := true
		return &t, nil
	case "0", "false", "no", "off":
		f := false
		return &f, nil
	}
	return nil, clinic.Errorf(clinic.EInvalid, "%s must be a boolean (1 or 0, true or false).", name)
}

// Flag is Bool with absent meaning false.
func (p *Params) Flag(name string) (bool, error) {
	b, err := p.Bool(name)
	return b != nil && *b, err
}

// Int reads an integer; absent or empty gives def.
func (p *Params) Int(name string, def int64) (int64, error) {
	s := strings.TrimSpace(p.Str(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// JSON clients send 20.0 for 20.
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f == float64(int64(f)) {
			return int64(f), nil
		}
		return 0, clinic.Errorf(clinic.EInvalid, "%s must be an integer.", name)
	}
	return n, nil
}

// Paging reads the start and limit of a paged list; absent is 0, which the
// app layer turns into its defaults.
func (p *Params) Paging() (start, limit int, err error) {
	s, err := p.Int("start", 0)
	if err != nil {
		return 0, 0, err
	}
	l, err := p.Int("limit", 0)
	return int(s), int(l), err
}

// OptInt reads an optional integer: nil when absent or empty.
func (p *Params) OptInt(name string) (*int, error) {
	if s, ok := p.StrOK(name); !ok || strings.TrimSpace(s) == "" {
		return nil, nil
	}
	n, err := p.Int(name, 0)
	if err != nil {
		return nil, err
	}
	v := int(n)
	return &v, nil
}

// OptList reads an optional list: nil when absent, an empty list when given
// empty (so a client can clear it).
func (p *Params) OptList(name string) *[]string {
	if !p.Has(name) {
		return nil
	}
	l := p.List(name)
	if l == nil {
		l = []string{}
	}
	return &l
}

// JSON decodes a structured parameter into dst: a JSON value in a JSON body,
// or JSON text in a form field. It reports whether the parameter was there.
func (p *Params) JSON(name string, dst any) (bool, error) {
	v, ok := p.lookup(name)
	if !ok {
		return false, nil
	}
	var raw []byte
	switch x := v.(type) {
	case []string:
		if len(x) == 0 {
			return false, nil
		}
		raw = []byte(x[0])
	case string:
		raw = []byte(x)
	default:
		raw, _ = json.Marshal(x)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return true, clinic.Errorf(clinic.EInvalid, "%s must be JSON of the documented shape: %v", name, err)
	}
	return true, nil
}

// First returns the first of the names that is present, for aliases
// (provider_id and provider, currency and paymentCurrency).
func (p *Params) First(names ...string) string {
	for _, n := range names {
		if s, ok := p.StrOK(n); ok {
			return s
		}
	}
	return ""
}

// BodyScalars returns the body's top-level names with text values: the
// custom field-value pairs of an intake form.
func (p *Params) BodyScalars() map[string]string {
	out := map[string]string{}
	for k, v := range p.body {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	for k, v := range p.json {
		switch v.(type) {
		case string, json.Number, bool:
			out[k] = scalar(v)
		}
	}
	return out
}

// Raw returns a parameter as the client typed it: a JSON value keeps its
// type (numbers as json.Number), a form or query value is its first string.
func (p *Params) Raw(name string) (any, bool) {
	v, ok := p.lookup(name)
	if !ok {
		return nil, false
	}
	if ss, isList := v.([]string); isList {
		if len(ss) == 0 {
			return nil, false
		}
		return ss[0], true
	}
	return v, true
}

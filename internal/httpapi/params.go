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
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// Params is the one parameter view of a request (docs/compat.md): path values,
// then the body (JSON object, url-encoded or multipart form), then the query.
// Where a name appears in both, the body wins over the query. Form names in
// bracket style (meta[target][id], id[]) are the same as dotted names
// (meta.target.id, id).
type Params struct {
	r     *http.Request
	body  map[string][]string  // form bodies, keys normalised
	json  map[string]any       // a JSON object body
	query map[string][]string  // keys normalised
	Files map[string][]*Upload // multipart file parts, for uploads
}

// Bounds of what one request may carry besides its files (openapi.yaml,
// "Limits"): a JSON body nested deeper, or with a longer array, is refused
// before any handler sees it.
const (
	maxJSONDepth  = 32
	maxJSONArray  = 1000
	maxParamParts = 200 // multipart parts, form fields and query values
)

// limits are a route's body limits: body for a JSON or form body and for
// all the non-file parts of a multipart body together, file for each file
// part (0: the route takes no files beyond body).
type limits struct{ body, file int64 }

// parseParams reads the body within lim. A body over its limit is a
// too_large error, refused by its Content-Length before it is read when it
// declares one; a malformed one, or text that is not valid UTF-8 or holds a
// NUL, is invalid.
func parseParams(r *http.Request, w http.ResponseWriter, lim limits) (*Params, error) {
	p := &Params{r: r, query: normKeys(r.URL.Query())}
	if err := checkValues("query", p.query); err != nil {
		return nil, err
	}
	if r.Body == nil || r.Body == http.NoBody {
		return p, nil
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	total := lim.body
	if ct == "multipart/form-data" && lim.file > 0 {
		total = lim.body + lim.file
	}
	if r.ContentLength > total {
		return nil, clinic.Errorf(clinic.ETooLarge, "The request body is larger than %d bytes.", total)
	}
	r.Body = http.MaxBytesReader(w, r.Body, total)
	switch ct {
	case "application/json":
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, bodyErr(err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			return p, nil
		}
		// The decoder would replace invalid UTF-8 silently.
		if !utf8.Valid(raw) {
			return nil, clinic.Errorf(clinic.EInvalid, "The body is not valid UTF-8 text.")
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
		if err := checkJSON("", obj, 1); err != nil {
			return nil, err
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
		vals, files, err := readMultipart(r.Body, ctParams["boundary"], lim)
		p.Files = files // removed by RemoveFiles even after an error
		if err != nil {
			return p, err
		}
		p.body = normKeys(vals)
	}
	if err := checkValues("body", p.body); err != nil {
		return p, err
	}
	return p, nil
}

// checkValues refuses form or query values that are not text: invalid
// UTF-8 or a NUL byte (every text field; internal/app bounds the lengths),
// and more values than a request carries.
func checkValues(where string, vals map[string][]string) error {
	n := 0
	for k, vs := range vals {
		if err := checkText(k, k); err != nil {
			return err
		}
		for _, v := range vs {
			if n++; n > maxParamParts {
				return clinic.Errorf(clinic.EInvalid, "The %s has more than %d values.", where, maxParamParts)
			}
			if err := checkText(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkText(name, v string) error {
	if !utf8.ValidString(v) {
		return clinic.Errorf(clinic.EInvalid, "%s is not valid UTF-8 text.", printable(name))
	}
	if strings.IndexByte(v, 0) >= 0 {
		return clinic.Errorf(clinic.EInvalid, "%s contains a NUL character.", printable(name))
	}
	return nil
}

// printable is a parameter name fit for an error message.
func printable(name string) string {
	if !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 || len(name) > 100 {
		return "A parameter name"
	}
	return name
}

// checkJSON walks a decoded JSON body: depth, array lengths, and text.
func checkJSON(path string, v any, depth int) error {
	if depth > maxJSONDepth {
		return clinic.Errorf(clinic.EInvalid, "The JSON body is nested deeper than %d levels.", maxJSONDepth)
	}
	switch x := v.(type) {
	case string:
		return checkText(path, x)
	case map[string]any:
		for k, e := range x {
			name := k
			if path != "" {
				name = path + "." + k
			}
			if err := checkText(name, k); err != nil {
				return err
			}
			if err := checkJSON(name, e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if len(x) > maxJSONArray {
			return clinic.Errorf(clinic.EInvalid, "%s has more than %d elements.", printable(path), maxJSONArray)
		}
		for _, e := range x {
			if err := checkJSON(path, e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// Upload is a file part of a multipart body, spooled to a temporary file
// that RemoveFiles deletes after the request.
type Upload struct {
	Filename string
	Size     int64
	f        *os.File
}

// Open reads the part from its start.
func (u *Upload) Open() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(u.f, 0, u.Size)), nil
}

// RemoveFiles deletes the spooled file parts.
func (p *Params) RemoveFiles() {
	for _, us := range p.Files {
		for _, u := range us {
			u.f.Close()
			os.Remove(u.f.Name())
		}
	}
}

// readMultipart reads a multipart body part by part: the non-file parts
// together within lim.body, kept in memory; each file part within lim.file
// (lim.body on a route that takes no files), spooled to a temporary file.
// Unlike Request.ParseMultipartForm, whose non-file parts may take 10 MiB
// more than its memory bound, no text part can exceed the body limit.
func readMultipart(body io.Reader, boundary string, lim limits) (map[string][]string, map[string][]*Upload, error) {
	if boundary == "" {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "The multipart body has no boundary.")
	}
	fileLimit := lim.file
	if fileLimit <= 0 {
		fileLimit = lim.body
	}
	mr := multipart.NewReader(body, boundary)
	vals := map[string][]string{}
	files := map[string][]*Upload{}
	valueBytes, parts := int64(0), 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return vals, files, nil
		}
		if err != nil {
			return vals, files, bodyErr(err)
		}
		if parts++; parts > maxParamParts {
			return vals, files, clinic.Errorf(clinic.EInvalid, "The multipart body has more than %d parts.", maxParamParts)
		}
		name := part.FormName()
		if name == "" {
			continue
		}
		if part.FileName() == "" {
			b, err := io.ReadAll(io.LimitReader(part, lim.body-valueBytes+1))
			if err != nil {
				return vals, files, bodyErr(err)
			}
			if valueBytes += int64(len(b)); valueBytes > lim.body {
				return vals, files, clinic.Errorf(clinic.ETooLarge, "The non-file parts of the request are larger than %d bytes.", lim.body)
			}
			vals[name] = append(vals[name], string(b))
			continue
		}
		f, err := os.CreateTemp("", "teleclinic-upload-*")
		if err != nil {
			return vals, files, err
		}
		u := &Upload{Filename: part.FileName(), f: f}
		files[name] = append(files[name], u)
		if u.Size, err = io.Copy(f, io.LimitReader(part, fileLimit+1)); err != nil {
			return vals, files, bodyErr(err)
		}
		if u.Size > fileLimit {
			return vals, files, clinic.Errorf(clinic.ETooLarge, "The file part %s is larger than %d bytes.", printable(name), fileLimit)
		}
	}
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
	if err == nil && (s < 0 || s > app.MaxSkip || l < 0 || l > app.MaxSkip) {
		err = clinic.Errorf(clinic.EInvalid, "start and limit must be from 0 to %d.", app.MaxSkip)
	}
	return int(s), int(l), err
}

// Keyset reads a keyset page's cursor (the id of the last item of the
// page before, as the parameter name holds it) and its limit; absent is
// 0, which the app layer turns into the list's defaults.
func (p *Params) Keyset(name string) (cursor int64, limit int, err error) {
	if cursor, err = p.Int(name, 0); err != nil {
		return 0, 0, err
	}
	l, err := p.Int("limit", 0)
	return cursor, int(l), err
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

package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"teleclinic/internal/httpapi"
)

// Req is one request. Exactly one of Form, Multipart and JSON may be set.
type Req struct {
	Method    string
	Path      string
	Query     url.Values
	Header    map[string]string
	Form      url.Values        // application/x-www-form-urlencoded
	Multipart map[string]string // multipart/form-data fields
	Files     map[string][]byte // multipart/form-data file parts, by field name (with Multipart)
	FileNames map[string]string // the parts' file names (default: field.bin)
	JSON      any               // application/json
	RawBody   []byte            // sent as is with Header's Content-Type
	// NoValidate skips the OpenAPI check: for responses to routes that do not
	// exist (404, 405) and for deliberately broken requests.
	NoValidate bool
	// StartOnly returns as soon as an event stream has answered its
	// headers, instead of reading it to its end.
	StartOnly bool
}

// Resp is a response with its body decoded.
type Resp struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any // the JSON object, if the body is one
}

// Data is the response's "data" member as an object.
func (r *Resp) Data() map[string]any { m, _ := r.Body["data"].(map[string]any); return m }

// List is the response's "data" member as a list of objects.
func (r *Resp) List() []map[string]any {
	raw, _ := r.Body["data"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, x := range raw {
		m, _ := x.(map[string]any)
		out = append(out, m)
	}
	return out
}

var (
	docOnce   sync.Once
	docRouter routers.Router
	docErr    error
)

// OpenAPIRouter loads openapi.yaml once and validates it.
func OpenAPIRouter() (routers.Router, error) {
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(httpapi.OpenAPI)
		if err != nil {
			docErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			docErr = err
			return
		}
		// The document's server is an example address; the tests' servers
		// listen elsewhere, so requests are matched by path alone.
		doc.Servers = nil
		// FHIR answers are JSON under their own media type.
		openapi3filter.RegisterBodyDecoder("application/fhir+json", openapi3filter.JSONBodyDecoder)
		// Twilio's webhooks are answered in TwiML, checked as a string.
		openapi3filter.RegisterBodyDecoder("text/xml", openapi3filter.PlainBodyDecoder)
		docRouter, docErr = legacy.NewRouter(doc)
	})
	return docRouter, docErr
}

// Do sends a request to the server and checks the response against the
// OpenAPI document: its status must be documented for the route and its
// body must match the schema.
func (e *Env) Do(r Req) *Resp {
	e.T.Helper()
	return Do(e.T, e.URL, r)
}

// Transport is the tests' own connection pool. Not http.DefaultTransport:
// every httptest.Server.Close closes DefaultTransport's idle connections,
// and a parallel test's request that had just picked one of them fails
// with "CloseIdleConnections called".
var Transport http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()

// Client is http.DefaultClient over Transport.
var Client = &http.Client{Transport: Transport}

// client does not follow redirects: GET /auth's 302 is the answer under test.
var client = &http.Client{Transport: Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Do is Env.Do against any base URL.
func Do(t testing.TB, base string, r Req) *Resp {
	t.Helper()
	u := base + r.Path
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	var body io.Reader
	ctype := ""
	switch {
	case r.Form != nil:
		body, ctype = strings.NewReader(r.Form.Encode()), "application/x-www-form-urlencoded"
	case r.Multipart != nil:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range r.Multipart {
			_ = mw.WriteField(k, v)
		}
		for k, data := range r.Files {
			name := k + ".bin"
			if n, ok := r.FileNames[k]; ok {
				name = n
			}
			fw, _ := mw.CreateFormFile(k, name)
			_, _ = fw.Write(data)
		}
		mw.Close()
		body, ctype = &buf, mw.FormDataContentType()
	case r.JSON != nil:
		b, _ := json.Marshal(r.JSON)
		body, ctype = bytes.NewReader(b), "application/json"
	case r.RawBody != nil:
		body = bytes.NewReader(r.RawBody)
	}
	method := r.Method
	if method == "" {
		method = "GET"
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, r.Path, err)
	}
	defer res.Body.Close()
	if r.StartOnly && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		// A stream that opened: its status is the answer.
		return &Resp{Status: res.StatusCode, Header: res.Header}
	}
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, r.Path, err)
	}
	out := &Resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	if res.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id header", method, r.Path)
	}
	if !r.NoValidate {
		validate(t, req, out)
	}
	return out
}

func validate(t testing.TB, req *http.Request, res *Resp) {
	t.Helper()
	router, err := OpenAPIRouter()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	// The document lists paths without the optional .json suffix.
	vreq := req.Clone(context.Background())
	vreq.URL.Path = strings.TrimSuffix(vreq.URL.Path, ".json")
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		t.Errorf("%s %s: not in openapi.yaml: %v", req.Method, req.URL.Path, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(res.Raw)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s → %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, res.Status, err, res.Raw)
	}
}

package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseParams feeds the parameter parser bodies of every kind it reads
// (JSON, url-encoded, multipart with bracket names) and query strings: it
// must never panic, and what it accepts is text — valid UTF-8 without NUL —
// within the bounds (values, depth). Seeds: testdata/fuzz/FuzzParseParams
// and the f.Add calls.
func FuzzParseParams(f *testing.F) {
	f.Add("application/json", []byte(`{"first_name":"Ada","meta":{"target":{"id":"3"}},"ids":[1,2,3]}`), "limit=5&id[]=1&id[]=2")
	f.Add("application/x-www-form-urlencoded", []byte("meta[target][id]=7&first_name=Ada&tos=1"), "")
	f.Add("multipart/form-data; boundary=XyZ", []byte("--XyZ\r\nContent-Disposition: form-data; name=\"first_name\"\r\n\r\nAda\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\r\n\x89PNG\r\n--XyZ--\r\n"), "")
	f.Add("application/json", []byte(`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`), "")
	f.Add("application/json", []byte("{\"a\":\"\xff\"}"), "q=%00")
	f.Add("text/plain", []byte("anything"), "a=%zz")
	f.Fuzz(func(t *testing.T, ctype string, body []byte, query string) {
		// Built by hand: a query a client sends raw may hold what a
		// request line may not.
		r := (&http.Request{Method: "POST", URL: &url.URL{Path: "/api_v3/me", RawQuery: query}, Header: http.Header{},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}).WithContext(context.Background())
		r.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		p, err := parseParams(r, w, limits{body: 64 << 10, file: 64 << 10})
		if p != nil {
			defer p.RemoveFiles()
		}
		if err != nil {
			return
		}
		check := func(where string, m map[string][]string) {
			n := 0
			for k, vs := range m {
				for _, v := range append([]string{k}, vs...) {
					if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
						t.Fatalf("%s accepted %q", where, v)
					}
				}
				n += len(vs)
			}
			if n > maxParamParts {
				t.Fatalf("%s accepted %d values", where, n)
			}
		}
		check("query", p.query)
		check("body", p.body)
		if p.json != nil {
			if err := checkJSON("", p.json, 1); err != nil {
				t.Fatalf("accepted JSON that fails its own check: %v", err)
			}
		}
		// Every accessor copes with whatever was accepted.
		for _, name := range []string{"first_name", "meta.target.id", "id", "ids", "a", "file"} {
			_ = p.Str(name)
			_ = p.List(name)
			_, _ = p.Int(name, 0)
			_, _ = p.Bool(name)
			var v any
			_, _ = p.JSON(name, &v)
		}
		_, _, _ = p.Paging()
		_ = fingerprint(r, p)
	})
}

// FuzzNormKey: bracket names never panic, and a name written with brackets
// keeps none ("]" alone is a name like any other).
func FuzzNormKey(f *testing.F) {
	for _, s := range []string{"meta[target][id]", "id[]", "a]b[", "[[", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got := normKey(k); strings.Contains(k, "[") && strings.ContainsAny(got, "[]") {
			t.Fatalf("normKey(%q) = %q", k, got)
		}
	})
}

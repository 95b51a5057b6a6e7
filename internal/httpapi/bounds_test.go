package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// TestBounds_BodyLimits: the routes that take a file give the ordinary body
// limit to everything but the file parts, and an oversized body is refused
// with 413 before it is stored (nothing of it is).
func TestBounds_BodyLimits(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	firstName := func() string {
		return dataOf[client.UserProfile](t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token)})).FirstName
	}
	send := func(body io.Reader, ctype string, length int64) *http.Response {
		req, _ := http.NewRequest("POST", e.URL+"/api_v3/me", body)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("X-AccountCode", "alpha")
		req.Header.Set("X-ApiToken", s.pat.Token)
		req.ContentLength = length
		res, err := testenv.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	big := `{"first_name":"` + strings.Repeat("a", 12<<20) + `"}`

	t.Run("12MiBJSONWithLength", func(t *testing.T) {
		if res := send(strings.NewReader(big), "application/json", int64(len(big))); res.StatusCode != 413 {
			t.Fatalf("status %d, want 413", res.StatusCode)
		}
		if got := firstName(); got != "Pat" {
			t.Fatalf("first_name is now %.20q", got)
		}
	})
	t.Run("12MiBJSONChunked", func(t *testing.T) {
		// No Content-Length: the limit stops the read at 1 MiB.
		if res := send(io.MultiReader(strings.NewReader(big)), "application/json", -1); res.StatusCode != 413 {
			t.Fatalf("status %d, want 413", res.StatusCode)
		}
		if got := firstName(); got != "Pat" {
			t.Fatalf("first_name is now %.20q", got)
		}
	})
	t.Run("2MiBTextPartOfMultipart", func(t *testing.T) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("first_name", strings.Repeat("b", 2<<20))
		mw.Close()
		if res := send(&buf, mw.FormDataContentType(), int64(buf.Len())); res.StatusCode != 413 {
			t.Fatalf("status %d, want 413", res.StatusCode)
		}
		if got := firstName(); got != "Pat" {
			t.Fatalf("first_name is now %.20q", got)
		}
	})
	t.Run("FilePartMayBeLarger", func(t *testing.T) {
		// A 3 MiB file part is within the file limit (50 MiB): the upload
		// is judged by its content, not refused for its size.
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files", Header: userHeaders(s.c, s.pat.Token),
			Multipart: map[string]string{"meta[title]": "notes"}, Files: map[string][]byte{"file": bytes.Repeat([]byte("x"), 3<<20)},
			FileNames: map[string]string{"file": "notes.txt"}})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("OrdinaryRoute2MiB", func(t *testing.T) {
		body := `{"content":"` + strings.Repeat("c", 2<<20) + `"}`
		req, _ := http.NewRequest("POST", e.URL+"/api/visits/1/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-ApiToken", s.pat.Token)
		res, err := testenv.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 413 {
			t.Fatalf("status %d, want 413", res.StatusCode)
		}
	})
}

// TestBounds_TextFields: each field at its limit is accepted and one
// character past it refused with a 400 naming the field and the limit; NUL,
// invalid UTF-8, and in names control and bidirectional-override
// characters are refused anywhere.
func TestBounds_TextFields(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	me := func(form map[string]string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token), Multipart: form})
	}
	// room sets one text field of the main room.
	room := func(field, v string) *testenv.Resp {
		body, _ := json.Marshal(map[string]string{field: v})
		return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: json.RawMessage(body)})
	}
	intake := func(reason string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token),
			JSON: map[string]string{"room_code": "main", "reason_for_visit": reason}})
	}
	sso := func(first string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(s.c),
			Multipart: map[string]string{"first_name": first, "last_name": "X", "type": "200", "code": "bounded"}})
	}
	detail := func(res *testenv.Resp) string {
		b := errorOf(t, res)
		if b.Detail != "" {
			return b.Detail
		}
		return b.Message
	}
	cases := []struct {
		name  string
		limit int
		do    func(v string) *testenv.Resp
	}{
		{"first_name", 100, func(v string) *testenv.Resp { return me(map[string]string{"first_name": v}) }},
		{"city", 100, func(v string) *testenv.Resp { return me(map[string]string{"city": v}) }},
		{"street_addr", 255, func(v string) *testenv.Resp { return me(map[string]string{"street_addr": v}) }},
		{"pcp_name", 100, func(v string) *testenv.Resp { return me(map[string]string{"pcp_name": v}) }},
		{"nationality", 100, func(v string) *testenv.Resp { return me(map[string]string{"nationality": v}) }},
		{"first_name", 100, sso},
		{"name", 100, func(v string) *testenv.Resp { return room("name", v) }},
		{"subtitle", 255, func(v string) *testenv.Resp { return room("subtitle", v) }},
		{"description", 4000, func(v string) *testenv.Resp { return room("description", v) }},
		{"reason_for_visit", 4000, intake},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%d", c.name, c.limit), func(t *testing.T) {
			// Multi-byte characters: the limit counts characters, not bytes.
			if res := c.do(strings.Repeat("é", c.limit)); res.Status != 200 {
				t.Fatalf("at the limit: %d %s", res.Status, res.Raw)
			}
			res := c.do(strings.Repeat("é", c.limit+1))
			if res.Status != 400 {
				t.Fatalf("past the limit: %d %.300s", res.Status, res.Raw)
			}
			if want := fmt.Sprintf("%s is longer than %d characters.", c.name, c.limit); !strings.Contains(detail(res), want) {
				t.Fatalf("message %q, want it to say %q", detail(res), want)
			}
		})
	}

	refused := []struct {
		what, value, inJSON, says string
	}{
		{"NUL", "Pat\x00rick", `Pat\u0000rick`, "NUL"},
		{"invalid UTF-8", "Pat\xffrick", "Pat\xffrick", "UTF-8"},
		{"a control character", "Pat\x1brick", `Pat\u001brick`, "control character"},
		{"a line break in a name", "Pat\nrick", `Pat\nrick`, "control character"},
		{"a right-to-left override", "Pat\u202Ekcir", "Pat\u202Ekcir", "bidirectional override"},
	}
	for _, c := range refused {
		t.Run("Refuses "+c.what, func(t *testing.T) {
			for _, res := range []*testenv.Resp{me(map[string]string{"first_name": c.value}), sso(c.value),
				e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: map[string]string{"X-AccountCode": "alpha", "X-ApiToken": s.pat.Token,
					"Content-Type": "application/json"}, RawBody: []byte(`{"first_name":"` + c.inJSON + `"}`), NoValidate: true})} {
				if res.Status != 400 || !strings.Contains(detail(res), c.says) {
					t.Fatalf("%d %.300s, want 400 saying %q", res.Status, res.Raw, c.says)
				}
			}
		})
	}
	t.Run("FreeTextKeepsLinesAndRightToLeftMarks", func(t *testing.T) {
		if res := intake("Since Monday:\n\tcough\u200f and fever"); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("NULInQuery", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(s.c), Query: map[string][]string{"q": {"a\x00b"}}, NoValidate: true})
		if res.Status != 400 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
}

// TestBounds_JSONShape: nesting deeper than 32 levels and arrays longer than
// 1,000 elements are refused before a handler reads them.
func TestBounds_JSONShape(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	post := func(body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: map[string]string{"X-AccountCode": "alpha",
			"X-ApiToken": s.pat.Token, "Content-Type": "application/json"}, RawBody: []byte(body), NoValidate: true})
	}
	deep := `{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`
	if res := post(deep); res.Status != 400 || !strings.Contains(string(res.Raw), "nested deeper than 32") {
		t.Fatalf("deep: %d %s", res.Status, res.Raw)
	}
	long := `{"specialties":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 1001), ",") + `]}`
	if res := post(long); res.Status != 400 || !strings.Contains(string(res.Raw), "more than 1000 elements") {
		t.Fatalf("long array: %d %s", res.Status, res.Raw)
	}
	if res := post(`{"first_name":"Patty"}`); res.Status != 200 {
		t.Fatalf("ordinary: %d %s", res.Status, res.Raw)
	}
}

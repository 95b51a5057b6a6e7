package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestHTTP_ErrorShapes checks the three error bodies of the spec's Errors section.
func TestHTTP_ErrorShapes(t *testing.T) {
	cases := []struct {
		fam    family
		status int
		want   map[string]any
	}{
		{famCode, 403, map[string]any{"code": 403.0, "message": "why"}},
		{famUsers, 400, map[string]any{"code": 404.0, "message": "Page not available.", "detail": "why"}},
		{famUsers, 401, map[string]any{"code": 404.0, "message": "Page not available.", "detail": "why"}},
		{famUsers, 404, map[string]any{"code": 404.0, "message": "why"}},
		{famObject, 401, map[string]any{"error": "Unauthorized", "message": "why", "code": 401.0}},
		{famObject, 400, map[string]any{"error": "Bad Request", "message": "why", "code": 400.0}},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		writeError(rec, c.fam, c.status, "why")
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if rec.Code != c.status || len(got) != len(c.want) {
			t.Fatalf("family %d status %d: %d %v", c.fam, c.status, rec.Code, got)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("family %d status %d: %s = %v, want %v", c.fam, c.status, k, got[k], v)
			}
		}
	}
}

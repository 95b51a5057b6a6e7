package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestHTTP_ErrorShapes checks the three error bodies of the spec's Errors section.
func TestHTTP_ErrorShapes(t *testing.T) {
	// Each body is compared whole, member for member: a member added or
	// dropped is a change of the contract.
	cases := []struct {
		fam    family
		status int
		want   string
	}{
		{famCode, 403, `{"code":403,"message":"why"}`},
		{famUsers, 400, `{"code":404,"detail":"why","message":"Page not available."}`},
		{famUsers, 401, `{"code":404,"detail":"why","message":"Page not available."}`},
		{famUsers, 404, `{"code":404,"message":"why"}`},
		{famObject, 401, `{"code":401,"error":"Unauthorized","message":"why"}`},
		{famObject, 400, `{"code":400,"error":"Bad Request","message":"why"}`},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		writeError(rec, c.fam, c.status, "why")
		if rec.Code != c.status {
			t.Errorf("family %d status %d: answered %d", c.fam, c.status, rec.Code)
		}
		if got := canonicalJSON(t, rec.Body.Bytes()); got != c.want {
			t.Errorf("family %d status %d:\n got %s\nwant %s", c.fam, c.status, got, c.want)
		}
	}
}

// canonicalJSON is a JSON document with its object members in name order,
// so two documents compare as text whatever order they were written in.
func canonicalJSON(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	out, _ := json.Marshal(v) // maps are written in key order
	return string(out)
}

package httpapi_test

import (
	"testing"

	"teleclinic/internal/testenv"
)

// TestCacheControl: answers with patient data are never cached (no-store);
// what a handler marks otherwise, such as the public reference lists, keeps
// its own header.
func TestCacheControl(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	for _, path := range []string{"/api_v3/me", "/api_v3/users/" + s.pat.UserID + "/emr", "/api_v3/visits"} {
		res := e.Do(testenv.Req{Path: path, Header: userHeaders(s.c, s.pat.Token)})
		if res.Status != 200 || res.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d, Cache-Control %q", path, res.Status, res.Header.Get("Cache-Control"))
		}
	}
	if res := e.Do(testenv.Req{Path: "/api_v3/users/-", Header: map[string]string{"X-ApiToken": "nope"}}); res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("an error: Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	res := e.Do(testenv.Req{Path: "/api_v3/insurances/list/carriers", Header: userHeaders(s.c, s.pat.Token)})
	if res.Status != 200 || res.Header.Get("Cache-Control") != "private, max-age=3600" {
		t.Fatalf("reference list: %d, Cache-Control %q", res.Status, res.Header.Get("Cache-Control"))
	}
}

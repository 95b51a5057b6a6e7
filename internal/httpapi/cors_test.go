package httpapi_test

import (
	"net/http"
	"testing"

	"teleclinic/internal/testenv"
)

// TestCORS: with --cors-origins, a browser app on a listed origin gets its
// preflight answered (methods, the API's headers) and its answers marked
// for it; another origin gets nothing that lets it read; without origins a
// preflight is refused as before.
func TestCORS(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{CORSOrigins: []string{"https://app.example.com"}})
	s := newClinicSetup(t, e, "alpha")
	preflight := func(base, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, base+"/api_v3/intakes", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,idempotency-key,x-apitoken") // as browsers send it
		res, err := testenv.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := preflight(e.URL, "https://app.example.com")
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		res.Header.Get("Access-Control-Allow-Methods") != "POST" || res.Header.Get("Access-Control-Max-Age") != "600" {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	if h := res.Header.Get("Access-Control-Allow-Headers"); h == "" {
		t.Fatalf("no allowed headers: %v", res.Header)
	}
	if res := preflight(e.URL, "https://evil.example.net"); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin: %v", res.Header)
	}
	got := e.Do(testenv.Req{Path: "/api_v3/me", Header: map[string]string{"X-ApiToken": s.pat.Token, "Origin": "https://app.example.com"}})
	if got.Status != 200 || got.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || got.Header.Get("Access-Control-Expose-Headers") == "" {
		t.Fatalf("a cross-origin read: %d %v", got.Status, got.Header)
	}
	plain := testenv.New(t)
	if res := preflight(plain.URL, "https://app.example.com"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("without origins: %d %v", res.StatusCode, res.Header)
	}
}

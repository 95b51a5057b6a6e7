package httpapi_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"teleclinic/internal/httpapi"
	"teleclinic/internal/testenv"
)

// TestOpenAPI_MatchesRoutes fails when a route exists in the router but not
// in openapi.yaml, or the reverse.
func TestOpenAPI_MatchesRoutes(t *testing.T) {
	t.Parallel()
	if _, err := testenv.OpenAPIRouter(); err != nil {
		t.Fatalf("openapi.yaml does not load or validate: %v", err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inDoc[method+" "+path] = true
		}
	}
	e := testenv.New(t)
	inRouter := map[string]bool{}
	for _, r := range e.API().Routes() {
		inRouter[r.Method+" "+r.Path] = true
	}
	var missing, extra []string
	for k := range inRouter {
		if !inDoc[k] {
			missing = append(missing, k)
		}
	}
	for k := range inDoc {
		if !inRouter[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.yaml:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("openapi.yaml documents routes the server lacks:\n  %s", strings.Join(extra, "\n  "))
	}
	if len(inRouter) < 20 {
		t.Errorf("only %d routes registered", len(inRouter))
	}
}

// TestOpenAPI_Served checks GET /openapi.yaml serves the embedded document.
func TestOpenAPI_Served(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	res := e.Do(testenv.Req{Path: "/openapi.yaml"})
	if res.Status != 200 || !strings.HasPrefix(string(res.Raw), "openapi: 3.0.3") {
		t.Fatalf("GET /openapi.yaml: %d %.40s", res.Status, res.Raw)
	}
}

package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"teleclinic/internal/testenv"
)

func TestERx_Pharmacies(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	path := "/api_v3/users/-/erx/pharmacies"
	save := func(body map[string]any) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: path, Header: h, JSON: body})
	}
	extra := map[string]any{"NCPDPID": "1234567", "StoreName": "Corner Pharmacy", "Hours": []any{"9-5"}, "Score": 0.87}
	res := save(map[string]any{"name": "Corner Pharmacy", "code": "1234567", "city": "Springfield", "lat": 39.78, "long": -89.65,
		"type": "surescripts", "extra": extra, "is_default": true})
	if res.Status != 200 || res.Body["data"] != true {
		t.Fatalf("%s", res.Raw)
	}
	// A form client: numbers as text, extra as JSON text.
	if res := e.Do(testenv.Req{Method: "POST", Path: path, Header: h, Form: q("name", "Main St", "code", "7654321", "distance", "1.5",
		"extra", `{"id":7654321}`, "is_default", "1")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	res = e.Do(testenv.Req{Path: path, Header: h})
	list := res.List()
	if res.Status != 200 || len(list) != 2 || list[0]["code"] != "7654321" || list[0]["is_default"] != true || list[1]["is_default"] != false ||
		list[0]["distance"].(float64) != 1.5 {
		t.Fatalf("one default, the latest: %s", res.Raw)
	}
	ex := list[1]["extra"].(map[string]any)
	if list[1]["lat"].(float64) != 39.78 || ex["StoreName"] != "Corner Pharmacy" || ex["Score"].(float64) != 0.87 || ex["Hours"].([]any)[0] != "9-5" {
		t.Fatalf("extra not kept: %v", list[1])
	}
	// Saved without a search result, it reads back as an empty one (not null).
	if res := save(map[string]any{"name": "Plain", "code": "1111111"}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	for _, p := range e.Do(testenv.Req{Path: path, Header: h}).List() {
		if _, isObject := p["extra"].(map[string]any); p["code"] == "1111111" && !isObject {
			t.Fatalf("extra without a search result: %v", p)
		}
	}
	if res := e.Do(testenv.Req{Method: "DELETE", Path: path + "/1111111", Header: h}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	wantErr(t, save(map[string]any{"name": "No code"}), 400, 400)
	wantErr(t, save(map[string]any{"code": "x"}), 400, 400)
	wantErr(t, save(map[string]any{"name": "x", "code": "y", "lat": 200}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: h, Form: q("name", "x", "code", "y", "extra", "{not json")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/erx/pharmacies", Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)

	if res := e.Do(testenv.Req{Method: "DELETE", Path: path + "/7654321", Header: h}); res.Status != 200 || res.Body["data"] != true {
		t.Fatalf("%s", res.Raw)
	}
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: path + "/7654321", Header: h}), 404, 404)
	if got := e.Do(testenv.Req{Path: path, Header: h}).List(); len(got) != 1 {
		t.Fatalf("%v", got)
	}
	// Concurrent saves of different defaults leave exactly one default.
	got := raceStatuses(t, []string{e.URL}, 8, testenv.Req{Method: "POST", Path: path, Header: h, Form: q("name", "Race", "code", "R1", "is_default", "1")})
	if got[200]+got[409] != 8 {
		t.Fatalf("%v", got)
	}
	var defaults int
	_ = e.Store.DB().QueryRow("SELECT COUNT(*) FROM pharmacies WHERE is_default = 1").Scan(&defaults)
	if defaults != 1 {
		t.Fatalf("%d defaults", defaults)
	}
}

func TestERx_Prescriptions(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	path := "/api_v3/users/" + s.pat.UserID + "/erx/prescriptions"
	doc := userHeaders(s.c, s.doc.Token)
	body := map[string]any{"drug": "Amoxicillin 500 mg capsule", "directions": "1 capsule by mouth 3 times a day for 10 days", "qty": 30, "ndc": "0093-3109-01"}

	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: body}), 403, 403)
	visit := s.withVisit(t)
	body["visit_id"] = visit
	res := e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: body})
	rx := res.Data()
	if res.Status != 200 || rx["Status"] != "Current" || rx["PrescriberName"] != "Dana Doc" || rx["Qty"].(float64) != 30 || rx["VisitID"] != visit {
		t.Fatalf("%s", res.Raw)
	}
	for _, bad := range []map[string]any{
		{"directions": "x", "qty": 1},
		{"drug": "x", "qty": 1},
		{"drug": "x", "directions": "x", "qty": 0},
		{"drug": "x", "directions": "x", "qty": 1, "ndc": "12-34"},
		{"drug": "x", "directions": "x", "qty": 1, "refills": 12},
		{"drug": "x", "directions": "x", "qty": 1, "pharmacy_code": "nowhere"},
	} {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: bad}), 400, 400)
	}
	// Only providers with a visit prescribe; not the patient, not the admin.
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/erx/prescriptions", Header: userHeaders(s.c, s.pat.Token), JSON: body}), 403, 403)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: adminHeaders(s.c), JSON: body}), 403, 403)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: userHeaders(s.c, s.other.Token), JSON: body}), 403, 403)

	list := func(h map[string]string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Path: path, Header: h, Query: q(kv...)})
	}
	if got := list(userHeaders(s.c, s.pat.Token)).List(); len(got) != 1 || got[0]["Drug"] != "Amoxicillin 500 mg capsule" {
		t.Fatalf("%v", got)
	}
	res = e.Do(testenv.Req{Method: "POST", Path: path + "/" + rx["ID"].(string) + "/discontinue", Header: doc})
	if res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/" + rx["ID"].(string) + "/discontinue", Header: doc}), 409, 409)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/999999/discontinue", Header: doc}), 404, 404)
	if got := list(userHeaders(s.c, s.pat.Token)).List(); len(got) != 0 {
		t.Fatalf("current after discontinuing: %v", got)
	}
	if got := list(userHeaders(s.c, s.pat.Token), "status", "Discontinued").List(); len(got) != 1 || got[0]["Status"] != "Discontinued" {
		t.Fatalf("%v", got)
	}
	if got := list(adminHeaders(s.c), "status", "All").List(); len(got) != 1 {
		t.Fatalf("%v", got)
	}
	wantErr(t, list(userHeaders(s.c, s.pat2.Token)), 404, 404)
	wantErr(t, list(userHeaders(s.c, s.other.Token)), 403, 403)
	wantErr(t, list(userHeaders(s.c, s.pat.Token), "status", "Pending"), 400, 400)

	// Pages by prescription (before, limit, Link rel=next): each once,
	// newest first, the status kept across the pages.
	var want []string
	for i := range 7 {
		body["drug"] = fmt.Sprintf("Drug %d", i)
		res := e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: body})
		if res.Status != 200 {
			t.Fatalf("%s", res.Raw)
		}
		want = append([]string{res.Data()["ID"].(string)}, want...)
	}
	for _, limit := range []int{1, 3, 7} {
		rxs, _ := pageWalk{path: path, query: q("limit", fmt.Sprint(limit)), header: userHeaders(s.c, s.pat.Token), cursor: "before", idKey: "ID", limit: limit}.walk(t, e)
		if got := idsOf(rxs, "ID"); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%d a page: %v, want %v", limit, got, want)
		}
	}
	wantErr(t, list(userHeaders(s.c, s.pat.Token), "before", "-1"), 400, 400)
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

func TestERx_Pharmacies(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	path := "/api_v3/users/-/erx/pharmacies"
	save := func(body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: path, Header: h, JSON: js(body)})
	}
	const extra = `{"NCPDPID": "1234567", "StoreName": "Corner Pharmacy", "Hours": ["9-5"], "Score": 0.87}`
	if saved := dataOf[bool](t, save(`{"name": "Corner Pharmacy", "code": "1234567", "city": "Springfield", "lat": 39.78, "long": -89.65,
		"type": "surescripts", "is_default": true, "extra": `+extra+`}`)); !saved {
		t.Fatal("saved: false")
	}
	// A form client: numbers as text, extra as JSON text.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: h, Form: q("name", "Main St", "code", "7654321", "distance", "1.5",
		"extra", `{"id":7654321}`, "is_default", "1")}))
	list := dataOf[[]client.Pharmacy](t, e.Do(testenv.Req{Path: path, Header: h}))
	if len(list) != 2 || list[0].Code != "7654321" || !list[0].IsDefault || list[1].IsDefault || list[0].Distance == nil || *list[0].Distance != 1.5 {
		t.Fatalf("one default, the latest: %+v", list)
	}
	// The search result is kept as it was sent.
	var wantExtra any
	if err := json.Unmarshal([]byte(extra), &wantExtra); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantExtra, list[1].Extra); diff != "" || list[1].Lat == nil || *list[1].Lat != 39.78 {
		t.Fatalf("extra not kept (-sent +read):\n%s", diff)
	}
	// Saved without a search result, it reads back as an empty one (not null).
	mustOK(t, save(`{"name": "Plain", "code": "1111111"}`))
	for _, p := range dataOf[[]struct {
		Code  string          `json:"code"`
		Extra json.RawMessage `json:"extra"`
	}](t, e.Do(testenv.Req{Path: path, Header: h})) {
		if p.Code == "1111111" && string(p.Extra) != "{}" {
			t.Fatalf("extra without a search result: %s", p.Extra)
		}
	}
	mustOK(t, e.Do(testenv.Req{Method: "DELETE", Path: path + "/1111111", Header: h}))
	for _, bad := range []string{`{"name": "No code"}`, `{"code": "x"}`, `{"name": "x", "code": "y", "lat": 200}`} {
		wantErr(t, save(bad), 400, 400)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: h, Form: q("name", "x", "code", "y", "extra", "{not json")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/erx/pharmacies", Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)

	if deleted := dataOf[bool](t, e.Do(testenv.Req{Method: "DELETE", Path: path + "/7654321", Header: h})); !deleted {
		t.Fatal("deleted: false")
	}
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: path + "/7654321", Header: h}), 404, 404)
	if got := dataOf[[]client.Pharmacy](t, e.Do(testenv.Req{Path: path, Header: h})); len(got) != 1 {
		t.Fatalf("%+v", got)
	}
	// Concurrent saves of different defaults leave exactly one default.
	got := raceStatuses(t, []string{e.URL}, 8, testenv.Req{Method: "POST", Path: path, Header: h, Form: q("name", "Race", "code", "R1", "is_default", "1")})
	if got[200]+got[409] != 8 {
		t.Fatalf("%v", got)
	}
	var defaults int
	if err := e.Store.DB().QueryRow("SELECT COUNT(*) FROM pharmacies WHERE is_default = 1").Scan(&defaults); err != nil || defaults != 1 {
		t.Fatalf("%d defaults", defaults)
	}
}

// rxBody is a prescription as a provider's client writes it.
type rxBody struct {
	Drug       string `json:"drug"`
	Directions string `json:"directions"`
	Qty        int    `json:"qty"`
	NDC        string `json:"ndc,omitempty"`
	VisitID    string `json:"visit_id,omitempty"`
}

func TestERx_Prescriptions(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	path := "/api_v3/users/" + s.pat.UserID + "/erx/prescriptions"
	doc := userHeaders(s.c, s.doc.Token)
	body := rxBody{Drug: "Amoxicillin 500 mg capsule", Directions: "1 capsule by mouth 3 times a day for 10 days", Qty: 30, NDC: "0093-3109-01"}

	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: body}), 403, 403)
	visit := s.withVisit(t)
	body.VisitID = visit
	rx := dataOf[client.Prescription](t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: body}))
	if rx.Status != "Current" || rx.PrescriberName != "Dana Doc" || rx.Qty != 30 || rx.VisitID == nil || *rx.VisitID != visit {
		t.Fatalf("%+v", rx)
	}
	for _, bad := range []string{
		`{"directions": "x", "qty": 1}`,
		`{"drug": "x", "qty": 1}`,
		`{"drug": "x", "directions": "x", "qty": 0}`,
		`{"drug": "x", "directions": "x", "qty": 1, "ndc": "12-34"}`,
		`{"drug": "x", "directions": "x", "qty": 1, "refills": 12}`,
		`{"drug": "x", "directions": "x", "qty": 1, "pharmacy_code": "nowhere"}`,
	} {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: js(bad)}), 400, 400)
	}
	// Only providers with a visit prescribe; not the patient, not the admin.
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/erx/prescriptions", Header: userHeaders(s.c, s.pat.Token), JSON: body}), 403, 403)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: adminHeaders(s.c), JSON: body}), 403, 403)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path, Header: userHeaders(s.c, s.other.Token), JSON: body}), 403, 403)

	list := func(h map[string]string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Path: path, Header: h, Query: q(kv...)})
	}
	rxs := func(h map[string]string, kv ...string) []client.Prescription {
		t.Helper()
		return dataOf[[]client.Prescription](t, list(h, kv...))
	}
	if got := rxs(userHeaders(s.c, s.pat.Token)); len(got) != 1 || got[0].Drug != "Amoxicillin 500 mg capsule" {
		t.Fatalf("%+v", got)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: path + "/" + rx.ID + "/discontinue", Header: doc}))
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/" + rx.ID + "/discontinue", Header: doc}), 409, 409)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/999999/discontinue", Header: doc}), 404, 404)
	if got := rxs(userHeaders(s.c, s.pat.Token)); len(got) != 0 {
		t.Fatalf("current after discontinuing: %+v", got)
	}
	if got := rxs(userHeaders(s.c, s.pat.Token), "status", "Discontinued"); len(got) != 1 || got[0].Status != "Discontinued" {
		t.Fatalf("%+v", got)
	}
	if got := rxs(adminHeaders(s.c), "status", "All"); len(got) != 1 {
		t.Fatalf("%+v", got)
	}
	wantErr(t, list(userHeaders(s.c, s.pat2.Token)), 404, 404)
	wantErr(t, list(userHeaders(s.c, s.other.Token)), 403, 403)
	wantErr(t, list(userHeaders(s.c, s.pat.Token), "status", "Pending"), 400, 400)

	// Pages by prescription (before, limit, Link rel=next): each once,
	// newest first, the status kept across the pages.
	var want []string
	for i := range 7 {
		body.Drug = fmt.Sprintf("Drug %d", i)
		want = append([]string{dataOf[client.Prescription](t, e.Do(testenv.Req{Method: "POST", Path: path, Header: doc, JSON: body})).ID}, want...)
	}
	for _, limit := range []int{1, 3, 7} {
		rxs, _ := pageWalk{path: path, query: q("limit", fmt.Sprint(limit)), header: userHeaders(s.c, s.pat.Token), cursor: "before", idKey: "ID", limit: limit}.walk(t, e)
		if got := idsOf(rxs, "ID"); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%d a page: %v, want %v", limit, got, want)
		}
	}
	wantErr(t, list(userHeaders(s.c, s.pat.Token), "before", "-1"), 400, 400)
}

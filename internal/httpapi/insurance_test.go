package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

func TestInsurance_Cards(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	path := "/api_v3/users/" + s.pat.UserID + "/insurances"

	res := e.Do(testenv.Req{Method: "POST", Path: path + "/primary", Header: h, Form: q("insurer_code", "aetna", "subscriber_num", "W123",
		"guarantor_dob", "1980-02-03", "guarantor_gender", "female", "consent", "1")})
	d := res.Data()
	if res.Status != 200 || res.Body["version"] != "2.0" || d["card_type"] != "primary" || d["subscriber_number"] != "W123" ||
		d["guarantor_gender"].(float64) != 2 || d["consent"] != true || d["group_number"] != "" {
		t.Fatalf("%s", res.Raw)
	}
	// An update changes only what it sends.
	res = e.Do(testenv.Req{Method: "POST", Path: path + "/primary", Header: h, JSON: map[string]any{"group_number": "G7"}})
	if res.Data()["group_number"] != "G7" || res.Data()["subscriber_number"] != "W123" {
		t.Fatalf("%s", res.Raw)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/primary", Header: h, Form: q("guarantor_dob", "03/02/1980")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/tertiary", Header: h, Form: q("group_number", "x")}), 404, 404)

	// Import: the secondary is new, the primary is overwritten whole.
	res = e.Do(testenv.Req{Method: "POST", Path: path + "/import", Header: h, JSON: map[string]any{"insurances": []any{
		map[string]any{"card_type": "primary", "insurer_code": "cigna", "subscriber_number": "C1"},
		map[string]any{"card_type": "secondary", "insurer_code": "uhc", "subscriber_num": "U2"},
	}}})
	if res.Status != 200 || len(res.List()) != 2 || res.Body["version"] != "2.0" {
		t.Fatalf("%s", res.Raw)
	}
	for _, c := range res.List() {
		if c["card_type"] == "primary" && (c["insurer_code"] != "cigna" || c["group_number"] != "") {
			t.Fatalf("primary not overwritten: %v", c)
		}
		if c["card_type"] == "secondary" && c["subscriber_number"] != "U2" {
			t.Fatalf("%v", c)
		}
	}
	for _, bad := range []any{
		[]any{},
		[]any{map[string]any{"card_type": "primary"}, map[string]any{"card_type": "primary"}},
		[]any{map[string]any{"card_type": "primary"}, map[string]any{"card_type": "secondary"}, map[string]any{"card_type": "secondary"}},
		[]any{map[string]any{"card_type": "other"}},
		[]any{map[string]any{"card_type": "primary", "insurer_code": "x"}, map[string]any{"card_type": "secondary", "guarantor_gender": "7"}},
	} {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/import", Header: h, JSON: map[string]any{"insurances": bad}}), 400, 400)
	}
	// The failed imports wrote nothing.
	if got := e.Do(testenv.Req{Path: path + "/primary", Header: h}).Data(); got["insurer_code"] != "cigna" {
		t.Fatalf("%v", got)
	}

	// Access: the patient and the clinic admin only (spec: Insurance), so
	// not even a provider with a visit.
	wantErr(t, e.Do(testenv.Req{Path: path, Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)
	wantErr(t, e.Do(testenv.Req{Path: path, Header: userHeaders(s.c, s.doc.Token)}), 403, 403)
	s.withVisit(t)
	wantErr(t, e.Do(testenv.Req{Path: path, Header: userHeaders(s.c, s.doc.Token)}), 403, 403)
	wantErr(t, e.Do(testenv.Req{Path: path + "/primary", Header: userHeaders(s.c, s.doc.Token)}), 403, 403)
	if res := e.Do(testenv.Req{Path: path, Header: adminHeaders(s.c)}); res.Status != 200 {
		t.Fatal(res.Status)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/primary", Header: userHeaders(s.c, s.doc.Token), Form: q("group_number", "x")}), 403, 403)
	if res := e.Do(testenv.Req{Method: "POST", Path: path + "/secondary", Header: adminHeaders(s.c), Form: q("group_number", "ADM")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	beta := e.NewClinic("beta", true)
	wantErr(t, e.Do(testenv.Req{Path: path, Header: adminHeaders(beta)}), 404, 404)

	// Delete: 204, no body; again 404.
	res = e.Do(testenv.Req{Method: "DELETE", Path: path + "/secondary", Header: h})
	if res.Status != 204 || len(res.Raw) != 0 {
		t.Fatalf("%d %q", res.Status, res.Raw)
	}
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: path + "/secondary", Header: h}), 404, 404)
	if got := e.Do(testenv.Req{Path: "/api_v3/users/-/insurances", Header: h}).List(); len(got) != 1 {
		t.Fatalf("%v", got)
	}
}

func TestInsurance_Eligibility(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Workers: true})
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	path := "/api_v3/users/" + s.pat.UserID + "/insurances/primary/eligibility"

	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h}), 404, 404)
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary", Header: h, Form: q("insurer_code", "aetna", "subscriber_number", "W100")}))
	wantErr(t, e.Do(testenv.Req{Path: path, Header: h}), 404, 404)

	res := e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h})
	if res.Status != 200 || res.Data()["status"] != "pending" || res.Data()["job_id"] == "" {
		t.Fatalf("%s", res.Raw)
	}
	job := res.Data()["job_id"]
	var got map[string]any
	waitFor(t, "the check's outcome", func() bool {
		got = e.Do(testenv.Req{Path: path, Header: h}).Data()
		return got["status"] != "pending"
	})
	det := got["details"].(map[string]any)
	if got["job_id"] != job || got["status"] != "active" || det["checker"] != "sandbox" || det["member_id"] != "W100" || det["payer"] != "AETNA" || got["finished"] == nil {
		t.Fatalf("%v", got)
	}

	// Within the window, finished or not: 429 saying when the last one started.
	res = e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h})
	wantErr(t, res, 429, 429)
	if msg := res.Body["message"].(string); !strings.Contains(msg, "2026-03-02T09:00:00Z") || res.Header.Get("Retry-After") != "60" {
		t.Fatalf("%q %q", msg, res.Header.Get("Retry-After"))
	}
	e.Clock.Advance(30 * time.Second)
	if res := e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h}); res.Status != 429 || res.Header.Get("Retry-After") != "30" {
		t.Fatalf("%d %v", res.Status, res.Header)
	}
	e.Clock.Advance(31 * time.Second)

	// The sandbox's outcomes follow the subscriber number.
	for member, want := range map[string]string{"W107": "inactive", "W108": "not_found", "W109": "error"} {
		mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary", Header: h, Form: q("subscriber_number", member)}))
		if res := e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h}); res.Status != 200 {
			t.Fatalf("%s", res.Raw)
		}
		waitFor(t, member, func() bool { got = e.Do(testenv.Req{Path: path, Header: h}).Data(); return got["status"] != "pending" })
		if got["status"] != want {
			t.Fatalf("%s: %v", member, got)
		}
		e.Clock.Advance(61 * time.Second)
	}
	// Others may not check; the admin may.
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: userHeaders(s.c, s.doc.Token)}), 403, 403)
	if res := e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: adminHeaders(s.c)}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
}

// TestEligibility_OneJobUnderConcurrency: 50 simultaneous checks of one
// card, spread over two server processes on one database, start exactly
// one job; the rest answer 429.
func TestEligibility_OneJobUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	other := testenv.New(t, testenv.Options{DSN: e.DSN, ServerKey: e.Key, Clock: e.Clock, BlobDir: e.Blobs})
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary", Header: h, Form: q("insurer_code", "aetna", "subscriber_number", "W1")}))
	got := raceStatuses(t, []string{e.URL, other.URL}, 25, testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary/eligibility/check", Header: h})
	if got[200] != 1 || got[429] != 49 {
		t.Fatalf("%v, want one 200 and 49 429", got)
	}
	var jobs, items int
	_ = e.Store.DB().QueryRow("SELECT COUNT(*) FROM eligibility_jobs").Scan(&jobs)
	_ = e.Store.DB().QueryRow("SELECT COUNT(*) FROM outbox WHERE topic = 'eligibility'").Scan(&items)
	if jobs != 1 || items != 1 {
		t.Fatalf("%d jobs, %d outbox items", jobs, items)
	}
}

func TestInsurance_ReferenceListsClaimsAndCodes(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.doc.Token)
	list := func(name string, kv ...string) []map[string]any {
		t.Helper()
		res := e.Do(testenv.Req{Path: "/api_v3/insurances/list/" + name, Header: h, Query: q(kv...)})
		if res.Status != 200 {
			t.Fatalf("%s: %d %s", name, res.Status, res.Raw)
		}
		return res.List()
	}
	dxs := list("dxs")
	if len(dxs) < 150 || dxs[0]["code"] == "" || dxs[0]["ehr_vendor"].(map[string]any)["code"] == "" {
		t.Fatalf("%d %v", len(dxs), dxs[0])
	}
	if got := list("dxs", "q", "E11.9"); len(got) != 1 || got[0]["code"] != "E11.9" || got[0]["ehr_vendor"].(map[string]any)["code"] != "E119" {
		t.Fatalf("%v", got)
	}
	if got := list("dxs", "q", "hypertension"); len(got) == 0 {
		t.Fatal("no hypertension")
	}
	if got := list("procedures", "limit", "3"); len(got) != 3 || got[0]["id"] == "" || got[0]["text"] == "" || got[0]["description"] == "" {
		t.Fatalf("%v", got)
	}
	if got := list("billing_modifiers", "q", "95"); len(got) == 0 || got[0]["id"] != "95" {
		t.Fatalf("%v", got)
	}
	if got := list("carriers", "q", "aetna"); len(got) != 1 || got[0]["ehr_vendor"].(map[string]any)["cpid"] != "60054" {
		t.Fatalf("%v", got)
	}
	if got := list("insurers"); len(got) < 5 {
		t.Fatalf("%v", got)
	}
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/insurances/list/dxs", Header: acctHeaders(s.c)}), 401, 401)

	visit := s.withVisit(t)
	codes := "/api_v3/visits/" + visit + "/codes"
	res := e.Do(testenv.Req{Method: "POST", Path: codes, Header: h, JSON: map[string]any{"diagnoses": []any{"e119", "I10"},
		"procedures": []any{map[string]any{"code": "g2012", "modifiers": []any{"95"}}}}})
	if res.Status != 200 || res.Data()["diagnoses"].([]any)[0] != "E11.9" || res.Data()["procedures"].([]any)[0].(map[string]any)["code"] != "G2012" {
		t.Fatalf("%s", res.Raw)
	}
	for _, bad := range []map[string]any{
		{"diagnoses": []any{"X99.999"}},
		{"procedures": []any{map[string]any{"code": "99213"}}},
		{"procedures": []any{map[string]any{"code": "G2012", "modifiers": []any{"ZZ"}}}},
		{},
	} {
		res := e.Do(testenv.Req{Method: "POST", Path: codes, Header: h, JSON: bad})
		if res.Status != 400 || res.Body["error"] == nil {
			t.Fatalf("%v: %d %s", bad, res.Status, res.Raw)
		}
	}
	// The patient reads but does not code; another provider is not the visit's.
	if res := e.Do(testenv.Req{Path: codes, Header: userHeaders(s.c, s.pat.Token)}); res.Status != 200 || len(res.Data()["diagnoses"].([]any)) != 2 {
		t.Fatalf("%s", res.Raw)
	}
	if res := e.Do(testenv.Req{Method: "POST", Path: codes, Header: userHeaders(s.c, s.pat.Token), Form: q("diagnoses", "I10")}); res.Status != 403 {
		t.Fatalf("%d", res.Status)
	}
	if res := e.Do(testenv.Req{Method: "POST", Path: codes, Header: userHeaders(s.c, s.other.Token), Form: q("diagnoses", "I10")}); res.Status != 404 {
		t.Fatalf("%d", res.Status)
	}

	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary", Header: userHeaders(s.c, s.pat.Token), Form: q("insurer_code", "aetna", "subscriber_number", "W1")}))
	report := func(h map[string]string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/reports/claims", Header: h, Query: q(kv...)})
	}
	res = report(adminHeaders(s.c), "from_date", "2026-03-02", "to_date", "2026-03-02")
	if res.Status != 200 || len(res.List()) != 1 {
		t.Fatalf("%s", res.Raw)
	}
	cl := res.List()[0]
	if cl["visit_id"] != visit || cl["date"] != "2026-03-02" || cl["patient"].(map[string]any)["id"] != s.pat.UserID ||
		cl["provider"].(map[string]any)["id"] != s.doc.UserID || cl["diagnoses"].([]any)[1].(map[string]any)["description"] != "Essential (primary) hypertension" ||
		cl["procedures"].([]any)[0].(map[string]any)["modifiers"].([]any)[0] != "95" ||
		cl["insurance"].(map[string]any)["primary"].(map[string]any)["subscriber_number"] != "W1" {
		t.Fatalf("%v", cl)
	}
	if got := report(h, "from_date", "2026-03-02", "to_date", "2026-03-02").List(); len(got) != 1 {
		t.Fatalf("the provider's own: %v", got)
	}
	if got := report(userHeaders(s.c, s.other.Token), "from_date", "2026-03-02", "to_date", "2026-03-02").List(); len(got) != 0 {
		t.Fatalf("another provider's: %v", got)
	}
	if got := report(adminHeaders(s.c), "from_date", "2026-03-03", "to_date", "2026-03-31").List(); len(got) != 0 {
		t.Fatalf("out of range: %v", got)
	}
	wantErr(t, report(userHeaders(s.c, s.pat.Token), "from_date", "2026-03-01", "to_date", "2026-03-02"), 403, 403)
	wantErr(t, report(adminHeaders(s.c), "from_date", "2026-03-05", "to_date", "2026-03-01"), 400, 400)
	wantErr(t, report(adminHeaders(s.c), "from_date", "March"), 400, 400)
}

// GET /reports/claims pages by visit (after, limit, Link rel=next): a range
// of more visits than a page is read whole, each visit once in the report's
// order, though they all took place at one instant; and a page reads its
// patients, providers and cards with as many statements for 20 visits as
// for 1.
func TestClaims_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	for _, p := range []*session{s.pat, s.pat2} {
		if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/insurances/primary", Header: userHeaders(s.c, p.Token), Form: q("insurer_code", "aetna", "subscriber_number", "W-"+p.UserID)}); res.Status != 200 {
			t.Fatalf("%s", res.Raw)
		}
	}
	acct, room := roomOf(t, e, s.doc.UserID, "main")
	byDoc := func(int) (string, int64, string, int) { return s.doc.UserID, room, "appointment", 40 }
	ids := append(insertVisits(t, e, acct, s.pat.UserID, 15, byDoc, s.doc.UserID), insertVisits(t, e, acct, s.pat2.UserID, 15, byDoc, s.doc.UserID)...)
	day := e.Clock.Now().UTC().Format("2006-01-02")
	walk := func(t *testing.T, h map[string]string, limit int) []string {
		t.Helper()
		claims, _ := pageWalk{path: "/api_v3/reports/claims", query: q("from_date", day, "to_date", day, "limit", fmt.Sprint(limit)), header: h,
			cursor: "after", idKey: "visit_id", limit: limit}.walk(t, e)
		for _, cl := range claims {
			patient := cl["patient"].(map[string]any)["id"].(string)
			if cl["insurance"].(map[string]any)["primary"].(map[string]any)["subscriber_number"] != "W-"+patient || cl["provider"].(map[string]any)["id"] != s.doc.UserID {
				t.Fatalf("%v", cl)
			}
		}
		return idsOf(claims, "visit_id")
	}
	var want []string
	for _, id := range ids {
		want = append(want, fmt.Sprint(id))
	}
	for _, limit := range []int{1, 4, 7, 30} {
		if got := walk(t, adminHeaders(s.c), limit); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%d a page: %v, want %v", limit, got, want)
		}
	}
	if got := walk(t, userHeaders(s.c, s.other.Token), 4); len(got) != 0 {
		t.Fatalf("another provider's report: %v", got)
	}
	t.Run("Statements", func(t *testing.T) {
		count := func(limit string) int64 {
			t.Helper()
			if res := e.Do(testenv.Req{Path: "/api_v3/reports/claims", Query: q("from_date", day, "to_date", day, "limit", limit), Header: adminHeaders(s.c)}); res.Status != 200 {
				t.Fatalf("%s", res.Raw)
			}
			return e.Statements()
		}
		count("1") // warm the caches both reads use
		one, twenty := count("1"), count("20")
		if one != twenty || one == 0 {
			t.Fatalf("%d statements for a page of 1 visit, %d for 20 (two patients)", one, twenty)
		}
		t.Logf("%d statements for a page of 1 visit or 20", one)
	})
	t.Run("BadAfter", func(t *testing.T) {
		b := newClinicSetup(t, e, "beta")
		theirs := b.withVisit(t)
		for _, after := range []string{theirs, "999999", "-1", "soon"} {
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/reports/claims", Query: q("from_date", day, "to_date", day, "after", after), Header: adminHeaders(s.c)}), 400, 400)
		}
	})
}

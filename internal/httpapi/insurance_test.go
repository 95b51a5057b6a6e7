package httpapi_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
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
	d := decode[cardAnswer](t, res)
	if d.Version != "2.0" || d.Data.CardType != "primary" || d.Data.SubscriberNumber != "W123" ||
		d.Data.GuarantorGender != 2 || !d.Data.Consent || d.Data.GroupNumber != "" {
		t.Fatalf("%s", res.Raw)
	}
	// An update changes only what it sends.
	if d := dataOf[card](t, e.Do(testenv.Req{Method: "POST", Path: path + "/primary", Header: h, JSON: js(`{"group_number": "G7"}`)})); d.GroupNumber != "G7" || d.SubscriberNumber != "W123" {
		t.Fatalf("%+v", d)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/primary", Header: h, Form: q("guarantor_dob", "03/02/1980")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/tertiary", Header: h, Form: q("group_number", "x")}), 404, 404)

	// Import: the secondary is new, the primary is overwritten whole.
	res = e.Do(testenv.Req{Method: "POST", Path: path + "/import", Header: h, JSON: js(`{"insurances": [
		{"card_type": "primary", "insurer_code": "cigna", "subscriber_number": "C1"},
		{"card_type": "secondary", "insurer_code": "uhc", "subscriber_num": "U2"}]}`)})
	cards := decode[struct {
		Data    []card `json:"data"`
		Version string `json:"version"`
	}](t, res)
	if len(cards.Data) != 2 || cards.Version != "2.0" {
		t.Fatalf("%s", res.Raw)
	}
	for _, c := range cards.Data {
		if c.CardType == "primary" && (c.InsurerCode != "cigna" || c.GroupNumber != "") {
			t.Fatalf("primary not overwritten: %+v", c)
		}
		if c.CardType == "secondary" && c.SubscriberNumber != "U2" {
			t.Fatalf("%+v", c)
		}
	}
	for _, bad := range []string{
		`[]`,
		`[{"card_type": "primary"}, {"card_type": "primary"}]`,
		`[{"card_type": "primary"}, {"card_type": "secondary"}, {"card_type": "secondary"}]`,
		`[{"card_type": "other"}]`,
		`[{"card_type": "primary", "insurer_code": "x"}, {"card_type": "secondary", "guarantor_gender": "7"}]`,
	} {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: path + "/import", Header: h, JSON: js(`{"insurances": ` + bad + `}`)}), 400, 400)
	}
	// The failed imports wrote nothing.
	if got := dataOf[card](t, e.Do(testenv.Req{Path: path + "/primary", Header: h})); got.InsurerCode != "cigna" {
		t.Fatalf("%+v", got)
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
	if got := dataOf[[]card](t, e.Do(testenv.Req{Path: "/api_v3/users/-/insurances", Header: h})); len(got) != 1 {
		t.Fatalf("%+v", got)
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

	started := dataOf[client.EligibilityJob](t, e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h}))
	if started.Status != "pending" || started.JobId == "" {
		t.Fatalf("%+v", started)
	}
	var got client.EligibilityJob
	waitFor(t, "the check's outcome", func() bool {
		got = dataOf[client.EligibilityJob](t, e.Do(testenv.Req{Path: path, Header: h}))
		return got.Status != "pending"
	})
	if got.JobId != started.JobId || got.Status != "active" || got.Finished == nil ||
		!reflect.DeepEqual([]any{got.Details["checker"], got.Details["member_id"], got.Details["payer"]}, []any{"sandbox", "W100", "AETNA"}) {
		t.Fatalf("%+v", got)
	}

	// Within the window, finished or not: 429 saying when the last one started.
	res := e.Do(testenv.Req{Method: "POST", Path: path + "/check", Header: h})
	wantErr(t, res, 429, 429)
	if msg := messageOf(res); !strings.Contains(msg, "2026-03-02T09:00:00Z") || res.Header.Get("Retry-After") != "60" {
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
		waitFor(t, member, func() bool {
			got = dataOf[client.EligibilityJob](t, e.Do(testenv.Req{Path: path, Header: h}))
			return got.Status != "pending"
		})
		if string(got.Status) != want {
			t.Fatalf("%s: %+v", member, got)
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
	// refItem is an entry of a reference list: the members the lists
	// checked here have.
	type refItem struct {
		ID          string `json:"id"`
		Code        string `json:"code"`
		Text        string `json:"text"`
		Description string `json:"description"`
		EHRVendor   struct {
			Code string `json:"code"`
			CPID string `json:"cpid"`
		} `json:"ehr_vendor"`
	}
	list := func(name string, kv ...string) []refItem {
		t.Helper()
		return dataOf[[]refItem](t, e.Do(testenv.Req{Path: "/api_v3/insurances/list/" + name, Header: h, Query: q(kv...)}))
	}
	dxs := list("dxs")
	if len(dxs) < 150 || dxs[0].Code == "" || dxs[0].EHRVendor.Code == "" {
		t.Fatalf("%d %+v", len(dxs), dxs[0])
	}
	if got := list("dxs", "q", "E11.9"); len(got) != 1 || got[0].Code != "E11.9" || got[0].EHRVendor.Code != "E119" {
		t.Fatalf("%+v", got)
	}
	if got := list("dxs", "q", "hypertension"); len(got) == 0 {
		t.Fatal("no hypertension")
	}
	if got := list("procedures", "limit", "3"); len(got) != 3 || got[0].ID == "" || got[0].Text == "" || got[0].Description == "" {
		t.Fatalf("%+v", got)
	}
	if got := list("billing_modifiers", "q", "95"); len(got) == 0 || got[0].ID != "95" {
		t.Fatalf("%+v", got)
	}
	if got := list("carriers", "q", "aetna"); len(got) != 1 || got[0].EHRVendor.CPID != "60054" {
		t.Fatalf("%+v", got)
	}
	if got := list("insurers"); len(got) < 5 {
		t.Fatalf("%v", got)
	}
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/insurances/list/dxs", Header: acctHeaders(s.c)}), 401, 401)

	visit := s.withVisit(t)
	codes := "/api_v3/visits/" + visit + "/codes"
	set := dataOf[client.ClaimCodes](t, e.Do(testenv.Req{Method: "POST", Path: codes, Header: h, JSON: js(`{"diagnoses": ["e119", "I10"],
		"procedures": [{"code": "g2012", "modifiers": ["95"]}]}`)}))
	if !reflect.DeepEqual(set.Diagnoses, []string{"E11.9", "I10"}) || len(set.Procedures) != 1 || set.Procedures[0].Code != "G2012" {
		t.Fatalf("%+v", set)
	}
	for _, bad := range []string{
		`{"diagnoses": ["X99.999"]}`,
		`{"procedures": [{"code": "99213"}]}`,
		`{"procedures": [{"code": "G2012", "modifiers": ["ZZ"]}]}`,
		`{}`,
	} {
		res := e.Do(testenv.Req{Method: "POST", Path: codes, Header: h, JSON: js(bad)})
		if res.Status != 400 || len(errorOf(t, res).Error) == 0 {
			t.Fatalf("%s: %d %s", bad, res.Status, res.Raw)
		}
	}
	// The patient reads but does not code; another provider is not the visit's.
	if got := dataOf[client.ClaimCodes](t, e.Do(testenv.Req{Path: codes, Header: userHeaders(s.c, s.pat.Token)})); len(got.Diagnoses) != 2 {
		t.Fatalf("%+v", got)
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
	claims := dataOf[[]claim](t, report(adminHeaders(s.c), "from_date", "2026-03-02", "to_date", "2026-03-02"))
	if len(claims) != 1 {
		t.Fatalf("%+v", claims)
	}
	want := claim{VisitID: visit, Date: "2026-03-02"}
	want.Patient.ID, want.Provider.ID, want.Insurance.Primary.SubscriberNumber = s.pat.UserID, s.doc.UserID, "W1"
	want.Diagnoses = []claimCode{{Code: "E11.9", Description: "Type 2 diabetes mellitus without complications"}, {Code: "I10", Description: "Essential (primary) hypertension"}}
	want.Procedures = []claimCode{{Code: "G2012", Modifiers: []string{"95"}, Description: "Brief communication technology-based service, e.g. virtual check-in, by a physician or other " +
		"qualified health care professional who can report evaluation and management services, provided to an established patient; 5-10 minutes of medical discussion"}}
	if diff := cmp.Diff(want, claims[0]); diff != "" {
		t.Fatalf("the claim (-want +got):\n%s", diff)
	}
	if got := dataOf[[]claim](t, report(h, "from_date", "2026-03-02", "to_date", "2026-03-02")); len(got) != 1 {
		t.Fatalf("the provider's own: %+v", got)
	}
	if got := dataOf[[]claim](t, report(userHeaders(s.c, s.other.Token), "from_date", "2026-03-02", "to_date", "2026-03-02")); len(got) != 0 {
		t.Fatalf("another provider's: %+v", got)
	}
	if got := dataOf[[]claim](t, report(adminHeaders(s.c), "from_date", "2026-03-03", "to_date", "2026-03-31")); len(got) != 0 {
		t.Fatalf("out of range: %+v", got)
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
		claims, _ := walkAs[claim](t, e, pageWalk{path: "/api_v3/reports/claims", query: q("from_date", day, "to_date", day, "limit", fmt.Sprint(limit)), header: h,
			cursor: "after", idKey: "visit_id", limit: limit})
		var ids []string
		for _, cl := range claims {
			if cl.Insurance.Primary.SubscriberNumber != "W-"+cl.Patient.ID || cl.Provider.ID != s.doc.UserID {
				t.Fatalf("%+v", cl)
			}
			ids = append(ids, cl.VisitID)
		}
		return ids
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

// card is an insurance card as the API answers it (every field present).
type card struct {
	CardType         string `json:"card_type"`
	InsurerCode      string `json:"insurer_code"`
	SubscriberNumber string `json:"subscriber_number"`
	GroupNumber      string `json:"group_number"`
	GuarantorGender  int    `json:"guarantor_gender"`
	Consent          bool   `json:"consent"`
}

// cardAnswer is a card's answer with the spec's version member.
type cardAnswer struct {
	Data    card   `json:"data"`
	Version string `json:"version"`
}

// claim is an entry of the claims report, as far as the tests read it.
type claim struct {
	VisitID string `json:"visit_id"`
	Date    string `json:"date"`
	Patient struct {
		ID string `json:"id"`
	} `json:"patient"`
	Provider struct {
		ID string `json:"id"`
	} `json:"provider"`
	Diagnoses  []claimCode `json:"diagnoses"`
	Procedures []claimCode `json:"procedures"`
	Insurance  struct {
		Primary struct {
			SubscriberNumber string `json:"subscriber_number"`
		} `json:"primary"`
	} `json:"insurance"`
}

// claimCode is a diagnosis or procedure of a claim.
type claimCode struct {
	Code        string   `json:"code"`
	Description string   `json:"description"`
	Modifiers   []string `json:"modifiers,omitempty"`
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// BenchmarkFHIR_Everything reads a sizeable record as one Bundle: 20
// visits with 10 messages each, 1,000 readings, the patient's own view.
func BenchmarkFHIR_Everything(b *testing.B) {
	e := testenv.New(b)
	c := e.NewClinic("alpha", true)
	// do sends r and returns the id in its answer's data, if any.
	do := func(r testenv.Req) string {
		b.Helper()
		res := e.Do(r)
		if res.Status/100 != 2 {
			b.Fatalf("%s %s: %d %s", r.Method, r.Path, res.Status, res.Raw)
		}
		var env struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(res.Raw, &env)
		return env.Data.ID
	}
	admin := adminHeaders(c)
	do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: admin, JSON: js(`{"domain": "alpha.clinic.test", "name": "Main", "code": "main"}`)})
	sso := func(typ, code string) (string, string) {
		p := dataOf[ssoProfile](b, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{"first_name": "A", "last_name": code, "type": typ, "code": code}}))
		return p.Id, p.Token.Token
	}
	docID, docTok := sso("400", "doc")
	patID, patTok := sso("200", "pat")
	do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + docID + "/rooms", Header: admin, Form: q("code", "main")})
	pat, doc := userHeaders(c, patTok), userHeaders(c, docTok)
	for v := 0; v < 20; v++ {
		it := do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: pat, Query: q("room_code", "main"), Form: q("reason_for_visit", "Check")})
		visit := do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: pat, Form: q("intake_id", it, "room_code", "main")})
		do(testenv.Req{Method: "POST", Path: "/api_v3/visits/accept", Header: doc, Form: q("id", visit)})
		for m := 0; m < 10; m++ {
			do(testenv.Req{Method: "POST", Path: msgPath(visit), Header: pat, Form: q("content", fmt.Sprintf("Message %d", m))})
		}
	}
	do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: pat, JSON: client.DeviceBody{DeviceId: "HR-1", DeviceName: "Watch", Type: "vendorB_health"}})
	now := e.Clock.Now().Unix()
	for i := 0; i < 1000; i++ {
		do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: pat, JSON: js(fmt.Sprintf(`{"type": "vendorB_health", "date": "2026-03-02",
			"time": %d, "device_id": "HR-1", "data_type": "hr", "data_class": "body", "hr": %d}`, now-int64(i), 60+i%40))})
	}
	path := "/fhir/R4/Patient/" + patID + "/$everything"
	b.ResetTimer()
	for b.Loop() {
		res := testenv.Do(b, e.URL, testenv.Req{Path: path, Header: pat, NoValidate: true})
		if n := bundleTotal(b, res); n != 1+1+20+200+1000 {
			b.Fatalf("%d total %d", res.Status, n)
		}
	}
}

// BenchmarkFHIR_EverythingVisits reads the first page (200) of
// $everything for a patient with 20, 1,000 and 10,000 visits (a note on
// every tenth), as the admin: the record's visits are paged by the
// database, so the page should cost about the same at each size.
func BenchmarkFHIR_EverythingVisits(b *testing.B) {
	for _, n := range []int{20, 1000, 10000} {
		b.Run(fmt.Sprintf("visits=%d", n), func(b *testing.B) {
			e := testenv.New(b)
			s := newClinicSetup(b, e, "alpha")
			acct, room := roomOf(b, e, s.pat.UserID, "main")
			insertVisits(b, e, acct, s.pat.UserID, n, func(int) (string, int64, string, int) {
				return s.doc.UserID, room, "appointment", 30
			}, s.doc.UserID)
			path := "/fhir/R4/Patient/" + s.pat.UserID + "/$everything"
			admin := adminHeaders(s.c)
			b.ResetTimer()
			for b.Loop() {
				res := testenv.Do(b, e.URL, testenv.Req{Path: path, Header: admin, NoValidate: true})
				if total := bundleTotal(b, res); total < 2*n {
					b.Fatalf("%d total %d", res.Status, total)
				}
			}
		})
	}
}

// bundleTotal is a 200 Bundle's total.
func bundleTotal(tb testing.TB, res *testenv.Resp) int {
	tb.Helper()
	var bundle struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal(res.Raw, &bundle); err != nil || res.Status != 200 {
		tb.Fatalf("%d %.300s", res.Status, res.Raw)
	}
	return bundle.Total
}

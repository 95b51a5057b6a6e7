package httpapi_test

import (
	"fmt"
	"testing"

	"teleclinic/internal/testenv"
)

// BenchmarkFHIR_Everything reads a sizeable record as one Bundle: 20
// visits with 10 messages each, 1,000 readings, the patient's own view.
func BenchmarkFHIR_Everything(b *testing.B) {
	e := testenv.New(b)
	c := e.NewClinic("alpha", true)
	do := func(r testenv.Req) map[string]any {
		b.Helper()
		res := e.Do(r)
		if res.Status/100 != 2 {
			b.Fatalf("%s %s: %d %s", r.Method, r.Path, res.Status, res.Raw)
		}
		return res.Data()
	}
	admin := adminHeaders(c)
	do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: admin, JSON: map[string]any{"domain": "alpha.clinic.test", "name": "Main", "code": "main"}})
	sso := func(typ, code string) (string, string) {
		d := do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c), Multipart: map[string]string{"first_name": "A", "last_name": code, "type": typ, "code": code}})
		return d["id"].(string), d["token"].(map[string]any)["token"].(string)
	}
	docID, docTok := sso("400", "doc")
	patID, patTok := sso("200", "pat")
	do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + docID + "/rooms", Header: admin, Form: q("code", "main")})
	pat, doc := userHeaders(c, patTok), userHeaders(c, docTok)
	for v := 0; v < 20; v++ {
		it := do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: pat, Query: q("room_code", "main"), Form: q("reason_for_visit", "Check")})["id"].(string)
		visit := do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: pat, Form: q("intake_id", it, "room_code", "main")})["id"].(string)
		do(testenv.Req{Method: "POST", Path: "/api_v3/visits/accept", Header: doc, Form: q("id", visit)})
		for m := 0; m < 10; m++ {
			do(testenv.Req{Method: "POST", Path: msgPath(visit), Header: pat, Form: q("content", fmt.Sprintf("Message %d", m))})
		}
	}
	do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: pat, JSON: map[string]any{"device_id": "HR-1", "device_name": "Watch", "type": "vendorB_health"}})
	now := e.Clock.Now().Unix()
	for i := 0; i < 1000; i++ {
		do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: pat, JSON: map[string]any{"type": "vendorB_health", "date": "2026-03-02",
			"time": now - int64(i), "device_id": "HR-1", "data_type": "hr", "data_class": "body", "hr": 60 + i%40}})
	}
	path := "/fhir/R4/Patient/" + patID + "/$everything"
	b.ResetTimer()
	for b.Loop() {
		res := testenv.Do(b, e.URL, testenv.Req{Path: path, Header: pat, NoValidate: true})
		if res.Status != 200 || res.Body["total"].(float64) != 1+1+20+200+1000 {
			b.Fatalf("%d total %v", res.Status, res.Body["total"])
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
				if res.Status != 200 || res.Body["total"].(float64) < float64(2*n) {
					b.Fatalf("%d total %v", res.Status, res.Body["total"])
				}
			}
		})
	}
}

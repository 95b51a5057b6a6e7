package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
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

// BenchmarkFHIR_Export10k runs a system export of a clinic of 10,000
// patients, each with a visit: the worker reads them a page at a time and
// writes NDJSON to temporary files and then the blob store, so the
// process's peak memory during the export (peak-RSS-MB, measured from a
// reset of the kernel's high-water mark) stays near that of a few
// patients' records whatever the clinic's size (docs/performance.md).
func BenchmarkFHIR_Export10k(b *testing.B) {
	const n = 10000
	e := testenv.New(b)
	c := e.NewClinic("alpha", true)
	admin := adminHeaders(c)
	var acct int64
	if err := e.Store.DB().QueryRow("SELECT id FROM accounts WHERE code = 'alpha'").Scan(&acct); err != nil {
		b.Fatal(err)
	}
	series := "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT i FROM s"
	if testenv.Engine() == "postgres" {
		series = "SELECT generate_series(1, CAST(? AS INTEGER)) AS i"
	}
	if _, err := e.Store.DB().Exec(e.Store.Rebind(`INSERT INTO users (account_id, code, username, first_name, last_name, type, svcid, created, modified)
		SELECT CAST(? AS BIGINT), 'p' || i, 'p' || i, 'Pat' || i, 'Export', 200, 'svc-p' || i, 1772400000, 1772400000 FROM (`+series+`) AS s`), acct, n); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Store.DB().Exec(e.Store.Rebind(`INSERT INTO visits (account_id, member_id, status, type, created, modified)
		SELECT account_id, id, 30, 1, 1772400000, 1772400000 FROM users WHERE account_id = ? AND type = 200`), acct); err != nil {
		b.Fatal(err)
	}
	h := map[string]string{"X-AccountCode": "alpha", "X-ApiToken": c.AdminToken, "Prefer": "respond-async"}
	ctx := context.Background()
	b.ResetTimer()
	var peak, base float64
	for b.Loop() {
		res := e.Do(testenv.Req{Path: "/fhir/R4/$export", Header: h, Query: q("_type", "Patient,Encounter"), NoValidate: true})
		if res.Status != 202 {
			b.Fatalf("kick-off: %d %s", res.Status, res.Raw)
		}
		runtime.GC()
		base = rssMB("VmRSS:")
		resetPeakRSS()
		if e.App.DeliverExports(ctx) != 1 {
			b.Fatal("no job ran")
		}
		peak = max(peak, rssMB("VmHWM:"))
		status, _ := url.Parse(res.Header.Get("Content-Location"))
		m := e.Do(testenv.Req{Path: status.Path, Header: admin, NoValidate: true})
		if m.Status != 200 || !strings.Contains(string(m.Raw), `"count":10000`) {
			b.Fatalf("manifest: %d %s", m.Status, m.Raw)
		}
	}
	b.ReportMetric(peak, "peak-RSS-MB")
	b.ReportMetric(base, "RSS-before-MB")
}

// resetPeakRSS resets the kernel's record of the process's peak resident
// memory (Linux: clear_refs 5), so VmHWM measures from here.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// rssMB is a memory figure of the process's /proc status (VmRSS: now,
// VmHWM: the peak), in MB; 0 where /proc does not say.
func rssMB(field string) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

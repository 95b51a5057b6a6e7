package httpapi_test

import (
	"context"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// BenchmarkClinicNumbers answers a year of a clinic of 100,000 visits
// (walk-ins and appointments over three rooms and twenty providers, most
// completed after a wait, some missed) as GET /reports/numbers does, less
// the HTTP: the read and the sums (docs/performance.md).
func BenchmarkClinicNumbers(b *testing.B) {
	ctx := context.Background()
	e := testenv.New(b)
	c := e.NewClinic("numbers", true)
	st := e.Store
	var acct int64
	if err := st.DB().QueryRow(st.Rebind("SELECT id FROM accounts WHERE code = ?"), "numbers").Scan(&acct); err != nil {
		b.Fatal(err)
	}
	user := mustSSO(b, e, c, "200", "p", "Pat", "Bench").UserID
	const n = 100000
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	// One visit every 315 seconds through 2025; every third a walk-in.
	if _, err := st.DB().Exec(st.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, outcome, starts_at, actual_start, created, modified)
		SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), 1000 + i % 20, NULL, CASE WHEN i % 11 = 0 THEN 40 ELSE 30 END, 1,
			CASE WHEN i % 3 = 0 THEN 'walkin' ELSE 'appointment' END, CASE WHEN i % 11 = 0 AND i % 3 <> 0 THEN 'no_show' ELSE '' END,
			CASE WHEN i % 3 = 0 THEN 0 ELSE CAST(? AS BIGINT) + i * 315 END,
			CASE WHEN i % 11 = 0 THEN NULL ELSE CAST(? AS BIGINT) + i * 315 + i % 600 END, CAST(? AS BIGINT) + i * 315 - 60, 1
		FROM (`+benchSeries()+`) AS s`), acct, user, start, start, start, n); err != nil {
		b.Fatal(err)
	}
	p, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: c.Code, APIToken: c.AdminToken}, app.NeedAdmin)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		out, err := e.App.ClinicNumbers(ctx, p, app.NumbersQuery{FromDate: "2025-01-01", ToDate: "2025-12-31"})
		if err != nil || out.Total.Visits != n {
			b.Fatal(out.Total.Visits, err)
		}
	}
}

func benchSeries() string {
	if testenv.Engine() == "postgres" {
		return "SELECT generate_series(1, CAST(? AS INTEGER)) AS i"
	}
	return "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT i FROM s"
}

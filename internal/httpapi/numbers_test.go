package httpapi_test

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

type numberRow struct {
	Key               string  `json:"key"`
	Name              string  `json:"name"`
	Visits            int     `json:"visits"`
	Completed         int     `json:"completed"`
	Cancelled         int     `json:"cancelled"`
	Walkins           int     `json:"walkins"`
	Appointments      int     `json:"appointments"`
	NoShows           int     `json:"no_shows"`
	LateCancels       int     `json:"late_cancels"`
	LeftBeforeSeen    int     `json:"left_before_seen"`
	NoShowRate        float64 `json:"no_show_rate"`
	LeftRate          float64 `json:"left_before_seen_rate"`
	WaitP50           int64   `json:"wait_p50"`
	WaitP90           int64   `json:"wait_p90"`
	StartP50          int64   `json:"start_p50"`
	StartP90          int64   `json:"start_p90"`
	CallsNotConnected int     `json:"calls_not_connected"`
	CallsRejoined     int     `json:"calls_rejoined"`
	Paid              float64 `json:"paid"`
	Refunded          float64 `json:"refunded"`
}

type numbersOut struct {
	FromDate  string      `json:"from_date"`
	ToDate    string      `json:"to_date"`
	Currency  string      `json:"currency"`
	Total     numberRow   `json:"total"`
	Days      []numberRow `json:"days"`
	Rooms     []numberRow `json:"rooms"`
	Providers []numberRow `json:"providers"`
}

// TestNumbers_KnownCounts: a clinic's two days with known figures — four
// walk-ins waiting 60, 120 and 600 seconds and one who left unseen, one
// with a paid (25.00) and partly refunded (5.00) visit and a call its
// patient joined twice; four appointments started 5 and 0 minutes late, a
// no-show and a late cancellation — come out of the numbers exactly: in
// total, by day, room and provider, as JSON and as CSV (nearest-rank
// percentiles; rates as shares). Only the admin reads them.
func TestNumbers_KnownCounts(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	ctx := context.Background()
	s.enableAppointments(t)
	mustOK(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(`{"payment": {"currency": "usd", "consultations": [
		{"id": "1", "description": "Consultation", "duration": 15, "amount": 25, "charge": true}]}}`)}))
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30})
	pat3, pat4 := mustSSO(t, e, s.c, "200", "pat3", "Pam", "Three"), mustSSO(t, e, s.c, "200", "pat4", "Paz", "Four")
	patients := []*session{s.pat, s.pat2, pat3, pat4}
	appts := make([]string, 4)
	for i, who := range patients {
		appts[i] = s.book(t, who, i) // Tuesday 14:00, 14:30, 15:00, 15:30 UTC
	}

	// Monday 09:00: four walk-ins arrive; the first paid 25.00 for its visit.
	s.addCard(t, s.pat, "tok_visa")
	paidIntake := s.intake(t, s.pat, "consultation_id", "1")
	preview := decode[client.InvoicePreview](t, s.process(s.pat.Token, "intake_id", paidIntake, "create_invoice", "1")).Data
	walkins := make([]string, 4)
	for i, who := range patients {
		intake := paidIntake
		if i > 0 {
			intake = s.intake(t, who)
		}
		walkins[i] = dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits/add_walkin", "intake_id", intake, "room_code", "main")).Id
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/" + preview.Invoice.Id + "/refund", Header: adminHeaders(s.c), Form: q("amount", "5")}))
	take := func(visit string) {
		t.Helper()
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit))
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", visit))
	}
	principal := func(who *session) *clinic.Principal {
		p, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: s.c.Code, APIToken: who.Token}, app.NeedUser)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	e.Clock.Advance(time.Minute)
	take(walkins[0]) // waited 60 s; its call: the provider, then the patient twice
	c, vid := calls.New(e.App.Core()), mustID(t, walkins[0])
	for _, who := range []*session{s.doc, s.pat, s.pat} {
		if _, err := c.Join(ctx, principal(who), vid, false); err != nil {
			t.Fatal(err)
		}
	}
	e.Clock.Advance(time.Minute)
	take(walkins[1]) // 120 s
	e.Clock.Advance(8 * time.Minute)
	take(walkins[2])                                                                               // 600 s
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", walkins[3], "reason", "no-show")) // left unseen
	for _, v := range walkins[:3] {
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", v))
	}

	// Tuesday: the 14:00 starts at 14:05, the 14:30 on time; the 15:00
	// is a no-show, the 15:30 cancelled late.
	setClock(e, tue0900NY+5*60)
	s.signInAgainAs(t, patients)
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", appts[0]))
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", appts[0]))
	setClock(e, tue0900NY+30*60)
	s.signInAgainAs(t, patients)
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", appts[1]))
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", appts[1]))
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", appts[2], "reason", "no-show"))
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", appts[3], "reason", "late-cancel"))

	get := func(kv ...string) *testenv.Resp {
		qv := q("from_date", "2026-03-02", "to_date", "2026-03-03")
		for i := 0; i+1 < len(kv); i += 2 {
			qv.Set(kv[i], kv[i+1])
		}
		return e.Do(testenv.Req{Path: "/api_v3/reports/numbers", Header: adminHeaders(s.c), Query: qv})
	}
	n := dataOf[numbersOut](t, get())
	want := numberRow{Key: "total", Visits: 8, Completed: 5, Cancelled: 3, Walkins: 4, Appointments: 4, NoShows: 1, LateCancels: 1, LeftBeforeSeen: 1,
		NoShowRate: 0.25, LeftRate: 0.25, WaitP50: 120, WaitP90: 600, StartP50: 0, StartP90: 300, CallsNotConnected: 4, CallsRejoined: 1, Paid: 25, Refunded: 5}
	if n.Total != want || n.Currency != "USD" {
		t.Fatalf("the total:\n got %+v\nwant %+v", n.Total, want)
	}
	if len(n.Days) != 2 || n.Days[0].Key != "2026-03-02" || n.Days[0].Walkins != 4 || n.Days[0].Appointments != 0 || n.Days[0].Paid != 25 ||
		n.Days[1].Appointments != 4 || n.Days[1].NoShows != 1 || n.Days[1].StartP90 != 300 {
		t.Fatalf("the days: %+v", n.Days)
	}
	if len(n.Rooms) != 1 || n.Rooms[0].Key != "main" || n.Rooms[0].Visits != 8 {
		t.Fatalf("the rooms: %+v", n.Rooms)
	}
	// The walk-in who left was no provider's.
	if len(n.Providers) != 1 || n.Providers[0].Name != "Dana Doc" || n.Providers[0].Visits != 7 || n.Providers[0].WaitP50 != 120 {
		t.Fatalf("the providers: %+v", n.Providers)
	}
	// In New York, Tuesday's morning appointments are Tuesday's; Monday
	// alone holds the walk-ins.
	if ny := dataOf[numbersOut](t, get("timezone", "America/New_York", "to_date", "2026-03-02")); ny.Total.Visits != 4 || ny.Total.Walkins != 4 {
		t.Fatalf("Monday in New York: %+v", ny.Total)
	}

	res := get("format", "csv", "group", "provider")
	if res.Status != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("the CSV: %d %s", res.Status, res.Header.Get("Content-Type"))
	}
	recs, err := csv.NewReader(strings.NewReader(string(res.Raw))).ReadAll()
	if err != nil || len(recs) != 3 || recs[0][0] != "provider" || recs[1][1] != "Dana Doc" || recs[2][0] != "total" ||
		recs[2][2] != "8" || recs[2][13] != "120" || recs[2][19] != "25" || recs[0][19] != "paid_USD" {
		t.Fatalf("the CSV's rows: %v %v", recs, err)
	}
	wantMsg(t, get("group", "week", "format", "csv"), 400, "group")
	wantMsg(t, get("to_date", "2026-03-01"), 400, "to_date")
	wantMsg(t, get("to_date", "2027-03-04"), 400, "366")
	wantMsg(t, get("timezone", "Mars/Olympus"), 400, "timezone")
	if res := e.Do(testenv.Req{Path: "/api_v3/reports/numbers", Header: userHeaders(s.c, s.doc.Token), Query: q("from_date", "2026-03-02", "to_date", "2026-03-03")}); res.Status != 401 && res.Status != 403 {
		t.Fatalf("a provider reads the numbers: %d", res.Status)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'report.numbers'"); n < 1 {
		t.Fatal("the numbers' reads are not audited")
	}
}

// signInAgainAs signs the setup's provider and the patients in again.
func (s *clinicSetup) signInAgainAs(t *testing.T, patients []*session) {
	t.Helper()
	s.doc = mustSSO(t, s.e, s.c, "400", "doc", "Dana", "Doc")
	for _, p := range patients {
		*p = *mustSSO(t, s.e, s.c, "200", p.Profile.Code, p.Profile.FirstName, p.Profile.LastName)
	}
}

package web_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// TestPortal_Demo: the demo clinic comes ready for each kind of visit.
// Its patient, signed in with the printed login, finds the room from an
// empty /visits, and from the room's printed address books one of the
// week's open times, joins the waiting room and sends an e-consult; the
// printed dashboard link shows the provider all three. A second start
// keeps the week's times and adds none twice.
func TestPortal_Demo(t *testing.T) {
	e := testenv.New(t)
	bg := context.Background()
	d, err := e.App.SeedDemo(bg)
	if err != nil {
		t.Fatal(err)
	}
	pat := newBrowser(t, e)
	if pg := pat.post("/signin", url.Values{"clinic": {app.DemoAccount}, "login": {d.PatientUsername}, "password": {d.PatientPassword}}); pg.Status != 303 {
		t.Fatalf("the demo patient signs in: %d %s", pg.Status, pg.Body)
	}
	room := "/c/" + app.DemoAccount + "/" + d.RoomCode
	if pg := pat.get("/visits"); !strings.Contains(pg.Body, `href="`+room+`"`) {
		t.Fatalf("an empty /visits does not lead to the room: %s", pg.Body)
	}
	roomPage := pat.get(room)
	for _, want := range []string{`value="walkin"`, `value="appointment"`, `value="econsult"`} {
		if !strings.Contains(roomPage.Body, want) {
			t.Errorf("the demo room does not offer %s", want)
		}
	}
	intake := func(kind string) *page {
		t.Helper()
		return pat.post(room+"/intake", url.Values{"reason_for_visit": {"Trying the demo"}, "terms": {"1"}, "kind": {kind}})
	}
	// A booking: the first open time tomorrow, 09:00 UTC.
	pg := intake("appointment")
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
		t.Fatalf("appointment: %d %s", pg.Status, pg.Location)
	}
	start := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC).Unix()
	if list := pat.get(pg.Location); !strings.Contains(list.Body, `aria-label="Book 09:00"`) {
		t.Fatalf("no open time tomorrow at 09:00: %s", list.Body)
	}
	booked := visitFromDemo(t, e, pat.post(pg.Location, url.Values{"slot_start": {itoa(start)}, "slot_end": {itoa(start + 900)}}))
	// A walk-in and an e-consult.
	walkin := visitFromDemo(t, e, intake("walkin"))
	econsult := visitFromDemo(t, e, intake("econsult"))

	prov := newBrowser(t, e)
	if pg := prov.get("/auth?sso_token=" + d.ProviderToken + "&next=/providers/dashboard"); pg.Status != 303 {
		t.Fatalf("the printed dashboard link: %d", pg.Status)
	}
	dash := prov.get("/providers/dashboard")
	for _, id := range []int64{booked, walkin, econsult} {
		if !strings.Contains(dash.Body, `id="visit-`+itoa(id)+`"`) {
			t.Errorf("visit %d is not on the demo dashboard", id)
		}
	}
	// Started again: the same week, no times twice.
	if _, err := e.App.SeedDemo(bg); err != nil {
		t.Fatalf("a second start: %v", err)
	}
	var n int
	if err := e.Store.DB().QueryRow("SELECT COUNT(*) FROM slots").Scan(&n); err != nil || n != 7*32 {
		t.Fatalf("%d slots after two starts, want %d (%v)", n, 7*32, err)
	}
}

// visitFromDemo is the visit a demo form led to.
func visitFromDemo(t *testing.T, e *testenv.Env, pg *page) int64 {
	t.Helper()
	if pg.Status != 303 || !strings.HasPrefix(pg.Location, "/visits/start/") {
		t.Fatalf("not sent to a visit: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	id := strings.TrimPrefix(pg.Location, "/visits/start/")
	acct, err := e.App.AccountByCode(context.Background(), app.DemoAccount)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(id, 10, 64)
	v, err := e.Store.Read().VisitByID(context.Background(), acct.ID, n)
	if err != nil || v.Status == clinic.VisitCancelled {
		t.Fatalf("visit %s: %+v %v", id, v, err)
	}
	return n
}

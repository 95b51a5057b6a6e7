package httpapi_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// TestPresence_LeftTheWaitingRoom: a walk-in whose patient's stream has
// been gone for app.LeftAfter has left: the next patient's before_me and
// the queue's length no longer count them, the dashboard shows them apart;
// they come back at their place when they ask again or reopen the stream;
// a walk-in no stream ever followed is never taken for left; a provider of
// the room marks the one who left a no-show.
func TestPresence_LeftTheWaitingRoom(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	walkin := func(who *session) string {
		t.Helper()
		return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits/add_walkin", "intake_id", s.intake(t, who), "room_code", "main")).Id
	}
	queue := func(who *session) queueInfo {
		t.Helper()
		return dataOf[queueInfo](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/queue", Header: userHeaders(s.c, who.Token)}))
	}
	seen := func(id string) int {
		t.Helper()
		return count(t, e, "SELECT COUNT(*) FROM visits WHERE id = ? AND seen_at IS NOT NULL", id)
	}
	first, second := walkin(s.pat), walkin(s.pat2)
	if q := queue(s.pat2); q.BeforeMe != 1 || q.Length != 2 {
		t.Fatalf("before anyone left: %+v", q)
	}

	// The first patient's page follows the visit, then is closed.
	st := openStream(t, e, msgPath(first)+"/events", userHeaders(s.c, s.pat.Token))
	if st.Status != 200 || seen(first) != 1 {
		t.Fatalf("the stream: %d, seen %d", st.Status, seen(first))
	}
	st.Close()
	e.Clock.Advance(app.LeftAfter - time.Second)
	if q := queue(s.pat2); q.BeforeMe != 1 {
		t.Fatalf("gone for less than LeftAfter: %+v", q)
	}
	e.Clock.Advance(2 * time.Second)
	if q := queue(s.pat2); q.BeforeMe != 0 || q.Length != 1 {
		t.Fatalf("after the first patient left: %+v", q)
	}
	if seen(second) != 0 {
		t.Fatal("a walk-in no stream followed was marked seen")
	}

	// The dashboard shows them apart; the one no stream followed waits on.
	doc, err := e.App.Authenticate(context.Background(), app.Credentials{AccountCode: s.c.Code, APIToken: s.doc.Token}, app.NeedUser)
	if err != nil {
		t.Fatal(err)
	}
	db, err := e.App.ProviderDashboard(context.Background(), doc, nil)
	if err != nil || len(db.Left) != 1 || len(db.Queue) != 1 || strconv.FormatInt(db.Left[0].Visit.ID, 10) != first ||
		strconv.FormatInt(db.Queue[0].Visit.ID, 10) != second {
		t.Fatalf("the dashboard: left %d, queue %d, %v", len(db.Left), len(db.Queue), err)
	}

	// Back: their own read counts them at their place; a stream opened
	// again brings them back for everyone.
	if q := queue(s.pat); q.BeforeMe != 0 || q.Length != 2 {
		t.Fatalf("the first patient asking again: %+v", q)
	}
	st = openStream(t, e, msgPath(first)+"/events", userHeaders(s.c, s.pat.Token))
	if q := queue(s.pat2); q.BeforeMe != 1 || q.Length != 2 {
		t.Fatalf("after the first patient came back: %+v", q)
	}
	st.Close()
	e.Clock.Advance(app.LeftAfter + time.Second)
	if q := queue(s.pat2); q.BeforeMe != 0 {
		t.Fatalf("left again: %+v", q)
	}

	// A provider of the room marks the no-show; one of another room may not.
	wantObjErr(t, s.post(s.other.Token, "/api_v3/visits/delete", "id", first, "reason", app.ReasonNoShow), 404, "Visit")
	v := dataOf[client.Visit](t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", first, "reason", app.ReasonNoShow))
	if v.Status != clinic.VisitCancelled {
		t.Fatalf("after the no-show: %+v", v)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM visits WHERE id = ? AND cancel_reason = ?", first, app.ReasonNoShow); n != 1 {
		t.Fatal("the no-show is not stored")
	}
	// A provider cancels only a walk-in that waits, not one another took.
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/accept", "id", second))
	wantObjErr(t, s.post(s.other.Token, "/api_v3/visits/delete", "id", second), 404, "Visit")
}

// TestRooms_Contact: the admin gives a room its phone and email for
// patients; GET /rooms/{code} shows them; a bad one is refused and
// changes nothing; both empty removes them.
func TestRooms_Contact(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	put := func(body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(body)})
	}
	get := func() client.RoomDetail {
		return dataOf[client.RoomDetail](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(s.c)}))
	}
	mustOK(t, put(`{"contact": {"phone": "+1 (555) 010-2030", "email": "desk@alpha.clinic.test"}}`))
	if c := get().Contact; c == nil || c.Phone != "+1 (555) 010-2030" || c.Email != "desk@alpha.clinic.test" {
		t.Fatalf("the contact: %+v", c)
	}
	for body, want := range map[string]string{
		`{"contact": {"phone": "call me", "email": ""}}`:        "contact.phone",
		`{"contact": {"phone": "", "email": "not an address"}}`: "contact.email",
	} {
		if res := put(body); res.Status != 400 || !strings.Contains(messageOf(res), want) {
			t.Fatalf("%s: %d %s", body, res.Status, res.Raw)
		}
	}
	if c := get().Contact; c == nil || c.Phone != "+1 (555) 010-2030" {
		t.Fatalf("a refused change changed the contact: %+v", c)
	}
	mustOK(t, put(`{"contact": {"phone": " ", "email": ""}}`))
	if c := get().Contact; c != nil {
		t.Fatalf("the contact after removing it: %+v", c)
	}
}

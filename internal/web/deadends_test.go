package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"teleclinic/internal/app"
)

// TestPortal_DeadEnds: a room's link that names no room shows the
// clinic's rooms (404) rather than an error alone; a booking page with no
// open times offers what the room has (the waiting room only where it
// takes walk-ins) and the way back to it.
func TestPortal_DeadEnds(t *testing.T) {
	f := newFixture(t)
	on := true
	if _, err := f.e.App.UpdateRoom(context.Background(), f.admin(t), "main", app.RoomUpdate{PublicAccess: &on}); err != nil {
		t.Fatal(err)
	}
	pat := newBrowser(t, f.e)
	pat.lang = "en-US,en;q=0.9" // a 12-hour region: still English, marked so in the language switch
	if pg := pat.get("/c/acme/nope"); pg.Status != 404 || !strings.Contains(pg.Body, "has no room “nope”") || !strings.Contains(pg.Body, `href="/c/acme/main"`) ||
		!strings.Contains(pg.Body, `<span aria-current="true" lang="en">English</span>`) {
		t.Fatalf("an unknown room: %d %s", pg.Status, pg.Body)
	}
	f.redirectLogin(t, pat, f.p1Token, "/c/acme/main", nil)
	for _, walkin := range []bool{true, false} {
		if _, err := f.e.App.UpdateRoom(context.Background(), f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on, WalkinEnabled: &walkin}); err != nil {
			t.Fatal(err)
		}
		pg := pat.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"A check-up"}, "terms": {"1"}, "kind": {"appointment"}})
		if pg.Status != 303 {
			t.Fatalf("intake: %d %s", pg.Status, pg.Body)
		}
		list := pat.get(pg.Location)
		offers := strings.Contains(list.Body, "join today&#39;s waiting room")
		if list.Status != 200 || !strings.Contains(list.Body, "No open times in the next two weeks.") || offers != walkin ||
			!strings.Contains(list.Body, `href="/c/acme/main" class="button secondary">Back to the room`) {
			t.Fatalf("no open times, walk-ins %v: %d %s", walkin, list.Status, list.Body)
		}
	}
}

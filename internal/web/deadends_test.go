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

// TestPortal_GuestBooksWithAnEmail: a guest's appointment asks an email
// first (none, or one that is not an address, is refused and books
// nothing); with one, it goes on to the times, and the guest's profile
// holds it.
func TestPortal_GuestBooksWithAnEmail(t *testing.T) {
	f := newFixture(t)
	on := true
	if _, err := f.e.App.UpdateRoom(context.Background(), f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on}); err != nil {
		t.Fatal(err)
	}
	g := newBrowser(t, f.e)
	if pg := g.post("/c/acme/main/guest", url.Values{"first_name": {"Gia"}, "last_name": {"Guest"}}); pg.Status != 303 {
		t.Fatalf("guest join: %d %s", pg.Status, pg.Body)
	}
	if pg := g.get("/c/acme/main"); !strings.Contains(pg.Body, `id="guest_email"`) {
		t.Fatalf("the guest's form asks no email: %s", pg.Body)
	}
	form := func(email string) url.Values {
		return url.Values{"reason_for_visit": {"A check-up"}, "terms": {"1"}, "kind": {"appointment"}, "email": {email}}
	}
	for email, want := range map[string]string{"": "give your email", "not an address": "email must be an address"} {
		if pg := g.post("/c/acme/main/intake", form(email)); pg.Status != 400 || !strings.Contains(pg.Body, want) {
			t.Fatalf("email %q: %d %s", email, pg.Status, pg.Body)
		}
	}
	if n := count(t, f, "SELECT COUNT(*) FROM intakes"); n != 1 { // the fixture's e-consult's alone
		t.Fatalf("%d intakes after the refusals", n)
	}
	if pg := g.post("/c/acme/main/intake", form("gia@example.com")); pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
		t.Fatalf("with an email: %d %s", pg.Status, pg.Location)
	}
	if n := count(t, f, "SELECT COUNT(*) FROM users WHERE email = 'gia@example.com' AND type = 600"); n != 1 {
		t.Fatal("the guest's email is not on their profile")
	}
}

// count is the one number query answers in f's database.
func count(t *testing.T, f *fixture, query string) int {
	t.Helper()
	var n int
	if err := f.e.Store.DB().QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

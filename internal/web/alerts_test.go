package web_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// TestPortal_ProviderAlerts: what the dashboard tells a provider about a
// patient who walks in. The walk-in shows with its wait so far, its
// waiting-room message (as new until the provider opens the visit) and one
// Start visit, which accepts, opens the visit and joins its call; the
// counts the page's alerts follow are on the live region; and when the
// room's wait alert has passed with no provider, the room's provider gets
// one email, once, and none for a patient already taken.
func TestPortal_ProviderAlerts(t *testing.T) {
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.Mail = mailer.Sender() }})
	bg := context.Background()
	on, wait := true, 5
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{WalkinEnabled: &on, WaitAlertMinutes: &wait}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Store.DB().Exec(f.e.Store.Rebind("UPDATE users SET email = ? WHERE code = ?"), "grace@example.com", "dr-1"); err != nil {
		t.Fatal(err)
	}
	visit := f.walkin(t, f.p2Token, "A rash")
	msg := "I am here, the rash is spreading."
	if _, err := f.e.App.PostMessage(bg, f.user(t, f.p2Token), visit, app.NewMessage{Content: &msg}); err != nil {
		t.Fatal(err)
	}
	f.e.Clock.Advance(3 * time.Minute)
	prov := newBrowser(t, f.e)
	f.redirectLogin(t, prov, f.providerToken, "/providers/dashboard", nil)

	testenv.Steps(t, []testenv.Step{
		{Name: "OKWaitAndMessageOnTheDashboard", Run: func(t *testing.T) {
			pg := prov.get("/providers/dashboard")
			item := between(pg.Body, `<li id="visit-`+itoa(visit)+`">`, "</li>")
			for _, want := range []string{"waiting 3 min", `data-waited="180"`, "1 new message", msg, `id="start-` + itoa(visit) + `"`, "Start visit"} {
				if !strings.Contains(item, want) {
					t.Errorf("the waiting patient's entry has no %q:\n%s", want, item)
				}
			}
			if strings.Contains(item, `act-`+itoa(visit)+`-accept`) {
				t.Errorf("a separate Accept beside Start visit: %s", item)
			}
			// The queue's walk-in and the fixture's e-consult wait; two
			// messages are new (the e-consult's too).
			if !strings.Contains(pg.Body, `data-waiting="2" data-unread="2"`) || !strings.Contains(pg.Body, `src="/static/dashboard.js"`) || !strings.Contains(pg.Body, `id="arrival-sound"`) {
				t.Errorf("the counts and the alerts' parts: %s", pg.Body)
			}
		}},
		{Name: "OKWaitAlertOnceToTheRoomsProvider", Run: func(t *testing.T) {
			taken := f.walkin(t, f.p1Token, "A cough")
			f.e.Clock.Advance(3 * time.Minute) // the first has waited 6 minutes, the second 3
			f.e.App.DeliverReminders(bg)
			f.e.App.DeliverMail(bg, mailer.Sender())
			got := mailer.WaitFor(t, 1)
			text := got[0].Text()
			if got[0].To != "grace@example.com" || !strings.Contains(text, "Mallory Other has waited 5 minutes in Main Room") || !strings.Contains(text, "/providers/dashboard") {
				t.Fatalf("the wait alert: %s %s", got[0].To, text)
			}
			// The second is taken before its alert is due: none for them,
			// and nothing more for the first.
			if _, err := f.e.App.MoveVisit(bg, f.user(t, f.providerToken), taken, app.ActAccept, app.MoveInput{}); err != nil {
				t.Fatal(err)
			}
			f.e.Clock.Advance(5 * time.Minute)
			f.e.App.DeliverReminders(bg)
			f.e.App.DeliverMail(bg, mailer.Sender())
			if n := len(mailer.Mails()); n != 1 {
				t.Fatalf("%d wait alerts, want 1", n)
			}
		}},
		{Name: "OKStartVisitAcceptsOpensAndJoins", Run: func(t *testing.T) {
			prov := newBrowser(t, f.e) // the clock passed the last session's idle time
			f.redirectLogin(t, prov, f.sso(t, 400, "dr-1", "Grace", "Hopper"), "/providers/dashboard", nil)
			pg := prov.post("/providers/visits/"+itoa(visit)+"/start", url.Values{})
			if pg.Status != 303 || pg.Location != "/visits/start/"+itoa(visit)+"?join=1" {
				t.Fatalf("start: %d %s %s", pg.Status, pg.Location, pg.Body)
			}
			d, err := f.e.App.GetVisit(bg, f.admin(t), visit, false)
			if err != nil || d.Provider == nil || d.Provider.Code != "dr-1" {
				t.Fatalf("after Start visit: %+v %v", d, err)
			}
			page := prov.get(pg.Location)
			if !strings.Contains(page.Body, `data-autojoin="1"`) {
				t.Fatalf("the visit page does not join by itself: %s", page.Body)
			}
			// Opened, its message is no longer new.
			if dash := prov.get("/providers/dashboard"); strings.Contains(between(dash.Body, `<li id="visit-`+itoa(visit)+`">`, "</li>"), "new message") {
				t.Errorf("the opened visit's message is still new")
			}
		}},
	})
}

// between is the part of s from the first start up to the end that
// follows it ("" when start is not there).
func between(s, start, end string) string {
	_, after, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(after, end)
	return start + in
}

// TestPortal_DashboardBacklog: a provider booked far ahead, with many
// e-consults left open, still sees the e-consult that waits in their room
// and the appointment booked long ago for today, and their own open
// visits soonest first, a hundred of them with how many more start later. The dashboard used to be cut from the
// provider's 500 newest visits, which 600 later bookings filled.
func TestPortal_DashboardBacklog(t *testing.T) {
	f := newFixture(t) // its e-consult waits in the provider's room
	prov := f.user(t, f.providerToken)
	db := f.e.Store.DB()
	room := f.mainRoom(t)
	p2 := f.user(t, f.p2Token)
	now := f.e.Clock.Now().Unix()
	book := func(start int64) {
		t.Helper()
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, starts_at, ends_at, created, modified)
			VALUES (?, ?, ?, ?, 20, 1, 'appointment', ?, ?, ?, ?)`), prov.Account.ID, p2.User.ID, prov.User.ID, room, start, start+1800, now, now); err != nil {
			t.Fatal(err)
		}
	}
	book(now + 3600) // today, booked first
	for i := range 600 {
		book(now + int64(i+2)*86400)
	}
	// 150 e-consults the provider took and has not closed: with no start,
	// they come before every booking in the soonest hundred.
	for range 150 {
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, ?, ?, 20, 1, 'econsult', ?, ?)`), prov.Account.ID, p2.User.ID, prov.User.ID, room, now, now); err != nil {
			t.Fatal(err)
		}
	}
	// And 50 closed visits, newest of all: not on the dashboard.
	for range 50 {
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, ?, ?, 30, 1, 'appointment', ?, ?)`), prov.Account.ID, p2.User.ID, prov.User.ID, room, now, now); err != nil {
			t.Fatal(err)
		}
	}
	// And the room's inbox fuller than a dashboard shows: 500 more
	// e-consults no provider has taken, after the fixture's.
	for range app.MaxVisitList {
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, 0, ?, 10, 1, 'econsult', ?, ?)`), prov.Account.ID, p2.User.ID, room, now, now); err != nil {
			t.Fatal(err)
		}
	}
	var newest int64
	if err := db.QueryRow(f.e.Store.Rebind("SELECT max(id) FROM visits WHERE provider_id = 0")).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	pg := b.get("/providers/dashboard")
	section := func(id string) string {
		_, sec, _ := strings.Cut(pg.Body, `<h2 id="`+id+`">`)
		sec, _, _ = strings.Cut(sec, "</section>")
		return sec
	}
	if pg.Status != 200 || !strings.Contains(section("inbox"), `id="visit-`+itoa(f.visitID)+`"`) {
		t.Fatalf("the waiting e-consult is not in the inbox: %d %s", pg.Status, section("inbox"))
	}
	if n := strings.Count(section("today"), `<li id="visit-`); n != 1 {
		t.Fatalf("today's appointments: %d, want the one booked first", n)
	}
	if n := strings.Count(section("mine"), `<li id="visit-`); n != app.DashboardOwnMax {
		t.Fatalf("own open visits shown: %d, want %d", n, app.DashboardOwnMax)
	}
	// The 500 waiting longest are shown; /visits goes on with the rest.
	if n := strings.Count(section("inbox"), `<li id="visit-`); n != app.MaxVisitList {
		t.Fatalf("the inbox shows %d, want %d", n, app.MaxVisitList)
	}
	rest := regexp.MustCompile(`id="more-waiting">[^<]*<a href="(/visits\?waiting=\d+)">`).FindStringSubmatch(pg.Body)
	if rest == nil {
		t.Fatal("a full inbox does not say more are waiting")
	}
	restPage := b.get(rest[1])
	waitingRest := between(restPage.Body, `id="waiting"`, "</section>")
	if n := strings.Count(waitingRest, `href="/visits/start/`); n != 1 || !strings.Contains(waitingRest, "/visits/start/"+itoa(newest)+`"`) {
		t.Fatalf("the rest of the waiting: %d, want the newest (%d) alone: %s", n, newest, waitingRest)
	}
	// 751 open: today's, the hundred soonest others, and 650 more, which
	// /visits goes on with from the hundredth.
	later := regexp.MustCompile(`And 650 more, <a href="(/visits\?later=\d+\.\d+)">starting later</a>\.`).FindStringSubmatch(section("mine"))
	if later == nil {
		t.Fatalf("the count of later visits: %s", section("mine")[len(section("mine"))-300:])
	}
	onDashboard := map[string]bool{}
	for _, m := range regexp.MustCompile(`<li id="visit-(\d+)"`).FindAllStringSubmatch(section("mine")+section("today"), -1) {
		onDashboard[m[1]] = true
	}
	// Today's appointment is on the dashboard's Today and, being later
	// than the soonest hundred (e-consults), among the later ones too.
	after := walkOwnVisits(t, b, later[1])
	today := itoa(todays(t, f, prov.User.ID))
	for id := range after {
		if onDashboard[id] && id != today {
			t.Fatalf("visit %s both among the dashboard's soonest and after them", id)
		}
	}
	if len(after) != 651 || !after[today] {
		t.Fatalf("the later visits: %d, want 650 and today's", len(after))
	}

	// /visits from its first page: every open visit of the provider's
	// once, soonest first, and the e-consult waiting in their room.
	first := b.get("/visits")
	if !strings.Contains(between(first.Body, `id="waiting"`, "</section>"), "/visits/start/"+itoa(f.visitID)+`"`) {
		t.Fatalf("the waiting e-consult is not among the waiting: %s", between(first.Body, `id="waiting"`, "</section>"))
	}
	if all := walkOwnVisits(t, b, "/visits"); len(all) != 751 {
		t.Fatalf("/visits pages hold %d of the provider's open visits, want 751", len(all))
	}
}

// todays is the id of the provider's one appointment today in
// TestPortal_DashboardBacklog (the first booked).
func todays(t *testing.T, f *fixture, provider int64) int64 {
	t.Helper()
	var id int64
	if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT min(id) FROM visits WHERE provider_id = ? AND kind = 'appointment'"), provider).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// walkOwnVisits follows /visits' "Later visits" from page and gives the
// provider's open visits the pages show, failing on one shown twice or
// out of order (soonest first: e-consults with no start, then bookings).
func walkOwnVisits(t *testing.T, b *browser, page string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	card := regexp.MustCompile(`href="/visits/start/(\d+)">[^<]*</a> <span class="status">[^<]*</span>\n(?:<span><time datetime="([^"]+)")?`)
	next := regexp.MustCompile(`href="(/visits\?later=\d+\.\d+)">Later visits<`)
	last := ""
	for pages := 0; page != ""; pages++ {
		if pages > 30 {
			t.Fatal("too many pages")
		}
		pg := b.get(page)
		coming := between(pg.Body, `id="coming"`, "</section>")
		if pg.Status != 200 || coming == "" {
			t.Fatalf("%s: %d %s", page, pg.Status, pg.Body)
		}
		if strings.Contains(page, "later=") && (strings.Contains(pg.Body, `id="waiting"`) || strings.Contains(pg.Body, `id="past"`)) {
			t.Fatalf("%s shows more than the open visits", page)
		}
		for _, m := range card.FindAllStringSubmatch(coming, -1) {
			if seen[m[1]] {
				t.Fatalf("visit %s shown twice", m[1])
			}
			seen[m[1]] = true
			if m[2] != "" {
				if m[2] < last {
					t.Fatalf("visit %s (%s) after one at %s", m[1], m[2], last)
				}
				last = m[2]
			} else if last != "" {
				t.Fatalf("visit %s with no start after a booking", m[1])
			}
		}
		page = ""
		if n := next.FindStringSubmatch(coming); n != nil {
			page = n[1]
		}
	}
	return seen
}

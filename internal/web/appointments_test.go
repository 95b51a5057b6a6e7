package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// apptScript is TestPortal_AppointmentDay's clinic: a room that takes
// appointments with its rules set, slots two days ahead, a patient whose
// browser is in New York, and what the steps learn.
type apptScript struct {
	f        *fixture
	mail     *testenv.SMTPServer
	pat      *browser
	visit    int64
	start    int64 // the booked time (09:00 UTC, then 09:30 after the move)
	bookPath string
}

// zoneCookie gives the browser's time zone, as static/live.js does.
func (b *browser) zone(name string) {
	u, _ := url.Parse(b.base)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "tz", Value: name, Path: "/"}})
}

// TestPortal_AppointmentDay: a booked visit's day on the portal. The
// patient's New York browser sees every time in New York time and says
// so; the calendar file holds the instant in UTC; the call opens ten
// minutes before the start; the patient moves the visit within the
// clinic's window and the old time opens again; one reminder arrives,
// once, through a mail server, and none after the patient turns them off
// or for the time the visit no longer has; after the window the patient
// can no longer cancel online.
func TestPortal_AppointmentDay(t *testing.T) {
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.Mail = mailer.Sender() }})
	bg := context.Background()
	on, join, cancel, refund := true, 10, 24, 50
	reminders := []int{24 * 60, 15}
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on,
		Appointments: &app.AppointmentPatch{JoinBeforeMinutes: &join, CancelHours: &cancel, RefundPercent: &refund, ReminderMinutes: &reminders}}); err != nil {
		t.Fatal(err)
	}
	day := f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02") // 2026-03-04, a Wednesday
	if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	// The patient has an email address (set as the clinic's records would).
	if _, err := f.e.Store.DB().Exec(f.e.Store.Rebind("UPDATE users SET email = ? WHERE code = ?"), "ada@example.com", "pat-1"); err != nil {
		t.Fatal(err)
	}
	s := &apptScript{f: f, mail: mailer, pat: newBrowser(t, f.e)}
	s.pat.zone("America/New_York")
	f.redirectLogin(t, s.pat, f.p1Token, "/c/acme/main", nil)
	testenv.Steps(t, []testenv.Step{
		{Name: "OKBookInTheBrowsersZone", Run: s.book},
		{Name: "OKTimesInTheViewersZone", Run: s.times},
		{Name: "OKCalendarFile", Run: s.calendar},
		{Name: "ErrCallNotOpenYet", Run: s.callClosed},
		{Name: "OKMoveFreesTheOldTime", Run: s.move},
		{Name: "OKOneReminderOnce", Run: s.reminder},
		{Name: "OKRemindersOff", Run: s.remindersOff},
		{Name: "OKCallOpens", Run: s.callOpens},
		{Name: "ErrCancelAfterTheWindow", Run: s.lateCancel},
	})
}

// The patient books 09:00 UTC from a list in New York time (04:00); the
// profile, which had no zone, takes the browser's.
func (s *apptScript) book(t *testing.T) {
	pg := s.pat.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"Follow-up"}, "terms": {"1"}, "kind": {"appointment"}})
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
		t.Fatalf("intake: %d %s", pg.Status, pg.Location)
	}
	s.bookPath = pg.Location
	list := s.pat.get(s.bookPath)
	if !strings.Contains(list.Body, `aria-label="Book 04:00"`) || !strings.Contains(list.Body, "New York time") {
		t.Fatalf("the times are not in New York time: %s", list.Body)
	}
	s.start = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC).Unix()
	d := visitFrom(t, s.f, s.pat.post(s.bookPath, url.Values{"slot_start": {itoa(s.start)}, "slot_end": {itoa(s.start + 1800)}}))
	s.visit = d.Visit.ID
	if d.Member.Timezone != "America/New_York" {
		t.Errorf("the profile's zone after booking: %q", d.Member.Timezone)
	}
}

// /visits puts the booked visit first with its time; the visit page says
// its day and time and the zone; a browser that has not said its zone
// (and a profile without one) is shown UTC, and told so.
func (s *apptScript) times(t *testing.T) {
	list := s.pat.get("/visits")
	coming, _, _ := strings.Cut(list.Body, `id="past"`)
	if !strings.Contains(coming, "Wed 4 Mar 2026, 04:00") || !strings.Contains(list.Body, "Times are in New York time") {
		t.Fatalf("/visits: %s", list.Body)
	}
	if strings.Index(coming, "/visits/start/"+itoa(s.visit)) > strings.Index(coming, "/visits/start/"+itoa(s.f.visitID)) {
		t.Errorf("the booked visit is not first among those coming up: %s", coming)
	}
	pg := s.pat.get("/visits/start/" + itoa(s.visit))
	for _, want := range []string{"Wednesday 4 March 2026, 04:00", "04:30", "New York time", `datetime="2026-03-04T09:00:00Z"`, "Add to calendar", "Change the time", "Cancel this appointment", "Stop reminder emails"} {
		if !strings.Contains(pg.Body, want) {
			t.Errorf("the visit page has no %q", want)
		}
	}
	// The provider, whose profile and browser name no zone.
	prov := newBrowser(t, s.f.e)
	s.f.redirectLogin(t, prov, s.f.providerToken, "/visits", nil)
	if pg := prov.get("/visits/start/" + itoa(s.visit)); !strings.Contains(pg.Body, "Wednesday 4 March 2026, 09:00") || !strings.Contains(pg.Body, "(UTC)") || strings.Contains(pg.Body, "Cancel this appointment") {
		t.Errorf("the provider's view of the visit: %s", pg.Body)
	}
}

// The .ics holds the instant in UTC, whatever the viewer's zone; another
// patient gets none.
func (s *apptScript) calendar(t *testing.T) {
	pg := s.pat.get("/visits/start/" + itoa(s.visit) + "/calendar.ics")
	if pg.Status != 200 || !strings.HasPrefix(pg.Header.Get("Content-Type"), "text/calendar") {
		t.Fatalf("calendar: %d %s", pg.Status, pg.Header.Get("Content-Type"))
	}
	for _, want := range []string{"BEGIN:VCALENDAR\r\n", "DTSTART:20260304T090000Z\r\n", "DTEND:20260304T093000Z\r\n", "URL:https://portal.teleclinic.test/v/", "END:VCALENDAR\r\n"} {
		if !strings.Contains(pg.Body, want) {
			t.Errorf("the calendar file has no %q:\n%s", want, pg.Body)
		}
	}
	other := newBrowser(t, s.f.e)
	s.f.redirectLogin(t, other, s.f.p2Token, "/visits", nil)
	if pg := other.get("/visits/start/" + itoa(s.visit) + "/calendar.ics"); pg.Status != 404 || strings.Contains(pg.Body, "VCALENDAR") {
		t.Fatalf("another patient's calendar file: %d", pg.Status)
	}
}

// Before the call opens, the page says when, in the viewer's zone, with
// Join disabled, and a join is refused.
func (s *apptScript) callClosed(t *testing.T) {
	pg := s.pat.get("/visits/start/" + itoa(s.visit))
	if !strings.Contains(pg.Body, `id="call-join" disabled`) || !strings.Contains(pg.Body, "The call opens at <time datetime=\"2026-03-04T08:50:00Z\">03:50</time>") {
		t.Fatalf("the call part before it opens: %s", pg.Body)
	}
	if pg := s.pat.postJSON("/visits/start/"+itoa(s.visit)+"/call/join", "{}"); pg.Status != 409 || !strings.Contains(pg.Body, "opens at 2026-03-04 08:50 UTC") {
		t.Fatalf("an early join: %d %s", pg.Status, pg.Body)
	}
}

// The patient moves the visit to 09:30: 09:00 is open again for others.
func (s *apptScript) move(t *testing.T) {
	path := "/visits/start/" + itoa(s.visit) + "/reschedule"
	list := s.pat.get(path)
	if list.Status != 200 || !strings.Contains(list.Body, `aria-label="Book 04:30"`) || strings.Contains(list.Body, `aria-label="Book 04:00"`) {
		t.Fatalf("the times to move to: %d %s", list.Status, list.Body)
	}
	old := s.start
	s.start += 1800
	pg := s.pat.post(path, url.Values{"slot_start": {itoa(s.start)}, "slot_end": {itoa(s.start + 1800)}})
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "?notice=moved") {
		t.Fatalf("move: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	d, err := s.f.e.App.GetVisit(context.Background(), s.f.admin(t), s.visit, false)
	if err != nil || d.Visit.Start != s.start || d.Visit.End != s.start+1800 {
		t.Fatalf("after the move: %+v %v", d.Visit, err)
	}
	if pg := s.pat.get(pg.Location); !strings.Contains(pg.Body, "Your appointment has its new time") || !strings.Contains(pg.Body, "04:30") {
		t.Errorf("the page after the move: %s", pg.Body)
	}
	av, err := s.f.e.App.Availability(context.Background(), s.f.user(t, s.f.p2Token), app.AvailabilityQuery{RoomCode: "main", Start: old, End: old + 3600})
	if err != nil {
		t.Fatal(err)
	}
	free := map[int64]bool{}
	for _, sl := range av.Slots {
		free[sl.Slot.Start] = sl.Available
	}
	if !free[old] || free[s.start] {
		t.Fatalf("after the move, open: %v (want %d open, %d taken)", free, old, s.start)
	}
}

// A day before the new time one reminder goes out, with the visit's link
// and its time in the patient's zone; the reminder of the old time is
// not sent; another pass sends nothing more.
func (s *apptScript) reminder(t *testing.T) {
	s.f.e.Clock.Advance(time.Unix(s.start-24*3600+60, 0).Sub(s.f.e.Clock.Now()))
	s.f.e.App.DeliverReminders(context.Background())
	s.f.e.App.DeliverReminders(context.Background())
	got := s.mail.Mails()
	if len(got) != 1 {
		t.Fatalf("%d reminders, want 1: %+v", len(got), got)
	}
	text := got[0].Text()
	for _, want := range []string{"Subject: Acme Clinic: your visit tomorrow", "Wednesday 4 March 2026, 04:30 (America/New_York)", "https://portal.teleclinic.test/v/"} {
		if !strings.Contains(text, want) {
			t.Errorf("the reminder has no %q:\n%s", want, text)
		}
	}
	if got[0].To != "ada@example.com" {
		t.Errorf("the reminder went to %q", got[0].To)
	}
	s.followLink(t, visitLinkIn(t, text))
}

// visitLinkIn is the path of the visit link in a mail's text.
func visitLinkIn(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`https://portal\.teleclinic\.test(/v/[A-Za-z0-9_-]+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no visit link in:\n%s", text)
	}
	return m[1]
}

// followLink opens a mailed visit link on another device, with no
// session and no password (as an SSO or guest patient): the page asks for
// a press, the press opens the visit and nothing else; the link works
// once, and then offers a new one by email, which works.
func (s *apptScript) followLink(t *testing.T, link string) {
	bg := context.Background()
	phone := newBrowser(t, s.f.e)
	if pg := phone.get(link); pg.Status != 200 || !strings.Contains(pg.Body, `id="open-visit"`) || !strings.Contains(pg.Body, "Your visit with Acme Clinic") {
		t.Fatalf("the link's page: %d %s", pg.Status, pg.Body)
	}
	pg := phone.post(link, nil)
	if pg.Status != 303 || pg.Location != "/visits/start/"+itoa(s.visit) {
		t.Fatalf("opening the link: %d %s", pg.Status, pg.Location)
	}
	if pg := phone.get(pg.Location); pg.Status != 200 || !strings.Contains(pg.Body, "Add to calendar") || !strings.Contains(pg.Body, "Your visit</a>") {
		t.Fatalf("the visit through its link: %d %s", pg.Status, pg.Body)
	}
	for _, other := range []string{"/visits", "/profile", "/visits/start/" + itoa(s.f.visitID)} {
		if pg := phone.get(other); pg.Status != 403 {
			t.Errorf("%s with a one-visit session: %d", other, pg.Status)
		}
	}
	if pg := phone.get("/"); pg.Status != 303 || pg.Location != "/visits/start/"+itoa(s.visit) {
		t.Errorf("the root with a one-visit session: %d %s", pg.Status, pg.Location)
	}
	// Once only: another browser is offered a new link, by email.
	other := newBrowser(t, s.f.e)
	if pg := other.post(link, nil); pg.Status != 410 || !strings.Contains(pg.Body, "opened already") || !strings.Contains(pg.Body, "a•••@example.com") {
		t.Fatalf("the link a second time: %d %s", pg.Status, pg.Body)
	}
	s.f.e.App.DeliverMail(bg, s.mail.Sender())
	before := len(s.mail.Mails())
	if pg := other.post(link+"/again", nil); pg.Status != 200 || !strings.Contains(pg.Body, "a new link is on its way to a•••@example.com") {
		t.Fatalf("asking a new link: %d %s", pg.Status, pg.Body)
	}
	s.f.e.App.DeliverMail(bg, s.mail.Sender())
	got := s.mail.Mails()
	if len(got) != before+1 || got[len(got)-1].To != "ada@example.com" {
		t.Fatalf("%d mails after asking a new link, had %d", len(got), before)
	}
	fresh := visitLinkIn(t, got[len(got)-1].Text())
	if pg := other.post(fresh, nil); pg.Status != 303 {
		t.Fatalf("the new link: %d %s", pg.Status, pg.Body)
	}
	// Revoked: the clinic ends the links; the sessions they started end.
	if n, err := s.f.e.App.RevokeVisitLinks(bg, s.f.admin(t), s.visit); err != nil || n < 2 {
		t.Fatalf("revoking the visit's links: %d %v", n, err)
	}
	if pg := phone.get("/visits/start/" + itoa(s.visit)); pg.Status == 200 {
		t.Errorf("a session of a revoked link still opens the visit")
	}
}

// signInAgain gives the patient a fresh session after the clock moved
// past the last one's idle time.
func (s *apptScript) signInAgain(t *testing.T) {
	t.Helper()
	s.pat = newBrowser(t, s.f.e)
	s.pat.zone("America/New_York")
	s.f.redirectLogin(t, s.pat, s.f.sso(t, clinic.UserMember, "pat-1", "Ada", "Lovelace"), "/visits", nil)
}

// Turned off, the 15-minute reminder is not sent.
func (s *apptScript) remindersOff(t *testing.T) {
	sent := len(s.mail.Mails())
	s.signInAgain(t)
	pg := s.pat.post("/visits/start/"+itoa(s.visit)+"/reminders", url.Values{"on": {"0"}})
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "notice=remind-off") {
		t.Fatalf("reminders off: %d %s", pg.Status, pg.Location)
	}
	if pg := s.pat.get(pg.Location); !strings.Contains(pg.Body, "Email me reminders") {
		t.Errorf("the page does not offer them back: %s", pg.Body)
	}
	s.f.e.Clock.Advance(time.Unix(s.start-15*60+10, 0).Sub(s.f.e.Clock.Now()))
	s.f.e.App.DeliverReminders(context.Background())
	if n := len(s.mail.Mails()); n != sent {
		t.Fatalf("%d mails after turning reminders off, want the %d sent before", n, sent)
	}
}

// Ten minutes before the start the call opens.
func (s *apptScript) callOpens(t *testing.T) {
	s.f.e.Clock.Advance(time.Unix(s.start-10*60, 0).Sub(s.f.e.Clock.Now()))
	s.signInAgain(t)
	if pg := s.pat.get("/visits/start/" + itoa(s.visit)); strings.Contains(pg.Body, `id="call-join" disabled`) {
		t.Errorf("Join is still disabled when the call opens")
	}
	if pg := s.pat.postJSON("/visits/start/"+itoa(s.visit)+"/call/join", "{}"); pg.Status != 200 {
		t.Fatalf("join when the call opens: %d %s", pg.Status, pg.Body)
	}
}

// Within 24 hours of the start, the patient cannot cancel online (the
// page says so, with the room's phone and email, and PUT /visits/delete
// is refused alike); the provider can, from the dashboard, giving a
// reason, and the patient is emailed it with the clinic's contact.
func (s *apptScript) lateCancel(t *testing.T) {
	bg := context.Background()
	if _, err := s.f.e.App.UpdateRoom(bg, s.f.admin(t), "main", app.RoomUpdate{Contact: &clinic.RoomContact{Phone: "+1 555 0100", Email: "desk@acme.test"}}); err != nil {
		t.Fatal(err)
	}
	pg := s.pat.get("/visits/start/" + itoa(s.visit))
	if strings.Contains(pg.Body, "Cancel this appointment") || !strings.Contains(pg.Body, "can no longer be changed online") ||
		!strings.Contains(pg.Body, `href="tel:&#43;1%20555%200100"`) || !strings.Contains(pg.Body, "desk@acme.test") {
		t.Errorf("the page offers a late cancel, or no way to reach the clinic: %s", pg.Body)
	}
	if pg := s.pat.post("/visits/start/"+itoa(s.visit)+"/cancel", nil); pg.Status != 409 || !strings.Contains(pg.Body, "24 hours") {
		t.Fatalf("a late cancel: %d %s", pg.Status, pg.Body)
	}
	s.f.e.App.DeliverMail(bg, s.mail.Sender()) // what the earlier steps wrote
	sent := len(s.mail.Mails())
	prov := newBrowser(t, s.f.e)
	s.f.redirectLogin(t, prov, s.f.sso(t, clinic.UserProvider, "dr-1", "Grace", "Hopper"), "/providers/dashboard", nil)
	dash := prov.get("/providers/dashboard")
	if !strings.Contains(dash.Body, `id="cancel-`+itoa(s.visit)+`"`) || strings.Contains(dash.Body, `id="act-`+itoa(s.visit)+`-delete"`) {
		t.Fatalf("the dashboard's Cancel does not ask a reason first: %s", dash.Body)
	}
	if pg := prov.post("/providers/visits/"+itoa(s.visit)+"/delete", url.Values{"reason": {"Dr Hopper is unwell today"}}); pg.Status != 303 {
		t.Fatalf("the provider cancels: %d %s", pg.Status, pg.Body)
	}
	d, err := s.f.e.App.GetVisit(bg, s.f.admin(t), s.visit, false)
	if err != nil || d.Visit.Status != clinic.VisitCancelled || d.Visit.CancelReason != "Dr Hopper is unwell today" {
		t.Fatalf("the cancelled visit: %+v %v", d, err)
	}
	s.f.e.App.DeliverMail(bg, s.mail.Sender())
	got := s.mail.Mails()
	if len(got) != sent+1 {
		t.Fatalf("%d mails after the provider's cancel, want %d", len(got), sent+1)
	}
	text := got[len(got)-1].Text()
	for _, want := range []string{"was cancelled by the clinic", "The reason given: Dr Hopper is unwell today", "Questions? Reach the clinic at +1 555 0100 or desk@acme.test."} {
		if !strings.Contains(text, want) || got[len(got)-1].To != "ada@example.com" {
			t.Errorf("the patient's cancellation mail has no %q:\n%s", want, text)
		}
	}
	// Its calendar file marks the event (the same UID as the booking's)
	// cancelled.
	if cal := got[len(got)-1].Calendar(); !strings.Contains(cal, "UID:visit-"+itoa(s.visit)+"-acme@teleclinic") || !strings.Contains(cal, "STATUS:CANCELLED") {
		t.Errorf("the cancellation's calendar file:\n%s", cal)
	}
}

// TestPortal_BookManyTimes: a room whose providers publish more slots in
// two weeks than one read of the availability takes (app.MaxSlotList)
// shows every open time, each once, a window at a time: the page ends at
// its last whole day and Later times goes on from there, Earlier times
// comes back; past the last slot the page says so. The book page used to
// show the first 1,000 slots of the two weeks and nothing after them.
func TestPortal_BookManyTimes(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	on := true
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on}); err != nil {
		t.Fatal(err)
	}
	// Three providers with ten-minute slots 08:00–18:00 UTC for 10 days
	// from tomorrow: 60 a day each, 1,800 in all, and each time three times.
	start := f.e.Clock.Now().Add(24 * time.Hour).UTC()
	first, last := start.Format("2006-01-02"), start.Add(9*24*time.Hour).Format("2006-01-02")
	for i, tok := range []string{f.providerToken, f.sso(t, clinic.UserProvider, "dr-2", "Hedy", "Lamarr"), f.sso(t, clinic.UserProvider, "dr-3", "Rosalind", "Franklin")} {
		prov := f.user(t, tok)
		if i > 0 {
			if _, err := f.e.App.LinkRoom(bg, f.admin(t), prov.User.ID, "main", false); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := f.e.App.CreateSlots(bg, prov, app.SlotGroupInput{RoomCode: "main", DateStart: first, DateEnd: last,
			TimeStart: "08:00", TimeEnd: "18:00", Timezone: "UTC", Duration: 10}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/c/acme/main", nil)
	pg := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"Follow-up"}, "terms": {"1"}, "kind": {"appointment"}})
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
		t.Fatalf("intake: %d %s", pg.Status, pg.Location)
	}
	book := pg.Location
	seen := map[string]int{}
	later := regexp.MustCompile(`href="(` + regexp.QuoteMeta(book) + `\?from=\d+)" class="button secondary">Later times`)
	times := regexp.MustCompile(`name="slot_start" value="(\d+)"`)
	page, pages := b.get(book), 0
	for ; ; pages++ {
		if page.Status != 200 || pages > 10 {
			t.Fatalf("times page %d: %d", pages, page.Status)
		}
		found := times.FindAllStringSubmatch(page.Body, -1)
		for _, m := range found {
			seen[m[1]]++
		}
		if pages > 0 && !strings.Contains(page.Body, ">Earlier times<") {
			t.Fatalf("page %d has no way back", pages)
		}
		m := later.FindStringSubmatch(page.Body)
		if m == nil {
			t.Fatalf("page %d has no Later times", pages)
		}
		if len(found) == 0 {
			if !strings.Contains(page.Body, "No open times in these two weeks.") {
				t.Fatalf("an empty later page does not say so: %s", page.Body)
			}
			break
		}
		page = b.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	// pages is how many held times: the read's cut made them two or more.
	if len(seen) != 600 || pages < 2 {
		t.Fatalf("the pages showed %d distinct times in %d pages, want 600 in 2 or more", len(seen), pages)
	}
	for at, n := range seen {
		if n != 1 {
			t.Fatalf("time %s shown %d times", at, n)
		}
	}
}

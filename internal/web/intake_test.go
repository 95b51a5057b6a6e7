package web_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// visitFrom is the visit a page redirected to.
func visitFrom(t *testing.T, f *fixture, pg *page) *app.VisitDetail {
	t.Helper()
	if pg.Status != 303 || !strings.HasPrefix(pg.Location, "/visits/start/") {
		t.Fatalf("not sent to a visit: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	id, _ := strconv.ParseInt(strings.TrimPrefix(pg.Location, "/visits/start/"), 10, 64)
	d, err := f.e.App.GetVisit(context.Background(), f.admin(t), id, false)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPortal_RoomVisitKinds: the room's form leads to each kind of visit
// the room offers: an e-consult's thread, an appointment at a time chosen
// from the open slots (a time taken meanwhile is a 409 on the page), and,
// when the consultation charges, through payment first (a declined card is
// a 402 on the page and books nothing).
func TestPortal_RoomVisitKinds(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	admin := f.admin(t)
	form := func(kind string) url.Values {
		return url.Values{"reason_for_visit": {"Headache"}, "terms": {"1"}, "kind": {kind}}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/c/acme/main", nil)

	t.Run("OKEconsult", func(t *testing.T) {
		d := visitFrom(t, f, b.post("/c/acme/main/intake", form("econsult")))
		if d.Visit.Kind != clinic.KindEconsult || d.Intake == nil || d.Intake.ReasonForVisit != "Headache" {
			t.Fatalf("%+v", d.Visit)
		}
	})
	t.Run("ErrKind", func(t *testing.T) {
		if pg := b.post("/c/acme/main/intake", form("house-call")); pg.Status != 400 {
			t.Fatalf("%d", pg.Status)
		}
		// The room does not take appointments yet: as POST /visits says.
		pg := b.post("/c/acme/main/intake", form("appointment"))
		if pg.Status != 303 {
			t.Fatalf("intake: %d %s", pg.Status, pg.Body)
		}
		if pg := b.get(pg.Location); pg.Status == 200 && strings.Contains(pg.Body, "aria-label=\"Book") {
			t.Fatalf("a room without appointments offers times")
		}
	})
	t.Run("OKAppointment", func(t *testing.T) {
		on := true
		if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{AppointmentEnable: &on}); err != nil {
			t.Fatal(err)
		}
		day := f.e.Clock.Now().Add(48 * 3600e9).UTC().Format("2006-01-02")
		if _, _, err := f.e.App.CreateSlots(bg, f.user(t, f.providerToken), app.SlotGroupInput{RoomCode: "main",
			DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
			t.Fatal(err)
		}
		pg := b.post("/c/acme/main/intake", form("appointment"))
		if pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
			t.Fatalf("%d %s %s", pg.Status, pg.Location, pg.Body)
		}
		book := pg.Location
		list := b.get(book)
		if list.Status != 200 || !strings.Contains(list.Body, `aria-label="Book 09:00"`) || !strings.Contains(list.Body, `aria-label="Book 09:30"`) {
			t.Fatalf("%d %s", list.Status, list.Body)
		}
		start := f.e.Clock.Now().Add(48 * 3600e9).UTC().Truncate(24 * 3600e9).Add(9 * 3600e9).Unix()
		slot := url.Values{"slot_start": {strconv.FormatInt(start, 10)}, "slot_end": {strconv.FormatInt(start+1800, 10)}}
		d := visitFrom(t, f, b.post(book, slot))
		if d.Visit.Kind != clinic.KindAppointment || d.Visit.Start != start || d.Provider == nil {
			t.Fatalf("%+v", d.Visit)
		}
		// The second patient finds 09:00 gone, and is refused it.
		b2 := newBrowser(t, f.e)
		f.redirectLogin(t, b2, f.p2Token, "/c/acme/main", nil)
		pg = b2.post("/c/acme/main/intake", form("appointment"))
		if list := b2.get(pg.Location); strings.Contains(list.Body, `aria-label="Book 09:00"`) || !strings.Contains(list.Body, `aria-label="Book 09:30"`) {
			t.Fatalf("the second patient's times: %s", list.Body)
		}
		if pg := b2.post(pg.Location, slot); pg.Status != 409 || !strings.Contains(pg.Body, "booked") {
			t.Fatalf("a taken time: %d %s", pg.Status, pg.Body)
		}
	})
	t.Run("OKPaidWalkin", func(t *testing.T) {
		cons := []clinic.Consultation{{ID: "1", Description: "15-min Consultation", Duration: 15, Amount: 25, Charge: true, Slots: 1}}
		if _, err := f.e.App.UpdateRoom(bg, admin, "main", app.RoomUpdate{Consultations: &cons}); err != nil {
			t.Fatal(err)
		}
		pg := b.post("/c/acme/main/intake", form("walkin"))
		if pg.Status != 303 || !strings.Contains(pg.Location, "/pay?kind=walkin") {
			t.Fatalf("%d %s", pg.Status, pg.Location)
		}
		pay := strings.Split(pg.Location, "?")[0]
		if pg := b.get(pg.Location); !strings.Contains(pg.Body, "25.00 USD") || !strings.Contains(pg.Body, "tok_visa") {
			t.Fatalf("payment page: %s", pg.Body)
		}
		declined := b.post(pay, url.Values{"kind": {"walkin"}, "token": {"tok_chargeDeclined"}})
		if declined.Status != 402 || !strings.Contains(declined.Body, `role="alert"`) {
			t.Fatalf("declined: %d %s", declined.Status, declined.Body)
		}
		p1 := f.user(t, f.p1Token)
		before, _ := f.e.App.ListVisits(bg, p1, app.VisitQuery{Statuses: []string{"10"}})
		for _, d := range before.Items {
			if d.Visit.Kind == clinic.KindWalkin {
				t.Fatal("a declined card joined the waiting room")
			}
		}
		d := visitFrom(t, f, b.post(pay, url.Values{"kind": {"walkin"}, "token": {"tok_visa"}}))
		if d.Visit.Kind != clinic.KindWalkin || d.Visit.Status != clinic.VisitPending {
			t.Fatalf("%+v", d.Visit)
		}
		bill, err := billing.New(f.e.App.Core()).ProcessInvoice(bg, p1, billing.InvoiceInput{IntakeID: d.Intake.ID})
		if err != nil || bill.Invoice == nil || bill.Invoice.Status != billing.InvoicePaid || bill.Invoice.AmountDue != 2500 {
			t.Fatalf("the invoice: %+v %v", bill, err)
		}
	})
}

// TestPortal_PublishSlots: a provider whose browser is in Chicago, who
// never chose a zone, sees the dashboard say "Times are in
// America/Chicago" and publishes 14:00–15:00: the slots are 14:00 in
// Chicago (20:00 UTC), and Chicago is saved to their profile. A bad form
// or a schedule wholly past is a 400 on the dashboard, saying why, and
// publishes nothing. The profile page shows the zone and changes it; a
// name that is no zone is shown back beside its field.
func TestPortal_PublishSlots(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	b := newBrowser(t, f.e)
	u, _ := url.Parse(f.e.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "tz", Value: "America/Chicago", Path: "/"}})
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	if pg := b.get("/providers/dashboard"); !strings.Contains(pg.Body, "Times are in America/Chicago; patients see them in theirs.") ||
		!strings.Contains(pg.Body, `name="timezone" value="America/Chicago"`) {
		t.Fatalf("the dashboard does not name the browser's zone:\n%s", pg.Body)
	}
	day := f.e.Clock.Now().Add(72 * 3600e9).UTC().Format("2006-01-02")
	publish := func(day, from, to string) *page {
		return b.post("/providers/slots", url.Values{"room_code": {"main"}, "date_start": {day}, "time_start": {from}, "time_end": {to}, "duration": {"20"}, "timezone": {"America/Chicago"}})
	}
	if pg := publish(day, "14:00", "13:00"); pg.Status != 400 || !strings.Contains(pg.Body, "time_end after time_start") {
		t.Fatalf("end before start: %d", pg.Status)
	}
	yesterday := f.e.Clock.Now().Add(-24 * 3600e9).UTC().Format("2006-01-02")
	if pg := publish(yesterday, "14:00", "15:00"); pg.Status != 400 || !strings.Contains(pg.Body, "These times have passed: it is now") || !strings.Contains(pg.Body, "in America/Chicago") {
		t.Fatalf("a day past: %d", pg.Status)
	}
	if pg := publish(day, "14:00", "15:00"); pg.Status != 303 {
		t.Fatalf("%d %s", pg.Status, pg.Body)
	}
	now := f.e.Clock.Now().Unix()
	prov := f.user(t, f.providerToken)
	v, err := f.e.App.ListSlots(bg, prov, app.SlotQuery{RoomCode: "main", Start: now, End: now + 7*86400})
	chicago, _ := time.LoadLocation("America/Chicago")
	if err != nil || len(v.Slots) != 3 || time.Unix(v.Slots[0].Start, 0).In(chicago).Format("15:04") != "14:00" {
		t.Fatalf("%d slots, %v", len(v.Slots), err)
	}
	if prov.User.Timezone != "America/Chicago" {
		t.Fatalf("the profile's zone after publishing: %q", prov.User.Timezone)
	}
	if pg := b.get("/providers/dashboard?done=slots"); !strings.Contains(pg.Body, "Your slots are published.") {
		t.Fatal("no notice")
	}

	// The profile page: the zone, where it comes from, a change.
	if pg := b.get("/profile"); pg.Status != 200 || !strings.Contains(pg.Body, `value="America/Chicago"`) {
		t.Fatalf("the profile page: %d\n%s", pg.Status, pg.Body)
	}
	if pg := b.post("/profile", url.Values{"timezone": {"Mars/Olympus"}}); pg.Status != 400 || !strings.Contains(pg.Body, `aria-invalid="true"`) ||
		!strings.Contains(pg.Body, "IANA time zone") || !strings.Contains(pg.Body, `value="Mars/Olympus"`) {
		t.Fatalf("a name that is no zone: %d\n%s", pg.Status, pg.Body)
	}
	if pg := b.post("/profile", url.Values{"timezone": {"America/Denver"}, "next": {"/providers/dashboard#slots"}}); pg.Status != 303 || pg.Location != "/providers/dashboard#slots" {
		t.Fatalf("saving the zone: %d %q", pg.Status, pg.Location)
	}
	if pg := b.get("/providers/dashboard"); !strings.Contains(pg.Body, "Times are in America/Denver") {
		t.Fatal("the dashboard after the change does not say Denver")
	}
	if pg := b.post("/profile", url.Values{"timezone": {"America/Denver"}, "next": {"//evil.example"}}); pg.Status != 303 || pg.Location != "/profile?done=saved" {
		t.Fatalf("a next to another site: %d %q", pg.Status, pg.Location)
	}
}

// multipartPost posts fields and files (name → content) as a browser's
// multipart form.
func (b *browser) multipartPost(path string, fields url.Values, files map[string][]byte) *page {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	for name, content := range files {
		fw, _ := mw.CreateFormFile("attachments", name)
		_, _ = fw.Write(content)
	}
	_ = mw.Close()
	h := map[string]string{"Content-Type": mw.FormDataContentType()}
	for k, v := range sameOrigin {
		h[k] = v
	}
	return b.send("POST", path, &body, h)
}

func pngBytes(t *testing.T) []byte {
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPortal_IntakeAttachments: the intake form takes photos and documents,
// checked by their content as POST /files checks them; a refused file
// files no intake and keeps none of the form's files.
func TestPortal_IntakeAttachments(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/c/acme/main", nil)
	if pg := b.get("/c/acme/main"); !strings.Contains(pg.Body, `enctype="multipart/form-data"`) || !strings.Contains(pg.Body, `name="attachments"`) {
		t.Fatal("no file field on the room's form")
	}
	fields := url.Values{"reason_for_visit": {"A rash, see the photo"}, "terms": {"1"}, "kind": {"econsult"}}
	p1 := f.user(t, f.p1Token)
	filesNow := func() int {
		fs, err := f.e.App.ListFiles(bg, p1, app.FileQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return len(fs.Items)
	}
	before := filesNow()
	pg := b.multipartPost("/c/acme/main/intake", fields, map[string][]byte{"rash.png": pngBytes(t), "tool.bin": append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 64)...)})
	if pg.Status != 400 || filesNow() != before {
		t.Fatalf("a refused file: %d, files %d → %d", pg.Status, before, filesNow())
	}
	d := visitFrom(t, f, b.multipartPost("/c/acme/main/intake", fields, map[string][]byte{"rash.png": pngBytes(t)}))
	if d.Intake == nil || len(d.Intake.Attachments) != 1 {
		t.Fatalf("intake: %+v", d.Intake)
	}
	atts, err := f.e.App.IntakeAttachments(bg, p1, d.Intake)
	if err != nil || len(atts) != 1 {
		t.Fatalf("attachments: %+v %v", atts, err)
	}
}

// TestPortal_GuestUploadQuotas: what anonymous guests store is bounded:
// each guest's files, and all of a clinic's guests' in a day (413, and a
// form refused keeps none of its files); the room's file field names the
// guest's bound for the page's script; and one form's files together are
// bounded for anyone.
func TestPortal_GuestUploadQuotas(t *testing.T) {
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.GuestUploadBytes = 3 << 20; c.GuestDailyUploadBytes = 5 << 20 }})
	pdf := func(mb int) []byte { return append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), mb<<20)...) }
	stored := func() int64 {
		var n int64
		if err := f.e.Store.DB().QueryRow("SELECT COALESCE(SUM(f.size), 0) FROM files f JOIN users u ON u.id = f.creator_user_id WHERE u.type = 600").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	guest := func(name string) *browser {
		b := newBrowser(t, f.e)
		if pg := b.post("/c/acme/main/guest", url.Values{"first_name": {name}, "last_name": {"Guest"}}); pg.Status != 303 {
			t.Fatalf("guest join: %d", pg.Status)
		}
		return b
	}
	form := url.Values{"reason_for_visit": {"A rash"}, "terms": {"1"}, "kind": {"econsult"}}
	g1 := guest("Gia")
	if pg := g1.get("/c/acme/main"); !strings.Contains(pg.Body, `data-max-bytes="3145728"`) {
		t.Errorf("the guest's file field does not name their bound: %s", pg.Body)
	}
	if pg := g1.multipartPost("/c/acme/main/intake", form, map[string][]byte{"a.pdf": pdf(2), "b.pdf": pdf(2)}); pg.Status != 413 || !strings.Contains(pg.Body, "up to 3 MB") {
		t.Fatalf("4 MB from a guest with 3: %d %s", pg.Status, pg.Body)
	}
	if n := stored(); n != 0 {
		t.Fatalf("a refused form kept %d bytes", n)
	}
	if pg := g1.multipartPost("/c/acme/main/intake", form, map[string][]byte{"a.pdf": pdf(2)}); pg.Status != 303 {
		t.Fatalf("2 MB: %d %s", pg.Status, pg.Body)
	}
	if pg := g1.multipartPost("/c/acme/main/intake", form, map[string][]byte{"c.pdf": pdf(2)}); pg.Status != 413 {
		t.Fatalf("2 MB more from the same guest: %d", pg.Status)
	}
	if pg := guest("Gus").multipartPost("/c/acme/main/intake", form, map[string][]byte{"d.pdf": pdf(2)}); pg.Status != 303 {
		t.Fatalf("a second guest's 2 MB: %d %s", pg.Status, pg.Body)
	}
	if pg := guest("Gwen").multipartPost("/c/acme/main/intake", form, map[string][]byte{"e.pdf": pdf(2)}); pg.Status != 413 || !strings.Contains(pg.Body, "no more files from guests today") {
		t.Fatalf("past the clinic's day: %d %s", pg.Status, pg.Body)
	}
	// One form's files together, for anyone.
	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p2Token, "/c/acme/main", nil)
	if pg := pat.multipartPost("/c/acme/main/intake", form, map[string][]byte{"g.pdf": pdf(26), "h.pdf": pdf(26)}); pg.Status != 413 || !strings.Contains(pg.Body, "up to 50 MB together") {
		t.Fatalf("52 MB in one form: %d", pg.Status)
	}
	// A day later the clinic's guests may send again.
	f.e.Clock.Advance(25 * time.Hour)
	if pg := guest("Gil").multipartPost("/c/acme/main/intake", form, map[string][]byte{"f.pdf": pdf(2)}); pg.Status != 303 {
		t.Fatalf("the next day: %d %s", pg.Status, pg.Body)
	}
}

package web_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
	"teleclinic/internal/web"
)

// adminSignIn signs b in as the clinic admin.
func (f *fixture) adminSignIn(t *testing.T, b *browser) {
	t.Helper()
	pg := b.post("/admin/signin", url.Values{"clinic": {"acme"}, "token": {f.clinic.AdminToken}})
	if pg.Status != 303 || pg.Location != "/admin" {
		t.Fatalf("admin sign-in: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
}

// TestPortal_Admin: the admin's pages do what the API's admin routes do,
// with the same rules: rooms, providers, the webhook and its secret, the
// delivery log, the audit trail and credential rotation; nobody else gets
// in. The steps run in order on one clinic (adminScript).
func TestPortal_Admin(t *testing.T) {
	f := newFixture(t)
	c := &adminScript{f: f, b: newBrowser(t, f.e), bg: context.Background()}
	testenv.Steps(t, []testenv.Step{
		{Name: "ErrSignIn", Run: c.signInRefused},
		{Name: "ErrNotAdmin", Run: c.notAdmin},
		{Name: "OKSignIn", Run: func(t *testing.T) { f.adminSignIn(t, c.b) }},
		{Name: "OKRooms", Run: c.rooms},
		{Name: "OKWebhookAndSecret", Run: c.webhookAndSecret},
		{Name: "OKWebhookEndpoints", Run: c.endpoints},
		{Name: "OKSmartAppsAndEHRs", Run: c.smartApps},
		{Name: "OKDeliveriesAndAudit", Run: c.deliveriesAndAudit},
		{Name: "OKRoomsDay", Run: c.roomsDay},
		{Name: "OKAuditNamesPeople", Run: c.auditNames},
		{Name: "ErrCrossSite", Run: c.crossSite},
		{Name: "OKRotate", Run: c.rotate},
	})
}

// adminScript is TestPortal_Admin's clinic and the admin's browser.
type adminScript struct {
	f  *fixture
	b  *browser
	bg context.Context
}

// Sign-in needs the clinic's admin token; another clinic's code or a
// user's token is refused.
func (c *adminScript) signInRefused(t *testing.T) {
	for _, form := range []url.Values{
		{"clinic": {"acme"}, "token": {"wrong"}},
		{"clinic": {"acme"}, "token": {c.f.p1Token}},
		{"clinic": {"nope"}, "token": {c.f.clinic.AdminToken}},
	} {
		if pg := c.b.post("/admin/signin", form); pg.Status != 401 || !strings.Contains(pg.Body, "do not match") {
			t.Fatalf("%v: %d", form, pg.Status)
		}
	}
	// Signed out, the admin's pages send to the admin's sign-in, not the
	// providers' and patients'.
	for _, path := range []string{"/admin", "/admin/rooms/main"} {
		if pg := c.b.get(path); pg.Status != 303 || pg.Location != "/admin/signin" {
			t.Fatalf("%s not signed in: %d %s", path, pg.Status, pg.Location)
		}
	}
}

// A patient or provider signed in is told the page is not theirs.
func (c *adminScript) notAdmin(t *testing.T) {
	pb := newBrowser(t, c.f.e)
	c.f.redirectLogin(t, pb, c.f.providerToken, "/providers/dashboard", nil)
	for _, pg := range []*page{pb.get("/admin"), pb.get("/admin/rooms/main"), pb.post("/admin/webhook", url.Values{"url": {"https://example.com/x"}})} {
		if pg.Status != 403 {
			t.Fatalf("provider: %d", pg.Status)
		}
	}
	wh, _ := c.f.e.App.WebhookSettings(c.bg, c.f.admin(t))
	if wh.URL != "" {
		t.Fatalf("a provider's form set the webhook: %q", wh.URL)
	}
}

// Rooms: create (a taken code is 400, as POST /rooms), update, link and
// unlink a provider; the join page shows a closed room's message.
func (c *adminScript) rooms(t *testing.T) {
	pg := c.b.get("/admin")
	if pg.Status != 200 || !strings.Contains(pg.Body, "Main Room") || !strings.Contains(pg.Body, "Administration") {
		t.Fatalf("%d %s", pg.Status, pg.Body)
	}
	pg = c.b.post("/admin/rooms", url.Values{"name": {"Skin Clinic"}, "code": {"skin"}, "domain": {"acme.clinic.test"}})
	if pg.Status != 303 || pg.Location != "/admin/rooms/skin" {
		t.Fatalf("create: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	if pg := c.b.post("/admin/rooms", url.Values{"name": {"Again"}, "code": {"skin"}, "domain": {"acme.clinic.test"}}); pg.Status != 400 || !strings.Contains(pg.Body, `role="alert"`) {
		t.Fatalf("a taken code (400, as POST /rooms): %d", pg.Status)
	}
	// A room without a domain is in the clinic's.
	if pg := c.b.post("/admin/rooms", url.Values{"name": {"Travel Clinic"}, "code": {"travel"}}); pg.Status != 303 || pg.Location != "/admin/rooms/travel" {
		t.Fatalf("a room without a domain: %d %s", pg.Status, pg.Body)
	}
	acct, _ := c.f.e.App.AccountByCode(context.Background(), "acme")
	if rm, err := c.f.e.App.RoomByCode(context.Background(), app.SystemPrincipal(acct), "travel"); err != nil || rm.Domain != acct.Domain || rm.Domain == "" {
		t.Fatalf("the room's domain: %+v %v (the clinic's %q)", rm, err, acct.Domain)
	}
	pg = c.b.post("/admin/rooms/skin", url.Values{"name": {"Skin Clinic"}, "subtitle": {"Rashes and moles"}, "active": {"1"},
		"walkin": {"1"}, "is_closed": {"1"}, "close_msg": {"Back on Monday"}})
	if pg.Status != 303 {
		t.Fatalf("update: %d %s", pg.Status, pg.Body)
	}
	provider := c.f.user(t, c.f.providerToken).User
	if pg := c.b.post("/admin/rooms/skin/providers", url.Values{"user_id": {itoa(provider.ID)}}); pg.Status != 303 {
		t.Fatalf("link: %d %s", pg.Status, pg.Body)
	}
	d, err := c.f.e.App.GetRoom(c.bg, c.f.admin(t), "skin")
	if err != nil || d.Room.Settings.Subtitle != "Rashes and moles" || !d.Room.Settings.Operation.IsClosed ||
		d.Room.Settings.Operation.CloseMsg != "Back on Monday" || d.Room.Settings.GuestLogin || len(d.ProviderIDs) != 1 {
		t.Fatalf("stored room: %+v %v", d, err)
	}
	if pg := c.b.get("/admin/rooms/skin"); !strings.Contains(pg.Body, "Grace Hopper") || !strings.Contains(pg.Body, "Back on Monday") {
		t.Fatalf("room page: %s", pg.Body)
	}
	// The room's join page shows it closed, with its message.
	if pg := newBrowser(t, c.f.e).get("/c/acme/skin"); !strings.Contains(pg.Body, "Back on Monday") {
		t.Fatalf("join page of the closed room: %s", pg.Body)
	}
	if pg := c.b.post("/admin/rooms/skin/providers", url.Values{"user_id": {itoa(provider.ID)}, "unlink": {"1"}}); pg.Status != 303 {
		t.Fatalf("unlink: %d", pg.Status)
	}
	if pg := c.b.get("/admin/rooms/nope"); pg.Status != 404 {
		t.Fatalf("unknown room: %d", pg.Status)
	}
}

// The webhook's address (a bad one is 400) and a new signing secret, shown
// once.
func (c *adminScript) webhookAndSecret(t *testing.T) {
	if pg := c.b.post("/admin/webhook", url.Values{"url": {"ftp://example.com"}}); pg.Status != 400 {
		t.Fatalf("a bad URL: %d", pg.Status)
	}
	pg := c.b.post("/admin/webhook", url.Values{"url": {"https://hooks.example.com/teleclinic"}, "generate_secret": {"1"}})
	if pg.Status != 200 || !strings.Contains(pg.Body, "whsec_") || !strings.Contains(pg.Body, "not shown again") {
		t.Fatalf("%d %s", pg.Status, pg.Body)
	}
	wh, _ := c.f.e.App.WebhookSettings(c.bg, c.f.admin(t))
	if wh.URL != "https://hooks.example.com/teleclinic" || !wh.SecretSet {
		t.Fatalf("stored: %+v", wh)
	}
	if pg := c.b.get("/admin"); strings.Contains(pg.Body, "whsec_") {
		t.Fatal("the secret is shown again")
	}
}

// The delivery log with a redelivery, and the audit trail filtered.
func (c *adminScript) deliveriesAndAudit(t *testing.T) {
	msg := "A new symptom."
	if _, err := c.f.e.App.PostMessage(c.bg, c.f.user(t, c.f.p1Token), c.f.visitID, app.NewMessage{Content: &msg}); err != nil {
		t.Fatal(err)
	}
	ds, err := c.f.e.App.WebhookDeliveries(c.bg, c.f.admin(t), 0, 1)
	if err != nil || len(ds.Items) != 1 {
		t.Fatalf("%v %v", ds, err)
	}
	pg := c.b.get("/admin")
	if !strings.Contains(pg.Body, `id="delivery-`+itoa(ds.Items[0].ID)+`"`) || !strings.Contains(pg.Body, "visit.message.created") {
		t.Fatalf("delivery log: %s", pg.Body)
	}
	if pg := c.b.post("/admin/deliveries/"+itoa(ds.Items[0].ID)+"/redeliver", nil); pg.Status != 303 {
		t.Fatalf("redeliver: %d %s", pg.Status, pg.Body)
	}
	if pg := c.b.post("/admin/deliveries/999999/redeliver", nil); pg.Status != 404 {
		t.Fatalf("unknown delivery: %d", pg.Status)
	}
	c.f.e.FlushAudits()
	pg = c.b.get("/admin?action=webhook.redeliver")
	if !strings.Contains(pg.Body, "webhook.redeliver") || strings.Contains(pg.Body, "room.create") {
		t.Fatalf("filtered trail: %s", pg.Body)
	}
	if pg := c.b.get("/admin?user_id=abc"); pg.Status != 200 || !strings.Contains(pg.Body, "must be a user id") {
		t.Fatalf("bad filter: %d", pg.Status)
	}
}

// The room's price, hours, appointment rules and wait alert are set from
// its page, as PUT /rooms/{code} sets them; a bad reminder list is shown
// in words and changes nothing.
func (c *adminScript) roomsDay(t *testing.T) {
	form := url.Values{"name": {"Main Room"}, "active": {"1"}, "walkin": {"1"}, "appointments": {"1"},
		"price": {"30"}, "currency": {"eur"}, "minutes": {"20"},
		"open_time": {"08:00"}, "close_time": {"18:00"}, "timezone": {"America/New_York"}, "closed_days": {"saturday", "sunday"},
		"join_before": {"5"}, "cancel_hours": {"12"}, "refund_percent": {"50"}, "reminders": {"60, 10"}, "wait_alert": {"7"}, "queue_capacity": {"20"}}
	if pg := c.b.post("/admin/rooms/main", form); pg.Status != 303 {
		t.Fatalf("save: %d %s", pg.Status, pg.Body)
	}
	d, err := c.f.e.App.GetRoom(c.bg, c.f.admin(t), "main")
	if err != nil {
		t.Fatal(err)
	}
	st := d.Room.Settings
	rules := st.AppointmentRules()
	type got struct {
		Price                          float64
		Charge                         bool
		Currency                       string
		Minutes                        int
		Open, Close, Zone              string
		Closed                         []string
		Join, Cancel, Refund, Wait, Qc int
		Reminders                      []int
	}
	want := got{30, true, "EUR", 20, "08:00", "18:00", "America/New_York", []string{"saturday", "sunday"}, 5, 12, 50, 7, 20, []int{60, 10}}
	have := got{st.Consultations[0].Amount, st.Consultations[0].Charge, st.Currency, st.Consultations[0].Duration, st.Operation.OpenTime, st.Operation.CloseTime,
		st.Operation.Timezone, st.Operation.ClosedDays, rules.JoinBeforeMinutes, rules.CancelHours, rules.RefundPercent, st.WaitAlertMinutes, st.QueueCapacity, rules.ReminderMinutes}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Fatalf("the room after the form (-want +got):\n%s", diff)
	}
	if pg := c.b.get("/admin/rooms/main"); !strings.Contains(pg.Body, `value="60, 10"`) || !strings.Contains(pg.Body, `name="closed_days" value="sunday" checked`) {
		t.Errorf("the form does not show what is set: %s", pg.Body)
	}
	// Refused fields are drawn again as typed, each with its reason beside
	// it, the other fields as sent; nothing is saved.
	form.Set("reminders", "soon")
	form.Set("price", "twenty")
	form.Set("subtitle", "Typed before the mistake")
	pg := c.b.post("/admin/rooms/main", form)
	for _, want := range []string{`id="reminders-error">Reminders are minutes`, `id="price-error">The price is an amount`,
		`name="reminders" value="soon" aria-invalid="true"`, `name="price" value="twenty" inputmode="decimal" aria-invalid="true"`,
		`value="Typed before the mistake"`, `The room was not saved`} {
		if pg.Status != 400 || !strings.Contains(pg.Body, want) {
			t.Fatalf("a refused form: %d, no %q in %s", pg.Status, want, pg.Body)
		}
	}
	if d, err := c.f.e.App.GetRoom(c.bg, c.f.admin(t), "main"); err != nil || d.Room.Settings.Subtitle == "Typed before the mistake" || d.Room.Settings.Consultations[0].Amount != 30 {
		t.Fatalf("a refused form changed the room: %+v %v", d, err)
	}
	form.Set("price", "30")
	form.Del("subtitle")
	// Free again, for the steps after.
	form.Set("reminders", "")
	form.Set("price", "0")
	if pg := c.b.post("/admin/rooms/main", form); pg.Status != 303 {
		t.Fatalf("save: %d %s", pg.Status, pg.Body)
	}
}

// The audit trail names people, not credentials and numbers.
func (c *adminScript) auditNames(t *testing.T) {
	if _, err := c.f.e.App.GetVisit(c.bg, c.f.user(t, c.f.providerToken), c.f.visitID, false); err != nil {
		t.Fatal(err)
	}
	c.f.e.FlushAudits()
	pg := c.b.get("/admin?action=visit.read")
	if !strings.Contains(pg.Body, "<td>Grace Hopper</td>") || strings.Contains(pg.Body, "user_token") {
		t.Fatalf("the trail's who: %s", pg.Body)
	}
	// By default the trail shows what was changed, saying its zone; the
	// reads every page view adds are shown when asked for.
	if sec := section(c.b.get("/admin").Body, "audit"); strings.Contains(sec, ".read</td>") || !strings.Contains(sec, "reads and lists (every page view adds them) are left out") ||
		!strings.Contains(sec, "Times are in UTC") {
		t.Fatalf("the default trail: %s", sec)
	}
	if sec := section(c.b.get("/admin?reads=1").Body, "audit"); !strings.Contains(sec, "<td>visit.read</td>") && !strings.Contains(sec, ".read</td>") {
		t.Fatalf("the trail with reads: %s", sec)
	}
}

// A cross-site form is refused before it does anything.
func (c *adminScript) crossSite(t *testing.T) {
	pg := c.b.do("POST", "/admin/rotate", url.Values{"what": {"api_secret"}}, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if pg.Status != 403 {
		t.Fatalf("cross-site: %d", pg.Status)
	}
}

// Rotating the API secret and the admin token: the old ones stop working,
// and the session opened with the old token ends.
func (c *adminScript) rotate(t *testing.T) {
	pg := c.b.post("/admin/rotate", url.Values{"what": {"api_secret"}})
	if pg.Status != 200 || !strings.Contains(pg.Body, "API secret") {
		t.Fatalf("%d %s", pg.Status, pg.Body)
	}
	if _, err := c.f.e.App.Authenticate(c.bg, app.Credentials{AccountCode: "acme", APIKey: c.f.clinic.APIKey, APISecret: c.f.clinic.APISecret}, app.NeedAPIKey); err == nil {
		t.Fatal("the old API secret still works")
	}
	pg = c.b.post("/admin/rotate", url.Values{"what": {"admin_token"}})
	if pg.Status != 200 || !strings.Contains(pg.Body, "not shown again") {
		t.Fatalf("%d %s", pg.Status, pg.Body)
	}
	if _, err := c.f.e.App.Authenticate(c.bg, app.Credentials{AccountCode: "acme", APIToken: c.f.clinic.AdminToken}, app.NeedAdmin); clinic.ErrorCode(err) != clinic.EUnauthenticated {
		t.Fatalf("the old admin token: %v", err)
	}
	// The session opened with the old token has ended.
	if pg := c.b.get("/admin"); pg.Status != 303 {
		t.Fatalf("after rotation: %d", pg.Status)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestPortal_Chart: a provider's chart of a patient they see shows the
// record parts, each as its API read gives it to them; a patient they do
// not see has no chart for them, and a patient has none at all.
func TestPortal_Chart(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	p1 := f.user(t, f.p1Token)
	prov := f.user(t, f.providerToken)
	f.accept(t)
	if _, err := f.e.App.PutEMR(bg, p1, p1.User.ID, "allergies", []any{map[string]any{"substance": "Penicillin"}}, true, new(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.SaveInsuranceCard(bg, p1, p1.User.ID, "primary", map[string]any{"insurer_code": "AETNA", "subscriber_number": "W123456789"}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	pg := b.get("/providers/patient/" + itoa(p1.User.ID))
	for _, want := range []string{"Ada Lovelace", "Penicillin", "/visits/start/" + itoa(f.visitID),
		"Only the patient or the clinic admin may see or change a patient&#39;s insurance."} {
		if !strings.Contains(pg.Body, want) {
			t.Fatalf("chart %d lacks %q: %s", pg.Status, want, pg.Body)
		}
	}
	// Insurance is the patient's and the admin's (spec: Insurance): the
	// chart says so instead of showing the card.
	if strings.Contains(pg.Body, "W123456789") {
		t.Fatal("the chart shows the patient's insurance card to a provider")
	}
	// The dashboard links the chart.
	if pg := b.get("/providers/dashboard"); !strings.Contains(pg.Body, "/providers/patient/"+itoa(p1.User.ID)) {
		t.Fatal("no chart link on the dashboard")
	}
	// A patient the provider has no visit with: as GET /users/{id}.
	p2 := f.user(t, f.p2Token)
	_, apiErr := f.e.App.GetUser(bg, prov, p2.User.ID, "")
	want := map[string]int{clinic.EForbidden: 403, clinic.ENotFound: 404}[clinic.ErrorCode(apiErr)]
	if pg := b.get("/providers/patient/" + itoa(p2.User.ID)); want == 0 || pg.Status != want || strings.Contains(pg.Body, "Mallory") {
		t.Fatalf("another patient's chart: %d (API: %v)", pg.Status, apiErr)
	}
	if pg := b.get("/providers/patient/abc"); pg.Status != 404 {
		t.Fatalf("not an id: %d", pg.Status)
	}
	pb := newBrowser(t, f.e)
	f.redirectLogin(t, pb, f.p2Token, "/visits", nil)
	if pg := pb.get("/providers/patient/" + itoa(p1.User.ID)); pg.Status != 403 || strings.Contains(pg.Body, "Penicillin") {
		t.Fatalf("a patient opens a chart: %d", pg.Status)
	}
}

// TestPortal_ChartVisitPages: a chart lists its patient's visits the
// provider sees, 50 at a time (Older visits, Latest visits), each once,
// however many other visits the provider has: the chart used to cut the
// provider's 500 newest visits down to the patient's, so a patient whose
// visits were older than the provider's last 500 had none on their chart.
func TestPortal_ChartVisitPages(t *testing.T) {
	f := newFixture(t)
	p1, p2, prov := f.user(t, f.p1Token), f.user(t, f.p2Token), f.user(t, f.providerToken)
	f.accept(t)
	// 60 older visits of the first patient's with the provider, then 600
	// newer ones of the other patient's.
	db := f.e.Store.DB()
	room := f.mainRoom(t)
	now := f.e.Clock.Now().Unix()
	for i := range 660 {
		member := p1.User.ID
		if i >= 60 {
			member = p2.User.ID
		}
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, ?, ?, 30, 1, 'appointment', ?, ?)`), p1.Account.ID, member, prov.User.ID, room, now, now); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	seen := map[string]int{}
	page := b.get("/providers/patient/" + itoa(p1.User.ID))
	for pages := 0; ; pages++ {
		if page.Status != 200 || pages > 3 {
			t.Fatalf("chart page %d: %d", pages, page.Status)
		}
		_, sec, _ := strings.Cut(page.Body, `<h2 id="visits-h">`)
		sec, _, _ = strings.Cut(sec, "</section>")
		for _, m := range regexp.MustCompile(`<a href="/visits/start/(\d+)">`).FindAllStringSubmatch(sec, -1) {
			seen[m[1]]++
		}
		if pages > 0 && !strings.Contains(sec, `href="/providers/patient/`+itoa(p1.User.ID)+`#visits-h">Latest visits`) {
			t.Fatal("a later page of the chart's visits has no way back to the latest")
		}
		more := regexp.MustCompile(`href="(/providers/patient/\d+\?visits_after=\d+)#visits-h">Older visits`).FindStringSubmatch(sec)
		if more == nil {
			break
		}
		page = b.get(more[1])
	}
	// The fixture's e-consult and the 60.
	if len(seen) != 61 || seen[itoa(f.visitID)] != 1 {
		t.Fatalf("the chart's pages showed %d visits, want 61 (the e-consult %d: %d)", len(seen), f.visitID, seen[itoa(f.visitID)])
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("visit %s on %d pages", id, n)
		}
	}
}

// TestPortal_ChartReadingPages: a chart shows its patient's device readings
// 50 at a time, the latest first (Earlier readings, Latest readings), each
// once even where many share a time: it used to show the latest 50 and no
// way to the rest.
func TestPortal_ChartReadingPages(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	p1 := f.user(t, f.p1Token)
	f.accept(t)
	now := f.e.Clock.Now().Unix()
	for i := range 120 {
		at := now - int64(i)*60
		if i%3 == 0 {
			at = now - 3600 // a third at one time
		}
		if err := f.e.Store.Write().AddReading(bg, p1.Account.ID, &clinic.Reading{UserID: p1.User.ID, DeviceID: "HR-1", Type: "vendorC_health",
			DataType: "hr", DataClass: "body", Date: "2026-03-02", Time: at, Values: map[string]any{"hr": 1000 + i}, Created: now}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	seen := map[string]int{}
	page := b.get("/providers/patient/" + itoa(p1.User.ID))
	var sizes []int
	for pages := 0; ; pages++ {
		if page.Status != 200 || pages > 4 {
			t.Fatalf("chart page %d: %d", pages, page.Status)
		}
		sec := between(page.Body, `<h2 id="readings-h">`, "</section>")
		values := regexp.MustCompile(`<td>[^<]*\b(1\d\d\d)</td>`).FindAllStringSubmatch(sec, -1)
		sizes = append(sizes, len(values))
		for _, m := range values {
			seen[m[1]]++
		}
		if pages > 0 && !strings.Contains(sec, `href="/providers/patient/`+itoa(p1.User.ID)+`#readings-h">Latest readings`) {
			t.Fatal("an earlier page of the chart's readings has no way back to the latest")
		}
		more := regexp.MustCompile(`href="(/providers/patient/\d+\?readings_before=\d+)#readings-h">Earlier readings`).FindStringSubmatch(sec)
		if more == nil {
			break
		}
		page = b.get(more[1])
	}
	if len(seen) != 120 || fmt.Sprint(sizes) != "[50 50 20]" {
		t.Fatalf("the chart's pages showed %d readings in pages of %v, want 120 in 50, 50, 20", len(seen), sizes)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("reading %s on %d pages", v, n)
		}
	}
}

// TestPortal_PageStreams: a visit page's event stream tells the page of a
// new message with "changed", refuses whoever may not see the visit as the
// page does, and ends with "ended" at the keep-alive after sign-out.
func TestPortal_PageStreams(t *testing.T) {
	f := newFixture(t, testenv.Options{KeepAlive: 100 * time.Millisecond})
	bg := context.Background()
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, f.visitPath(), nil)
	st := b.stream(t, f.visitPath()+"/events?last_event_id=1", nil)
	if st.Status != 200 || st.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", st.Status, st.Header.Get("Content-Type"))
	}
	next := func() string { t.Helper(); return st.Next(t).Name }
	msg := "Any news?"
	if _, err := f.e.App.PostMessage(bg, f.user(t, f.p1Token), f.visitID, app.NewMessage{Content: &msg}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != "changed" {
		t.Fatalf("after a message: %q", e)
	}
	// The second patient's stream is the page's refusal.
	b2 := newBrowser(t, f.e)
	f.redirectLogin(t, b2, f.p2Token, "/visits", nil)
	if pg := b2.get(f.visitPath() + "/events"); pg.Status != 404 || strings.Contains(pg.Body, "Any news") {
		t.Fatalf("another patient's stream: %d", pg.Status)
	}
	if pg := b.post("/signout", nil); pg.Status != 303 {
		t.Fatalf("sign out: %d", pg.Status)
	}
	if e := next(); e != "ended" {
		t.Fatalf("after sign-out: %q", e)
	}
}

// TestPortal_AdminSigninThrottled: wrong admin tokens are counted per
// clinic code from an address, and per address; past the bound a wrong
// token waits (429, Retry-After) until the window passes, while the right
// token, which cannot be guessed, signs in at once.
func TestPortal_AdminSigninThrottled(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.e)
	wrong := url.Values{"clinic": {"acme"}, "token": {"not-the-token"}}
	for i := range 10 {
		if pg := b.post("/admin/signin", wrong); pg.Status != 401 {
			t.Fatalf("wrong token %d: %d", i+1, pg.Status)
		}
	}
	if pg := b.post("/admin/signin", wrong); pg.Status != 429 || pg.Header.Get("Retry-After") == "" {
		t.Fatalf("after 10 wrong tokens: %d (Retry-After %q)", pg.Status, pg.Header.Get("Retry-After"))
	}
	f.adminSignIn(t, b)
	f.e.Clock.Advance(16 * time.Minute)
	if pg := b.post("/admin/signin", wrong); pg.Status != 401 {
		t.Fatalf("a wrong token after the window: %d", pg.Status)
	}
}

// TestPortal_AdminProviderPages: /admin lists the clinic's providers and
// a room's page the room's by name a page at a time (More …, First
// providers), and a room's "Add a provider" offers the first ones by name
// with a search for the others, so a clinic of hundreds of providers can
// link any of them and see every one linked.
func TestPortal_AdminProviderPages(t *testing.T) {
	f := newFixture(t)
	n := web.AdminRoomChoices + 110 // more than a list of users gives at once (200)
	var tokens []string
	for i := range n {
		tokens = append(tokens, f.sso(t, clinic.UserProvider, fmt.Sprintf("prov-%03d", i), "Zed", fmt.Sprintf("Provider %03d", i)))
	}
	b := newBrowser(t, f.e)
	f.adminSignIn(t, b)
	// Grace Hopper (the fixture's) first, then Zed Provider 000…
	seen := map[string]bool{}
	page := b.get("/admin")
	for range 5 {
		if page.Status != 200 {
			t.Fatalf("admin: %d", page.Status)
		}
		// The providers' section only: the audit trail names them too.
		_, section, _ := strings.Cut(page.Body, `<h2 id="providers">`)
		section, _, _ = strings.Cut(section, "</section>")
		for _, m := range regexp.MustCompile(`<li id="provider-\d+">Zed Provider (\d{3})`).FindAllStringSubmatch(section, -1) {
			if seen[m[1]] {
				t.Fatalf("provider %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		more := regexp.MustCompile(`href="(/admin\?providers_after=\d+)#providers"`).FindStringSubmatch(page.Body)
		if more == nil {
			break
		}
		page = b.get(more[1])
		if !strings.Contains(page.Body, `href="/admin#providers">First providers`) {
			t.Fatal("a later page has no way back to the first")
		}
	}
	if len(seen) != n {
		t.Fatalf("the pages showed %d of %d providers", len(seen), n)
	}

	choices := func(body string) int {
		_, sel, _ := strings.Cut(body, `<select id="user_id"`)
		sel, _, _ = strings.Cut(sel, "</select>")
		return strings.Count(sel, "<option ")
	}
	room := b.get("/admin/rooms/main")
	if got := choices(room.Body); got == 0 || got > web.AdminRoomChoices || !strings.Contains(room.Body, `name="find"`) {
		t.Fatalf("the room page offers %d providers, search form: %v", got, strings.Contains(room.Body, `name="find"`))
	}
	last := fmt.Sprintf("prov-%03d", n-1)
	if strings.Contains(room.Body, fmt.Sprintf("Provider %03d", n-1)) {
		t.Fatalf("the last provider (%s) should need a search", last)
	}
	found := b.get("/admin/rooms/main?find=" + url.QueryEscape(fmt.Sprintf("Provider %03d", n-1)))
	m := regexp.MustCompile(`<option value="(\d+)">Zed Provider ` + fmt.Sprintf("%03d", n-1)).FindStringSubmatch(found.Body)
	if found.Status != 200 || m == nil || choices(found.Body) != 1 {
		t.Fatalf("the search: %d %s", found.Status, found.Body)
	}
	if pg := b.post("/admin/rooms/main/providers", url.Values{"user_id": {m[1]}}); pg.Status != 303 {
		t.Fatalf("link the found provider: %d", pg.Status)
	}
	if pg := b.get("/admin/rooms/main"); !strings.Contains(pg.Body, fmt.Sprintf("Zed Provider %03d", n-1)) {
		t.Fatal("the linked provider is not on the room's page")
	}
	if pg := b.get("/admin/rooms/main?find=nobody-at-all"); !strings.Contains(pg.Body, "No other provider matches") {
		t.Fatal("a search that finds nobody says so")
	}
	// Too short to search: the page says so and offers the first
	// providers, as without a search.
	if pg := b.get("/admin/rooms/main?find=ab"); pg.Status != 200 || !strings.Contains(pg.Body, "Type at least 3 letters") ||
		choices(pg.Body) != choices(room.Body) || strings.Contains(pg.Body, "No other provider matches") {
		t.Fatalf("a short search: %d, %d choices", pg.Status, choices(pg.Body))
	}
	if pg := b.get("/admin?providers_after=999999"); pg.Status != 200 || !strings.Contains(pg.Body, "Grace Hopper") {
		t.Fatalf("an unknown place starts over: %d", pg.Status)
	}

	// A room with more providers than a page shows them all, a page at
	// a time (More of the room's providers, First providers), each once.
	for _, tok := range tokens[:205] {
		if _, err := f.e.App.LinkRoom(context.Background(), f.admin(t), f.user(t, tok).User.ID, "main", false); err != nil {
			t.Fatal(err)
		}
	}
	linked := map[string]int{}
	page = b.get("/admin/rooms/main")
	for pages := 0; ; pages++ {
		_, sec, _ := strings.Cut(page.Body, `<h2 id="providers">`)
		sec, _, _ = strings.Cut(sec, "</ul>")
		if page.Status != 200 || pages > 5 {
			t.Fatalf("the room's providers, page %d: %d", pages, page.Status)
		}
		for _, m := range regexp.MustCompile(`<li>([^<]+) <span class="muted">`).FindAllStringSubmatch(sec, -1) {
			linked[m[1]]++
		}
		more := regexp.MustCompile(`href="(/admin/rooms/main\?linked_after=\d+)#providers">More of the room`).FindStringSubmatch(page.Body)
		if more == nil {
			break
		}
		page = b.get(more[1])
		if !strings.Contains(page.Body, `href="/admin/rooms/main#providers">First providers`) {
			t.Fatal("a later page of the room's providers has no way back to the first")
		}
	}
	// Grace Hopper, the last provider (found and linked above) and the
	// first 205.
	if len(linked) != 207 {
		t.Fatalf("the room's pages showed %d providers, want 207", len(linked))
	}
	for name, k := range linked {
		if k != 1 {
			t.Fatalf("%s on %d pages", name, k)
		}
	}
}

// TestPortal_AdminPaymentAndAuditPages: /admin shows the payments (with
// their patients), the webhook deliveries and the audit trail a page at a
// time, newest first: Older … moves back, Latest … returns, the pages
// together are every payment, delivery and matching entry once, and
// the audit's pages keep its filter. A payment too old for the first page
// can still be refunded from its own. An unknown place starts over.
func TestPortal_AdminPaymentAndAuditPages(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p1, admin := f.user(t, f.p1Token), f.admin(t)
	reason := "A rash"
	it, err := f.e.App.CreateIntake(ctx, p1, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	if err != nil {
		t.Fatal(err)
	}
	// 25 payments of the patient's, oldest first: the first paid (and so
	// refundable), the others declined.
	now := f.e.Clock.Now().Unix()
	var ids []int64
	for i := range 25 {
		inv := &clinic.Invoice{IntakeID: it.ID, MemberID: p1.User.ID, RoomID: it.RoomID, Processor: "sandbox", Consultation: []byte("{}"),
			Currency: "USD", Amount: 2500, AmountDue: 2500, Status: "failed", Created: now + int64(i), Modified: now + int64(i)}
		if i == 0 {
			inv.Status, inv.ChargeRef = "paid", "pi_sbx_first"
		}
		if err := f.e.Store.Write().CreateInvoice(ctx, admin.Account.ID, inv); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // the charge reference is set when the charge ends
			if err := f.e.Store.Write().FinishInvoice(ctx, admin.Account.ID, inv, "paid"); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, inv.ID)
	}
	// 25 messages announced to the clinic's webhook: 25 deliveries.
	if err := f.e.App.SetWebhookURL(ctx, "acme", "https://hooks.example.com/tc"); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		msg := fmt.Sprintf("Note %d.", i)
		if _, err := f.e.App.PostMessage(ctx, p1, f.visitID, app.NewMessage{Content: &msg}); err != nil {
			t.Fatal(err)
		}
	}
	// 60 reads of the patient's profile by the admin, each audited.
	for range 60 {
		if _, err := f.e.App.GetUser(ctx, admin, p1.User.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	f.e.FlushAudits()

	b := newBrowser(t, f.e)
	f.adminSignIn(t, b)
	rowID := regexp.MustCompile(`<tr id="payment-(\d+)"><td>[^<]*</td><td>Ada Lovelace</td>`)
	var shown []int64
	page, first := b.get("/admin"), ""
	for n := 0; ; n++ {
		sec := section(page.Body, "payments")
		if page.Status != 200 || n > 3 {
			t.Fatalf("payments page %d: %d", n, page.Status)
		}
		for _, m := range rowID.FindAllStringSubmatch(sec, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			shown = append(shown, id)
		}
		if n == 0 {
			first = sec
		} else if !strings.Contains(sec, `href="/admin#payments">Latest payments`) {
			t.Fatal("a later page of payments has no way back to the latest")
		}
		more := regexp.MustCompile(`href="(/admin\?payments_before=\d+)#payments">Older payments`).FindStringSubmatch(sec)
		if more == nil {
			break
		}
		page = b.get(more[1])
	}
	if len(shown) != 25 {
		t.Fatalf("the pages showed %d payments: %v", len(shown), shown)
	}
	for i, id := range shown {
		if id != ids[24-i] {
			t.Fatalf("payment %d: %d, want %d (newest first, each once)", i, id, ids[24-i])
		}
	}
	refund := fmt.Sprintf(`id="refund-%d"`, ids[0])
	if strings.Contains(first, refund) || !strings.Contains(section(page.Body, "payments"), refund) {
		t.Fatal("the oldest payment's refund should be on the last page only")
	}
	// Refunded from there, the admin is brought back to that page.
	before := regexp.MustCompile(`name="payments_before" value="(\d+)"`).FindStringSubmatch(section(page.Body, "payments"))
	if before == nil {
		t.Fatal("the refund form does not say which page it is on")
	}
	done := b.post(fmt.Sprintf("/admin/payments/%d/refund", ids[0]), url.Values{"payments_before": {before[1]}})
	if done.Status != 303 || !strings.Contains(done.Location, "payments_before="+before[1]) {
		t.Fatalf("refund: %d %s", done.Status, done.Location)
	}
	if back := b.get(done.Location); !strings.Contains(back.Body, "The payment was refunded") || !strings.Contains(back.Body, "(25.00 USD back)") {
		t.Fatalf("the page after the refund: %s", section(back.Body, "payments"))
	}

	// The deliveries' pages: each delivery once.
	deliveries := map[string]int{}
	page = b.get("/admin")
	for n := 0; ; n++ {
		sec := section(page.Body, "deliveries")
		if page.Status != 200 || n > 3 {
			t.Fatalf("deliveries page %d: %d", n, page.Status)
		}
		for _, m := range regexp.MustCompile(`<tr id="delivery-(\d+)">`).FindAllStringSubmatch(sec, -1) {
			deliveries[m[1]]++
		}
		if n > 0 && !strings.Contains(sec, `href="/admin#deliveries">Latest deliveries`) {
			t.Fatal("a later page of deliveries has no way back to the latest")
		}
		more := regexp.MustCompile(`href="(/admin\?deliveries_before=\d+)#deliveries">Older deliveries`).FindStringSubmatch(sec)
		if more == nil {
			break
		}
		page = b.get(more[1])
	}
	if len(deliveries) != 25 {
		t.Fatalf("the deliveries' pages showed %d of 25", len(deliveries))
	}
	for id, k := range deliveries {
		if k != 1 {
			t.Fatalf("delivery %s on %d pages", id, k)
		}
	}

	// The audit trail's pages under a filter keep it.
	rows := func(body string) int { return strings.Count(section(body, "audit"), "<tr><td>") }
	page = b.get("/admin?action=user.read#audit")
	total := 0
	for n := 0; ; n++ {
		if page.Status != 200 || n > 3 {
			t.Fatalf("audit page %d: %d", n, page.Status)
		}
		total += rows(page.Body)
		sec := section(page.Body, "audit")
		if strings.Count(sec, "<td>user.read</td>") != rows(page.Body) {
			t.Fatalf("audit page %d holds entries the filter leaves out", n)
		}
		if n > 0 && !strings.Contains(sec, `href="/admin?action=user.read#audit">Latest entries`) {
			t.Fatalf("a later page of the trail has no way back to the latest: %s", sec)
		}
		more := regexp.MustCompile(`href="(/admin\?action=user\.read&amp;audit_after=\d+)#audit">Older entries`).FindStringSubmatch(sec)
		if more == nil {
			break
		}
		page = b.get(strings.ReplaceAll(more[1], "&amp;", "&"))
	}
	if total != 60 {
		t.Fatalf("the trail's pages showed %d of 60 user.read entries", total)
	}
	for _, path := range []string{"/admin?payments_before=1", "/admin?audit_after=999999999", "/admin?payments_before=x&audit_after=y"} {
		if pg := b.get(path); pg.Status != 200 || !strings.Contains(pg.Body, `<h2 id="audit">`) {
			t.Fatalf("%s: %d", path, pg.Status)
		}
	}
}

// /admin lists the clinic's rooms by name, 50 at a time: a clinic of 120
// rooms reaches each once, and the invitation form, which lists the rooms
// of the page shown, checks none of them when they are not all the rooms.
func TestPortal_AdminRoomPages(t *testing.T) {
	f := newFixture(t)
	main := f.mainRoom(t)
	db := f.e.Store.DB()
	for i := range 119 {
		code := fmt.Sprintf("r-%03d", i)
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO rooms (account_id, code, slug, name, domain, active, settings, created, modified)
			SELECT account_id, ?, ?, ?, domain, 1, '{}', 1, 1 FROM rooms WHERE id = ?`), code, code, fmt.Sprintf("Room %03d", 118-i), main); err != nil {
			t.Fatal(err)
		}
	}
	var total int
	if err := db.QueryRow(f.e.Store.Rebind("SELECT COUNT(*) FROM rooms WHERE account_id = (SELECT account_id FROM rooms WHERE id = ?)"), main).Scan(&total); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.e)
	f.adminSignIn(t, b)
	seen := map[string]bool{}
	var names []string
	page := b.get("/admin")
	for n := 0; ; n++ {
		if page.Status != 200 || n > 5 {
			t.Fatalf("admin, rooms page %d: %d", n+1, page.Status)
		}
		_, section, _ := strings.Cut(page.Body, `<h2 id="rooms">`)
		section, _, _ = strings.Cut(section, "</section>")
		links := regexp.MustCompile(`<a href="/admin/rooms/([^"]+)">([^<]+)</a>`).FindAllStringSubmatch(section, -1)
		if len(links) > 50 {
			t.Fatalf("page %d lists %d rooms", n+1, len(links))
		}
		for _, m := range links {
			if seen[m[1]] {
				t.Fatalf("room %s on two pages", m[1])
			}
			seen[m[1]], names = true, append(names, m[2])
		}
		// The invitation offers this page's rooms, none checked.
		_, form, _ := strings.Cut(page.Body, "<legend>Rooms they see</legend>")
		form, _, _ = strings.Cut(form, "</fieldset>")
		if got := strings.Count(form, `type="checkbox"`); got != len(links) || strings.Contains(form, " checked") {
			t.Fatalf("page %d: the invitation lists %d rooms (checked: %v), the page %d", n+1, got, strings.Contains(form, " checked"), len(links))
		}
		more := regexp.MustCompile(`href="(/admin\?rooms_page=\d+)#rooms">More rooms`).FindStringSubmatch(page.Body)
		if more == nil {
			break
		}
		page = b.get(more[1])
		if !strings.Contains(page.Body, "#rooms\">Earlier rooms") {
			t.Fatal("a later page has no way back")
		}
	}
	if len(seen) != total || !slices.IsSortedFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) }) {
		t.Fatalf("the pages showed %d of %d rooms, by name: %v", len(seen), total, names)
	}
}

// The chart shows a patient's files and prescriptions 20 at a time, newest
// first, with Earlier and Latest links: 45 of each are all reached, once.
func TestPortal_ChartFileAndPrescriptionPages(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	p1, prov := f.user(t, f.p1Token), f.user(t, f.providerToken)
	f.accept(t)
	now := f.e.Clock.Now().Unix()
	for i := range 45 {
		if err := f.e.Store.Write().CreatePrescription(bg, p1.Account.ID, &clinic.Prescription{UserID: p1.User.ID, PrescriberID: prov.User.ID,
			Drug: fmt.Sprintf("Drug %03d", i), Directions: "Once a day", Qty: 30, Status: app.RxCurrent, Created: now, Modified: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.e.Store.DB().Exec(f.e.Store.Rebind(`INSERT INTO files (account_id, creator_user_id, category, target_type, target_id, name, size, ext, created, content_type)
			VALUES (?, ?, 'user_document', 'user', ?, ?, 4, 'txt', ?, 'text/plain')`), p1.Account.ID, p1.User.ID, p1.User.ID, fmt.Sprintf("scan-%03d.txt", i), now); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	chart := "/providers/patient/" + itoa(p1.User.ID)
	for _, sec := range []struct{ id, param, label, item string }{
		{"files-h", "files_before", "files", `>(scan-\d{3})\.txt</a>`},
		{"rx-h", "rx_before", "prescriptions", `<strong>(Drug \d{3})</strong>`},
	} {
		var shown []string
		var sizes []int
		page := b.get(chart)
		for pages := 0; ; pages++ {
			if page.Status != 200 || pages > 4 {
				t.Fatalf("%s, chart page %d: %d", sec.label, pages, page.Status)
			}
			body := between(page.Body, `<h2 id="`+sec.id+`">`, "</section>")
			items := regexp.MustCompile(sec.item).FindAllStringSubmatch(body, -1)
			sizes = append(sizes, len(items))
			for _, m := range items {
				shown = append(shown, m[1])
			}
			if pages > 0 && !strings.Contains(body, `href="`+chart+`#`+sec.id+`">Latest `+sec.label) {
				t.Fatalf("an earlier page of the chart's %s has no way back to the latest", sec.label)
			}
			more := regexp.MustCompile(`href="(/providers/patient/\d+\?` + sec.param + `=\d+)#` + sec.id + `">Earlier ` + sec.label).FindStringSubmatch(body)
			if more == nil {
				break
			}
			page = b.get(more[1])
		}
		if fmt.Sprint(sizes) != "[20 20 5]" || len(shown) != 45 || !slices.IsSortedFunc(shown, func(a, b string) int { return strings.Compare(b, a) }) || len(slices.Compact(slices.Clone(shown))) != 45 {
			t.Fatalf("the chart's %s in pages of %v: %v, want 45, newest first, each once", sec.label, sizes, shown)
		}
	}
}

// section is the part of a page's body in the section headed id.
func section(body, id string) string {
	_, sec, _ := strings.Cut(body, `<h2 id="`+id+`">`)
	sec, _, _ = strings.Cut(sec, "</section>")
	return sec
}

// TestPortal_AdminDeactivatesProvider: the admin deactivates a provider
// who leaves: every login of theirs ends at once (the portal's and the
// API's), their open slots ahead are removed so nobody books them, their
// visit stays with its note and thread, and the page says what was done
// and what is left to hand over. Reactivated, they sign in again.
func TestPortal_AdminDeactivatesProvider(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	prov := f.user(t, f.providerToken)
	day := f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02")
	if _, _, err := f.e.App.CreateSlots(bg, prov, app.SlotGroupInput{RoomCode: "main", DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.MoveVisit(bg, prov, f.visitID, app.ActAccept, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
	pb := newBrowser(t, f.e)
	f.redirectLogin(t, pb, f.providerToken, "/providers/dashboard", nil)
	admin := newBrowser(t, f.e)
	f.adminSignIn(t, admin)
	id := strconv.FormatInt(prov.User.ID, 10)
	if pg := admin.get("/admin"); !strings.Contains(pg.Body, `id="deactivate-`+id+`"`) {
		t.Fatal("no Deactivate button for the provider")
	}
	pg := admin.post("/admin/providers/"+id+"/deactivate", nil)
	if pg.Status != 200 || !strings.Contains(pg.Body, "Grace Hopper is deactivated: signed out everywhere, unable to sign in, with 2 open slots ahead removed.") ||
		!strings.Contains(pg.Body, "1 of their visits are still open") || !strings.Contains(pg.Body, `id="reactivate-`+id+`"`) {
		t.Fatalf("deactivate: %d\n%s", pg.Status, pg.Body)
	}
	if pg := pb.get("/providers/dashboard"); pg.Status != 303 || !strings.HasPrefix(pg.Location, "/signin") {
		t.Fatalf("the provider's portal session after: %d %s", pg.Status, pg.Location)
	}
	if res := f.e.Do(testenv.Req{Path: "/api_v3/me", Header: map[string]string{"X-AccountCode": "acme", "X-ApiToken": f.providerToken}}); res.Status != 401 {
		t.Fatalf("the provider's API token after: %d", res.Status)
	}
	now := f.e.Clock.Now().Unix()
	if v, err := f.e.App.ListSlots(bg, f.admin(t), app.SlotQuery{RoomCode: "main", Start: now, End: now + 7*86400}); err != nil || len(v.Slots) != 0 {
		t.Fatalf("slots after: %d %v", len(v.Slots), err)
	}
	if v, err := f.e.App.GetVisit(bg, f.admin(t), f.visitID, false); err != nil || v.Visit.ProviderID != prov.User.ID {
		t.Fatalf("the visit after: %+v %v", v, err)
	}
	if pg := admin.post("/admin/providers/"+id+"/reactivate", nil); pg.Status != 200 || !strings.Contains(pg.Body, "Grace Hopper can sign in again.") {
		t.Fatalf("reactivate: %d", pg.Status)
	}
	if res := f.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: map[string]string{"X-AccountCode": "acme", "X-ApiKey": f.clinic.APIKey, "X-ApiSecret": f.clinic.APISecret},
		Multipart: map[string]string{"first_name": prov.User.FirstName, "last_name": prov.User.LastName, "type": "400", "code": prov.User.Code}}); res.Status != 200 {
		t.Fatalf("the provider signs in again: %d %s", res.Status, res.Raw)
	}
	// The clinic's admin user is not deactivated.
	adminUser := f.admin(t).User
	if pg := admin.post("/admin/providers/"+strconv.FormatInt(adminUser.ID, 10)+"/deactivate", nil); pg.Status != 400 {
		t.Fatalf("deactivating the admin user: %d", pg.Status)
	}
}

// SMART apps: a public app registered from its form is listed with its
// client id; a confidential app's secret is shown once and stored hashed;
// a bad address is refused in words; revoked, it says so. An EHR is
// connected, a user of it linked to a provider, and disconnected.
func (c *adminScript) smartApps(t *testing.T) {
	if pg := c.b.post("/admin/apps", url.Values{"name": {"Diary"}, "kind": {"public"}, "redirect_uris": {"http://diary.example.com/app"}}); pg.Status != 400 || !strings.Contains(pg.Body, "must be https") {
		t.Fatalf("an http address: %d", pg.Status)
	}
	if pg := c.b.post("/admin/apps", url.Values{"name": {"Diary"}, "kind": {"public"}, "redirect_uris": {"https://diary.example.com/app"}}); pg.Status != 200 || !strings.Contains(pg.Body, "The app is registered") {
		t.Fatalf("register: %d %s", pg.Status, pg.Body)
	}
	pg := c.b.post("/admin/apps", url.Values{"name": {"Portal bridge"}, "kind": {"confidential"}, "redirect_uris": {"https://bridge.example.com/cb"}})
	apps, err := c.f.e.App.OAuthClients(c.bg, c.f.admin(t))
	if err != nil || len(apps) != 2 {
		t.Fatalf("stored: %+v %v", apps, err)
	}
	var secretShown string
	if m := regexp.MustCompile(`id="shown" readonly value="([^"]+)"`).FindStringSubmatch(pg.Body); m != nil {
		secretShown = m[1]
	}
	if pg.Status != 200 || secretShown == "" || apps[1].SecretHash == secretShown {
		t.Fatalf("the confidential app's secret: %d", pg.Status)
	}
	if err := c.f.e.App.CheckOAuthSecret(c.bg, apps[1].ClientID, secretShown); err != nil {
		t.Fatalf("the shown secret does not authenticate the app: %v", err)
	}
	if list := c.b.get("/admin"); !strings.Contains(list.Body, apps[0].ClientID) || strings.Contains(list.Body, secretShown) {
		t.Fatal("the list does not show the client id, or shows the secret again")
	}
	if pg := c.b.post("/admin/apps/"+strconv.FormatInt(apps[0].ID, 10)+"/revoke", nil); pg.Status != 303 {
		t.Fatalf("revoke: %d", pg.Status)
	}
	if list := c.b.get("/admin"); !strings.Contains(list.Body, "public, revoked") {
		t.Fatal("the revoked app is not shown as revoked")
	}
	if pg := c.b.post("/admin/ehrs", url.Values{"iss": {"https://ehr.example.com/fhir"}, "client_id": {"teleclinic"}, "room_code": {"main"}}); pg.Status != 303 {
		t.Fatalf("connect an EHR: %d %s", pg.Status, pg.Body)
	}
	ehrs, err := c.f.e.App.EHRConnections(c.bg, c.f.admin(t))
	if err != nil || len(ehrs) != 1 {
		t.Fatalf("the EHR: %+v %v", ehrs, err)
	}
	id := strconv.FormatInt(ehrs[0].ID, 10)
	if list := c.b.get("/admin"); !strings.Contains(list.Body, "https://ehr.example.com/fhir") || !strings.Contains(list.Body, "/smart/launch") {
		t.Fatal("the EHR or its launch URL is not shown")
	}
	doc := c.f.user(t, c.f.providerToken).User.ID
	if pg := c.b.post("/admin/ehrs/"+id+"/links", url.Values{"fhir_user": {"Practitioner/9"}, "provider_id": {strconv.FormatInt(doc, 10)}}); pg.Status != 303 {
		t.Fatalf("link: %d %s", pg.Status, pg.Body)
	}
	if pg := c.b.post("/admin/ehrs/"+id+"/delete", nil); pg.Status != 303 {
		t.Fatalf("disconnect: %d", pg.Status)
	}
	if ehrs, _ := c.f.e.App.EHRConnections(c.bg, c.f.admin(t)); len(ehrs) != 0 {
		t.Fatal("the EHR is still connected")
	}
}

// Webhook endpoints: one added for two event types shows its secret once;
// the list names its events; its deliveries list is the endpoint's, with
// the event a change wrote; removed, it is gone.
func (c *adminScript) endpoints(t *testing.T) {
	if pg := c.b.post("/admin/endpoints", url.Values{"url": {"https://hooks.example.com/events"}}); pg.Status != 400 || !strings.Contains(pg.Body, "events") {
		t.Fatalf("no events: %d", pg.Status)
	}
	pg := c.b.post("/admin/endpoints", url.Values{"url": {"https://hooks.example.com/events"}, "events": {"visit.created", "note.signed"}})
	if pg.Status != 200 || !strings.Contains(pg.Body, "whsec_") || !strings.Contains(pg.Body, "The endpoint is added") {
		t.Fatalf("add: %d %s", pg.Status, pg.Body)
	}
	eps, err := c.f.e.App.WebhookEndpoints(c.bg, c.f.admin(t))
	if err != nil || len(eps) != 1 {
		t.Fatalf("stored: %+v %v", eps, err)
	}
	id := strconv.FormatInt(eps[0].ID, 10)
	if pg := c.b.get("/admin"); !strings.Contains(pg.Body, "visit.created, note.signed") || strings.Contains(pg.Body, "whsec_") {
		t.Fatalf("the list: %s", pg.Body)
	}
	c.f.walkin(t, c.f.p2Token, "A change the endpoint hears of")
	if pg := c.b.get("/admin?endpoint=" + id); !strings.Contains(pg.Body, "To the endpoint https://hooks.example.com/events") || !strings.Contains(pg.Body, "visit.created") {
		t.Fatalf("the endpoint's deliveries: %s", pg.Body)
	}
	if pg := c.b.post("/admin/endpoints/"+id+"/delete", nil); pg.Status != 303 {
		t.Fatalf("remove: %d %s", pg.Status, pg.Body)
	}
	if eps, _ := c.f.e.App.WebhookEndpoints(c.bg, c.f.admin(t)); len(eps) != 0 {
		t.Fatalf("still there: %+v", eps)
	}
}

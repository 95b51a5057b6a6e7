package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// paidScript is TestPortal_TimeBeforePayment's clinic: a room that
// charges 25.00 USD for a visit, refunds half to a patient who cancels in
// time, and has no open time at first.
type paidScript struct {
	f          *fixture
	p1, p2     *browser
	slot9      url.Values // 09:00–09:30 two days ahead
	slot930    url.Values
	p1Step     string // the first patient's paid intake
	visit      int64
	secondPaid int64 // the intake of the visit the admin refunds
}

// TestPortal_TimeBeforePayment: on a priced room the patient chooses the
// time first, it is held while they pay, and the charge books it. With no
// open time nothing is charged; a held time is not offered to others; a
// time lost while paying is refused before any charge; a patient who
// cancels in time gets the clinic's share back, and the admin refunds a
// payment from /admin.
func TestPortal_TimeBeforePayment(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	on, cancelHours, refund := true, 24, 50
	cons := []clinic.Consultation{{ID: "1", Description: "30-min Consultation", Duration: 30, Amount: 25, Charge: true, Slots: 1}}
	if _, err := f.e.App.UpdateRoom(bg, f.admin(t), "main", app.RoomUpdate{AppointmentEnable: &on, Consultations: &cons,
		Appointments: &app.AppointmentPatch{CancelHours: &cancelHours, RefundPercent: &refund}}); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC).Unix()
	s := &paidScript{f: f, p1: newBrowser(t, f.e), p2: newBrowser(t, f.e),
		slot9:   url.Values{"slot_start": {itoa(start)}, "slot_end": {itoa(start + 1800)}},
		slot930: url.Values{"slot_start": {itoa(start + 1800)}, "slot_end": {itoa(start + 3600)}}}
	f.redirectLogin(t, s.p1, f.p1Token, "/c/acme/main", nil)
	f.redirectLogin(t, s.p2, f.p2Token, "/c/acme/main", nil)
	testenv.Steps(t, []testenv.Step{
		{Name: "ErrNoOpenTimeNoCharge", Run: s.noOpenTime},
		{Name: "OKChosenTimeHeldWhilePaying", Run: s.held},
		{Name: "OKPaymentBooksTheHeldTime", Run: s.pay},
		{Name: "ErrTimeLostWhilePayingNoCharge", Run: s.lost},
		{Name: "OKCancelInTimeRefundsThePolicysShare", Run: s.cancel},
		{Name: "OKAdminRefunds", Run: s.adminRefund},
	})
}

// intake starts an appointment intake and returns its step address.
func (s *paidScript) intake(t *testing.T, b *browser) string {
	t.Helper()
	pg := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"Follow-up"}, "terms": {"1"}, "kind": {"appointment"}})
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "/book") {
		t.Fatalf("an appointment's intake leads to %d %s, not to its times", pg.Status, pg.Location)
	}
	return strings.TrimSuffix(pg.Location, "/book")
}

// paid counts the clinic's paid or refunded invoices.
func (s *paidScript) paid(t *testing.T) int {
	t.Helper()
	invs, err := billing.New(s.f.e.App.Core()).Invoices(context.Background(), s.f.admin(t), billing.InvoiceQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, inv := range invs.Items {
		if inv.ChargeRef != "" {
			n++
		}
	}
	return n
}

func (s *paidScript) noOpenTime(t *testing.T) {
	step := s.intake(t, s.p1)
	if pg := s.p1.get(step + "/book"); !strings.Contains(pg.Body, "No open times") {
		t.Fatalf("the times page: %s", pg.Body)
	}
	// Straight to the payment page with a time that does not exist.
	pg := s.p1.post(step+"/pay", url.Values{"kind": {"appointment"}, "token": {"tok_visa"}, "slot_start": s.slot9["slot_start"], "slot_end": s.slot9["slot_end"]})
	if pg.Status != 400 || !strings.Contains(pg.Body, "nothing has been charged") {
		t.Fatalf("paying for no time: %d %s", pg.Status, pg.Body)
	}
	if n := s.paid(t); n != 0 {
		t.Fatalf("%d charges with no open time", n)
	}
	day := s.f.e.Clock.Now().Add(48 * time.Hour).UTC().Format("2006-01-02")
	if _, _, err := s.f.e.App.CreateSlots(context.Background(), s.f.user(t, s.f.providerToken), app.SlotGroupInput{RoomCode: "main",
		DateStart: day, DateEnd: day, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}); err != nil {
		t.Fatal(err)
	}
}

// The patient picks 09:00: it is held, the payment page says so, and the
// other patient is neither offered it nor can take it.
func (s *paidScript) held(t *testing.T) {
	step := s.intake(t, s.p1)
	pg := s.p1.post(step+"/book", s.slot9)
	if pg.Status != 303 || !strings.Contains(pg.Location, "/pay?") || !strings.Contains(pg.Location, "slot_start="+s.slot9.Get("slot_start")) {
		t.Fatalf("choosing a time: %d %s", pg.Status, pg.Location)
	}
	pay := s.p1.get(pg.Location)
	for _, want := range []string{"Wednesday 4 March 2026, 09:00", "held for you for ten minutes", "25.00 USD", `name="slot_start" value="` + s.slot9.Get("slot_start")} {
		if !strings.Contains(pay.Body, want) {
			t.Errorf("the payment page has no %q", want)
		}
	}
	other := s.intake(t, s.p2)
	if list := s.p2.get(other + "/book"); strings.Contains(list.Body, `aria-label="Book 09:00"`) || !strings.Contains(list.Body, `aria-label="Book 09:30"`) {
		t.Fatalf("the other patient's times while 09:00 is held: %s", list.Body)
	}
	if pg := s.p2.post(other+"/book", s.slot9); pg.Status != 409 {
		t.Fatalf("the other patient takes the held time: %d %s", pg.Status, pg.Body)
	}
	s.p1Step = step
}

// Paying books the held time.
func (s *paidScript) pay(t *testing.T) {
	d := visitFrom(t, s.f, s.p1.post(s.p1Step+"/pay", url.Values{"kind": {"appointment"}, "token": {"tok_visa"},
		"slot_start": s.slot9["slot_start"], "slot_end": s.slot9["slot_end"]}))
	if d.Visit.Kind != clinic.KindAppointment || itoa(d.Visit.Start) != s.slot9.Get("slot_start") {
		t.Fatalf("the paid visit: %+v", d.Visit)
	}
	s.visit = d.Visit.ID
	if n := s.paid(t); n != 1 {
		t.Fatalf("%d charges after one payment", n)
	}
}

// The other patient holds 09:30, lets the hold run out, and the first
// patient takes it meanwhile: the second's payment is refused before any
// charge.
func (s *paidScript) lost(t *testing.T) {
	other := s.intake(t, s.p2)
	if pg := s.p2.post(other+"/book", s.slot930); pg.Status != 303 {
		t.Fatalf("holding 09:30: %d %s", pg.Status, pg.Body)
	}
	s.f.e.Clock.Advance(app.HoldTTL + time.Minute)
	s.p1 = s.signedIn(t, "pat-1", "Ada", "Lovelace")
	s.p2 = s.signedIn(t, "pat-2", "Mallory", "Other")
	mine := s.intake(t, s.p1)
	if pg := s.p1.post(mine+"/book", s.slot930); pg.Status != 303 {
		t.Fatalf("09:30 after the other's hold ran out: %d %s", pg.Status, pg.Body)
	}
	before := s.paid(t)
	pg := s.p2.post(other+"/pay", url.Values{"kind": {"appointment"}, "token": {"tok_visa"}, "slot_start": s.slot930["slot_start"], "slot_end": s.slot930["slot_end"]})
	if pg.Status != 409 || !strings.Contains(pg.Body, "nothing has been charged") {
		t.Fatalf("paying for a lost time: %d %s", pg.Status, pg.Body)
	}
	if n := s.paid(t); n != before {
		t.Fatalf("a charge for a lost time: %d, had %d", n, before)
	}
	// The first patient pays for 09:30: a second visit, for the admin's refund.
	d := visitFrom(t, s.f, s.p1.post(mine+"/pay", url.Values{"kind": {"appointment"}, "token": {"tok_visa"},
		"slot_start": s.slot930["slot_start"], "slot_end": s.slot930["slot_end"]}))
	s.secondPaid = d.Intake.ID
}

// signedIn is a fresh browser session of a patient (the clock moved past
// the last one's idle time).
func (s *paidScript) signedIn(t *testing.T, code, first, last string) *browser {
	t.Helper()
	b := newBrowser(t, s.f.e)
	s.f.redirectLogin(t, b, s.f.sso(t, clinic.UserMember, code, first, last), "/c/acme/main", nil)
	return b
}

// Cancelled two days ahead (inside the 24-hour rule), half comes back.
func (s *paidScript) cancel(t *testing.T) {
	pg := s.p1.post("/visits/start/"+itoa(s.visit)+"/cancel", url.Values{"reason": {"Feeling better"}})
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "notice=cancelled") {
		t.Fatalf("cancel: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	page := s.p1.get(pg.Location)
	if !strings.Contains(page.Body, "Your appointment is cancelled.") || !strings.Contains(page.Body, "Paid 25.00 USD, refunded 12.50 USD") {
		t.Fatalf("the page after cancelling: %s", page.Body)
	}
	d, err := s.f.e.App.GetVisit(context.Background(), s.f.admin(t), s.visit, false)
	if err != nil || d.Visit.Status != clinic.VisitCancelled {
		t.Fatalf("the visit: %+v %v", d, err)
	}
}

// The admin refunds part of the second payment from /admin and cancels the
// visit it paid for; the patient is emailed.
func (s *paidScript) adminRefund(t *testing.T) {
	admin := newBrowser(t, s.f.e)
	s.f.adminSignIn(t, admin)
	second, err := billing.New(s.f.e.App.Core()).Invoices(context.Background(), s.f.admin(t), billing.InvoiceQuery{IntakeID: s.secondPaid})
	invs := second.Items
	if err != nil || len(invs) != 1 || invs[0].Status != billing.InvoicePaid {
		t.Fatalf("the second payment: %+v %v", invs, err)
	}
	id := itoa(invs[0].ID)
	if pg := admin.get("/admin"); !strings.Contains(pg.Body, `id="refund-`+id+`"`) {
		t.Fatalf("the admin page offers no refund of payment %s: %s", id, pg.Body)
	}
	if pg := admin.post("/admin/payments/"+id+"/refund", url.Values{"amount": {"25.01"}}); pg.Status != 400 || !strings.Contains(pg.Body, "at most the amount charged") {
		t.Fatalf("a refund of more than was paid: %d %s", pg.Status, pg.Body)
	}
	pg := admin.post("/admin/payments/"+id+"/refund", url.Values{"amount": {"10.00"}, "visit": {"cancel"}})
	if pg.Status != 303 {
		t.Fatalf("refund: %d %s", pg.Status, pg.Body)
	}
	page := admin.get(pg.Location)
	if !strings.Contains(page.Body, "the visit it paid for is cancelled: the patient is emailed") || !strings.Contains(page.Body, "(10.00 USD back)") || strings.Contains(page.Body, `id="refund-`+id+`"`) {
		t.Fatalf("the admin page after the refund: %s", page.Body)
	}
	it, err := s.f.e.App.GetIntake(context.Background(), s.f.admin(t), s.secondPaid)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.f.e.App.GetVisit(context.Background(), s.f.admin(t), it.VisitID, false); err != nil || d.Visit.Status != clinic.VisitCancelled {
		t.Fatalf("the refunded visit: %+v %v", d, err)
	}
	if pg := admin.post("/admin/payments/"+id+"/refund", nil); pg.Status != 409 {
		t.Fatalf("a second refund: %d", pg.Status)
	}
}

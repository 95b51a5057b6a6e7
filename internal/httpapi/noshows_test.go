package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/mail"
	"teleclinic/internal/testenv"
)

// noShowClinic is a clinic whose main room takes bookings with a policy:
// no-shows 15 minutes after the start, a 25.00 fee for one and 10.00 for
// a cancellation inside 24 hours. Its patients have email addresses.
func noShowClinic(t *testing.T) (*testenv.Env, *clinicSetup) {
	t.Helper()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	mustOK(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c),
		JSON: js(`{"appointment_settings": {"cancel_hours": 24, "no_show_minutes": 15, "no_show_fee": 25, "late_cancel_fee": 10}}`)}))
	// Patients with addresses, in place of the setup's.
	for _, who := range []**session{&s.pat, &s.pat2} {
		code := map[**session]string{&s.pat: "mpat", &s.pat2: "mpat2"}[who]
		p := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(s.c),
			Multipart: map[string]string{"type": "200", "code": code, "first_name": "Pat", "last_name": "One", "email": code + "@example.com"}}))
		*who = &session{UserID: p.Id, Token: p.Token.Token, Profile: p}
	}
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "12:00", Timezone: "America/New_York", Duration: 30})
	return e, s
}

// signInAgain signs the setup's people in again (sessions idle out as
// the test clock moves on by hours).
func (s *clinicSetup) signInAgain(t *testing.T) {
	t.Helper()
	s.pat, s.pat2, s.doc = mustSSO(t, s.e, s.c, "200", "mpat", "Pat", "One"), mustSSO(t, s.e, s.c, "200", "mpat2", "Pat", "One"), mustSSO(t, s.e, s.c, "400", "doc", "Dana", "Doc")
}

// book books who into the i-th half hour from 09:00 New York on slotDay.
func (s *clinicSetup) book(t *testing.T, who *session, i int) string {
	t.Helper()
	return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits", "slot_start", fmt.Sprint(tue0900NY+int64(i)*1800), "slot_end", fmt.Sprint(tue0900NY+int64(i+1)*1800),
		"room_code", "main", "type", "2", "intake_id", s.intake(t, who, "type", "2"))).Id
}

type outcomeVisit struct {
	Status       int    `json:"status"`
	CancelReason string `json:"cancel_reason"`
	Outcome      string `json:"outcome"`
}

func (s *clinicSetup) visitOutcome(t *testing.T, id string) outcomeVisit {
	t.Helper()
	return dataOf[outcomeVisit](t, s.e.Do(testenv.Req{Path: "/api_v3/visits/" + id, Header: adminHeaders(s.c)}))
}

type feeInvoice struct {
	Kind           string  `json:"kind"`
	Status         string  `json:"status"`
	VisitID        string  `json:"visit_id"`
	MemberID       string  `json:"member_id"`
	AmountDue      float64 `json:"amount_due"`
	FailureCode    string  `json:"failure_code"`
	ChargeID       string  `json:"charge_id"`
	Consultation   struct{ Description string }
	AmountRefunded float64 `json:"amount_refunded"`
}

// fees are the clinic's fee invoices, newest first.
func (s *clinicSetup) fees(t *testing.T) []feeInvoice {
	t.Helper()
	var out []feeInvoice
	for _, inv := range dataOf[[]feeInvoice](t, s.e.Do(testenv.Req{Path: "/api_v3/billing/invoices", Header: adminHeaders(s.c)})) {
		if inv.Kind != "visit" {
			out = append(out, inv)
		}
	}
	return out
}

// hook subscribes an endpoint of the clinic to events.
func hook(t *testing.T, s *clinicSetup, events ...string) {
	t.Helper()
	res := s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/endpoints", Header: adminHeaders(s.c),
		JSON: map[string]any{"url": "https://hooks.example/clinic", "events": events}})
	if res.Status != 201 {
		t.Fatalf("webhook endpoint: %d %s", res.Status, res.Raw)
	}
}

// setClock moves the test clock to t (UNIX seconds).
func setClock(e *testenv.Env, t int64) { e.Clock.Advance(time.Unix(t, 0).Sub(e.Clock.Now())) }

// TestNoShows_Sweep: a booked visit whose patient has not come is a
// no-show the room's 15 minutes after its start, not a minute before:
// status 40 with outcome no_show in the API, FHIR's noshow, the
// appointment.no_show event, a mail to the patient naming the fee, and the
// fee charged once to the saved card (a patient with no card gets a failed
// fee invoice the admin sees). A patient whose page followed the visit
// near its start has arrived and is left alone; a visit someone started
// is left alone.
func TestNoShows_Sweep(t *testing.T) {
	t.Parallel()
	e, s := noShowClinic(t)
	ctx := context.Background()
	fees := billing.New(e.App.Core())
	hook(t, s, "appointment.no_show")
	s.addCard(t, s.pat, "tok_visa")
	missed := s.book(t, s.pat, 0)   // 14:00 UTC
	noCard := s.book(t, s.pat2, 1)  // 14:30
	arrived := s.book(t, s.pat, 2)  // 15:00
	started := s.book(t, s.pat2, 3) // 15:30
	box := &outbox{}
	e.App.DeliverMail(ctx, box) // the bookings'
	// Ahead of them in the sweep's order, a full page (64) of overdue visits of a
	// room that marks no no-shows: the sweep reads on past them.
	other := mustRoom(t, e, s.c, js(`{"domain": "`+s.domain+`", "name": "Other", "code": "other"}`))
	if _, err := e.Store.DB().Exec(e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, starts_at, created, modified)
		SELECT account_id, member_id, provider_id, CAST(? AS BIGINT), 10, 1, 'appointment', starts_at - 60, created, modified FROM visits WHERE id = ?`), other.Id, missed); err != nil {
		t.Fatal(err)
	}
	for range 6 { // 1, 2, 4, … 64, doubling
		if _, err := e.Store.DB().Exec(e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, starts_at, created, modified)
			SELECT account_id, member_id, provider_id, room_id, status, type, kind, starts_at, created, modified FROM visits WHERE room_id = ?`), other.Id); err != nil {
			t.Fatal(err)
		}
	}

	setClock(e, tue0900NY+14*60)
	s.signInAgain(t)
	if n := e.App.NoShowSweep(ctx); n != 0 || s.visitOutcome(t, missed).Outcome != "" {
		t.Fatalf("14 minutes after the start: %d no-shows", n)
	}
	e.Clock.Advance(time.Minute)
	if n := e.App.NoShowSweep(ctx); n != 1 {
		t.Fatalf("15 minutes after the start: %d no-shows, want 1", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM visits WHERE room_id = ? AND status = 10", other.Id); n != 64 {
		t.Fatalf("the other room's overdue visits: %d left, want all 64", n)
	}
	if v := s.visitOutcome(t, missed); v.Status != 40 || v.Outcome != "no_show" || v.CancelReason != "no-show" {
		t.Fatalf("the missed visit: %+v", v)
	}
	// Its slot is free again, its fee charged to the saved card, once.
	if n := count(t, e, "SELECT COUNT(*) FROM slots WHERE visit_id = ?", missed); n != 0 {
		t.Fatalf("the no-show holds %d slots", n)
	}
	fees.ChargeFees(ctx)
	fees.ChargeFees(ctx)
	got := s.fees(t)
	if len(got) != 1 || got[0].Kind != "no_show_fee" || got[0].Status != "paid" || got[0].AmountDue != 25 || got[0].VisitID != missed ||
		got[0].MemberID != s.pat.UserID || got[0].ChargeID == "" || got[0].Consultation.Description != "No-show fee" {
		t.Fatalf("the no-show fee: %+v", got)
	}
	box.msgs = nil
	e.App.DeliverMail(ctx, box)
	var toPatient *mail.Message
	for i, m := range box.msgs {
		if m.To == "mpat@example.com" {
			toPatient = &box.msgs[i]
		}
	}
	if toPatient == nil || !strings.Contains(toPatient.Subject, "you missed your video visit") ||
		!strings.Contains(toPatient.Body, "a fee of 25.00 USD is charged") || !strings.Contains(toPatient.Body, "https://portal.teleclinic.test/v/") {
		t.Fatalf("the patient's mail: %+v", box.msgs)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM outbox WHERE topic = 'event' AND payload LIKE '%appointment.no_show%' AND payload LIKE '%\"outcome\":\"no_show\"%'"); n != 1 {
		t.Fatalf("%d appointment.no_show events", n)
	}
	fhirAppt := e.Do(testenv.Req{Path: "/fhir/R4/Appointment/" + missed, Header: adminHeaders(s.c)})
	if !strings.Contains(string(fhirAppt.Raw), `"status":"noshow"`) {
		t.Fatalf("FHIR: %s", fhirAppt.Raw)
	}

	// The patient of the 15:00 visit opens its page at 14:55: arrived.
	setClock(e, tue0900NY+55*60)
	s.signInAgain(t)
	st := openStream(t, e, msgPath(arrived)+"/events", userHeaders(s.c, s.pat.Token))
	if st.Status != 200 {
		t.Fatalf("the stream: %d", st.Status)
	}
	st.Close()
	// The provider starts the 15:30 one (its patient is in no page).
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", started))
	setClock(e, tue0900NY+2*3600) // 16:00
	s.signInAgain(t)
	if n := e.App.NoShowSweep(ctx); n != 1 {
		t.Fatalf("at 16:00: %d no-shows, want 1 (the 14:30 one)", n)
	}
	for id, want := range map[string]string{noCard: "no_show", arrived: "", started: ""} {
		if v := s.visitOutcome(t, id); v.Outcome != want {
			t.Fatalf("visit %s: %+v, want outcome %q", id, v, want)
		}
	}
	fees.ChargeFees(ctx)
	got = s.fees(t)
	if len(got) != 2 || got[0].VisitID != noCard || got[0].Status != "failed" || got[0].FailureCode != "no_saved_card" {
		t.Fatalf("the fee of a patient with no card: %+v", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM outbox WHERE topic = 'fee' AND done IS NULL"); n != 0 {
		t.Fatalf("%d fees still to charge", n)
	}
}

// TestNoShows_LateCancel: a patient cancelling inside the room's window
// cancels late where the room charges a late-cancel fee (the visit's
// page says what it costs first), and is charged it; where it charges
// none, only the clinic cancels then. Staff record a no-show and a late
// cancellation by their reasons; a room's policy is bounded.
func TestNoShows_LateCancel(t *testing.T) {
	t.Parallel()
	e, s := noShowClinic(t)
	ctx := context.Background()
	fees := billing.New(e.App.Core())
	put := func(body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(body)})
	}
	wantMsg(t, put(`{"appointment_settings": {"no_show_minutes": 241}}`), 400, "no_show_minutes")
	wantMsg(t, put(`{"appointment_settings": {"no_show_fee": -1}}`), 400, "no_show_fee")
	wantMsg(t, put(`{"appointment_settings": {"late_cancel_fee": 0.001}}`), 400, "late_cancel_fee")
	s.addCard(t, s.pat, "tok_visa")
	hook(t, s, "appointment.late_cancelled")

	early := s.book(t, s.pat, 0)
	mustOK(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", early)) // 29 hours ahead: in time
	if v := s.visitOutcome(t, early); v.Status != 40 || v.Outcome != "" {
		t.Fatalf("a cancellation in time: %+v", v)
	}
	late := s.book(t, s.pat, 1)
	e.Clock.Advance(6 * time.Hour) // 23.5 hours before
	s.signInAgain(t)
	mustOK(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", late))
	if v := s.visitOutcome(t, late); v.Status != 40 || v.Outcome != "late_cancel" {
		t.Fatalf("a late cancellation: %+v", v)
	}
	fees.ChargeFees(ctx)
	if got := s.fees(t); len(got) != 1 || got[0].Kind != "late_cancel_fee" || got[0].Status != "paid" || got[0].AmountDue != 10 {
		t.Fatalf("the late-cancel fee: %+v", got)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM outbox WHERE topic = 'event' AND payload LIKE '%appointment.late_cancelled%'"); n != 1 {
		t.Fatalf("%d appointment.late_cancelled events", n)
	}

	// Without a late-cancel fee, the window is closed to the patient.
	mustOK(t, put(`{"appointment_settings": {"late_cancel_fee": 0}}`))
	closed := s.book(t, s.pat, 1)
	wantMsg(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", closed), 409, "up to 24 hours before")
	// The clinic records a late cancellation (the patient phoned)...
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", closed, "reason", "late-cancel"))
	if v := s.visitOutcome(t, closed); v.Outcome != "late_cancel" {
		t.Fatalf("staff's late cancellation: %+v", v)
	}
	// ...and a no-show, by hand.
	gone := s.book(t, s.pat2, 3)
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", gone, "reason", "no-show"))
	if v := s.visitOutcome(t, gone); v.Outcome != "no_show" {
		t.Fatalf("staff's no-show: %+v", v)
	}
	// A walk-in is not cancelled late.
	walkin := dataOf[client.Visit](t, s.post(s.pat2.Token, "/api_v3/visits/add_walkin", "intake_id", s.intake(t, s.pat2), "room_code", "main")).Id
	wantMsg(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/delete", Header: adminHeaders(s.c), Form: q("id", walkin, "reason", "late-cancel")}), 400, "Only a booked visit")
	fees.ChargeFees(ctx)
	if got := s.fees(t); len(got) != 2 || got[0].Kind != "no_show_fee" || got[0].Status != "failed" {
		t.Fatalf("fees after staff's marks: %+v", got)
	}
}

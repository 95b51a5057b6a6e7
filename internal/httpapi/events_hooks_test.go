package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/payments"
	"teleclinic/internal/testenv"
)

// hookEndpoint is POST /webhooks/endpoints's answer.
type hookEndpoint struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Secret  string   `json:"secret"`
	Created int64    `json:"created"`
}

// TestEvents_EveryLifecycleEvent: an endpoint subscribed to the whole
// catalog receives each event once per change, each verified by the
// Standard Webhooks library with the endpoint's secret; a second endpoint
// subscribed to one type gets that type alone; the admin lists an
// endpoint's deliveries and sends one again; a removed endpoint gets
// nothing more. The spec's webhook is left as it was.
func TestEvents_EveryLifecycleEvent(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	sb := payments.NewSandbox(clock.Now)
	e := testenv.New(t, testenv.Options{Clock: clock, Config: func(c *app.Config) { c.Sandbox = sb }})
	s := newClinicSetup(t, e, "alpha")
	admin := adminHeaders(s.c)
	all := newReceiver(t, nil)
	one := newReceiver(t, nil)

	// The catalog, and bad endpoints refused.
	types := dataOf[[]struct{ Type, Description string }](t, e.Do(testenv.Req{Path: "/api_v3/webhooks/events", Header: admin}))
	var catalog []string
	for _, ty := range types {
		catalog = append(catalog, ty.Type)
	}
	if len(catalog) != len(app.Events) || !slices.Contains(catalog, "appointment.no_show") {
		t.Fatalf("the catalog: %v", catalog)
	}
	add := func(url string, events ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/endpoints", Header: admin, JSON: map[string]any{"url": url, "events": events}})
	}
	for _, bad := range [][]string{{}, {"visit.exploded"}, {"visit.message.created"}} {
		if res := add(all.URL+"/bad", bad...); res.Status != 400 {
			t.Fatalf("events %v: %d %s", bad, res.Status, res.Raw)
		}
	}
	if res := add("ftp://example.com/x", "visit.started"); res.Status != 400 {
		t.Fatalf("an ftp URL: %d", res.Status)
	}
	res := add(all.URL+"/all", catalog...)
	if res.Status != 201 {
		t.Fatalf("the endpoint: %d %s", res.Status, res.Raw)
	}
	epAll := created[hookEndpoint](t, res)
	epOne := created[hookEndpoint](t, add(one.URL+"/one", "visit.started"))
	if !strings.HasPrefix(epAll.Secret, "whsec_") {
		t.Fatalf("no secret shown: %+v", epAll)
	}
	if list := dataOf[[]hookEndpoint](t, e.Do(testenv.Req{Path: "/api_v3/webhooks/endpoints", Header: admin})); len(list) != 2 || list[0].Secret != "" {
		t.Fatalf("the endpoints as listed: %+v", list)
	}
	if res := e.Do(testenv.Req{Path: "/api_v3/webhooks/endpoints", Header: userHeaders(s.c, s.doc.Token)}); res.Status != 401 {
		t.Fatalf("a provider lists endpoints: %d", res.Status)
	}

	// The changes.
	ctx := context.Background()
	post := func(token, path string, kv ...string) *testenv.Resp { return mustOK(t, s.post(token, path, kv...)) }
	// A new user.
	newcomer := mustSSO(t, e, s.c, "200", "new-pat", "Nina", "New")
	// A walk-in: its intake, created and waiting; taken, started, ended.
	walkin := dataOf[client.Visit](t, post(newcomer.Token, "/api_v3/visits/add_walkin", "intake_id", s.intake(t, newcomer), "room_code", "main")).Id
	post(s.doc.Token, "/api_v3/visits/accept", "id", walkin)
	post(s.doc.Token, "/api_v3/visits/inprogress", "id", walkin)
	post(s.doc.Token, "/api_v3/visits/close", "id", walkin)
	// Its note signed.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + walkin + "/note", Header: userHeaders(s.c, s.doc.Token), JSON: noteBody{Diagnoses: []string{"J06.9"}}}))
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + walkin + "/note/sign", Header: userHeaders(s.c, s.doc.Token)}))
	// Appointments: booked, moved, cancelled; another a no-show.
	s.enableAppointments(t)
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30})
	at := func(i int) string { return fmt.Sprint(tue0900NY + int64(i)*1800) }
	appt := dataOf[client.Visit](t, post(s.pat.Token, "/api_v3/visits", "slot_start", at(0), "slot_end", at(1), "room_code", "main", "type", "2", "intake_id", s.intake(t, s.pat, "type", "2"))).Id
	post(s.pat.Token, "/api_v3/visits/"+appt+"/reschedule", "slot_start", at(1), "slot_end", at(2))
	post(s.pat.Token, "/api_v3/visits/delete", "id", appt, "reason", "patient_cancel_appointment")
	noShow := dataOf[client.Visit](t, post(s.pat2.Token, "/api_v3/visits", "slot_start", at(3), "slot_end", at(4), "room_code", "main", "type", "2", "intake_id", s.intake(t, s.pat2, "type", "2"))).Id
	post(s.doc.Token, "/api_v3/visits/delete", "id", noShow, "reason", app.ReasonNoShow)
	// And a third cancelled late (the patient phoned).
	late := dataOf[client.Visit](t, post(s.pat2.Token, "/api_v3/visits", "slot_start", at(1), "slot_end", at(2), "room_code", "main", "type", "2", "intake_id", s.intake(t, s.pat2, "type", "2"))).Id
	post(s.doc.Token, "/api_v3/visits/delete", "id", late, "reason", app.ReasonLateCancel)
	// A recording of the walk-in.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + walkin + "/recordings", Header: admin,
		Multipart: map[string]string{"start": "1772442000", "end": "1772442600", "participants": `[{"first_name":"Nina","last_name":"New","svcid":"x"}]`},
		Files:     map[string][]byte{"file": webm}}))
	// A payment, then its refund.
	mustOK(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: admin, JSON: js(`{"payment": {"currency": "usd", "consultations": [
		{"id": "1", "description": "Consultation", "duration": 15, "amount": 25, "charge": true}]}}`)}))
	s.addCard(t, s.pat, "tok_visa")
	preview := decode[client.InvoicePreview](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process.json", Header: userHeaders(s.c, s.pat.Token),
		JSON: js(`{"intake_id": "` + s.intake(t, s.pat, "consultation_id", "1") + `", "create_invoice": 1}`)})).Data
	if preview.Invoice == nil || preview.Invoice.Status != "paid" {
		t.Fatalf("the payment: %+v", preview)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/" + preview.Invoice.Id + "/refund", Header: admin, Form: q("amount", "5")}))

	// Delivered: each of the catalog's changes once, verified.
	for e.App.DeliverWebhooks(ctx) > 0 {
	}
	verify := func(rc *receiver, secret string) map[string][]string {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, d := range rc.got {
			if err := wh.VerifyIgnoringTimestamp(d.Body, d.Header); err != nil { // the test's clock is not the wall clock
				t.Errorf("%s: the Standard Webhooks library refuses the signature: %v", d.Event.Type, err)
			}
			var data map[string]any
			var env struct{ Data json.RawMessage }
			_ = json.Unmarshal(d.Body, &env)
			_ = json.Unmarshal(env.Data, &data)
			key := fmt.Sprint(data["visit_id"], data["user_id"], data["invoice_id"], data["recording_id"], data["intake_id"])
			got[d.Event.Type] = append(got[d.Event.Type], key)
			if d.Event.AccountCode != s.c.Code || d.Event.Version != "1.0" {
				t.Errorf("envelope: %+v", d.Event)
			}
		}
		return got
	}
	got := verify(all, epAll.Secret)
	want := map[string]int{
		"user.created": 1, "intake.submitted": 5, "visit.created": 4, "visit.waiting": 1, "visit.started": 1, "visit.ended": 1,
		"note.signed": 1, "appointment.booked": 3, "appointment.rescheduled": 1, "visit.cancelled": 3, "appointment.cancelled": 3,
		"appointment.no_show": 1, "appointment.late_cancelled": 1, "recording.ready": 1, "payment.succeeded": 1, "payment.refunded": 1,
	}
	var missing []string
	for ty, n := range want {
		if len(got[ty]) != n {
			missing = append(missing, fmt.Sprintf("%s: %d, want %d", ty, len(got[ty]), n))
		}
	}
	for ty := range got {
		if _, ok := want[ty]; !ok {
			missing = append(missing, "unexpected "+ty)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(want) != len(app.Events) {
		t.Fatalf("the events (each once per change):\n%s", strings.Join(missing, "\n"))
	}
	if got["visit.started"][0] != fmt.Sprint(walkin, nil, nil, nil, nil) || got["appointment.no_show"][0] != fmt.Sprint(noShow, nil, nil, nil, nil) ||
		got["appointment.late_cancelled"][0] != fmt.Sprint(late, nil, nil, nil, nil) {
		t.Errorf("which visits: %v", got)
	}
	if only := verify(one, epOne.Secret); len(only) != 1 || len(only["visit.started"]) != 1 {
		t.Fatalf("the one-type endpoint got: %v", only)
	}

	// The endpoint's deliveries, and one sent again.
	ds := dataOf[[]client.Delivery](t, e.Do(testenv.Req{Path: "/api_v3/webhooks/endpoints/" + epOne.ID + "/deliveries", Header: admin}))
	if len(ds) != 1 || ds[0].Event != "visit.started" || ds[0].VisitId != walkin || ds[0].Outcome != "delivered" {
		t.Fatalf("the one-type endpoint's deliveries: %+v", ds)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/deliveries/" + ds[0].Id + "/redeliver", Header: admin}))
	for e.App.DeliverWebhooks(ctx) > 0 {
	}
	if again := verify(one, epOne.Secret); len(again["visit.started"]) != 2 {
		t.Fatalf("sent again: %v", again)
	}
	// Removed: nothing more reaches it.
	mustOK(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/webhooks/endpoints/" + epOne.ID, Header: admin}))
	if res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/webhooks/endpoints/" + epOne.ID, Header: admin}); res.Status != 404 {
		t.Fatalf("removed twice: %d", res.Status)
	}
	other := dataOf[client.Visit](t, post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", s.intake(t, s.pat), "room_code", "main")).Id
	post(s.doc.Token, "/api_v3/visits/accept", "id", other)
	post(s.doc.Token, "/api_v3/visits/inprogress", "id", other)
	for e.App.DeliverWebhooks(ctx) > 0 {
	}
	if after := verify(one, epOne.Secret); len(after["visit.started"]) != 2 {
		t.Fatalf("a removed endpoint still receives: %v", after)
	}
	if res := e.Do(testenv.Req{Path: "/api_v3/webhooks/endpoints/" + epOne.ID + "/deliveries", Header: admin}); res.Status != 404 {
		t.Fatalf("a removed endpoint's deliveries: %d", res.Status)
	}
	_ = http.StatusOK
}

package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

// The test clock starts on Monday 2026-03-02 09:00 UTC; slots are published
// for the next day, Tuesday 3 March, in New York (UTC-5).
const slotDay = "2026-03-03"

var tue0900NY = time.Date(2026, 3, 3, 14, 0, 0, 0, time.UTC).Unix() // 09:00 EST

func TestSlots_PublishListDelete(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	day := map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "11:00", "timezone": "America/New_York", "duration": 30}

	slots := s.publish(t, s.doc.Token, day)
	// Published in the spec's shape.
	t.Run("OKPublished", func(t *testing.T) {
		if len(slots) != 4 {
			t.Fatalf("%d slots", len(slots))
		}
		first := slots[0]
		g := first["group"].(map[string]any)
		if first["start"].(float64) != float64(tue0900NY) || first["end"].(float64)-first["start"].(float64) != 1800 || first["status"].(float64) != 10 ||
			first["provider_id"] != s.doc.UserID || first["provider"].(map[string]any)["full_name"] != "Dana Doc" || first["account"].(map[string]any)["code"] != "alpha" ||
			g["time_start"] != fmt.Sprint(tue0900NY) || g["timezone"] != "America/New_York" || g["local"].(map[string]any)["time_start"] != "09:00" ||
			g["consultation"].(map[string]any)["description"] != "15-min Consultation" {
			t.Fatalf("%v", first)
		}
	})
	t.Run("ErrOverlap", func(t *testing.T) {
		body := map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "10:15", "time_end": "12:00", "timezone": "America/New_York", "duration": 45}
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token), JSON: body})
		wantErr(t, res, 409, 409)
	})
	// Who may publish.
	t.Run("ErrNotAllowed", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.pat.Token), JSON: day})
		wantErr(t, res, 403, 403)
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.other.Token), JSON: day})
		wantErr(t, res, 400, 400) // not linked to the room
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token), JSON: map[string]any{
			"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "11:00", "timezone": "America/New_York", "duration": 30, "provider_id": s.other.UserID}})
		wantErr(t, res, 403, 403)
		// The admin publishes for a provider, here with the room's consultation.
		if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
			t.Fatal(r.Status)
		}
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: adminHeaders(s.c), Form: q("provider_id", s.other.UserID,
			"room_code", "main", "date_start", slotDay, "time_start", "13:00", "time_end", "14:00", "timezone", "America/New_York", "consultation_id", "1")})
		if res.Status != 200 || len(res.List()) != 4 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: adminHeaders(s.c), JSON: day}), 400, 400) // no provider_id
		bad := map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "08:00", "timezone": "America/New_York", "duration": 30}
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token), JSON: bad}), 400, 400)
	})
	// List filters.
	t.Run("OKListFilters", func(t *testing.T) {
		list := func(kv ...string) []map[string]any {
			res := e.Do(testenv.Req{Path: "/api_v3/slots", Header: userHeaders(s.c, s.pat.Token), Query: q(append([]string{"start", fmt.Sprint(tue0900NY - 3600), "end", fmt.Sprint(tue0900NY + 24*3600)}, kv...)...)})
			if res.Status != 200 {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			return res.List()
		}
		if n := len(list()); n != 8 {
			t.Fatalf("%d", n)
		}
		if n := len(list("provider_id", s.doc.UserID)); n != 4 {
			t.Fatalf("%d", n)
		}
		if n := len(list("room_code", "main", "status", "10", "type", "one")); n != 8 {
			t.Fatalf("%d", n)
		}
		if n := len(list("type", "group")); n != 0 {
			t.Fatalf("%d", n)
		}
		if n := len(list("account_code", "beta")); n != 0 {
			t.Fatalf("%d", n)
		}
		if n := len(list("specialty_id", "derm")); n != 0 {
			t.Fatalf("%d", n)
		}
		// A provider who serves only New York drops out of a California search.
		if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.doc.Token), Form: q("states_serviced", "ny,nj")}); r.Status != 200 {
			t.Fatalf("%s", r.Raw)
		}
		if n := len(list("states_serviced", "CA")); n != 4 {
			t.Fatalf("%d", n)
		}
		if n := len(list("states_serviced", "NJ")); n != 8 {
			t.Fatalf("%d", n)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/slots", Header: userHeaders(s.c, s.pat.Token)}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/slots", Header: userHeaders(s.c, s.pat.Token), Query: q("start", "1", "end", "2", "type", "many")}), 400, 400)
		if l := e.Do(testenv.Req{Path: "/api_v3/slots/available", Header: userHeaders(s.c, s.pat.Token)}).List(); len(l) != 8 || l[0]["provider"].(map[string]any)["states_serviced"] == nil {
			t.Fatalf("%v", l)
		}
	})
	// Delete a slot and a group.
	t.Run("OKDeleteSlotAndGroup", func(t *testing.T) {
		id := slots[3]["id"].(string)
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + id, Header: userHeaders(s.c, s.pat.Token)}), 403, 403)
		res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + id, Header: userHeaders(s.c, s.doc.Token)})
		if res.Status != 200 || res.Data()["slot_deleted"].(float64) != 1 || res.Data()["group_deleted"].(float64) != 0 {
			t.Fatalf("%s", res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + id, Header: userHeaders(s.c, s.doc.Token)}), 404, 404)
		res = e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + slots[0]["group_id"].(string), Header: adminHeaders(s.c)})
		if res.Status != 200 || res.Data()["slot_deleted"].(float64) != 3 || res.Data()["group_deleted"].(float64) != 1 {
			t.Fatalf("%s", res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + slots[0]["group_id"].(string), Header: adminHeaders(s.c)}), 404, 404)
	})
}

func TestSlots_AvailabilityAndBooking(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	slots := s.publish(t, s.doc.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "10:30", "timezone": "America/New_York", "duration": 15})
	slotAt := func(i int) (string, string) {
		return fmt.Sprint(int64(slots[i]["start"].(float64))), fmt.Sprint(int64(slots[i]["end"].(float64)))
	}
	avail := func(kv ...string) map[string]any {
		t.Helper()
		res := e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token),
			Query: q(append([]string{"start", fmt.Sprint(tue0900NY), "end", fmt.Sprint(tue0900NY + 3*3600)}, kv...)...)})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		return res.Data()
	}
	flags := func(d map[string]any, field string) string {
		out := ""
		for _, sl := range d["slots"].([]any) {
			out += fmt.Sprint(sl.(map[string]any)[field])
		}
		return out
	}

	t.Run("ErrAppointmentsOff", func(t *testing.T) {
		it := s.intake(t, s.pat, "type", "2")
		st, en := slotAt(0)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it), 400, "appointments")
	})
	s.enableAppointments(t)
	// Availability flags and slot_data.
	t.Run("OKAvailability", func(t *testing.T) {
		d := avail("room_code", "main")
		if flags(d, "slot_available") != "111111" || flags(d, "slot_booked") != "000000" {
			t.Fatalf("%v", d)
		}
		byID := d["slot_data"].(map[string]any)
		if len(byID) != len(d["slots"].([]any)) {
			t.Fatalf("%d slot_data entries for %d slots", len(byID), len(d["slots"].([]any)))
		}
		for _, x := range d["slots"].([]any) {
			sl := x.(map[string]any)
			if e, ok := byID[sl["slot_id"].(string)].(map[string]any); !ok || e["id"] != sl["slot_id"] || e["start"] != sl["slot_start"] {
				t.Fatalf("slot %v: slot_data %v", sl, e)
			}
		}
		sd := byID[slots[0]["id"].(string)].(map[string]any)
		if sd["provider_id"] != s.doc.UserID || sd["consultation"].(map[string]any)["duration"].(float64) != 15 {
			t.Fatalf("%v", sd)
		}
		// 45 minutes need three back-to-back slots: the last two cannot start one.
		if f := flags(avail("room_code", "main", "duration", "2700"), "slot_available"); f != "111100" {
			t.Fatalf("%s", f)
		}
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token), Query: q("room_code", "main")}), 400, "start")
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token), Query: q("start", "1", "end", "2")}), 400, "room_code")
	})
	var booked string
	// Book two back-to-back slots.
	t.Run("OKBookTwoSlots", func(t *testing.T) {
		it := s.intake(t, s.pat, "type", "2")
		st, _ := slotAt(1)
		_, en := slotAt(2)
		res := s.post(s.pat.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it)
		v := res.Data()
		if res.Status != 200 || v["kind"] != "appointment" || v["status"].(float64) != 10 || v["provider_id"] != s.doc.UserID ||
			fmt.Sprint(int64(v["start"].(float64))) != st || fmt.Sprint(int64(v["end"].(float64))) != en {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		booked = v["id"].(string)
		if f := flags(avail("intake_id", s.intake(t, s.pat)), "slot_booked"); f != "011000" {
			t.Fatalf("%s", f)
		}
		// The slot is taken: a booked slot is not deleted from under its visit.
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + slots[1]["id"].(string), Header: userHeaders(s.c, s.doc.Token)}), 409, 409)
		res = e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + slots[0]["group_id"].(string), Header: userHeaders(s.c, s.doc.Token)})
		// The group's four open slots go; the booked two stay, and so does the group.
		if res.Data()["slot_deleted"].(float64) != 4 || res.Data()["group_deleted"].(float64) != 0 {
			t.Fatalf("%s", res.Raw)
		}
	})
	// Booking errors.
	t.Run("ErrBooking", func(t *testing.T) {
		it := s.intake(t, s.pat2, "type", "2")
		st, en := slotAt(1)
		wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it), 409, "booked")
		wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "room_code", "main", "type", "2", "intake_id", it), 400, "slot_end")
		wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "1", "intake_id", it), 400, "type")
		wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "slot_end", fmt.Sprint(tue0900NY+999), "room_code", "main", "type", "2", "intake_id", it), 400, "No slot")
		wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it, "member_id", "pat"), 400, "member_id")
	})
	// Cancelling the appointment reopens its slots; completing keeps them.
	t.Run("OKCancelReopensSlots", func(t *testing.T) {
		if r := s.post(s.pat.Token, "/api_v3/visits/delete", "id", booked, "reason", "patient_cancel_appointment"); r.Status != 200 {
			t.Fatalf("%s", r.Raw)
		}
		if f := flags(avail("room_code", "main"), "slot_booked"); f != "00" {
			t.Fatalf("%s", f)
		}
		it := s.intake(t, s.pat2, "type", "2")
		st, en := slotAt(1)
		res := s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it)
		if res.Status != 200 {
			t.Fatalf("%s", res.Raw)
		}
		vid := res.Data()["id"].(string)
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", vid))
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid))
		if f := flags(avail("room_code", "main"), "slot_booked"); f != "10" {
			t.Fatalf("%s", f)
		}
	})
}

// TestSlots_ConcurrentBooking: 50 patients book one slot at once, spread over
// three servers on one database. Exactly one gets the visit; the others get
// a clear 409 and nothing of theirs is left behind.
func TestSlots_ConcurrentBooking(t *testing.T) {
	t.Parallel()
	first := testenv.New(t)
	servers := []*testenv.Env{first,
		testenv.New(t, testenv.Options{DSN: first.DSN, ServerKey: first.Key, Clock: first.Clock}),
		testenv.New(t, testenv.Options{DSN: first.DSN, ServerKey: first.Key, Clock: first.Clock}),
	}
	s := newClinicSetup(t, first, "alpha")
	s.enableAppointments(t)
	slots := s.publish(t, s.doc.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "09:30", "timezone": "America/New_York", "duration": 30})
	st, en := fmt.Sprint(int64(slots[0]["start"].(float64))), fmt.Sprint(int64(slots[0]["end"].(float64)))
	const n = 50
	type patient struct{ token, intake string }
	pats := make([]patient, n)
	for i := range pats {
		p := mustSSO(t, first, s.c, "200", fmt.Sprintf("racer%d", i), "Racer", fmt.Sprint(i))
		pats[i] = patient{p.Token, s.intake(t, p, "type", "2")}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	var winners []string
	start := make(chan struct{})
	for i, p := range pats {
		wg.Add(1)
		go func(url string, p patient) {
			defer wg.Done()
			<-start
			res := testenv.Do(t, url, testenv.Req{Method: "POST", Path: "/api_v3/visits", Header: userHeaders(s.c, p.token),
				Form: q("slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", p.intake)})
			mu.Lock()
			defer mu.Unlock()
			got[res.Status]++
			if res.Status == 200 {
				winners = append(winners, res.Data()["id"].(string))
			} else if res.Body["error"] != "Conflict" {
				t.Errorf("loser's body: %s", res.Raw)
			}
		}(servers[i%3].URL, p)
	}
	close(start)
	wg.Wait()
	if got[200] != 1 || got[409] != n-1 {
		t.Fatalf("statuses %v", got)
	}
	res := first.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c)})
	if l := res.List(); len(l) != 1 || l[0]["id"] != winners[0] {
		t.Fatalf("visits after the race: %s", res.Raw)
	}
	var freeIntakes int
	for _, p := range pats {
		r := first.Do(testenv.Req{Path: "/api_v3/intakes/" + p.intake, Header: userHeaders(s.c, p.token)})
		if _, has := r.Data()["visit_id"]; !has {
			freeIntakes++
		}
	}
	if freeIntakes != n-1 {
		t.Fatalf("%d losers' intakes are still free, want %d", freeIntakes, n-1)
	}
}

// TestVisits_Reschedule: the patient moves a booked visit to another
// open time of its room; the old time opens again; a time taken, a visit
// that is not booked and another patient are refused.
func TestVisits_Reschedule(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	s.publish(t, s.doc.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "10:30", "timezone": "America/New_York", "duration": 30})
	at := func(i int) string { return fmt.Sprint(tue0900NY + int64(i)*1800) }
	book := func(who *session, i int) string {
		t.Helper()
		res := s.post(who.Token, "/api_v3/visits", "slot_start", at(i), "slot_end", at(i+1), "room_code", "main", "type", "2", "intake_id", s.intake(t, who, "type", "2"))
		if res.Status != 200 {
			t.Fatalf("book: %s", res.Raw)
		}
		return res.Data()["id"].(string)
	}
	mine := book(s.pat, 0)
	book(s.pat2, 2) // the time after next is taken
	path := "/api_v3/visits/" + mine + "/reschedule"
	res := s.post(s.pat.Token, path, "slot_start", at(1), "slot_end", at(2))
	if res.Status != 200 || fmt.Sprint(int64(res.Data()["start"].(float64))) != at(1) {
		t.Fatalf("reschedule: %d %s", res.Status, res.Raw)
	}
	avail := e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token), Query: q("room_code", "main", "start", at(0), "end", at(3))})
	var booked string
	for _, x := range avail.Data()["slots"].([]any) {
		booked += fmt.Sprint(x.(map[string]any)["slot_booked"])
	}
	if booked != "011" {
		t.Fatalf("after the move, booked: %s", booked)
	}
	wantObjErr(t, s.post(s.pat.Token, path, "slot_start", at(2), "slot_end", at(3)), 409, "booked")
	wantErr(t, s.post(s.pat2.Token, path, "slot_start", at(0), "slot_end", at(1)), 404, 404)
	wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits/"+s.econsult(t, s.pat2)+"/reschedule", "slot_start", at(0), "slot_end", at(1)), 409, "booked visit")
}

// TestSlots_AvailabilityStatements: the availability of a room reads its
// slots' providers, rooms and groups by id lists, so a window with two
// providers' slots takes as many statements as one with one provider's.
func TestSlots_AvailabilityStatements(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	s.publish(t, s.doc.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "10:00", "timezone": "America/New_York", "duration": 15})
	if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	s.publish(t, s.other.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "11:00", "time_end": "12:00", "timezone": "America/New_York", "duration": 20})
	count := func(hours int64, want int) int64 {
		t.Helper()
		e.Clock.Advance(time.Second) // not the answer held for this second
		res := e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token),
			Query: q("room_code", "main", "start", fmt.Sprint(tue0900NY), "end", fmt.Sprint(tue0900NY+hours*3600))})
		if res.Status != 200 || len(res.Data()["slots"].([]any)) != want {
			t.Fatalf("%d hours: %d %s", hours, res.Status, res.Raw)
		}
		return e.Statements()
	}
	count(1, 4) // warm the caches both reads use
	one, two := count(1, 4), count(3, 7)
	if one != two || one == 0 {
		t.Fatalf("%d statements with one provider's slots, %d with two providers'", one, two)
	}
	t.Logf("%d statements with one provider's slots or two providers'", one)
}

// TestAvailability_HeldForItsSecond: the same question in the same second,
// with no write since, is answered from the cache (app/availcache.go): no
// slot reads, the same body. A booking is seen at once, in that second;
// and the next second the question is read again.
func TestAvailability_HeldForItsSecond(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	s.publish(t, s.doc.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "10:00", "timezone": "America/New_York", "duration": 15})
	ask := func() (*testenv.Resp, int64) {
		t.Helper()
		res := e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token),
			Query: q("room_code", "main", "start", fmt.Sprint(tue0900NY), "end", fmt.Sprint(tue0900NY+3600))})
		if res.Status != 200 || len(res.Data()["slots"].([]any)) != 4 {
			t.Fatalf("availability: %d %s", res.Status, res.Raw)
		}
		return res, e.Statements() // the request's
	}
	booked := func(res *testenv.Resp) string {
		out := ""
		for _, sl := range res.Data()["slots"].([]any) {
			out += fmt.Sprint(sl.(map[string]any)["slot_booked"])
		}
		return out
	}
	ask() // the token's and the room's caches
	e.Clock.Advance(time.Second)
	first, full := ask()
	again, held := ask()
	if held >= full || string(again.Raw) != string(first.Raw) {
		t.Fatalf("asked again in the same second: %d statements against %d, same body %v", held, full, string(again.Raw) == string(first.Raw))
	}
	it := s.intake(t, s.pat, "type", "2")
	if res := s.post(s.pat.Token, "/api_v3/visits", "slot_start", fmt.Sprint(tue0900NY), "slot_end", fmt.Sprint(tue0900NY+900),
		"room_code", "main", "type", "2", "intake_id", it); res.Status != 200 {
		t.Fatalf("book: %d %s", res.Status, res.Raw)
	}
	after, n := ask()
	if n <= held || booked(after) != "1000" {
		t.Fatalf("after a booking in the same second: %d statements (%d held, %d read), booked %s", n, held, full, booked(after))
	}
	if _, n := ask(); n != held {
		t.Fatalf("asked again: %d statements, want %d", n, held)
	}
	e.Clock.Advance(time.Second)
	if _, n := ask(); n <= held {
		t.Fatalf("the next second: %d statements, as many as a held answer", n)
	}
}

// TestAvailability_Pages: a window of more slots than one answer holds
// (1,000) is answered up to the last instant read, with a Link to the
// same question from there; following the links gives every slot of the
// window once, in order. Without it the answer stopped at the 1,000th
// slot and said nothing.
func TestAvailability_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	// Two providers, five-minute slots 08:00–18:00 for six days: 1,440.
	for _, who := range []string{s.doc.Token, s.other.Token} {
		s.publish(t, who, map[string]any{"room_code": "main", "date_start": slotDay, "date_end": "2026-03-08", "time_start": "08:00", "time_end": "18:00",
			"timezone": "America/New_York", "duration": 5})
	}
	start, end := tue0900NY-3600, tue0900NY+7*86400
	query := q("room_code", "main", "start", fmt.Sprint(start), "end", fmt.Sprint(end))
	seen := map[string]bool{}
	last, answers := int64(0), 0
	for path := "/api_v3/availability"; ; answers++ {
		if answers > 5 {
			t.Fatal("the links do not end")
		}
		e.Clock.Advance(time.Second)
		res := e.Do(testenv.Req{Path: path, Query: query, Header: userHeaders(s.c, s.pat.Token)})
		if res.Status != 200 {
			t.Fatalf("answer %d: %d %s", answers, res.Status, res.Raw)
		}
		data := res.Data()
		for _, sl := range data["slots"].([]any) {
			id := sl.(map[string]any)["slot_id"].(string)
			at := int64(sl.(map[string]any)["slot_start"].(float64))
			if seen[id] || at < last {
				t.Fatalf("answer %d: slot %s again or out of order", answers, id)
			}
			seen[id], last = true, at
		}
		link := res.Header.Get("Link")
		if link == "" {
			break
		}
		u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		if err != nil || u.Path != "/api_v3/availability" || u.Query().Get("end") != fmt.Sprint(end) || u.Query().Get("room_code") != "main" {
			t.Fatalf("answer %d: Link %q", answers, link)
		}
		path, query = u.Path, u.Query()
	}
	if len(seen) != 1440 || answers < 1 {
		t.Fatalf("%d slots in %d answers, want 1,440 in two or more", len(seen), answers+1)
	}
}

// GET /slots and /slots/available page by slot: a window of more slots than
// a page is read whole through the Link headers, each slot once and in
// order, though the two providers' slots share every start.
func TestSlots_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	// Two providers, five-minute slots 08:00–18:00 for six days: 1,440.
	for _, who := range []string{s.doc.Token, s.other.Token} {
		s.publish(t, who, map[string]any{"room_code": "main", "date_start": slotDay, "date_end": "2026-03-08", "time_start": "08:00", "time_end": "18:00",
			"timezone": "America/New_York", "duration": 5})
	}
	h := userHeaders(s.c, s.pat.Token)
	window := q("start", fmt.Sprint(tue0900NY-86400), "end", fmt.Sprint(tue0900NY+7*86400))
	// walk follows the Link headers from path and query (a filtered page may
	// be short, and its cursor the last slot it read, not showed), and gives
	// the slots, in order of start, and the number of pages.
	walk := func(t *testing.T, path string, query url.Values) (ids []string, pages int) {
		t.Helper()
		slots, pages := pageWalk{path: path, query: query, header: h, cursor: "after", filtered: query.Has("type")}.walk(t, e)
		for i, sl := range slots {
			if i > 0 && sl["start"].(float64) < slots[i-1]["start"].(float64) {
				t.Fatalf("slot %v before %v", sl["id"], slots[i-1]["id"])
			}
		}
		return idsOf(slots, "id"), pages
	}
	once := func(t *testing.T, ids []string, want int) {
		t.Helper()
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("slot %s twice", id)
			}
			seen[id] = true
		}
		if len(seen) != want {
			t.Fatalf("%d slots, want %d", len(seen), want)
		}
	}
	t.Run("Default", func(t *testing.T) {
		ids, pages := walk(t, "/api_v3/slots", window)
		once(t, ids, 1440)
		if pages != 2 {
			t.Fatalf("%d pages, want 1,000 and 440", pages)
		}
	})
	t.Run("Limit", func(t *testing.T) {
		for _, limit := range []int{1, 7, 300} {
			query := q("start", fmt.Sprint(tue0900NY-3600), "end", fmt.Sprint(tue0900NY+3600), "limit", fmt.Sprint(limit))
			ids, _ := walk(t, "/api_v3/slots", query)
			// 09:00–10:00 New York: 12 slots each, the 08:00–09:00 hour too.
			once(t, ids, 48)
		}
	})
	t.Run("FilteredPagesGoOn", func(t *testing.T) {
		// No slot is a group's: every page is empty, and the links still
		// walk the window to its end.
		query := q("start", fmt.Sprint(tue0900NY-3600), "end", fmt.Sprint(tue0900NY+3600), "limit", "10", "type", "group")
		ids, pages := walk(t, "/api_v3/slots", query)
		if len(ids) != 0 || pages != 5 {
			t.Fatalf("%d group slots in %d pages, want none in 5", len(ids), pages)
		}
	})
	t.Run("Available", func(t *testing.T) {
		ids, pages := walk(t, "/api_v3/slots/available", q("limit", "500"))
		once(t, ids, 1440)
		if pages != 3 {
			t.Fatalf("%d pages of 500", pages)
		}
		first := e.Do(testenv.Req{Path: "/api_v3/slots/available", Header: h})
		if len(first.List()) != 200 || first.Header.Get("Link") == "" {
			t.Fatalf("the default page: %d slots, Link %q", len(first.List()), first.Header.Get("Link"))
		}
	})
	t.Run("BadAfter", func(t *testing.T) {
		b := newClinicSetup(t, e, "beta")
		theirs := b.publish(t, b.doc.Token, map[string]any{"room_code": "main", "date_start": slotDay, "time_start": "09:00", "time_end": "10:00",
			"timezone": "America/New_York", "duration": 30})
		for _, after := range []string{theirs[0]["id"].(string), "999999", "-1", "soon"} {
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/slots", Query: q("start", window.Get("start"), "end", window.Get("end"), "after", after), Header: h}), 400, 400)
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/slots/available", Query: q("after", after), Header: h}), 400, 400)
		}
	})
}

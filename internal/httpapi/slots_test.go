package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/mail"
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
	day := slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30}

	slots := s.publish(t, s.doc.Token, day)
	// Published in the spec's shape.
	t.Run("OKPublished", func(t *testing.T) {
		if len(slots) != 4 {
			t.Fatalf("%d slots", len(slots))
		}
		first := slots[0]
		g := first.Group
		if int64(first.Start) != tue0900NY || first.End-first.Start != 1800 || first.Status != 10 ||
			first.ProviderId != s.doc.UserID || first.Provider.FullName != "Dana Doc" || first.Account.Code != "alpha" || g == nil ||
			g.TimeStart != fmt.Sprint(tue0900NY) || g.Timezone != "America/New_York" || g.Local.TimeStart != "09:00" ||
			g.Consultation.Description != "15-min Consultation" {
			t.Fatalf("%+v", first)
		}
	})
	t.Run("ErrOverlap", func(t *testing.T) {
		body := slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "10:15", TimeEnd: "12:00", Timezone: "America/New_York", Duration: 45}
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token), JSON: body})
		wantErr(t, res, 409, 409)
		// The slot in the way, in the zone the provider wrote.
		if msg := messageOf(res); !strings.Contains(msg, "Tue 3 Mar 10:00 to 10:30 (America/New_York)") {
			t.Fatalf("%q", msg)
		}
	})
	// Times that have begun are left out; a schedule wholly past is
	// refused with the time now in its zone. The clock is Monday 2 March
	// 09:00 UTC, 04:00 in New York.
	t.Run("PastTimes", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token),
			JSON: slotGroup{RoomCode: "main", DateStart: "2026-03-01", TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30}})
		wantErr(t, res, 400, 400)
		if msg := messageOf(res); !strings.Contains(msg, "have passed: it is now Mon 2 Mar 04:00 in America/New_York") {
			t.Fatalf("%q", msg)
		}
		today := s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: "2026-03-02", TimeStart: "07:00", TimeEnd: "11:00", Timezone: "UTC", Duration: 60})
		if len(today) != 2 || today[0].Start != int(e.Clock.Now().Unix()) {
			t.Fatalf("today from 07:00 at 09:00: %d slots from %d", len(today), today[0].Start)
		}
		// Gone again, so the lists below count the day's slots only.
		mustOK(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + today[0].GroupId, Header: userHeaders(s.c, s.doc.Token)}))
	})
	// Who may publish.
	t.Run("ErrNotAllowed", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.pat.Token), JSON: day})
		wantErr(t, res, 403, 403)
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.other.Token), JSON: day})
		wantErr(t, res, 400, 400) // not linked to the room
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token), JSON: slotGroup{
			RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "11:00", Timezone: "America/New_York", Duration: 30, ProviderID: s.other.UserID}})
		wantErr(t, res, 403, 403)
		// The admin publishes for a provider, here with the room's consultation.
		if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
			t.Fatal(r.Status)
		}
		if got := dataOf[[]client.Slot](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: adminHeaders(s.c), Form: q("provider_id", s.other.UserID,
			"room_code", "main", "date_start", slotDay, "time_start", "13:00", "time_end", "14:00", "timezone", "America/New_York", "consultation_id", "1")})); len(got) != 4 {
			t.Fatalf("%d slots", len(got))
		}
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: adminHeaders(s.c), JSON: day}), 400, 400) // no provider_id
		bad := slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "08:00", Timezone: "America/New_York", Duration: 30}
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, s.doc.Token), JSON: bad}), 400, 400)
	})
	// List filters.
	t.Run("OKListFilters", func(t *testing.T) {
		list := func(kv ...string) []client.Slot {
			return dataOf[[]client.Slot](t, e.Do(testenv.Req{Path: "/api_v3/slots", Header: userHeaders(s.c, s.pat.Token), Query: q(append([]string{"start", fmt.Sprint(tue0900NY - 3600), "end", fmt.Sprint(tue0900NY + 24*3600)}, kv...)...)}))
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
		if l := dataOf[[]client.Slot](t, e.Do(testenv.Req{Path: "/api_v3/slots/available", Header: userHeaders(s.c, s.pat.Token)})); len(l) != 8 || l[0].Provider.StatesServiced == nil {
			t.Fatalf("%+v", l)
		}
	})
	// Delete a slot and a group.
	t.Run("OKDeleteSlotAndGroup", func(t *testing.T) {
		id := slots[3].Id
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + id, Header: userHeaders(s.c, s.pat.Token)}), 403, 403)
		if d := decode[client.Deleted](t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + id, Header: userHeaders(s.c, s.doc.Token)})).Data; d.SlotDeleted != 1 || d.GroupDeleted != 0 {
			t.Fatalf("%+v", d)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + id, Header: userHeaders(s.c, s.doc.Token)}), 404, 404)
		if d := decode[client.Deleted](t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + slots[0].GroupId, Header: adminHeaders(s.c)})).Data; d.SlotDeleted != 3 || d.GroupDeleted != 1 {
			t.Fatalf("%+v", d)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + slots[0].GroupId, Header: adminHeaders(s.c)}), 404, 404)
	})
}

func TestSlots_AvailabilityAndBooking(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	slots := s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:30", Timezone: "America/New_York", Duration: 15})
	slotAt := func(i int) (string, string) {
		return fmt.Sprint(slots[i].Start), fmt.Sprint(slots[i].End)
	}
	avail := func(kv ...string) availability {
		t.Helper()
		return dataOf[availability](t, e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token),
			Query: q(append([]string{"start", fmt.Sprint(tue0900NY), "end", fmt.Sprint(tue0900NY + 3*3600)}, kv...)...)}))
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
		if d.available() != "111111" || d.booked() != "000000" {
			t.Fatalf("%+v", d)
		}
		if len(d.SlotData) != len(d.Slots) {
			t.Fatalf("%d slot_data entries for %d slots", len(d.SlotData), len(d.Slots))
		}
		for _, sl := range d.Slots {
			if e, ok := d.SlotData[sl.SlotID]; !ok || e.ID != sl.SlotID || e.Start != sl.SlotStart {
				t.Fatalf("slot %+v: slot_data %+v", sl, e)
			}
		}
		if sd := d.SlotData[slots[0].Id]; sd.ProviderID != s.doc.UserID || sd.Consultation.Duration != 15 {
			t.Fatalf("%+v", sd)
		}
		// 45 minutes need three back-to-back slots: the last two cannot start one.
		if f := avail("room_code", "main", "duration", "2700").available(); f != "111100" {
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
		v := dataOf[client.Visit](t, s.post(s.pat.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it))
		if v.Kind != "appointment" || v.Status != 10 || v.ProviderId != s.doc.UserID || fmt.Sprint(v.Start) != st || fmt.Sprint(v.End) != en {
			t.Fatalf("%+v", v)
		}
		booked = v.Id
		if f := avail("intake_id", s.intake(t, s.pat)).booked(); f != "011000" {
			t.Fatalf("%s", f)
		}
		// The slot is taken: a booked slot is not deleted from under its visit.
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/" + slots[1].Id, Header: userHeaders(s.c, s.doc.Token)}), 409, 409)
		d := decode[client.Deleted](t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/slots/groups/" + slots[0].GroupId, Header: userHeaders(s.c, s.doc.Token)})).Data
		// The group's four open slots go; the booked two stay, and so does the group.
		if d.SlotDeleted != 4 || d.GroupDeleted != 0 {
			t.Fatalf("%+v", d)
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
		if f := avail("room_code", "main").booked(); f != "00" {
			t.Fatalf("%s", f)
		}
		it := s.intake(t, s.pat2, "type", "2")
		st, en := slotAt(1)
		vid := dataOf[client.Visit](t, s.post(s.pat2.Token, "/api_v3/visits", "slot_start", st, "slot_end", en, "room_code", "main", "type", "2", "intake_id", it)).Id
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", vid))
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid))
		if f := avail("room_code", "main").booked(); f != "10" {
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
	slots := s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "09:30", Timezone: "America/New_York", Duration: 30})
	st, en := fmt.Sprint(slots[0].Start), fmt.Sprint(slots[0].End)
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
				winners = append(winners, decodeRaw[client.VisitResponse](t, res.Raw).Data.Id)
			} else if string(errorIn(res).Error) != `"Conflict"` {
				t.Errorf("loser's body: %s", res.Raw)
			}
		}(servers[i%3].URL, p)
	}
	close(start)
	wg.Wait()
	if got[200] != 1 || got[409] != n-1 {
		t.Fatalf("statuses %v", got)
	}
	if l := dataOf[[]client.Visit](t, first.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c)})); len(l) != 1 || l[0].Id != winners[0] {
		t.Fatalf("visits after the race: %+v", l)
	}
	var freeIntakes int
	for _, p := range pats {
		if it := dataOf[client.Intake](t, first.Do(testenv.Req{Path: "/api_v3/intakes/" + p.intake, Header: userHeaders(s.c, p.token)})); it.VisitId == nil {
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
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:30", Timezone: "America/New_York", Duration: 30})
	at := func(i int) string { return fmt.Sprint(tue0900NY + int64(i)*1800) }
	book := func(who *session, i int) string {
		t.Helper()
		return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits", "slot_start", at(i), "slot_end", at(i+1), "room_code", "main", "type", "2", "intake_id", s.intake(t, who, "type", "2"))).Id
	}
	mine := book(s.pat, 0)
	book(s.pat2, 2) // the time after next is taken
	path := "/api_v3/visits/" + mine + "/reschedule"
	if v := dataOf[client.Visit](t, s.post(s.pat.Token, path, "slot_start", at(1), "slot_end", at(2))); fmt.Sprint(v.Start) != at(1) {
		t.Fatalf("reschedule: %+v", v)
	}
	avail := dataOf[availability](t, e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token), Query: q("room_code", "main", "start", at(0), "end", at(3))}))
	if booked := avail.booked(); booked != "011" {
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
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "America/New_York", Duration: 15})
	if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	s.publish(t, s.other.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "11:00", TimeEnd: "12:00", Timezone: "America/New_York", Duration: 20})
	count := func(hours int64, want int) int64 {
		t.Helper()
		e.Clock.Advance(time.Second) // not the answer held for this second
		res := e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token),
			Query: q("room_code", "main", "start", fmt.Sprint(tue0900NY), "end", fmt.Sprint(tue0900NY+hours*3600))})
		if got := dataOf[availability](t, res); len(got.Slots) != want {
			t.Fatalf("%d hours: %s", hours, res.Raw)
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
	s.publish(t, s.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "America/New_York", Duration: 15})
	ask := func() (*testenv.Resp, int64) {
		t.Helper()
		res := e.Do(testenv.Req{Path: "/api_v3/availability", Header: userHeaders(s.c, s.pat.Token),
			Query: q("room_code", "main", "start", fmt.Sprint(tue0900NY), "end", fmt.Sprint(tue0900NY+3600))})
		if got := dataOf[availability](t, res); len(got.Slots) != 4 {
			t.Fatalf("availability: %s", res.Raw)
		}
		return res, e.Statements() // the request's
	}
	booked := func(res *testenv.Resp) string { return dataOf[availability](t, res).booked() }
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
		s.publish(t, who, slotGroup{RoomCode: "main", DateStart: slotDay, DateEnd: "2026-03-08", TimeStart: "08:00", TimeEnd: "18:00", Timezone: "America/New_York", Duration: 5})
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
		for _, sl := range dataOf[availability](t, res).Slots {
			id, at := sl.SlotID, sl.SlotStart
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
		s.publish(t, who, slotGroup{RoomCode: "main", DateStart: slotDay, DateEnd: "2026-03-08", TimeStart: "08:00", TimeEnd: "18:00", Timezone: "America/New_York", Duration: 5})
	}
	h := userHeaders(s.c, s.pat.Token)
	window := q("start", fmt.Sprint(tue0900NY-86400), "end", fmt.Sprint(tue0900NY+7*86400))
	// walk follows the Link headers from path and query (a filtered page may
	// be short, and its cursor the last slot it read, not showed), and gives
	// the slots, in order of start, and the number of pages.
	walk := func(t *testing.T, path string, query url.Values) (ids []string, pages int) {
		t.Helper()
		slots, pages := walkAs[client.Slot](t, e, pageWalk{path: path, query: query, header: h, cursor: "after", filtered: query.Has("type")})
		for i, sl := range slots {
			if i > 0 && sl.Start < slots[i-1].Start {
				t.Fatalf("slot %s before %s", sl.Id, slots[i-1].Id)
			}
			ids = append(ids, sl.Id)
		}
		return ids, pages
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
		if n := len(dataOf[[]client.Slot](t, first)); n != 200 || first.Header.Get("Link") == "" {
			t.Fatalf("the default page: %d slots, Link %q", n, first.Header.Get("Link"))
		}
	})
	t.Run("BadAfter", func(t *testing.T) {
		b := newClinicSetup(t, e, "beta")
		theirs := b.publish(t, b.doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:00", Timezone: "America/New_York", Duration: 30})
		for _, after := range []string{theirs[0].Id, "999999", "-1", "soon"} {
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/slots", Query: q("start", window.Get("start"), "end", window.Get("end"), "after", after), Header: h}), 400, 400)
			wantErr(t, e.Do(testenv.Req{Path: "/api_v3/slots/available", Query: q("after", after), Header: h}), 400, 400)
		}
	})
}

// slotGroup is a group of slots as a client publishes it (POST /slots).
type slotGroup struct {
	RoomCode   string `json:"room_code"`
	ProviderID string `json:"provider_id,omitempty"`
	DateStart  string `json:"date_start"`
	DateEnd    string `json:"date_end,omitempty"`
	TimeStart  string `json:"time_start"`
	TimeEnd    string `json:"time_end"`
	Timezone   string `json:"timezone,omitempty"`
	Duration   int    `json:"duration,omitempty"`
}

// availability is GET /availability's answer: the window's slots with
// their flags, and each slot's record by id.
type availability struct {
	Slots []struct {
		SlotID        string `json:"slot_id"`
		SlotStart     int64  `json:"slot_start"`
		SlotAvailable int    `json:"slot_available"`
		SlotBooked    int    `json:"slot_booked"`
	} `json:"slots"`
	SlotData map[string]struct {
		ID           string `json:"id"`
		Start        int64  `json:"start"`
		ProviderID   string `json:"provider_id"`
		Consultation struct {
			Duration int `json:"duration"`
		} `json:"consultation"`
	} `json:"slot_data"`
}

// available and booked are the slots' flags in order, as "1010".
func (a availability) available() string {
	out := ""
	for _, sl := range a.Slots {
		out += fmt.Sprint(sl.SlotAvailable)
	}
	return out
}

func (a availability) booked() string {
	out := ""
	for _, sl := range a.Slots {
		out += fmt.Sprint(sl.SlotBooked)
	}
	return out
}

// TestAppointments_ChangeMails: a booking, a move and a cancellation are
// each mailed to the people they concern other than the one who made
// them, with the time in the person's zone: the booking confirmed to the
// patient (with the calendar file's link) and told to the provider; the
// patient's move told to the provider; the provider's cancellation, with
// its reason in words, told to the patient. One who turned emails off is
// not mailed.
func TestAppointments_ChangeMails(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	s.enableAppointments(t)
	sso := func(typ, code, first, email, zone string, off bool) *session {
		t.Helper()
		form := map[string]string{"first_name": first, "last_name": "Mailed", "type": typ, "code": code, "email": email}
		if off {
			form["disable_emails"] = "1"
		}
		p := dataOf[ssoProfile](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(s.c), Multipart: form}))
		mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, p.Token.Token), Form: q("timezone", zone)}))
		return &session{UserID: p.Id, Token: p.Token.Token, Profile: p}
	}
	pat := sso("200", "mailed-pat", "Maria", "maria@example.com", "Europe/Madrid", false)
	quiet := sso("200", "quiet-pat", "Quinn", "quinn@example.com", "Europe/Madrid", true)
	doc := sso("400", "mailed-doc", "Dana", "dana@clinic.example", "America/Chicago", false)
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + doc.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}))
	s.publish(t, doc.Token, slotGroup{RoomCode: "main", DateStart: slotDay, TimeStart: "09:00", TimeEnd: "10:30", Timezone: "America/New_York", Duration: 30})
	at := func(i int) string { return fmt.Sprint(tue0900NY + int64(i)*1800) }
	box := &outbox{}
	mails := func() []mail.Message {
		t.Helper()
		box.msgs = nil
		e.App.DeliverMail(context.Background(), box)
		return box.msgs
	}

	visit := dataOf[client.Visit](t, s.post(pat.Token, "/api_v3/visits", "slot_start", at(0), "slot_end", at(1), "room_code", "main", "type", "2", "intake_id", s.intake(t, pat, "type", "2"))).Id
	got := mails()
	if len(got) != 2 {
		t.Fatalf("%d mails after the booking: %+v", len(got), got)
	}
	for _, m := range got {
		switch m.To {
		case "maria@example.com":
			link := regexp.MustCompile(`https://portal\.teleclinic\.test/v/([A-Za-z0-9_-]+)`).FindStringSubmatch(m.Body)
			if m.Subject != "Alpha Clinic: your video visit is booked" || !strings.Contains(m.Body, "Tuesday 3 March 2026, 15:00 (Europe/Madrid)") || link == nil {
				t.Errorf("the patient's confirmation: %+v", m)
				continue
			}
			// The link opens the visit on the portal, never the API.
			if res := e.Do(testenv.Req{Path: "/api_v3/visits/" + visit, Header: userHeaders(s.c, link[1])}); res.Status != 401 {
				t.Errorf("the visit link as an API token: %d %s", res.Status, res.Raw)
			}
		case "dana@clinic.example":
			if !strings.Contains(m.Subject, "booked with you") || !strings.Contains(m.Body, "Tuesday 3 March 2026, 08:00 (America/Chicago)") ||
				!strings.Contains(m.Body, "https://portal.teleclinic.test/visits/start/"+visit+"\n") {
				t.Errorf("the provider's: %+v", m)
			}
		default:
			t.Errorf("a mail to %s", m.To)
		}
	}

	mustOK(t, s.post(pat.Token, "/api_v3/visits/"+visit+"/reschedule", "slot_start", at(1), "slot_end", at(2)))
	if got := mails(); len(got) != 1 || got[0].To != "dana@clinic.example" || !strings.Contains(got[0].Body, "is now on Tuesday 3 March 2026, 08:30 (America/Chicago) (moved by the patient)") {
		t.Fatalf("the move's mails: %+v", got)
	}

	mustOK(t, s.post(doc.Token, "/api_v3/visits/delete", "id", visit, "reason", "provider_cancel_appointment"))
	if got := mails(); len(got) != 1 || got[0].To != "maria@example.com" || got[0].Subject != "Alpha Clinic: your video visit was cancelled" ||
		!strings.Contains(got[0].Body, "was cancelled by the clinic") || !strings.Contains(got[0].Body, "The reason given: the provider cancelled") {
		t.Fatalf("the cancellation's mails: %+v", got)
	}

	// Emails off: a booking of theirs tells the provider only.
	mustOK(t, s.post(quiet.Token, "/api_v3/visits", "slot_start", at(2), "slot_end", at(3), "room_code", "main", "type", "2", "intake_id", s.intake(t, quiet, "type", "2")))
	if got := mails(); len(got) != 1 || got[0].To != "dana@clinic.example" {
		t.Fatalf("with the patient's emails off: %+v", got)
	}

	// In the person's language: the patient's profile says Spanish (a
	// language the clinic does not write in is refused), the provider's
	// nothing.
	if d := wantUsersErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, pat.Token), Form: q("language", "fr")}), 400); !strings.Contains(d, "language") {
		t.Errorf("a language the clinic does not write in: %q", d)
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, pat.Token), Form: q("language", "es")}))
	mustOK(t, s.post(pat.Token, "/api_v3/visits", "slot_start", at(0), "slot_end", at(1), "room_code", "main", "type", "2", "intake_id", s.intake(t, pat, "type", "2")))
	for _, m := range mails() {
		switch m.To {
		case "maria@example.com":
			if m.Subject != "Alpha Clinic: su videoconsulta está reservada" || !strings.Contains(m.Body, "Hola, Maria:") ||
				!strings.Contains(m.Body, "martes, 3 de marzo de 2026, 15:00 (Europe/Madrid)") {
				t.Errorf("the Spanish confirmation: %+v", m)
			}
		case "dana@clinic.example":
			if !strings.Contains(m.Subject, "booked with you") {
				t.Errorf("the provider's, in English: %+v", m)
			}
		}
	}
}

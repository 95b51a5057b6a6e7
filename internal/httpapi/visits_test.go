package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

func TestIntakes_CreateReadUpdate(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")

	// OK custom fields echoed, query and body merged.
	t.Run("OKCustomFields", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token),
			Query: q("room_code", "main", "reason_for_visit", "Cough", "location", "ny", "type", "2"),
			Form:  q("symptom_days", "3", "smoker", "no")})
		d := dataOf[client.Intake](t, res)
		if d.ReasonForVisit != "Cough" || d.Location != "NY" || d.Type != "2" || d.MemberId != s.pat.UserID {
			t.Fatalf("%s", res.Raw)
		}
		if diff := cmp.Diff(map[string]string{"symptom_days": "3", "smoker": "no"}, d.Custom); diff != "" {
			t.Fatalf("custom (-want +got):\n%s", diff)
		}
		if d.VisitId != nil {
			t.Fatal("visit_id appears only once linked")
		}
		if got := dataOf[client.Intake](t, e.Do(testenv.Req{Path: "/api_v3/intakes/" + d.Id, Header: userHeaders(s.c, s.pat.Token)})); got.Custom["smoker"] != "no" {
			t.Fatalf("%+v", got)
		}
	})
	// Who reads an intake.
	t.Run("ErrNotAllowed", func(t *testing.T) {
		id := s.intake(t, s.pat, "reason_for_visit", "Rash")
		read := func(h map[string]string) int {
			return e.Do(testenv.Req{Path: "/api_v3/intakes/" + id, Header: h}).Status
		}
		if read(userHeaders(s.c, s.pat2.Token)) != 404 || read(userHeaders(s.c, s.doc.Token)) != 404 || read(adminHeaders(s.c)) != 200 {
			t.Fatal("only the patient and the admin read an intake without a visit")
		}
		// Naming a provider lets them read it.
		if it := dataOf[client.Intake](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes/" + id, Header: userHeaders(s.c, s.pat.Token), Query: q("provider_id", s.doc.UserID)})); it.Provider == nil || *it.Provider != s.doc.UserID {
			t.Fatalf("%+v", it)
		}
		if read(userHeaders(s.c, s.doc.Token)) != 200 || read(userHeaders(s.c, s.other.Token)) != 404 {
			t.Fatal("the named provider reads it, another does not")
		}
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/intakes/" + id, Header: userHeaders(s.c, s.pat2.Token)}), 404, "Intake not found")
	})
	// A provider files for a patient by code; a patient only for themself.
	t.Run("ErrFilesForOthers", func(t *testing.T) {
		type intakeBody struct {
			RoomCode string `json:"room_code"`
			MemberID string `json:"member_id,omitempty"`
			Provider string `json:"provider,omitempty"`
		}
		it := dataOf[client.Intake](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.doc.Token), JSON: intakeBody{"main", "pat2", s.doc.UserID}}))
		if it.MemberId != s.pat2.UserID || it.Provider == nil || *it.Provider != s.doc.UserID {
			t.Fatalf("%+v", it)
		}
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.doc.Token), JSON: intakeBody{RoomCode: "main"}}), 400, "member_id")
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.doc.Token), JSON: intakeBody{RoomCode: "main", MemberID: "doc"}}), 400, "member_id")
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token), JSON: intakeBody{RoomCode: "main", MemberID: s.pat2.UserID}}), 403, "themself")
	})
	// Attachments must be files the patient may attach.
	t.Run("ErrAttachmentNotVisible", func(t *testing.T) {
		var pid, p2 int64
		fmt.Sscan(s.pat.UserID, &pid)
		fmt.Sscan(s.pat2.UserID, &p2)
		mine, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, pid, "intake_attachment", "user", pid, "scan.pdf", 1)
		theirs, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, p2, "intake_attachment", "user", p2, "x.pdf", 1)
		att := dataOf[client.Intake](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token),
			JSON: js(fmt.Sprintf(`{"room_code": "main", "attachments": [{"_id": "%d"}]}`, mine))})).Attachments
		if len(att) != 1 || att[0].Name != "scan.pdf" || !strings.Contains(att[0].Path, "auth_code=") {
			t.Fatalf("%+v", att)
		}
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token), Form: q("room_code", "main", "attachments", fmt.Sprintf("%d,%d", mine, theirs))})
		wantObjErr(t, res, 400, "attachment")
	})
	// Errors.
	t.Run("ErrInvalid", func(t *testing.T) {
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes"), 400, "room_code")
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes", "room_code", "nope"), 404, "Room")
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes", "room_code", "main", "type", "3"), 400, "type")
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes", "room_code", "main", "location", "New York"), 400, "location")
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes", "room_code", "main", "provider_id", s.pat2.UserID), 400, "provider")
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: acctHeaders(s.c), Form: q("room_code", "main")}), 401, "token")
		if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: acctHeaders(s.c)}); r.Body["error"] != "Unauthorized" {
			t.Fatalf("%s", r.Raw)
		}
	})
}

func TestVisits_WalkinAndQueue(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	queue := func(tok string) queueInfo {
		h := acctHeaders(s.c)
		if tok != "" {
			h["X-ApiToken"] = tok
		}
		return dataOf[queueInfo](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/queue", Header: h}))
	}

	it1 := s.intake(t, s.pat, "reason_for_visit", "Fever")
	v := dataOf[client.Visit](t, s.post(s.pat.Token, "/api_v3/visits/add_walkin.json", "intake_id", it1, "room_code", "main"))
	if v.Status != 10 || v.Kind != "walkin" || v.Type != 3 || v.MemberId != s.pat.UserID || v.Intake == nil || v.Intake.VisitId == nil ||
		*v.Intake.VisitId != v.Id || v.Meeting.MeetingId == "" || v.ActualStart != nil {
		t.Fatalf("%+v", v)
	}
	visit1 := v.Id
	it2 := s.intake(t, s.pat2)
	if r := s.post(s.pat2.Token, "/api_v3/visits/add_walkin", "intake_id", it2, "room_code", "main", "visit_data_id", "ignored"); r.Status != 200 {
		t.Fatalf("%s", r.Raw)
	}

	// Queue counts and before_me.
	t.Run("OKQueueCounts", func(t *testing.T) {
		if qu := queue(""); qu != (queueInfo{Length: 2, Capacity: 50, AverageVisitTime: 900}) {
			t.Fatalf("%+v", qu)
		}
		if qu := queue(s.pat2.Token); qu.BeforeMe != 1 {
			t.Fatalf("%+v", qu)
		}
		h := acctHeaders(s.c)
		h["X-ApiToken"] = "bogus"
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/queue", Header: h}), 401, 401)
	})
	t.Run("ErrIntakeUsedTwice", func(t *testing.T) {
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it1, "room_code", "main"), 409, "already has")
	})
	// One visit per intake under concurrent requests.
	t.Run("ErrConcurrentSameIntake", func(t *testing.T) {
		it := s.intake(t, s.pat)
		got := raceStatuses(t, []string{e.URL}, 10, testenv.Req{Method: "POST", Path: "/api_v3/visits/add_walkin", Header: userHeaders(s.c, s.pat.Token), Form: q("intake_id", it, "room_code", "main")})
		if got[200] != 1 || got[409] != 9 {
			t.Fatalf("%v", got)
		}
	})
	t.Run("ErrMissingAndWrong", func(t *testing.T) {
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "room_code", "main"), 400, "intake_id")
		wantObjErr(t, s.post(s.pat2.Token, "/api_v3/visits/add_walkin", "intake_id", it1, "room_code", "main"), 404, "Intake")
		mustRoom(t, e, s.c, js(`{"domain": "`+s.domain+`", "name": "Other", "code": "other"}`))
		it := s.intake(t, s.pat)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "other"), 400, "another room")
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main", "user_code", "pat2"), 400, "user_code")
	})
	// Room rules: walk-ins off, closed, full.
	t.Run("ErrRoomRules", func(t *testing.T) {
		put := func(body string) {
			mustOK(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(body)}))
		}
		it := s.intake(t, s.pat)
		put(`{"visits": {"walkin": {"enabled": false}}}`)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main"), 400, "walk-ins")
		put(`{"visits": {"walkin": {"enabled": true}}, "operation_settings": {"is_closed": true, "close_msg": "Back at 8"}}`)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main"), 409, "Back at 8")
		put(`{"operation_settings": {"is_closed": false}, "queue_capacity": 3}`)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main"), 409, "full")
		put(`{"queue_capacity": 50}`)
	})
	// Average_visit_time from completed visits.
	t.Run("OKAverageVisitTime", func(t *testing.T) {
		// The room's provider sees the waiting walk-in but must accept it
		// before starting it.
		if r := s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", visit1); r.Status != 403 {
			t.Fatalf("an unassigned walk-in is not the provider's to start: %d", r.Status)
		}
		start := e.Clock.Now().Unix()
		v := dataOf[client.Visit](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/inprogress", Header: adminHeaders(s.c), Form: q("id", visit1, "actual_start", fmt.Sprint(start))}))
		if v.Status != 25 || v.ActualStart == nil || int64(*v.ActualStart) != start {
			t.Fatalf("%+v", v)
		}
		if qu := queue(""); qu.Length != 2 {
			t.Fatalf("a started visit leaves the queue: %+v", qu)
		}
		v = dataOf[client.Visit](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/close", Header: adminHeaders(s.c), Form: q("id", visit1, "status", "30", "actual_end", fmt.Sprint(start+600))}))
		if v.Status != 30 {
			t.Fatalf("%+v", v)
		}
		if qu := queue(""); qu.AverageVisitTime != 600 {
			t.Fatalf("%+v", qu)
		}
	})
}

func TestVisits_EconsultAndLifecycle(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	econsult := func(who *session) client.Visit {
		t.Helper()
		it := s.intake(t, who, "reason_for_visit", "Question")
		return dataOf[client.Visit](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, who.Token), JSON: client.VisitCreateBody{IntakeId: &it, RoomCode: ptr("main")}}))
	}
	listIDs := func(tok string, kv ...string) []string {
		var out []string
		for _, v := range dataOf[[]client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits", Header: userHeaders(s.c, tok), Query: q(kv...)})) {
			out = append(out, v.Id)
		}
		return out
	}

	v := econsult(s.pat)
	vid := v.Id
	if v.ProviderId != "0" || v.Provider != nil || v.Type != 4 || v.Incharge == nil || *v.Incharge || v.IsEditExpired == nil || *v.IsEditExpired {
		t.Fatalf("%+v", v)
	}
	// The room's providers see an unassigned e-consult; others do not.
	t.Run("ErrNotHost", func(t *testing.T) {
		if ids := listIDs(s.doc.Token); len(ids) != 1 || ids[0] != vid {
			t.Fatalf("%v", ids)
		}
		if ids := listIDs(s.other.Token); len(ids) != 0 {
			t.Fatalf("%v", ids)
		}
		if ids := listIDs(s.pat2.Token); len(ids) != 0 {
			t.Fatalf("%v", ids)
		}
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.other.Token)}), 404, "Visit not found")
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat2.Token)}), 404, "Visit not found")
		if v := dataOf[client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid + ".json", Header: userHeaders(s.c, s.pat.Token)})); v.Intake == nil || v.Intake.ReasonForVisit != "Question" {
			t.Fatalf("%+v", v.Intake)
		}
	})
	t.Run("ErrPatientCannotAccept", func(t *testing.T) {
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/accept", "id", vid), 403, "provider")
	})
	// Accept: exactly one of concurrent providers wins.
	t.Run("ErrConcurrentAccept", func(t *testing.T) {
		if r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); r.Status != 200 {
			t.Fatal(r.Status)
		}
		got := raceStatuses(t, []string{e.URL}, 6, testenv.Req{Method: "POST", Path: "/api_v3/visits/accept", Header: userHeaders(s.c, s.doc.Token), Form: q("id", vid)})
		got2 := raceStatuses(t, []string{e.URL}, 1, testenv.Req{Method: "POST", Path: "/api_v3/visits/accept", Header: userHeaders(s.c, s.other.Token), Form: q("id", vid)})
		if got[200]+got2[200] != 1 {
			t.Fatalf("%v %v", got, got2)
		}
		v := dataOf[client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat.Token)}))
		if v.ProviderId != s.doc.UserID || v.Status != 20 || v.Provider == nil || v.Provider.FullName != "Dana Doc" {
			t.Fatalf("%+v", v)
		}
		if ids := listIDs(s.other.Token); len(ids) != 0 {
			t.Fatalf("an accepted e-consult leaves the other providers' lists: %v", ids)
		}
	})
	// The provider may now read the patient's profile.
	t.Run("OKProviderReadsPatient", func(t *testing.T) {
		if r := e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID, Header: userHeaders(s.c, s.doc.Token)}); r.Status != 200 {
			t.Fatalf("%d", r.Status)
		}
	})
	// Lifecycle rules.
	t.Run("ErrLifecycle", func(t *testing.T) {
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/inprogress", "id", vid), 403, "provider")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid), 409, "confirmed (20)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/confirm", "id", vid), 409, "confirmed (20)")
		if v := dataOf[client.Visit](t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", vid)); v.ActualStart == nil || int64(*v.ActualStart) != e.Clock.Now().Unix() {
			t.Fatalf("%+v", v)
		}
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", vid, "reason", "patient_exit_room"), 409, "in progress (25)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid, "status", "40"), 400, "status")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid, "actual_end", "1000"), 400, "actual_end")
		e.Clock.Advance(10 * time.Minute)
		if v := dataOf[client.Visit](t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid)); v.Status != 30 {
			t.Fatalf("%+v", v)
		}
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", vid), 409, "completed (30)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", vid), 409, "completed (30)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close"), 400, "id")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", "999999"), 404, "Visit")
		// The intake of a completed visit no longer changes.
		it := dataOf[client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat.Token)})).IntakeId
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes/"+it, "reason_for_visit", "changed"), 409, "over")
	})
	// A patient cancels their own pending or confirmed visit.
	t.Run("OKPatientCancels", func(t *testing.T) {
		v := econsult(s.pat)
		c := dataOf[client.Visit](t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", v.Id, "reason", "patient_cancel_appointment"))
		if c.Status != 40 || c.CancelReason == nil || *c.CancelReason != "patient_cancel_appointment" {
			t.Fatalf("%+v", c)
		}
		v2 := econsult(s.pat2)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", v2.Id), 404, "Visit")
	})
	// List filters.
	t.Run("OKListFilters", func(t *testing.T) {
		all := listIDs(s.pat.Token)
		if len(all) != 2 {
			t.Fatalf("%v", all)
		}
		if ids := listIDs(s.pat.Token, "status", "30"); len(ids) != 1 || ids[0] != vid {
			t.Fatalf("%v", ids)
		}
		if ids := listIDs(s.pat.Token, "status", "30,40"); len(ids) != 2 {
			t.Fatalf("%v", ids)
		}
		if ids := listIDs(s.pat.Token, "room_code", "main", "start_time", "0"); len(ids) != 2 {
			t.Fatalf("%v", ids)
		}
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits", Header: userHeaders(s.c, s.pat.Token), Query: q("status", "11")}), 400, "status")
		res := e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c)})
		if n := len(dataOf[[]client.Visit](t, res)); n != 3 {
			t.Fatalf("admin sees all: %d", n)
		}
	})
	// Another clinic's admin sees nothing.
	t.Run("ErrOtherClinic", func(t *testing.T) {
		b := e.NewClinic("beta", true)
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: adminHeaders(b)}), 404, "Visit")
		if l := dataOf[[]client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(b)})); len(l) != 0 {
			t.Fatalf("%+v", l)
		}
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/delete", Header: adminHeaders(b), Form: q("id", vid)}), 404, "Visit")
	})
}

// ptr is v's address, for the client's optional fields.
func ptr[T any](v T) *T { return &v }

// queueInfo is a room's queue as GET /rooms/{code}/queue and its stream
// answer it.
type queueInfo struct {
	Length           int `json:"length"`
	Capacity         int `json:"capacity"`
	AverageVisitTime int `json:"average_visit_time"`
	BeforeMe         int `json:"before_me"`
}

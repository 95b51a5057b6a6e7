package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
		d := res.Data()
		if res.Status != 200 || d["reason_for_visit"] != "Cough" || d["location"] != "NY" || d["type"] != "2" || d["member_id"] != s.pat.UserID {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		if cu := d["custom"].(map[string]any); cu["symptom_days"] != "3" || cu["smoker"] != "no" || len(cu) != 2 {
			t.Fatalf("custom %v", cu)
		}
		if _, has := d["visit_id"]; has {
			t.Fatal("visit_id appears only once linked")
		}
		got := e.Do(testenv.Req{Path: "/api_v3/intakes/" + d["id"].(string), Header: userHeaders(s.c, s.pat.Token)})
		if got.Status != 200 || got.Data()["custom"].(map[string]any)["smoker"] != "no" {
			t.Fatalf("%s", got.Raw)
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
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes/" + id, Header: userHeaders(s.c, s.pat.Token), Query: q("provider_id", s.doc.UserID)})
		if res.Status != 200 || res.Data()["provider"] != s.doc.UserID {
			t.Fatalf("%s", res.Raw)
		}
		if read(userHeaders(s.c, s.doc.Token)) != 200 || read(userHeaders(s.c, s.other.Token)) != 404 {
			t.Fatal("the named provider reads it, another does not")
		}
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/intakes/" + id, Header: userHeaders(s.c, s.pat2.Token)}), 404, "Intake not found")
	})
	// A provider files for a patient by code; a patient only for themself.
	t.Run("ErrFilesForOthers", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.doc.Token), JSON: map[string]any{"room_code": "main", "member_id": "pat2", "provider": s.doc.UserID}})
		if res.Status != 200 || res.Data()["member_id"] != s.pat2.UserID || res.Data()["provider"] != s.doc.UserID {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.doc.Token), JSON: map[string]any{"room_code": "main"}}), 400, "member_id")
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.doc.Token), JSON: map[string]any{"room_code": "main", "member_id": "doc"}}), 400, "member_id")
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token), JSON: map[string]any{"room_code": "main", "member_id": s.pat2.UserID}}), 403, "themself")
	})
	// Attachments must be files the patient may attach.
	t.Run("ErrAttachmentNotVisible", func(t *testing.T) {
		var pid, p2 int64
		fmt.Sscan(s.pat.UserID, &pid)
		fmt.Sscan(s.pat2.UserID, &p2)
		mine, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, pid, "intake_attachment", "user", pid, "scan.pdf", 1)
		theirs, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, p2, "intake_attachment", "user", p2, "x.pdf", 1)
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token),
			JSON: map[string]any{"room_code": "main", "attachments": []any{map[string]any{"_id": fmt.Sprint(mine)}}}})
		att := res.Data()["attachments"].([]any)
		if res.Status != 200 || len(att) != 1 || att[0].(map[string]any)["name"] != "scan.pdf" || !strings.Contains(att[0].(map[string]any)["path"].(string), "auth_code=") {
			t.Fatalf("%s", res.Raw)
		}
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token), Form: q("room_code", "main", "attachments", fmt.Sprintf("%d,%d", mine, theirs))})
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
	queue := func(tok string) map[string]any {
		h := acctHeaders(s.c)
		if tok != "" {
			h["X-ApiToken"] = tok
		}
		res := e.Do(testenv.Req{Path: "/api_v3/rooms/main/queue", Header: h})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		return res.Data()
	}

	it1 := s.intake(t, s.pat, "reason_for_visit", "Fever")
	res := s.post(s.pat.Token, "/api_v3/visits/add_walkin.json", "intake_id", it1, "room_code", "main")
	v := res.Data()
	if res.Status != 200 || v["status"].(float64) != 10 || v["kind"] != "walkin" || v["type"].(float64) != 3 || v["member_id"] != s.pat.UserID ||
		v["intake"].(map[string]any)["visit_id"] != v["id"] || v["meeting"].(map[string]any)["meeting_id"] == "" || v["actual_start"] != nil {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	visit1 := v["id"].(string)
	it2 := s.intake(t, s.pat2)
	if r := s.post(s.pat2.Token, "/api_v3/visits/add_walkin", "intake_id", it2, "room_code", "main", "visit_data_id", "ignored"); r.Status != 200 {
		t.Fatalf("%s", r.Raw)
	}

	// Queue counts and before_me.
	t.Run("OKQueueCounts", func(t *testing.T) {
		if qu := queue(""); qu["length"].(float64) != 2 || qu["capacity"].(float64) != 50 || qu["average_visit_time"].(float64) != 900 || qu["before_me"].(float64) != 0 {
			t.Fatalf("%v", qu)
		}
		if qu := queue(s.pat2.Token); qu["before_me"].(float64) != 1 {
			t.Fatalf("%v", qu)
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
		mustRoom(t, e, s.c, map[string]any{"domain": s.domain, "name": "Other", "code": "other"})
		it := s.intake(t, s.pat)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "other"), 400, "another room")
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main", "user_code", "pat2"), 400, "user_code")
	})
	// Room rules: walk-ins off, closed, full.
	t.Run("ErrRoomRules", func(t *testing.T) {
		put := func(body map[string]any) {
			if r := e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: body}); r.Status != 200 {
				t.Fatalf("%s", r.Raw)
			}
		}
		it := s.intake(t, s.pat)
		put(map[string]any{"visits": map[string]any{"walkin": map[string]any{"enabled": false}}})
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main"), 400, "walk-ins")
		put(map[string]any{"visits": map[string]any{"walkin": map[string]any{"enabled": true}}, "operation_settings": map[string]any{"is_closed": true, "close_msg": "Back at 8"}})
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main"), 409, "Back at 8")
		put(map[string]any{"operation_settings": map[string]any{"is_closed": false}, "queue_capacity": 3})
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/add_walkin", "intake_id", it, "room_code", "main"), 409, "full")
		put(map[string]any{"queue_capacity": 50})
	})
	// Average_visit_time from completed visits.
	t.Run("OKAverageVisitTime", func(t *testing.T) {
		// The room's provider sees the waiting walk-in but must accept it
		// before starting it.
		if r := s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", visit1); r.Status != 403 {
			t.Fatalf("an unassigned walk-in is not the provider's to start: %d", r.Status)
		}
		start := e.Clock.Now().Unix()
		r := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/inprogress", Header: adminHeaders(s.c), Form: q("id", visit1, "actual_start", fmt.Sprint(start))})
		if r.Status != 200 || r.Data()["status"].(float64) != 25 || r.Data()["actual_start"].(float64) != float64(start) {
			t.Fatalf("%s", r.Raw)
		}
		if qu := queue(""); qu["length"].(float64) != 2 {
			t.Fatalf("a started visit leaves the queue: %v", qu)
		}
		r = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/close", Header: adminHeaders(s.c), Form: q("id", visit1, "status", "30", "actual_end", fmt.Sprint(start+600))})
		if r.Status != 200 || r.Data()["status"].(float64) != 30 {
			t.Fatalf("%s", r.Raw)
		}
		if qu := queue(""); qu["average_visit_time"].(float64) != 600 {
			t.Fatalf("%v", qu)
		}
	})
}

func TestVisits_EconsultAndLifecycle(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	econsult := func(who *session) map[string]any {
		t.Helper()
		it := s.intake(t, who, "reason_for_visit", "Question")
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, who.Token), JSON: map[string]any{"intake_id": it, "room_code": "main"}})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		return res.Data()
	}
	listIDs := func(tok string, kv ...string) []string {
		res := e.Do(testenv.Req{Path: "/api_v3/visits", Header: userHeaders(s.c, tok), Query: q(kv...)})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		var out []string
		for _, v := range res.List() {
			out = append(out, v["id"].(string))
		}
		return out
	}

	v := econsult(s.pat)
	vid := v["id"].(string)
	if v["provider_id"] != "0" || v["provider"] != nil || v["type"].(float64) != 4 || v["incharge"] != false || v["isEditExpired"] != false {
		t.Fatalf("%v", v)
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
		if r := e.Do(testenv.Req{Path: "/api_v3/visits/" + vid + ".json", Header: userHeaders(s.c, s.pat.Token)}); r.Status != 200 || r.Data()["intake"].(map[string]any)["reason_for_visit"] != "Question" {
			t.Fatalf("%s", r.Raw)
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
		r := e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat.Token)})
		if r.Data()["provider_id"] != s.doc.UserID || r.Data()["status"].(float64) != 20 || r.Data()["provider"].(map[string]any)["full_name"] != "Dana Doc" {
			t.Fatalf("%s", r.Raw)
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
		if r := s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", vid); r.Status != 200 || r.Data()["actual_start"].(float64) != float64(e.Clock.Now().Unix()) {
			t.Fatalf("%s", r.Raw)
		}
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", vid, "reason", "patient_exit_room"), 409, "in progress (25)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid, "status", "40"), 400, "status")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", vid, "actual_end", "1000"), 400, "actual_end")
		e.Clock.Advance(10 * time.Minute)
		if r := s.post(s.doc.Token, "/api_v3/visits/close", "id", vid); r.Status != 200 || r.Data()["status"].(float64) != 30 {
			t.Fatalf("%s", r.Raw)
		}
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/inprogress", "id", vid), 409, "completed (30)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/delete", "id", vid), 409, "completed (30)")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close"), 400, "id")
		wantObjErr(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", "999999"), 404, "Visit")
		// The intake of a completed visit no longer changes.
		it := e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat.Token)}).Data()["intake_id"].(string)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/intakes/"+it, "reason_for_visit", "changed"), 409, "over")
	})
	// A patient cancels their own pending or confirmed visit.
	t.Run("OKPatientCancels", func(t *testing.T) {
		v := econsult(s.pat)
		r := s.post(s.pat.Token, "/api_v3/visits/delete", "id", v["id"].(string), "reason", "patient_cancel_appointment")
		if r.Status != 200 || r.Data()["status"].(float64) != 40 || r.Data()["cancel_reason"] != "patient_cancel_appointment" {
			t.Fatalf("%s", r.Raw)
		}
		v2 := econsult(s.pat2)
		wantObjErr(t, s.post(s.pat.Token, "/api_v3/visits/delete", "id", v2["id"].(string)), 404, "Visit")
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
		if len(res.List()) != 3 {
			t.Fatalf("admin sees all: %d", len(res.List()))
		}
	})
	// Another clinic's admin sees nothing.
	t.Run("ErrOtherClinic", func(t *testing.T) {
		b := e.NewClinic("beta", true)
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: adminHeaders(b)}), 404, "Visit")
		if l := e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(b)}).List(); len(l) != 0 {
			t.Fatalf("%v", l)
		}
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/delete", Header: adminHeaders(b), Form: q("id", vid)}), 404, "Visit")
	})
}

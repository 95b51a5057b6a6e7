package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// TestAudit_Chain: the clinic's audit entries, written by two processes
// at once, form one intact chain; an entry edited, removed or cut from the
// end in the database is found by GET /audit/verify, which names the
// first broken place.
func TestAudit_Chain(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	second := testenv.New(t, testenv.Options{DSN: e.DSN, ServerKey: e.Key, Clock: e.Clock})
	visit := s.withVisit(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := e.URL
			if i%2 == 1 {
				base = second.URL
			}
			testenv.Do(t, base, testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/emr", Header: userHeaders(s.c, s.pat.Token)})
			testenv.Do(t, base, testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, s.pat.Token), Form: q("room_code", "main")})
			// A message post: on PostgreSQL one statement whose entry the
			// chain takes in afterwards.
			if res := testenv.Do(t, base, testenv.Req{Method: "POST", Path: "/api/visits/" + visit + "/messages", Header: map[string]string{"X-ApiToken": s.pat.Token},
				Form: q("content", fmt.Sprint("note ", i))}); res.Status != 201 {
				t.Errorf("post: %d %s", res.Status, res.Raw)
			}
		}()
	}
	wg.Wait()
	second.FlushAudits()
	verify := func() auditVerification {
		t.Helper()
		var r client.GetAuditVerifyResponse
		return answer200(t, e.Do(testenv.Req{Path: "/api_v3/audit/verify", Header: adminHeaders(s.c)}), &r.JSON200).Data
	}
	v := verify()
	chained := count(t, e, "SELECT COUNT(*) FROM audit WHERE account_id = (SELECT id FROM accounts WHERE code = 'alpha') AND seq > 0")
	if !v.Intact || v.Broken != nil || v.Entries < 60 || v.Entries > chained {
		t.Fatalf("%+v (%d chained rows)", v, chained)
	}
	// Verify chains what is pending first; only its own entry, written
	// after, waits for the next pass.
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE seq = -1 AND action <> 'audit.verify'"); n != 0 {
		t.Fatalf("%d entries left out of the chain", n)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'visit.message.create' AND seq > 0"); n < 20 {
		t.Fatalf("%d message posts chained, want 20", n)
	}
	acct := "(SELECT id FROM accounts WHERE code = 'alpha')"
	exec := func(q string) {
		t.Helper()
		if _, err := e.Store.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	row := func(seq int) (id int, action string) {
		t.Helper()
		if err := e.Store.DB().QueryRow(e.Store.Rebind(fmt.Sprintf("SELECT id, action FROM audit WHERE account_id = %s AND seq = %d", acct, seq))).Scan(&id, &action); err != nil {
			t.Fatal(err)
		}
		return id, action
	}
	brokenAt := func(seq int, says string) {
		t.Helper()
		v := verify()
		if v.Intact || v.Broken == nil || v.Broken.Seq != seq || !strings.Contains(v.Broken.Reason, says) {
			t.Fatalf("want broken at %d (%q): %+v %+v", seq, says, v, v.Broken)
		}
	}

	// An edited entry.
	id, action := row(10)
	exec(fmt.Sprintf("UPDATE audit SET action = 'user.list' WHERE id = %d", id))
	brokenAt(10, "does not match its hash")
	exec(fmt.Sprintf("UPDATE audit SET action = '%s' WHERE id = %d", action, id))
	if v := verify(); !v.Intact {
		t.Fatalf("restored: %+v", v)
	}
	// A removed entry.
	id, _ = row(7)
	exec(fmt.Sprintf("DELETE FROM audit WHERE id = %d", id))
	brokenAt(7, "missing")
	t.Run("CutFromTheEnd", func(t *testing.T) {
		e := testenv.New(t)
		c := e.NewClinic("beta", true)
		mustSSO(t, e, c, "200", "p", "P", "Q")
		e.FlushAudits()
		e.App.ChainAudits(context.Background())
		if _, err := e.Store.DB().Exec("DELETE FROM audit WHERE seq = (SELECT MAX(seq) FROM audit)"); err != nil {
			t.Fatal(err)
		}
		var r client.GetAuditVerifyResponse
		res := e.Do(testenv.Req{Path: "/api_v3/audit/verify", Header: adminHeaders(c)})
		if b := answer200(t, res, &r.JSON200).Data.Broken; b == nil || !strings.Contains(b.Reason, "the last were deleted") {
			t.Fatalf("%s", res.Raw)
		}
	})
	t.Run("NotForOthers", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/audit/verify", Header: userHeaders(s.c, s.pat.Token)}), 401, 401)
	})
}

// TestAudit_AccessLog: a patient reads who opened their record — the
// provider's read of their EMR, by name and action — and nothing of its
// content; another patient and a provider may not read it; the admin may.
func TestAudit_AccessLog(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/emr/family_conditions", Header: userHeaders(s.c, s.pat.Token),
		JSON: js(`{"data_not_reported": false, "data": [{"condition": "Penicillin", "relations": ["mother"]}]}`)}); res.Status != 200 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	mustOK(t, e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/emr", Header: adminHeaders(s.c)}))
	// Another patient tries, and is refused: the attempt is listed, but
	// not who made it.
	if res := e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/emr", Header: userHeaders(s.c, s.pat2.Token)}); res.Status < 400 {
		t.Fatalf("another patient reads the EMR: %d", res.Status)
	}
	log := func(who, user string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/users/" + user + "/access-log", Header: userHeaders(s.c, who)})
	}
	res := log(s.pat.Token, "-")
	var r client.GetUsersByIdAccessLogResponse
	accessLog := answer200(t, res, &r.JSON200)
	found := false
	for _, en := range accessLog.Data {
		if en.Actor.UserId == s.pat.UserID {
			t.Fatalf("the patient's own access is listed: %+v", en)
		}
		if en.Action == "emr.read" && en.Actor.Name == "Clinic Admin" && en.Outcome == "ok" {
			found = true
		}
	}
	if !found || strings.Contains(string(res.Raw), "Penicillin") {
		t.Fatalf("%s", res.Raw)
	}
	refused := 0
	for _, en := range accessLog.Data {
		if en.Outcome != "ok" {
			refused++
			if en.Actor.UserId != "" || en.Actor.Name != "" {
				t.Errorf("the patient's log names another patient: %+v", en)
			}
		}
	}
	if refused == 0 {
		t.Fatalf("the refused attempt is not listed: %s", res.Raw)
	}
	if strings.Contains(string(res.Raw), s.pat2.UserID) {
		t.Fatalf("the other patient's id is in the log: %s", res.Raw)
	}
	if accessLog.TotalCount != len(accessLog.Data) {
		t.Fatalf("total %d, %d listed", accessLog.TotalCount, len(accessLog.Data))
	}
	wantErr(t, log(s.pat2.Token, s.pat.UserID), 403, 403)
	wantErr(t, log(s.doc.Token, s.pat.UserID), 403, 403)
	if res := e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/access-log", Header: adminHeaders(s.c)}); res.Status != 200 || !strings.Contains(string(res.Raw), s.pat2.UserID) {
		t.Fatalf("admin (who sees who tried): %d %s", res.Status, res.Raw)
	}
}

// The access log pages by entry (after, Link rel=next): each page the admin
// reads adds an entry to the top of the log it reads, and the pages after
// the first still hold each older entry once (start skipped one twice).
func TestAudit_AccessLogPages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	for range 12 {
		if res := e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/emr", Header: adminHeaders(s.c)}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	}
	path := "/api_v3/users/" + s.pat.UserID + "/access-log"
	var r client.GetUsersByIdAccessLogResponse
	whole := answer200(t, e.Do(testenv.Req{Path: path, Query: q("limit", "500"), Header: adminHeaders(s.c)}), &r.JSON200).Data
	if len(whole) < 12 {
		t.Fatalf("%d entries", len(whole))
	}
	var want []string
	for _, en := range whole {
		want = append(want, en.Id)
	}
	entries, _ := pageWalk{path: path, query: q("limit", "5"), header: adminHeaders(s.c), cursor: "after", idKey: "id", limit: 5}.walk(t, e)
	got := idsOf(entries, "id")
	// The first page's top is the whole read's own entry; the rest is the
	// whole read's list, each once.
	if len(got) != len(want)+1 || strings.Join(got[1:], ",") != strings.Join(want, ",") {
		t.Fatalf("the pages hold %v, want one newer entry and %v", got, want)
	}
	for _, after := range []string{"999999", "-1", "soon"} {
		wantErr(t, e.Do(testenv.Req{Path: path, Query: q("after", after), Header: adminHeaders(s.c)}), 400, 400)
	}
}

// auditVerification is GET /audit/verify's data, as the generated client
// reads it.
type auditVerification = struct {
	Broken *struct {
		Id     string `json:"id"`
		Reason string `json:"reason"`
		Seq    int    `json:"seq"`
	} `json:"broken"`
	Checkpoint *struct {
		Head string `json:"head"`
		Seq  int    `json:"seq"`
		Time int    `json:"time"`
	} `json:"checkpoint"`
	Entries int    `json:"entries"`
	Head    string `json:"head"`
	Intact  bool   `json:"intact"`
}

package httpapi_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// TestVisits_Pages: GET /visits pages by `limit` and `after`, newest first;
// a full page names the next in a Link header and the pages together are
// the list, for the admin, the provider (their visits and their room's
// unassigned ones) and the patient; bad paging parameters are 400.
func TestVisits_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	for range 6 {
		s.withVisit(t) // accepted by the provider
	}
	for range 3 {
		s.econsult(t, s.pat2) // unassigned, in the provider's room
	}
	next := regexp.MustCompile(`^<(/api_v3/visits\?[^>]+)>; rel="next"$`)
	walk := func(headers map[string]string, limit int) (ids []string) {
		t.Helper()
		path, query := "/api_v3/visits", url.Values{"limit": {fmt.Sprint(limit)}}
		for page := 0; ; page++ {
			if page > 20 {
				t.Fatalf("%d a page: the links do not end", limit)
			}
			res := e.Do(testenv.Req{Path: path, Query: query, Header: headers})
			vs := dataOf[[]client.Visit](t, res)
			if page > 0 && len(vs) == 0 {
				t.Fatalf("%d a page: a next link led to an empty page after %v", limit, ids)
			}
			for _, v := range vs {
				ids = append(ids, v.Id)
			}
			link := res.Header.Get("Link")
			if link == "" {
				return ids
			}
			if len(vs) < limit {
				t.Fatalf("a short page names a next one: %s", link)
			}
			m := next.FindStringSubmatch(link)
			if m == nil {
				t.Fatalf("not a next link: %q", link)
			}
			u, _ := url.Parse(m[1])
			if u.Query().Get("limit") != fmt.Sprint(limit) || u.Query().Get("after") != ids[len(ids)-1] {
				t.Fatalf("next link %s after %s", link, ids[len(ids)-1])
			}
			query = u.Query()
		}
	}
	for _, who := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"admin", adminHeaders(s.c), 9},
		{"provider", userHeaders(s.c, s.doc.Token), 9},
		{"patient", userHeaders(s.c, s.pat.Token), 6},
	} {
		res := e.Do(testenv.Req{Path: "/api_v3/visits", Header: who.headers})
		var all []string
		for _, v := range dataOf[[]client.Visit](t, res) {
			all = append(all, v.Id)
		}
		if len(all) != who.want || res.Header.Get("Link") != "" {
			t.Fatalf("%s: %d visits (want %d), Link %q", who.name, len(all), who.want, res.Header.Get("Link"))
		}
		for _, limit := range []int{1, 2, 4} {
			if got := walk(who.headers, limit); strings.Join(got, ",") != strings.Join(all, ",") {
				t.Fatalf("%s, %d a page: %v, want %v", who.name, limit, got, all)
			}
		}
	}
	for _, bad := range []url.Values{{"limit": {"501"}}, {"limit": {"-1"}}, {"limit": {"x"}}, {"after": {"x"}}, {"after": {"-3"}}} {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/visits", Query: bad, Header: adminHeaders(s.c)}), 400, 400)
	}
}

// TestVisits_ListStatements: a list of visits reads each related set once,
// so 20 visits (each with its patient, provider, intake and room)
// take as many statements as 1, for the admin and for the provider.
func TestVisits_ListStatements(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	for range 20 {
		s.withVisit(t)
	}
	for _, who := range []struct {
		name    string
		headers map[string]string
	}{{"admin", adminHeaders(s.c)}, {"provider", userHeaders(s.c, s.doc.Token)}} {
		count := func(limit string) int64 {
			t.Helper()
			vs := dataOf[[]client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits", Query: url.Values{"limit": {limit}}, Header: who.headers}))
			if len(vs) != map[string]int{"1": 1, "20": 20}[limit] {
				t.Fatalf("%s, limit %s: %d visits", who.name, limit, len(vs))
			}
			return e.Statements()
		}
		count("1") // warm the caches both reads use
		one, twenty := count("1"), count("20")
		if one != twenty || one == 0 {
			t.Fatalf("%s: %d statements for 1 visit, %d for 20", who.name, one, twenty)
		}
		t.Logf("%s: %d statements for a list of 1 or 20", who.name, one)
	}
}

// TestFHIR_EverythingStatements: $everything reads a patient's visits, their
// details and threads with as many statements for 20 visits as for 1, for
// the admin, the visits' provider and the patient.
func TestFHIR_EverythingStatements(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := func(who *session) {
		t.Helper()
		id := s.econsult(t, who)
		if res := s.post(s.doc.Token, "/api_v3/visits/accept", "id", id); res.Status != 200 {
			t.Fatalf("accept: %s", res.Raw)
		}
		if res := e.Do(testenv.Req{Method: "POST", Path: msgPath(id), Header: map[string]string{"X-ApiToken": who.Token}, Form: q("content", "Hello.")}); res.Status != 201 {
			t.Fatalf("post: %d %s", res.Status, res.Raw)
		}
	}
	visit(s.pat)
	for range 20 {
		visit(s.pat2)
	}
	for _, who := range []struct {
		name string
		h    func(patient *session) map[string]string
	}{
		{"admin", func(*session) map[string]string { return adminHeaders(s.c) }},
		{"provider", func(*session) map[string]string { return userHeaders(s.c, s.doc.Token) }},
		{"patient", func(pt *session) map[string]string { return userHeaders(s.c, pt.Token) }},
	} {
		count := func(pt *session, visits int) int64 {
			t.Helper()
			path := "/fhir/R4/Patient/" + pt.UserID + "/$everything"
			fhirGet(t, e, who.h(pt), path) // warm the caches (threads, names)
			res := fhirGet(t, e, who.h(pt), path)
			n := len(entries(t, res)["Encounter"])
			if res.Status != 200 || n != visits {
				t.Fatalf("%s: %d, %d encounters: %s", who.name, res.Status, n, res.Raw)
			}
			return e.Statements()
		}
		one, twenty := count(s.pat, 1), count(s.pat2, 20)
		if one != twenty {
			t.Fatalf("%s: %d statements for 1 visit, %d for 20", who.name, one, twenty)
		}
		t.Logf("%s: %d statements for 1 visit or 20", who.name, one)
	}
}

// TestFHIR_Pages: a search set comes _count resources at a time; total
// counts them all, next and previous links move through the pages, and
// the pages together are the unpaged set — for the searches drawn from a
// record's short parts, for those the store reads a page at a time (a
// patient's messages and readings), with and without a _lastUpdated
// range, and for $everything, whose pages cross from one to the other.
// Bad paging parameters are 400.
func TestFHIR_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	for range 8 {
		s.withVisit(t)
	}
	visit := fhirRecord(t, s) // two messages and eight readings among the rest
	second := s.withVisit(t)
	h := userHeaders(s.c, s.pat.Token)
	more := func() {
		for i := range 5 {
			mustPost(t, e, s.pat.Token, []string{visit, second}[i%2], fmt.Sprintf("Message %d.", i))
			mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, JSON: js(fmt.Sprintf(`{"type": "vendorD_bp_bp100",
				"date": "2026-03-02", "time": %d, "device_id": "BP-1", "data_type": "hr", "data_class": "body", "hr": %d}`, e.Clock.Now().Unix()-int64(100*i), 60+i))}))
		}
	}
	more()
	e.Clock.Advance(2 * time.Minute)
	since := e.Clock.Now().UTC().Format(time.RFC3339)
	more()
	type page struct {
		Total int
		Link  []struct{ Relation, URL string }
		Entry []struct {
			FullURL  string
			Resource struct{ Meta struct{ LastUpdated string } }
		}
	}
	get := func(path string, query url.Values) page {
		t.Helper()
		res := fhirGet(t, e, h, path, flatten(query)...)
		var p page
		if res.Status != 200 || json.Unmarshal(res.Raw, &p) != nil {
			t.Fatalf("%s: %d %s", path, res.Status, res.Raw)
		}
		return p
	}
	everything := "/fhir/R4/Patient/" + s.pat.UserID + "/$everything"
	totals := map[string]int{}
	for _, search := range []struct {
		path, since string
		least       int
	}{
		{everything, "", 40}, {"/fhir/R4/Encounter", "", 7}, {"/fhir/R4/Communication", "", 12}, {"/fhir/R4/Observation", "", 18},
		{everything, since, 10}, {"/fhir/R4/Communication", since, 5}, {"/fhir/R4/Observation", since, 5},
	} {
		path, base := search.path, url.Values{}
		if search.since != "" {
			base.Set("_lastUpdated", "ge"+search.since)
		}
		with := func(k, v string) url.Values {
			q := url.Values{k: {v}}
			for k, vs := range base {
				q[k] = vs
			}
			return q
		}
		all := get(path, with("_count", "1000"))
		if all.Total != len(all.Entry) || all.Total < search.least {
			t.Fatalf("%s %v unpaged: total %d, %d entries", path, base, all.Total, len(all.Entry))
		}
		if search.since == "" {
			totals[path] = all.Total
		} else {
			if all.Total >= totals[path] {
				t.Fatalf("%s since %s: %d of %d", path, search.since, all.Total, totals[path])
			}
			for _, en := range all.Entry {
				if en.Resource.Meta.LastUpdated < search.since {
					t.Fatalf("%s since %s: %s last updated %s", path, search.since, en.FullURL, en.Resource.Meta.LastUpdated)
				}
			}
		}
		var paged []string
		query, pages := with("_count", "3"), 0
		for ; ; pages++ {
			p := get(path, query)
			if p.Total != all.Total || len(p.Entry) > 3 || pages > 20 {
				t.Fatalf("page %d: total %d, %d entries", pages, p.Total, len(p.Entry))
			}
			for _, en := range p.Entry {
				paged = append(paged, en.FullURL)
			}
			links := map[string]string{}
			for _, l := range p.Link {
				links[l.Relation] = l.URL
			}
			if (pages > 0) != (links["previous"] != "") {
				t.Fatalf("page %d: links %v", pages, links)
			}
			if links["next"] == "" {
				break
			}
			u, err := url.Parse(links["next"])
			if err != nil || !strings.HasSuffix(u.Path, path) {
				t.Fatalf("next link %q", links["next"])
			}
			query = u.Query()
		}
		var want []string
		for _, en := range all.Entry {
			want = append(want, en.FullURL)
		}
		if strings.Join(paged, " ") != strings.Join(want, " ") || pages != (all.Total-1)/3 {
			t.Fatalf("%s %v: %d pages, paged %v, want %v", path, base, pages+1, paged, want)
		}
	}
	// A message and a reading read by id, and a reading of another
	// patient's record under this patient's id: not found.
	comms, obs := get("/fhir/R4/Communication", nil), get("/fhir/R4/Observation", nil)
	for _, full := range []string{comms.Entry[4].FullURL, obs.Entry[7].FullURL} {
		ref := full[strings.Index(full, "/fhir/R4/"):]
		if res := fhirGet(t, e, h, ref); res.Status != 200 || !strings.Contains(string(res.Raw), strings.TrimPrefix(ref, "/fhir/R4/")[strings.Index(strings.TrimPrefix(ref, "/fhir/R4/"), "/")+1:]) {
			t.Fatalf("%s: %d %s", ref, res.Status, res.Raw)
		}
	}
	obsID := obs.Entry[0].FullURL[strings.LastIndex(obs.Entry[0].FullURL, "-")+1:]
	wantOutcome(t, fhirGet(t, e, adminHeaders(s.c), "/fhir/R4/Observation/"+s.pat2.UserID+"-"+obsID), 404, "not-found")
	for _, bad := range []string{"_count=0", "_count=1001", "_count=x", "_offset=-1"} {
		k, v, _ := strings.Cut(bad, "=")
		wantOutcome(t, fhirGet(t, e, h, "/fhir/R4/Encounter", k, v), 400, "invalid")
	}
}

func flatten(v url.Values) []string {
	var out []string
	for k, vs := range v {
		for _, x := range vs {
			out = append(out, k, x)
		}
	}
	return out
}

// TestAudit_Pages: the trail pages by keyset as well as by start: a full
// page names the next (after its last entry, without start) and the pages
// together are the trail, newest first; an after that is not an entry of
// the clinic's trail is 400.
func TestAudit_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	other := newClinicSetup(t, e, "beta")
	for range 3 {
		e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID, Header: userHeaders(s.c, s.doc.Token)})
	}
	e.FlushAudits()
	read := func(query url.Values) (*testenv.Resp, []string) {
		t.Helper()
		res := e.Do(testenv.Req{Path: "/api_v3/audit", Query: query, Header: adminHeaders(s.c)})
		var ids []string
		for _, en := range dataOf[[]client.AuditEntry](t, res) {
			ids = append(ids, en.Id)
		}
		return res, ids
	}
	// Reading the trail adds nothing to it, so every page is of the same
	// trail.
	_, all := read(url.Values{"limit": {"500"}})
	next := regexp.MustCompile(`^<(/api_v3/audit\?[^>]+)>; rel="next"$`)
	var paged []string
	query := url.Values{"limit": {"4"}, "start": {"1"}}
	for pages := 0; ; pages++ {
		res, ids := read(query)
		paged = append(paged, ids...)
		m := next.FindStringSubmatch(res.Header.Get("Link"))
		if m == nil || pages > 50 {
			break
		}
		u, _ := url.Parse(m[1])
		if u.Query().Get("start") != "" || u.Query().Get("after") != ids[len(ids)-1] {
			t.Fatalf("next link %s", m[1])
		}
		query = u.Query()
	}
	// The first page skipped one (start=1); the rest follow by keyset.
	if strings.Join(paged, ",") != strings.Join(all[1:], ",") {
		t.Fatalf("paged %v\nwant %v", paged, all[1:])
	}
	otherEntry := func() string {
		return dataOf[[]client.AuditEntry](t, e.Do(testenv.Req{Path: "/api_v3/audit", Query: url.Values{"limit": {"1"}}, Header: adminHeaders(other.c)}))[0].Id
	}()
	for _, bad := range []string{"x", "-1", "999999999", otherEntry} {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/audit", Query: url.Values{"after": {bad}}, Header: adminHeaders(s.c)}), 400, 400)
	}
}

// TestFHIR_ManyVisits: a record's visits, appointments and notes are read
// a page at a time in the database, so a patient with more visits than a
// visit list's page (500) has all of them in the record: the Encounter,
// Appointment and Composition searches and $everything count and page
// through every one. A provider's record holds only the visits they see
// (their own and their room's unassigned e-consults, not another room's),
// and the patient only the signed notes of completed visits.
func TestFHIR_ManyVisits(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	mustRoom(t, e, s.c, js(`{"domain": "elsewhere.`+s.domain+`", "name": "Elsewhere", "code": "elsewhere"}`))
	s.withVisit(t)
	type total struct{ Total int }
	count := func(h map[string]string, path string) int {
		t.Helper()
		path, patient, _ := strings.Cut(path, "?patient=")
		kv := []string{"_count", "1"}
		if patient != "" {
			kv = append(kv, "patient", patient)
		}
		res := fhirGet(t, e, h, path, kv...)
		var tt total
		if res.Status != 200 || json.Unmarshal(res.Raw, &tt) != nil {
			t.Fatalf("%s: %d %s", path, res.Status, res.Raw)
		}
		return tt.Total
	}
	admin, doc, pat := adminHeaders(s.c), userHeaders(s.c, s.doc.Token), userHeaders(s.c, s.pat.Token)
	searches := []string{"/fhir/R4/Encounter?patient=" + s.pat.UserID, "/fhir/R4/Appointment?patient=" + s.pat.UserID,
		"/fhir/R4/Composition?patient=" + s.pat.UserID, "/fhir/R4/Patient/" + s.pat.UserID + "/$everything"}
	before := map[string][]int{}
	for _, path := range searches {
		for _, h := range []map[string]string{admin, doc, pat} {
			before[path] = append(before[path], count(h, path))
		}
	}

	// 600 visits of the patient: a third booked with the provider and
	// completed, a third unassigned e-consults of the provider's room, a
	// third of the other room's; a signed note on every tenth (the patient
	// is given those of completed visits only).
	db := e.Store.DB()
	acct, main := roomOf(t, e, s.pat.UserID, "main")
	_, elsewhere := roomOf(t, e, s.pat.UserID, "elsewhere")
	insertVisits(t, e, acct, s.pat.UserID, 600, func(i int) (string, int64, string, int) {
		switch i % 3 {
		case 1:
			return "0", main, "econsult", 10
		case 2:
			return "0", elsewhere, "econsult", 10
		}
		return s.doc.UserID, main, "appointment", 30
	}, s.doc.UserID)
	// Per search, what the admin, the provider and the patient gain.
	gain := map[string][3]int{
		searches[0]: {600, 400, 600},
		searches[1]: {200, 200, 200},
		searches[2]: {60, 20, 20}, // the notes of i%10 == 0: 20 with i%3 == 0, completed
	}
	// $everything gains the visits twice (Encounter and Appointment) and
	// the notes; the admin and the patient also the other room.
	gain[searches[3]] = [3]int{600 + 200 + 60, 400 + 200 + 20, 600 + 200 + 20}
	for path, g := range gain {
		for i, h := range []map[string]string{admin, doc, pat} {
			if got := count(h, path); got != before[path][i]+g[i] {
				t.Errorf("%s as %s: total %d, want %d + %d", path, []string{"admin", "provider", "patient"}[i], got, before[path][i], g[i])
			}
		}
	}

	// The provider's encounters, in one page of 1,000, are every visit they
	// see and none of the other room's.
	res := fhirGet(t, e, doc, "/fhir/R4/Encounter", "patient", s.pat.UserID, "_count", "1000")
	var b struct {
		Total int
		Entry []struct{ Resource struct{ ID string } }
	}
	if res.Status != 200 || json.Unmarshal(res.Raw, &b) != nil || len(b.Entry) != b.Total || b.Total != before[searches[0]][1]+400 {
		t.Fatalf("provider's encounters: %d %d of %d", res.Status, len(b.Entry), b.Total)
	}
	seen := map[string]bool{}
	for _, en := range b.Entry {
		seen[en.Resource.ID] = true
	}
	rows, err := db.Query(e.Store.Rebind("SELECT id FROM visits WHERE room_id = ?"), elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if seen[fmt.Sprint(id)] {
			t.Fatalf("the provider's record holds visit %d of a room not theirs", id)
		}
	}
}

// roomOf is the clinic of user and the id of its room of that code.
func roomOf(t testing.TB, e *testenv.Env, user, code string) (acct, room int64) {
	t.Helper()
	if err := e.Store.DB().QueryRow(e.Store.Rebind("SELECT account_id, id FROM rooms WHERE code = ? AND account_id = (SELECT account_id FROM users WHERE id = ?)"),
		code, user).Scan(&acct, &room); err != nil {
		t.Fatal(err)
	}
	return acct, room
}

// insertVisits stores n visits of patient in one transaction, each
// i-th with the provider, room, kind and status of(i) gives, and a note
// by author on every tenth (signed); it returns their ids. A record of
// hundreds of visits made through the API would take minutes.
func insertVisits(t testing.TB, e *testenv.Env, acct int64, patient string, n int, of func(i int) (provider string, room int64, kind string, status int), author string) []int64 {
	t.Helper()
	tx, err := e.Store.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	now := e.Clock.Now().Unix()
	var ids []int64
	for i := range n {
		provider, room, kind, status := of(i)
		var id int64
		if err := tx.QueryRow(e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?) RETURNING id`), acct, patient, provider, room, status, kind, now, now).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := tx.Exec(e.Store.Rebind(`INSERT INTO visit_notes (account_id, visit_id, author_id, subjective, status, created, modified)
				VALUES (?, ?, ?, 'Seen.', 'signed', ?, ?)`), acct, id, author, now, now); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Statistics, as autovacuum would gather after such a burst:
	// PostgreSQL otherwise plans for the empty tables it analysed last.
	for _, table := range []string{"visits", "visit_notes"} {
		if _, err := e.Store.DB().Exec("ANALYZE " + table); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// A record's prescriptions and files are long lists too: past 1,000 of
// each, MedicationRequest and DocumentReference count and page them all,
// read the oldest by id, and a provider's DocumentReferences are the
// patient's own files and those of the visits they see.
func TestFHIR_ManyFilesAndPrescriptions(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	mustRoom(t, e, s.c, js(`{"domain": "elsewhere.`+s.domain+`", "name": "Elsewhere", "code": "elsewhere"}`))
	acct, main := roomOf(t, e, s.pat.UserID, "main")
	_, elsewhere := roomOf(t, e, s.pat.UserID, "elsewhere")
	visits := insertVisits(t, e, acct, s.pat.UserID, 2, func(i int) (string, int64, string, int) {
		if i == 1 {
			return "0", elsewhere, "econsult", 10 // not the provider's to see
		}
		return s.doc.UserID, main, "appointment", 30
	}, s.doc.UserID)
	now := e.Clock.Now().Unix()
	tx, err := e.Store.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	var firstRx, firstFile int64
	for i := range 1050 {
		var id int64
		if err := tx.QueryRow(e.Store.Rebind(`INSERT INTO prescriptions (account_id, user_id, prescriber_id, drug, directions, qty, status, created, modified)
			VALUES (?, ?, ?, ?, 'Once a day', 30, 'Current', ?, ?) RETURNING id`), acct, s.pat.UserID, s.doc.UserID, fmt.Sprintf("Drug %d", i), now, now).Scan(&id); err != nil {
			t.Fatal(err)
		}
		firstRx = cmp.Or(firstRx, id)
	}
	// 1,020 of the patient's own files, 10 on each visit.
	for i := range 1040 {
		target, targetID := "user", s.pat.UserID
		if i >= 1020 {
			target, targetID = "visit", fmt.Sprint(visits[(i-1020)/10])
		}
		var id int64
		if err := tx.QueryRow(e.Store.Rebind(`INSERT INTO files (account_id, creator_user_id, category, target_type, target_id, name, size, ext, created, content_type)
			VALUES (?, ?, 'user_document', ?, ?, ?, 4, 'txt', ?, 'text/plain') RETURNING id`), acct, s.pat.UserID, target, targetID, fmt.Sprintf("f%d.txt", i), now).Scan(&id); err != nil {
			t.Fatal(err)
		}
		firstFile = cmp.Or(firstFile, id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	total := func(h map[string]string, path string, kv ...string) int {
		t.Helper()
		res := fhirGet(t, e, h, path, kv...)
		var b struct{ Total int }
		if res.Status != 200 || json.Unmarshal(res.Raw, &b) != nil {
			t.Fatalf("%s: %d %s", path, res.Status, res.Raw)
		}
		return b.Total
	}
	admin, doc, pat := adminHeaders(s.c), userHeaders(s.c, s.doc.Token), userHeaders(s.c, s.pat.Token)
	for i, h := range []map[string]string{admin, doc, pat} {
		who := []string{"admin", "provider", "patient"}[i]
		if got := total(h, "/fhir/R4/MedicationRequest", "patient", s.pat.UserID, "_count", "1"); got != 1050 {
			t.Errorf("%s: %d MedicationRequests, want 1,050", who, got)
		}
		want := []int{1040, 1030, 1040}[i]
		if got := total(h, "/fhir/R4/DocumentReference", "patient", s.pat.UserID, "_count", "1"); got != want {
			t.Errorf("%s: %d DocumentReferences, want %d", who, got, want)
		}
	}
	// The last page holds the oldest.
	res := fhirGet(t, e, admin, "/fhir/R4/MedicationRequest", "patient", s.pat.UserID, "_count", "100", "_offset", "1000")
	var b struct {
		Entry []struct{ Resource struct{ ID string } }
	}
	if res.Status != 200 || json.Unmarshal(res.Raw, &b) != nil || len(b.Entry) != 50 || b.Entry[49].Resource.ID != fmt.Sprintf("%s-%d", s.pat.UserID, firstRx) {
		t.Fatalf("the last page of prescriptions: %d, %d entries %s", res.Status, len(b.Entry), res.Raw[:min(len(res.Raw), 300)])
	}
	for _, path := range []string{fmt.Sprintf("/fhir/R4/MedicationRequest/%s-%d", s.pat.UserID, firstRx), fmt.Sprintf("/fhir/R4/DocumentReference/%d", firstFile)} {
		if res := fhirGet(t, e, admin, path); res.Status != 200 {
			t.Errorf("%s (the oldest): %d %s", path, res.Status, res.Raw)
		}
	}
	// The other room's visit's files are not the provider's to read.
	var theirs int64
	if err := e.Store.DB().QueryRow(e.Store.Rebind("SELECT MIN(id) FROM files WHERE target_type = 'visit' AND target_id = ?"), visits[1]).Scan(&theirs); err != nil {
		t.Fatal(err)
	}
	if res := fhirGet(t, e, doc, fmt.Sprintf("/fhir/R4/DocumentReference/%d", theirs)); res.Status != 404 {
		t.Errorf("the provider reads a file of a visit not theirs: %d", res.Status)
	}
	if got := total(admin, "/fhir/R4/Patient/"+s.pat.UserID+"/$everything", "_count", "1"); got < 1050+1040 {
		t.Errorf("$everything: total %d, want at least 2,090", got)
	}
}

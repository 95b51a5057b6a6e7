package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// TestRecordWindows: a page of a patient's device readings or of their
// visits' messages (the long lists of a FHIR search) is read in the order
// of an index (their visits through the patient's own index), on a record of 20,000 of each in a clinic of ten times as
// many, with no sort step, and counted through an index, never by a scan
// of the clinic's table. The pages together are the list, in its order; the time
// range and the id select as they say, and another patient's items are
// never in the window.
func TestRecordWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 20000
	st, acct, pat, doc, _ := seedVisits(t, 2000)
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := st.DB().Exec(st.Rebind(query), args...); err != nil {
			t.Fatal(err)
		}
	}
	// Readings stored at i, measured in another order; the clinic's
	// other readings (the provider's here) are nine times as many.
	for u, k := range map[int64]int{pat.ID: 1, doc.ID: 9} {
		exec(`INSERT INTO health_readings (account_id, user_id, device_id, type, data_type, data_class, date, time, reading, created)
			SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), 'D', 'vendorD_bp_bp100', 'hr', 'body', '2026-01-01', (i * 7919) % ?, '{"hr":60}', i
			FROM (`+series()+`) AS s`, acct.ID, u, n, k*n)
	}
	// Messages: 2,000 in each of ten of the patient's visits, sent at i s.
	vs, err := st.Read().ListVisits(ctx, store.VisitFilter{AccountID: acct.ID, MemberID: pat.ID, Limit: 10})
	if err != nil || len(vs) != 10 {
		t.Fatal(len(vs), err)
	}
	var visits []int64
	for k, v := range vs {
		visits = append(visits, v.ID)
		v.MessageCount = n / 10
		exec(`INSERT INTO visit_messages (account_id, visit_id, seq, author_id, actor_type, type, content, attachments, created_us)
			SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), i, CAST(? AS BIGINT), 1, 'text', 'hello', '[]', (CAST(i AS BIGINT) * 10 + ?) * 1000000
			FROM (`+series()+`) AS s`, acct.ID, v.ID, pat.ID, k, n/10)
		exec("UPDATE visits SET message_count = ? WHERE id = ?", n/10, v.ID)
	}
	// The clinic's other threads: nine times as many messages.
	others, err := st.Read().ListVisits(ctx, store.VisitFilter{AccountID: acct.ID, ProviderID: doc.ID, Limit: 90})
	if err != nil || len(others) != 90 {
		t.Fatal(len(others), err)
	}
	for _, v := range others {
		if v.MemberID != pat.ID {
			exec(`INSERT INTO visit_messages (account_id, visit_id, seq, author_id, actor_type, type, content, attachments, created_us)
				SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), i, CAST(? AS BIGINT), 1, 'text', 'hello', '[]', CAST(i AS BIGINT) * 1000000
				FROM (`+series()+`) AS s`, acct.ID, v.ID, doc.ID, n/10)
		}
	}
	// A note on each of the clinic's visits: ten times the patient's.
	exec(`INSERT INTO visit_notes (account_id, visit_id, author_id, status, created, modified)
		SELECT account_id, id, CAST(? AS BIGINT), 'signed', created, modified FROM visits WHERE account_id = ?`, doc.ID, acct.ID)
	exec("ANALYZE health_readings")
	exec("ANALYZE visit_messages")
	exec("ANALYZE visit_notes")

	plans := map[string][]string{}
	for name, w := range map[string]store.RecordWindow{
		"first page":   {Limit: 50},
		"a later page": {Offset: 5000, Limit: 50},
		"a time range": {Since: 100, Before: 9000, Limit: 50},
	} {
		rp, err := store.ExplainReadingsWindow(ctx, st, acct.ID, pat.ID, w)
		if err != nil {
			t.Fatal(name, err)
		}
		mp, err := store.ExplainMessagesWindow(ctx, st, acct.ID, visits, w)
		if err != nil {
			t.Fatal(name, err)
		}
		vp, err := store.ExplainVisitsWindow(ctx, st, store.RecordVisits{AccountID: acct.ID, MemberID: pat.ID}, w)
		if err != nil {
			t.Fatal(name, err)
		}
		plans["readings, "+name] = rp
		plans["messages, "+name] = mp
		plans["visits, "+name] = vp
		np, err := store.ExplainNotesWindow(ctx, st, store.RecordVisits{AccountID: acct.ID, MemberID: pat.ID}, false, w)
		if err != nil {
			t.Fatal(name, err)
		}
		plans["notes, "+name] = np
	}
	// GET /users/{id}/health's pages: the first and one after a reading
	// (its keyset), in the index's order too.
	for name, f := range map[string]store.ReadingFilter{
		"first page":               {Limit: 50},
		"after a reading":          {Before: &clinic.Reading{ID: int64(n / 2), Time: 5000}, Limit: 50},
		"by type":                  {DataType: "hr", Limit: 50},
		"by type, after a reading": {DataType: "hr", Before: &clinic.Reading{ID: int64(n / 2), Time: 5000}, Limit: 50},
	} {
		rp, err := store.ExplainReadings(ctx, st, acct.ID, pat.ID, f)
		if err != nil {
			t.Fatal(name, err)
		}
		plans["readings list, "+name] = rp
	}
	for name, ps := range plans {
		for _, plan := range ps {
			// A patient's visits are read through their own index; a
			// page of them may be sorted: they are the patient's few
			// (here 400, and PostgreSQL sorts that few rather than walk
			// the index past an offset), which the count reads anyway.
			sorted := strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "Sort")
			if strings.HasPrefix(name, "notes") && st.Engine() == "postgres" {
				// PostgreSQL plans the join by cost: here a patient has a
				// fifth of the clinic's visits, and hashing the clinic's
				// 2,000 notes is its cheapest plan, as it should be.
				// SQLite, left to choose, read the clinic's notes first
				// whatever their number (store.notesWindow).
				continue
			}
			if sorted && !strings.HasPrefix(name, "visits") || strings.Contains(plan, "Seq Scan") ||
				strings.Contains(plan, "SCAN health_readings") || strings.Contains(plan, "SCAN visit_messages") || strings.Contains(plan, "SCAN v ") ||
				strings.Contains(plan, "SCAN n ") ||
				strings.HasPrefix(name, "visits") && !strings.Contains(plan, "visits_account_member_id") ||
				strings.HasPrefix(name, "notes") && (sorted || strings.Contains(plan, "visit_notes_visit (account_id=?)")) {
				t.Errorf("%s: not read in an index's order:\n%s", name, plan)
			}
		}
		t.Logf("%s:\n%s", name, strings.Join(ps, "\n--\n"))
	}

	// The readings' pages are the list, newest measurement first.
	all, err := st.Read().Readings(ctx, acct.ID, pat.ID, store.ReadingFilter{Limit: n})
	if err != nil || len(all) != n {
		t.Fatal(len(all), err)
	}
	var paged []int64
	for off := 0; off < n+700; off += 700 {
		page, total, err := st.Read().ReadingsWindow(ctx, acct.ID, pat.ID, store.RecordWindow{Offset: off, Limit: 700})
		if err != nil || total != n || len(page) != min(700, max(n-off, 0)) {
			t.Fatalf("offset %d: %d readings, total %d, %v", off, len(page), total, err)
		}
		for _, r := range page {
			paged = append(paged, r.ID)
		}
	}
	for i, r := range all {
		if paged[i] != r.ID || r.UserID != pat.ID {
			t.Fatalf("place %d: paged %d, listed %d", i, paged[i], r.ID)
		}
	}
	// And by keyset, as GET /users/{id}/health pages it: the same list.
	var keyed []int64
	for f := (store.ReadingFilter{Limit: 700}); ; {
		page, err := st.Read().Readings(ctx, acct.ID, pat.ID, f)
		if err != nil || len(keyed) > n {
			t.Fatal(len(keyed), err)
		}
		for _, r := range page {
			keyed = append(keyed, r.ID)
		}
		if len(page) < f.Limit {
			break
		}
		f.Before = page[len(page)-1]
	}
	if !slices.Equal(keyed, paged[:len(all)]) {
		t.Fatalf("the keyset pages hold %d readings, not the list's %d in its order", len(keyed), len(all))
	}
	page, total, err := st.Read().ReadingsWindow(ctx, acct.ID, pat.ID, store.RecordWindow{Since: 100, Before: 9000, Limit: n})
	if err != nil || total != 8900 || len(page) != 8900 {
		t.Fatalf("stored in [100, 9000): %d, total %d, %v", len(page), total, err)
	}
	for _, r := range page {
		if r.Created < 100 || r.Created >= 9000 {
			t.Fatalf("stored at %d", r.Created)
		}
	}
	one, total, err := st.Read().ReadingsWindow(ctx, acct.ID, pat.ID, store.RecordWindow{ID: all[77].ID, Limit: 1})
	if err != nil || total != 1 || len(one) != 1 || one[0].ID != all[77].ID {
		t.Fatalf("by id: %v, total %d, %v", one, total, err)
	}
	theirs, err := st.Read().Readings(ctx, acct.ID, doc.ID, store.ReadingFilter{Limit: 1})
	if err != nil || len(theirs) != 1 {
		t.Fatal(err)
	}
	if none, total, err := st.Read().ReadingsWindow(ctx, acct.ID, pat.ID, store.RecordWindow{ID: theirs[0].ID, Limit: 1}); err != nil || total != 0 || len(none) != 0 {
		t.Fatalf("another user's reading: %v, total %d, %v", none, total, err)
	}

	// The messages' pages are the threads, by visit, each in its order.
	mine := store.RecordVisits{AccountID: acct.ID, MemberID: pat.ID}
	var got [][2]int64
	for off := 0; off < n; off += 900 {
		page, total, err := st.Read().MessagesWindow(ctx, mine, store.RecordWindow{Offset: off, Limit: 900})
		if err != nil || total != n || len(page) != min(900, n-off) {
			t.Fatalf("offset %d: %d messages, total %d, %v", off, len(page), total, err)
		}
		for _, m := range page {
			got = append(got, [2]int64{m.VisitID, int64(m.Seq)})
		}
	}
	if !slices.IsSortedFunc(got, func(a, b [2]int64) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	}) || len(got) != n || got[0][1] != 1 {
		t.Fatalf("messages out of order: %d, first %v", len(got), got[0])
	}
	ms, total, err := st.Read().MessagesWindow(ctx, mine, store.RecordWindow{Since: 19000, Limit: n})
	if err != nil || total != len(ms) || total == 0 || total >= n/10 {
		t.Fatalf("since 19000: %d, total %d, %v", len(ms), total, err)
	}
	for _, m := range ms {
		if m.CreatedUS < 19000*1e6 || !slices.Contains(visits, m.VisitID) {
			t.Fatalf("message %+v", m)
		}
	}
}

package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// TestListVisits_KeysetPlans: every way the visits are listed (the
// clinic's, a patient's, a provider's with their rooms' unassigned ones,
// a room's, a status filter, the next page) is read in the order of an
// index, on a clinic of 20,000 visits with the engine's statistics: no
// sort step (SQLite's "TEMP B-TREE", PostgreSQL's "Sort") and no read of
// the whole table, so a page costs the same at any size. And the pages
// of a list, followed by After, are the list.
func TestListVisits_KeysetPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 20000
	st, acct, pat, doc, room := seedVisits(t, n)
	lists := map[string]store.VisitFilter{
		"clinic":         {AccountID: acct.ID, Limit: 50},
		"clinic, next":   {AccountID: acct.ID, Limit: 50, After: n / 2},
		"patient":        {AccountID: acct.ID, MemberID: pat.ID, Limit: 50},
		"provider":       {AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Limit: 50},
		"provider, next": {AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Limit: 50, After: n / 2},
		"room":           {AccountID: acct.ID, RoomID: room.ID, Limit: 50},
		"clinic, open":   {AccountID: acct.ID, Statuses: []int{10, 20, 25}, Limit: 50},
		// A dashboard's queue and inbox: the rooms' unassigned, oldest first.
		"provider's rooms, waiting": {AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Unassigned: true, Oldest: true,
			Statuses: []int{10, 20, 25}, Limit: 500},
	}
	for name, f := range lists {
		plans, err := store.ExplainListVisits(ctx, st, f)
		if err != nil {
			t.Fatal(name, err)
		}
		for _, plan := range plans {
			sorted := strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "Sort")
			if f.Unassigned {
				// A room's waiting visits are read through the room's
				// unassigned ones; PostgreSQL may sort those it keeps when
				// the page would hold them all.
				sorted = sorted && !strings.Contains(plan, "visits_room_unassigned")
			}
			if sorted || strings.Contains(plan, "Seq Scan on visits") ||
				strings.Contains(plan, "SCAN v\n") || strings.HasSuffix(plan, "SCAN v") {
				t.Errorf("%s: the list is not read in an index's order:\n%s", name, plan)
			}
		}
		t.Logf("%s:\n%s", name, strings.Join(plans, "\n--\n"))
	}

	// A dashboard's own open visits: through the index of open visits
	// only, in its order, never the provider's closed ones.
	var plans []string
	for _, oq := range []store.OpenVisitQuery{{}, {From: 86400, To: 2 * 86400}, {After: &store.OpenVisitKey{Start: 86400, ID: 40}}} {
		p, err := store.ExplainProviderOpenVisits(ctx, st, acct.ID, doc.ID, oq)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p...)
	}
	inIndexOrder(t, "a provider's open visits", "visits_provider_open", plans)

	// The clinic's claims report: a range of days by when the visits took
	// place, from the first and from the middle. (A provider's own report
	// PostgreSQL may read through the provider's visits and sort them: as
	// many as the provider has, not the clinic.)
	plans = nil
	for _, cq := range []store.ClaimQuery{
		{AccountID: acct.ID, From: 100, To: n - 100, Limit: 5000},
		{AccountID: acct.ID, From: 100, To: n - 100, After: &store.ClaimPlace{When: n / 2, ID: n / 2}, Limit: 5000},
	} {
		p, err := store.ExplainClaimVisits(ctx, st, cq)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p...)
	}
	inIndexOrder(t, "the claims report", "visits_claim_time", plans)

	// The clinic's numbers: a range read through the same index, never
	// the whole table (their sums need no order).
	numberPlans, nerr := store.ExplainNumberVisits(ctx, st, acct.ID, n/2, n/2+n/10)
	if nerr != nil {
		t.Fatal(nerr)
	}
	for _, plan := range numberPlans {
		if !strings.Contains(plan, "visits_claim_time") || strings.Contains(plan, "Seq Scan on visits") {
			t.Errorf("the numbers do not read the range through visits_claim_time:\n%s", plan)
		}
	}
	t.Logf("the numbers:\n%s", strings.Join(numberPlans, "\n--\n"))

	// The audit trail: 20,000 chained entries of the clinic and 2,000
	// pending, the first page and a page from the middle, unfiltered and
	// by action; the access log; the chain's walk. Each reads the indexes
	// of chained entries (migration 00029), never the clinic's whole trail.
	if _, err := st.DB().Exec(st.Rebind(`INSERT INTO audit (account_id, actor_kind, action, object_type, object_id, outcome, request_id, created, seq)
		SELECT CAST(? AS BIGINT), 'user_token', CASE WHEN i % 3 = 0 THEN 'visit.read' ELSE 'user.read' END, 'user', CAST(i % 100 AS TEXT), 'ok', 'r', i / 4,
			CASE WHEN i > CAST(? AS INTEGER) THEN -1 ELSE i END
		FROM (`+series()+`) AS s`), acct.ID, n, n+2000); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec("ANALYZE audit"); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]store.AuditFilter{
		"audit":            {AccountID: acct.ID, Limit: 50},
		"audit, next":      {AccountID: acct.ID, Limit: 50, After: &store.AuditPlace{Created: n / 8, ID: n / 2}},
		"audit, by action": {AccountID: acct.ID, Action: "visit.read", Limit: 50},
	} {
		plans, err := store.ExplainAuditPage(ctx, st, f)
		if err != nil {
			t.Fatal(name, err)
		}
		inIndexOrder(t, name, "audit_account_created_id", plans)
	}
	plans = nil
	for _, after := range []*store.AuditPlace{nil, {Created: n / 8, ID: n / 2}} {
		p, err := store.ExplainAccessLog(ctx, st, acct.ID, pat.ID, after)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p...)
	}
	// The log's two parts (the patient's entries, their visits') may be
	// sorted: as many rows as the patient's, not the clinic's.
	for _, plan := range plans {
		if strings.Contains(plan, "Seq Scan on audit") || scansAudit.MatchString(plan) || !strings.Contains(plan, "audit_account_object") {
			t.Errorf("the access log does not read the chained entries' object index:\n%s", plan)
		}
	}
	t.Logf("access log:\n%s", strings.Join(plans, "\n--\n"))
	plans, err := store.ExplainAuditChainPage(ctx, st, acct.ID, n/2)
	if err != nil {
		t.Fatal(err)
	}
	inIndexOrder(t, "the chain's walk", "audit_account_seq", plans)

	// Paging through the provider's list gives the list.
	all, err := st.Read().ListVisits(ctx, store.VisitFilter{AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var paged []int64
	for f := (store.VisitFilter{AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Limit: 70}); len(paged) < len(all); {
		page, err := st.Read().ListVisits(ctx, f)
		if err != nil || len(page) == 0 {
			t.Fatalf("page after %d: %d, %v", f.After, len(page), err)
		}
		for _, v := range page {
			paged = append(paged, v.ID)
		}
		f.After = page[len(page)-1].ID
	}
	for i, v := range all {
		if paged[i] != v.ID || (i > 0 && v.ID >= all[i-1].ID) {
			t.Fatalf("place %d: paged %d, listed %d", i, paged[i], v.ID)
		}
		if !(v.ProviderID == doc.ID || (v.ProviderID == 0 && v.RoomID == room.ID)) {
			t.Fatalf("not the provider's: %+v", v)
		}
	}

	// The rooms' waiting visits, oldest first, paged the other way.
	waiting := store.VisitFilter{AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Unassigned: true, Oldest: true, Statuses: []int{10}, Limit: 5000}
	every, err := st.Read().ListVisits(ctx, waiting)
	if err != nil || len(every) == 0 {
		t.Fatal(len(every), err)
	}
	var forward []int64
	for f := waiting; len(forward) < len(every); {
		f.Limit = 40
		page, err := st.Read().ListVisits(ctx, f)
		if err != nil || len(page) == 0 {
			t.Fatalf("waiting, page after %d: %d, %v", f.After, len(page), err)
		}
		for _, v := range page {
			forward = append(forward, v.ID)
		}
		f.After = page[len(page)-1].ID
	}
	for i, v := range every {
		if forward[i] != v.ID || (i > 0 && v.ID <= every[i-1].ID) || v.ProviderID != 0 || v.RoomID != room.ID || v.Status != 10 {
			t.Fatalf("waiting, place %d: paged %d, listed %+v", i, forward[i], v)
		}
	}
}

// scansAudit is a SQLite plan's step that reads the audit table whole.
var scansAudit = regexp.MustCompile(`(?m)^\s*SCAN a(udit)?\b`)

// inIndexOrder fails t unless each plan reads through index, in its
// order: no sort step (SQLite's temporary B-tree, PostgreSQL's Sort) and
// no scan of the whole table.
func inIndexOrder(t *testing.T, what, index string, plans []string) {
	t.Helper()
	for _, plan := range plans {
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, index) {
			t.Errorf("%s is not read through %s in its order:\n%s", what, index, plan)
		}
	}
	t.Logf("%s:\n%s", what, strings.Join(plans, "\n--\n"))
}

// series is a statement of the numbers 1 to ? (column i).
func series() string {
	if testenv.Engine() == "postgres" {
		return "SELECT generate_series(1, CAST(? AS INTEGER)) AS i"
	}
	return "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT i FROM s"
}

// seedVisits makes a clinic of n visits on a fresh store, analysed: every
// fifth the patient's (the others another user's), every seventh an
// unassigned e-consult in the room, every third of the rest the
// provider's (the others another provider's).
func seedVisits(t testing.TB, n int) (st *store.Store, acct *clinic.Account, pat, doc *clinic.User, room *clinic.Room) {
	t.Helper()
	ctx := context.Background()
	st = testenv.OpenStore(t, testenv.DSN(t))
	acct = &clinic.Account{Code: "lists", Name: "Lists", Domain: "lists.test", Features: []string{}}
	if err := st.Write().CreateAccount(ctx, acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	user := func(code string, typ int) *clinic.User {
		u := &clinic.User{AccountID: acct.ID, Code: code, SvcID: "svc-" + code, Username: code, FirstName: code, LastName: "L", Type: typ, Status: clinic.StatusActive, Active: true, Extra: map[string]any{}}
		if err := st.Write().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	pat, doc = user("pat", clinic.UserMember), user("doc", clinic.UserProvider)
	room = &clinic.Room{AccountID: acct.ID, Code: "main", Slug: "main", Name: "Main", Domain: "lists.test", Active: true}
	if err := st.Write().CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(st.Rebind("INSERT INTO user_rooms (account_id, user_id, room_id, added_time) VALUES (?, ?, ?, 1)"), acct.ID, doc.ID, room.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(st.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
		SELECT CAST(? AS BIGINT), CASE WHEN i % 5 = 0 THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END,
			CASE WHEN i % 7 = 0 THEN 0 WHEN i % 3 = 0 THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) + 1000000 END,
			CASE WHEN i % 7 = 0 THEN CAST(? AS BIGINT) ELSE NULL END, CASE WHEN i % 2 = 0 THEN 10 ELSE 40 END, 1, CASE WHEN i % 7 = 0 THEN 'econsult' ELSE 'appointment' END, i, i
		FROM (`+series()+`) AS s`), acct.ID, pat.ID, doc.ID, doc.ID, doc.ID, room.ID, n); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec("ANALYZE visits"); err != nil {
		t.Fatal(err)
	}
	return st, acct, pat, doc, room
}

// BenchmarkListVisits reads the first page (50) and a page from the middle
// of each list at 1,000 and 100,000 visits: a page costs the same at both
// (docs/performance.md, "Cost growth").
func BenchmarkListVisits(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		st, acct, pat, doc, room := seedVisits(b, n)
		for _, l := range []struct {
			name string
			f    store.VisitFilter
		}{
			{"clinic", store.VisitFilter{AccountID: acct.ID, Limit: 50}},
			{"clinic-middle", store.VisitFilter{AccountID: acct.ID, Limit: 50, After: int64(n / 2)}},
			{"patient", store.VisitFilter{AccountID: acct.ID, MemberID: pat.ID, Limit: 50}},
			{"provider", store.VisitFilter{AccountID: acct.ID, ProviderID: doc.ID, ProviderRooms: true, Limit: 50}},
			{"room", store.VisitFilter{AccountID: acct.ID, RoomID: room.ID, Limit: 50}},
		} {
			b.Run(fmt.Sprintf("%s/%d", l.name, n), func(b *testing.B) {
				for b.Loop() {
					if vs, err := st.Read().ListVisits(ctx, l.f); err != nil || len(vs) != 50 {
						b.Fatal(len(vs), err)
					}
				}
			})
		}
	}
}

// TestListUsers_Keyset: GET /users's pages continue after a user (After) in
// the order of an index — by id, by full name either way, by creation —
// and paging through gives the whole list in order, ties broken by id.
// BenchmarkClaimVisits reads a page of 500 of the claims report over a
// range holding the whole clinic, from its start and from its middle, at
// 1,000 and 100,000 visits (docs/performance.md, "Cost growth").
func BenchmarkClaimVisits(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		st, acct, _, _, _ := seedVisits(b, n)
		for name, cq := range map[string]store.ClaimQuery{
			"first":  {AccountID: acct.ID, From: 0, To: int64(n) + 1, Limit: 500},
			"middle": {AccountID: acct.ID, From: 0, To: int64(n) + 1, After: &store.ClaimPlace{When: int64(n / 2), ID: int64(n / 2)}, Limit: 500},
		} {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				for b.Loop() {
					if vs, err := st.Read().ClaimVisits(ctx, cq); err != nil || len(vs) != 500 {
						b.Fatal(len(vs), err)
					}
				}
			})
		}
	}
}

// The slot lists (GET /slots, /slots/available, the book page) read a page
// in the order of (account_id, starts_at, id), and the pages after a slot
// walk the list each slot once.
func TestListSlots_KeysetPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 20000
	st, acct, other, doc, room := seedVisits(t, 10)
	var group int64
	if err := st.DB().QueryRow(st.Rebind(`INSERT INTO slot_groups (account_id, provider_id, room_id, date_start, date_end, time_start, time_end, timezone, duration, created, modified)
		VALUES (?, ?, ?, '2026-01-01', '2026-12-31', '00:00', '23:59', 'UTC', 5, 1, 1) RETURNING id`), acct.ID, doc.ID, room.ID).Scan(&group); err != nil {
		t.Fatal(err)
	}
	// Every fourth slot is booked; each start is two users' (the slot's
	// provider is only a user to the store), so starts repeat as in a
	// clinic of several providers.
	if _, err := st.DB().Exec(st.Rebind(`INSERT INTO slots (account_id, provider_id, room_id, group_id, starts_at, ends_at, status, created, modified)
		SELECT CAST(? AS BIGINT), CASE WHEN i % 2 = 0 THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END, CAST(? AS BIGINT), CAST(? AS BIGINT),
			(i / 2) * 300, (i / 2) * 300 + 300, CASE WHEN i % 4 = 0 THEN 20 ELSE 10 END, 1, 1
		FROM (`+series()+`) AS s`), acct.ID, doc.ID, other.ID, room.ID, group, n); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec("ANALYZE slots"); err != nil {
		t.Fatal(err)
	}
	mid := &clinic.Slot{ID: n / 2, Start: (n / 4) * 300}
	for name, f := range map[string]store.SlotFilter{
		"window":          {AccountID: acct.ID, From: 300, To: n * 150, Limit: 1000},
		"window, next":    {AccountID: acct.ID, From: 300, To: n * 150, After: mid, Limit: 1000},
		"available":       {AccountID: acct.ID, From: 3000, Status: clinic.SlotOpen, Limit: 200},
		"available, next": {AccountID: acct.ID, From: 3000, Status: clinic.SlotOpen, After: mid, Limit: 200},
		"room's window":   {AccountID: acct.ID, RoomID: room.ID, From: 300, To: n * 150, Limit: 1000},
	} {
		plans, err := store.ExplainSlots(ctx, st, f)
		if err != nil {
			t.Fatal(name, err)
		}
		inIndexOrder(t, name, "slots_account_start_id", plans)
	}

	// Pages of 700 after their last slot are the list, each slot once.
	f := store.SlotFilter{AccountID: acct.ID, From: 300, Status: clinic.SlotOpen, Limit: n}
	all, err := st.Read().ListSlots(ctx, f)
	if err != nil || len(all) < n/2 {
		t.Fatal(len(all), err)
	}
	var paged []int64
	for f.Limit = 700; ; {
		page, err := st.Read().ListSlots(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			paged = append(paged, s.ID)
		}
		if len(page) < f.Limit {
			break
		}
		f.After = &page[len(page)-1]
	}
	if len(paged) != len(all) {
		t.Fatalf("pages hold %d slots, the list %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i] != all[i].ID {
			t.Fatalf("slot %d: %d in the pages, %d in the list", i, paged[i], all[i].ID)
		}
	}
}

func TestListUsers_Keyset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 20000
	st, acct, _, _, _ := seedVisits(t, 10)
	// Names repeat (every 100th user shares a name), so ties are paged by id.
	if _, err := st.DB().Exec(st.Rebind(`INSERT INTO users (account_id, code, username, first_name, last_name, type, svcid, created, modified)
		SELECT CAST(? AS BIGINT), 'u' || i, 'u' || i, 'N' || (i % 100), 'Patient', 200, 'svc-u' || i, i % 977, i
		FROM (`+series()+`) AS s`), acct.ID, n); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec("ANALYZE users"); err != nil {
		t.Fatal(err)
	}
	for _, sort := range []struct {
		col  string
		desc bool
	}{{"", false}, {"full_name", false}, {"full_name", true}, {"created", true}} {
		f := store.UserFilter{AccountID: acct.ID, SortCol: sort.col, Desc: sort.desc, Limit: 50}
		for _, after := range []int64{0, n / 2} {
			f.After = after
			plans, err := store.ExplainUserPage(ctx, st, f)
			if err != nil {
				t.Fatal(sort, err)
			}
			if plan := plans[0]; strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%v after %d: the page is not read in an index's order:\n%s", sort, after, plan)
			}
		}
		// Paging by After gives the list in order, as one long offset page does.
		f.After, f.Limit = 0, n+10
		all, total, err := st.Read().ListUsers(ctx, f)
		if err != nil || total != n+2 || len(all) != n+2 {
			t.Fatalf("%v: %d users of %d, %v", sort, len(all), total, err)
		}
		f.Limit = 997
		var paged []*clinic.User
		for len(paged) < len(all) {
			page, _, err := st.Read().ListUsers(ctx, f)
			if err != nil || len(page) == 0 {
				t.Fatalf("%v: page after %d: %d, %v", sort, f.After, len(page), err)
			}
			paged = append(paged, page...)
			f.After = page[len(page)-1].ID
		}
		for i := range all {
			if paged[i].ID != all[i].ID {
				t.Fatalf("%v: place %d: paged %d, listed %d", sort, i, paged[i].ID, all[i].ID)
			}
		}
		// (Text order is the database's collation; numbers are checked here.)
		if sort.col == "created" && !slices.IsSortedFunc(all, func(a, b *clinic.User) int {
			return cmp.Or(cmp.Compare(b.Created, a.Created), cmp.Compare(b.ID, a.ID))
		}) {
			t.Errorf("%v: not newest first, ties by id", sort)
		}
	}
	// After a user of another clinic (or none) is not found.
	if _, _, err := st.Read().ListUsers(ctx, store.UserFilter{AccountID: acct.ID, After: 1 << 40, Limit: 5}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a user not there: %v", err)
	}
}

// BenchmarkListUsers reads the first page (50) of the clinic's users, and
// of its patients, at 1,000 and 100,000 users, with the total_count the
// API answers with every page (docs/performance.md, "Cost growth").
func BenchmarkListUsers(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		st, acct, _, _, _ := seedVisits(b, 10)
		if _, err := st.DB().Exec(st.Rebind(`INSERT INTO users (account_id, code, username, first_name, last_name, type, svcid, created, modified)
			SELECT CAST(? AS BIGINT), 'u' || i, 'u' || i, 'N' || (i % 100), 'Patient', CASE WHEN i % 10 = 0 THEN 100 ELSE 200 END, 'svc-u' || i, i, i
			FROM (`+series()+`) AS s`), acct.ID, n); err != nil {
			b.Fatal(err)
		}
		if _, err := st.DB().Exec("ANALYZE users"); err != nil {
			b.Fatal(err)
		}
		for _, l := range []struct {
			name string
			f    store.UserFilter
		}{
			{"clinic", store.UserFilter{AccountID: acct.ID, Limit: 50}},
			{"patients", store.UserFilter{AccountID: acct.ID, Types: []int{clinic.UserMember}, Limit: 50}},
			{"patients-by-name", store.UserFilter{AccountID: acct.ID, Types: []int{clinic.UserMember}, SortCol: "full_name", Limit: 50}},
		} {
			b.Run(fmt.Sprintf("%s/%d", l.name, n), func(b *testing.B) {
				for b.Loop() {
					if us, total, err := st.Read().ListUsers(ctx, l.f); err != nil || len(us) != 50 || total < n/2 {
						b.Fatal(len(us), total, err)
					}
				}
			})
		}
	}
}

// TestUserCounts: the user counts a users page's total_count comes from
// (by type and status) stay what counting the users says, through every
// way a user row changes — created by the store and by SQL, concurrently,
// activated (SetPassword), its type and status changed and deleted by
// SQL — for the filters they answer, and another clinic's users never
// count.
func TestUserCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, acct, pat, _, _ := seedVisits(t, 10)
	other := &clinic.Account{Code: "other", Name: "Other", Domain: "other.test", Features: []string{}}
	if err := st.Write().CreateAccount(ctx, other, store.AccountSecrets{AdminTokenHash: "a2", APIKeyHash: "k2", APISecretHash: "s2"}); err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := st.DB().Exec(st.Rebind(query), args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO users (account_id, code, username, first_name, last_name, type, status, svcid, created, modified)
		SELECT CAST(? AS BIGINT), 'u' || i, 'u' || i, 'N', 'P', CASE WHEN i % 3 = 0 THEN 100 ELSE 200 END, i % 2, 'svc-u' || i, i, i
		FROM (`+series()+`) AS s`, acct.ID, 300)
	exec(`INSERT INTO users (account_id, code, username, first_name, last_name, type, status, svcid, created, modified)
		SELECT CAST(? AS BIGINT), 'o' || i, 'o' || i, 'N', 'P', 200, 1, 'svc-o' || i, i, i
		FROM (`+series()+`) AS s`, other.ID, 50)
	// Eight callers create users at once.
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				code := fmt.Sprintf("c%d-%d", g, i)
				u := &clinic.User{AccountID: acct.ID, Code: code, SvcID: "svc-" + code, Username: code, FirstName: "C", LastName: "L",
					Type: []int{clinic.UserMember, clinic.UserProvider}[i%2], Status: clinic.StatusPending, Extra: map[string]any{}}
				if err := st.Grouped(ctx, func(q *store.Q) error { return q.CreateUser(ctx, u) }); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := st.Write().SetPassword(ctx, acct.ID, pat.ID, "h", clinic.StatusActive, true, 5); err != nil {
		t.Fatal(err)
	}
	exec("UPDATE users SET type = 100 WHERE account_id = ? AND code IN ('u1', 'u2', 'u4')", acct.ID)
	exec("UPDATE users SET status = -1 WHERE account_id = ? AND code IN ('u5', 'u6', 'u7', 'u8')", acct.ID)
	exec("UPDATE users SET first_name = 'M' WHERE account_id = ? AND code = 'u9'", acct.ID)
	exec("DELETE FROM users WHERE account_id = ? AND code IN ('u10', 'u11', 'u12')", acct.ID)

	for _, f := range []store.UserFilter{
		{},
		{Types: []int{clinic.UserMember}},
		{Types: []int{clinic.UserMember, clinic.UserProvider}},
		{Statuses: []int{clinic.StatusActive}},
		{Statuses: []int{clinic.StatusDisabled, clinic.StatusPending}},
		{Types: []int{clinic.UserProvider}, Statuses: []int{clinic.StatusPending}},
		{Types: []int{clinic.UserMember}, SortCol: "full_name", Desc: true, Start: 3},
		// As the API builds a filter: the lists it was not given are empty.
		{Types: []int{clinic.UserMember}, IDs: []int64{}, Roles: []string{}, Subtypes: []string{}},
	} {
		f.AccountID, f.Limit = acct.ID, 5
		w, args := store.UserFilterCond(f)
		var want int
		if err := st.DB().QueryRow(st.Rebind("SELECT COUNT(*) FROM users u WHERE "+w), args...).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if query, _ := store.UserFilterCount(f); query == "" {
			t.Errorf("%+v: counted by reading the users", f)
		}
		_, total, err := st.Read().ListUsers(ctx, f)
		if err != nil || total != want || want == 0 {
			t.Errorf("types %v statuses %v: total_count %d, the users counted %d, %v", f.Types, f.Statuses, total, want, err)
		}
	}
	// A filter the counts cannot answer counts the users it matches.
	for _, f := range []store.UserFilter{
		{AccountID: acct.ID, Types: []int{clinic.UserMember}, FullName: "n", Limit: 5},
		{AccountID: acct.ID, Roles: []string{"nurse"}},
		{AccountID: acct.ID, IsHidden: new(false)},
		{AccountID: acct.ID, PatientOf: 7},
	} {
		if query, _ := store.UserFilterCount(f); query != "" {
			t.Errorf("%+v answered from the counts: %s", f, query)
		}
	}
}

// BenchmarkListAudit reads a page of 50 of the clinic's whole trail with
// its total, the first page and one from the middle, at 1,000 and 100,000
// chained entries (docs/performance.md, "The audit trail's total").
func BenchmarkListAudit(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 100000} {
		st, acct, _, _, _ := seedVisits(b, 10)
		if _, err := st.DB().Exec(st.Rebind(`INSERT INTO audit (account_id, actor_kind, action, object_type, object_id, outcome, request_id, created, seq)
			SELECT CAST(? AS BIGINT), 'user_token', CASE WHEN i % 100 = 0 THEN 'visit.read' ELSE 'user.read' END, 'user', '1', 'ok', 'r', i, i
			FROM (`+series()+`) AS s`), acct.ID, n); err != nil {
			b.Fatal(err)
		}
		if _, err := st.DB().Exec(st.Rebind("INSERT INTO audit_chain (account_id, seq, head) VALUES (?, ?, 'h')"), acct.ID, n); err != nil {
			b.Fatal(err)
		}
		if _, err := st.DB().Exec("ANALYZE audit"); err != nil {
			b.Fatal(err)
		}
		for _, l := range []struct {
			name string
			f    store.AuditFilter
		}{
			{"clinic", store.AuditFilter{AccountID: acct.ID, Limit: 50}},
			{"clinic-middle", store.AuditFilter{AccountID: acct.ID, Limit: 50, After: &store.AuditPlace{Created: int64(n / 2), ID: int64(n / 2)}}},
		} {
			b.Run(fmt.Sprintf("%s/%d", l.name, n), func(b *testing.B) {
				for b.Loop() {
					if es, total, err := st.Read().ListAudit(ctx, l.f); err != nil || len(es) != 50 || total != n {
						b.Fatal(len(es), total, err)
					}
				}
			})
		}
	}
}

// BenchmarkNumberVisits reads a year of a 100,000-visit clinic for its
// numbers (GET /reports/numbers reads this and adds it up in Go;
// docs/performance.md).
func BenchmarkNumberVisits(b *testing.B) {
	ctx := context.Background()
	const n = 100000
	st, acct, _, _, _ := seedVisits(b, n)
	b.ResetTimer()
	for b.Loop() {
		vs, err := st.Read().NumberVisits(ctx, acct.ID, 0, n+1)
		if err != nil || len(vs) != n {
			b.Fatal(len(vs), err)
		}
	}
}

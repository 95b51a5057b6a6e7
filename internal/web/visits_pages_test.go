package web_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"teleclinic/internal/clinic"
)

// TestPortal_PastVisitsPages: /visits shows the open visits and the closed
// ones 50 at a time, newest first, with a link to the older ones and, from
// there, back to the latest; the pages together hold every closed visit
// once.
func TestPortal_PastVisitsPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pat := f.user(t, f.p1Token).User
	ctx := context.Background()
	now := f.e.Clock.Now().Unix()
	const closed = 57
	for i := range closed {
		v := &clinic.Visit{AccountID: pat.AccountID, Kind: clinic.KindEconsult, MemberID: pat.ID, Status: clinic.VisitCompleted,
			Type: 1, Created: now - int64(closed-i), Modified: now}
		if err := f.e.Store.Write().CreateVisit(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/visits", nil)
	cards := regexp.MustCompile(`href="/visits/start/(\d+)"`)
	seen := map[string]bool{}
	first := b.get("/visits")
	coming, past, _ := strings.Cut(first.Body, `id="past"`)
	if !strings.Contains(coming, "/visits/start/"+itoa(f.visitID)) {
		t.Fatalf("the open e-consult is not coming up: %s", coming)
	}
	for _, m := range cards.FindAllStringSubmatch(past, -1) {
		seen[m[1]] = true
	}
	older := regexp.MustCompile(`href="/visits\?after=(\d+)">Older visits<`).FindStringSubmatch(first.Body)
	if len(seen) != 50 || older == nil || strings.Contains(first.Body, ">Latest visits<") {
		t.Fatalf("first page: %d past visits, older link %v", len(seen), older)
	}
	second := b.get("/visits?after=" + older[1])
	if strings.Contains(second.Body, `id="coming"`) || !strings.Contains(second.Body, `href="/visits">Latest visits<`) || strings.Contains(second.Body, "Older visits") {
		t.Fatalf("second page: %s", second.Body)
	}
	rest := cards.FindAllStringSubmatch(second.Body, -1)
	for _, m := range rest {
		if seen[m[1]] {
			t.Fatalf("visit %s on both pages", m[1])
		}
		seen[m[1]] = true
	}
	if len(rest) != closed-50 || len(seen) != closed {
		t.Fatalf("second page: %d visits; %d in all, want %d", len(rest), len(seen), closed)
	}
}

// TestPortal_WaitingVisitsPages: a provider's /visits shows the e-consults
// waiting in their rooms for a provider, oldest first (first come, first
// served), 50 at a time with a link to the next ones and, from there, back
// to the longest waiting; the pages together hold each once.
func TestPortal_WaitingVisitsPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t) // its e-consult waits in the provider's room
	prov, pat := f.user(t, f.providerToken), f.user(t, f.p2Token).User
	db := f.e.Store.DB()
	room := f.mainRoom(t)
	now := f.e.Clock.Now().Unix()
	for range 56 {
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, 0, ?, 10, 1, 'econsult', ?, ?)`), prov.Account.ID, pat.ID, room, now, now); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/visits", nil)
	cards := regexp.MustCompile(`href="/visits/start/(\d+)"`)
	var order []int64
	first := b.get("/visits")
	waiting := between(first.Body, `id="waiting"`, "</section>")
	for _, m := range cards.FindAllStringSubmatch(waiting, -1) {
		order = append(order, mustInt(t, m[1]))
	}
	more := regexp.MustCompile(`href="(/visits\?waiting=\d+)">More waiting<`).FindStringSubmatch(waiting)
	if len(order) != 50 || more == nil || order[0] != f.visitID || strings.Contains(waiting, "Longest waiting") {
		t.Fatalf("first page: %d waiting (first %v, want the fixture's %d), more %v", len(order), order[:min(1, len(order))], f.visitID, more)
	}
	second := b.get(more[1])
	if strings.Contains(second.Body, `id="coming"`) || strings.Contains(second.Body, `id="past"`) ||
		!strings.Contains(second.Body, `href="/visits">Longest waiting<`) || strings.Contains(second.Body, "More waiting") {
		t.Fatalf("second page: %s", second.Body)
	}
	for _, m := range cards.FindAllStringSubmatch(between(second.Body, `id="waiting"`, "</section>"), -1) {
		order = append(order, mustInt(t, m[1]))
	}
	if len(order) != 57 {
		t.Fatalf("%d waiting in all, want 57", len(order))
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("not oldest first, each once: %v", order)
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPortal_VisitsFullPageEnds: a list that exactly fills its page names
// no next page (which would be empty), and each list read is audited.
func TestPortal_VisitsFullPageEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t) // its e-consult waits in the provider's room
	prov, pat := f.user(t, f.providerToken), f.user(t, f.p2Token).User
	db := f.e.Store.DB()
	room := f.mainRoom(t)
	now := f.e.Clock.Now().Unix()
	for i := range 49 + 50 {
		status, provider := 10, int64(0) // waiting
		if i >= 49 {
			status, provider = 30, prov.User.ID // the provider's, completed
		}
		if _, err := db.Exec(f.e.Store.Rebind(`INSERT INTO visits (account_id, member_id, provider_id, room_id, status, type, kind, created, modified)
			VALUES (?, ?, ?, ?, ?, 1, 'econsult', ?, ?)`), prov.Account.ID, pat.ID, provider, room, status, now, now); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/visits", nil)
	lists := func() (n int) {
		t.Helper()
		f.e.FlushAudits()
		if err := db.QueryRow(f.e.Store.Rebind("SELECT count(*) FROM audit WHERE action = 'visit.list' AND actor_user_id = ?"), prov.User.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := lists()
	pg := b.get("/visits")
	// Its three lists (the provider's open visits, the waiting, the past)
	// are each an audited read of patients' visits.
	if n := lists() - before; n != 3 {
		t.Fatalf("/visits left %d visit.list entries, want 3", n)
	}
	waiting, past := between(pg.Body, `id="waiting"`, "</section>"), between(pg.Body, `id="past"`, "</section>")
	if n, m := strings.Count(waiting, `href="/visits/start/`), strings.Count(past, `href="/visits/start/`); n != 50 || m != 50 {
		t.Fatalf("%d waiting and %d past, want 50 of each", n, m)
	}
	if strings.Contains(pg.Body, "More waiting") || strings.Contains(pg.Body, "Older visits") {
		t.Fatal("a list that fills its page exactly names a next page")
	}
}

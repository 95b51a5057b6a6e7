package web_test

import (
	"context"
	"regexp"
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

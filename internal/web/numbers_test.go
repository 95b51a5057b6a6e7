package web_test

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
)

// TestPortal_Numbers: the admin's numbers page draws the range's figures
// (a walk-in that waited five minutes and one that left unseen; the
// e-consult of the fixture), refuses a range backwards beside the form,
// and its CSV links answer the rows.
func TestPortal_Numbers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bg := context.Background()
	seen := f.walkin(t, f.p1Token, "A sore throat")
	left := f.walkin(t, f.p2Token, "A rash")
	f.e.Clock.Advance(5 * time.Minute)
	prov := f.user(t, f.providerToken)
	if _, err := f.e.App.TakeVisit(bg, prov, seen); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.MoveVisit(bg, prov, seen, app.ActInProgress, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.App.MoveVisit(bg, prov, left, app.ActCancel, app.MoveInput{Reason: app.ReasonNoShow}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.e)
	f.adminSignIn(t, b)
	if pg := b.get("/admin"); !strings.Contains(pg.Body, `href="/admin/numbers"`) {
		t.Fatal("the administration does not lead to the numbers")
	}
	pg := b.get("/admin/numbers")
	total := between(pg.Body, `id="numbers-total"`, "</table>")
	for _, want := range []string{"<td>3</td>", "1 (50.0%)", "5 min / 5 min"} {
		if !strings.Contains(total, want) {
			t.Fatalf("the total lacks %q: %s", want, total)
		}
	}
	if pg := b.get("/admin/numbers?from_date=2026-03-02&to_date=2026-03-01"); pg.Status != 400 || !strings.Contains(pg.Body, "to_date must be on or after") {
		t.Fatalf("a range backwards: %d", pg.Status)
	}
	res := b.get("/admin/numbers.csv?from_date=2026-03-02&to_date=2026-03-02&timezone=UTC&group=room")
	recs, err := csv.NewReader(strings.NewReader(res.Body)).ReadAll()
	if err != nil || len(recs) != 3 || recs[1][1] != "Main Room" || recs[1][2] != "3" || recs[2][0] != "total" {
		t.Fatalf("the CSV: %v %v", recs, err)
	}
}

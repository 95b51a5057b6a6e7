package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// TestPortal_CheckIn: the patient's page of a video visit asks where they
// are (a state of the list, at home or not) until they say; said, it
// shows the answer to change, and the visit's facts keep it for the
// claim. An e-consult asks nothing.
func TestPortal_CheckIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	walkin := f.walkin(t, f.p1Token, "A sore throat")
	pb := newBrowser(t, f.e)
	f.redirectLogin(t, pb, f.p1Token, "/visits", nil)
	page := "/visits/start/" + itoa(walkin)
	pg := pb.get(page)
	if !strings.Contains(pg.Body, "Where are you for this visit?") || !strings.Contains(pg.Body, `<option value="NJ">NJ</option>`) {
		t.Fatalf("the question: %s", pg.Body)
	}
	if pg := pb.get(f.visitPath()); strings.Contains(pg.Body, "Where are you for this visit?") {
		t.Fatal("an e-consult asks where the patient is")
	}
	if pg := pb.post(page+"/location", url.Values{"state": {"XX"}, "at_home": {"1"}}); pg.Status != 400 {
		t.Fatalf("a state not on the list: %d", pg.Status)
	}
	if pg := pb.post(page+"/location", url.Values{"state": {"NJ"}, "at_home": {"1"}}); pg.Status != 303 {
		t.Fatalf("the answer: %d %s", pg.Status, pg.Body)
	}
	pg = pb.get(page + "?notice=checked-in")
	if !strings.Contains(pg.Body, "You are in NJ, at home.") || !strings.Contains(pg.Body, "the clinic knows where you are") {
		t.Fatalf("the answer, shown: %s", pg.Body)
	}
	facts, _, err := f.e.App.VisitFacts(context.Background(), f.user(t, f.p1Token), walkin)
	if err != nil || facts.PatientState != "NJ" || facts.PatientHome != "yes" {
		t.Fatalf("the facts: %+v %v", facts, err)
	}
}

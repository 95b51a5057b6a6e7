package web_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestPortal_IntakeQuestionsAndConsent: the admin gives a room its own
// intake questions and a consent text from the room's page; the room's
// form asks them; a required answer or the signature missing, or a
// consent version the patient was not shown, is refused; the answers and
// the signed consent (version, typed name, time) are on the patient's
// chart.
func TestPortal_IntakeQuestionsAndConsent(t *testing.T) {
	f := newFixture(t)
	admin := newBrowser(t, f.e)
	f.adminSignIn(t, admin)
	form := url.Values{"name": {"Main Room"}, "active": {"1"}, "walkin": {"1"},
		"q_label_0": {"Do you have a fever?"}, "q_kind_0": {"yesno"}, "q_required_0": {"1"},
		"q_label_1": {"How bad is it?"}, "q_kind_1": {"choice"}, "q_choices_1": {"mild, moderate, severe"}, "q_required_1": {"1"},
		"q_label_2": {"Since when?"}, "q_kind_2": {"date"},
		"consent_version": {"2026-1"}, "consent_text": {"I agree to be treated by video.\nI know this is not for emergencies."}}
	if pg := admin.post("/admin/rooms/main", form); pg.Status != 303 {
		t.Fatalf("the room's form: %d %s", pg.Status, pg.Body)
	}

	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, "/c/acme/main", nil)
	room := pat.get("/c/acme/main")
	for _, want := range []string{`name="q_do_you_have_a_fever"`, `<option value="moderate">moderate</option>`, `name="q_since_when" type="date"`, "I know this is not for emergencies.", `name="consent_version" value="2026-1"`} {
		if !strings.Contains(room.Body, want) {
			t.Errorf("the room's form has no %s", want)
		}
	}
	answers := url.Values{"reason_for_visit": {"Fever and cough"}, "terms": {"1"}, "kind": {"econsult"},
		"q_do_you_have_a_fever": {"yes"}, "q_how_bad_is_it": {"moderate"}, "q_since_when": {"2026-02-27"},
		"consent_version": {"2026-1"}, "consent_name": {"Ada Lovelace"}}
	for name, c := range map[string]struct {
		change func(url.Values)
		status int
		says   string
	}{
		"no signature":        {func(v url.Values) { v.Del("consent_name") }, 400, "Sign the consent"},
		"an older version":    {func(v url.Values) { v.Set("consent_version", "2025-9") }, 409, "now version 2026-1"},
		"a required question": {func(v url.Values) { v.Del("q_how_bad_is_it") }, 400, "How bad is it?"},
		"not one of choices":  {func(v url.Values) { v.Set("q_how_bad_is_it", "awful") }, 400, "must be one of"},
	} {
		v := url.Values{}
		for k, vs := range answers {
			v[k] = append([]string{}, vs...)
		}
		c.change(v)
		if pg := pat.post("/c/acme/main/intake", v); pg.Status != c.status || !strings.Contains(pg.Body, c.says) {
			t.Errorf("%s: %d, want %d saying %q", name, pg.Status, c.status, c.says)
		}
	}
	visit := visitFrom(t, f, pat.post("/c/acme/main/intake", answers))

	prov := newBrowser(t, f.e)
	f.redirectLogin(t, prov, f.providerToken, "/providers/dashboard", nil)
	if pg := prov.post("/providers/visits/"+itoa(visit.Visit.ID)+"/accept", nil); pg.Status != 303 {
		t.Fatalf("the provider accepts: %d", pg.Status)
	}
	chart := prov.get("/providers/patient/" + itoa(visit.Member.ID))
	for _, want := range []string{"<dt>Do you have a fever?</dt><dd>yes</dd>", "<dt>How bad is it?</dt><dd>moderate</dd>", "<dt>Since when?</dt><dd>2026-02-27</dd>",
		"Version 2026-1, signed as “Ada Lovelace”"} {
		if !strings.Contains(chart.Body, want) {
			t.Errorf("the chart has no %s", want)
		}
	}
}

// TestPortal_EconsultClosed: an e-consult waiting for a provider has no
// call on its page; the provider takes it, answers and closes it from its
// page; the patient's page then says the visit is over and where to start
// another, with no call to join.
func TestPortal_EconsultClosed(t *testing.T) {
	f := newFixture(t)
	// Waiting for a provider, an e-consult is a written question: no call.
	early := newBrowser(t, f.e)
	f.redirectLogin(t, early, f.p1Token, f.visitPath(), nil)
	if pg := early.get(f.visitPath()); strings.Contains(pg.Body, `id="call-join"`) {
		t.Fatalf("an e-consult no provider has taken offers a call")
	}
	f.accept(t)
	if pg := early.get(f.visitPath()); !strings.Contains(pg.Body, `id="call-join"`) {
		t.Fatalf("a taken e-consult offers no call (the provider may talk by video)")
	}
	prov := newBrowser(t, f.e)
	f.redirectLogin(t, prov, f.providerToken, f.visitPath(), nil)
	if pg := prov.get(f.visitPath()); !strings.Contains(pg.Body, `id="close-econsult"`) {
		t.Fatalf("the provider's page offers no close: %s", pg.Body)
	}
	if pg := prov.post(f.visitPath()+"/messages", url.Values{"content": {"Rest and fluids; write again if it is worse in 3 days."}}); pg.Status != 303 {
		t.Fatalf("reply: %d", pg.Status)
	}
	pg := prov.post("/providers/visits/"+itoa(f.visitID)+"/done", nil)
	if pg.Status != 303 || !strings.HasSuffix(pg.Location, "notice=econsult-closed") {
		t.Fatalf("close: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, f.visitPath(), nil)
	page := pat.get(f.visitPath())
	for _, want := range []string{"Your visit is over", "Start another visit", "Rest and fluids"} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the patient's page has no %q", want)
		}
	}
	if strings.Contains(page.Body, `id="call-join"`) {
		t.Errorf("a closed e-consult offers a call")
	}
}

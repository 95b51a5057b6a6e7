package httpapi_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/testenv"
)

// pdfText is the text of a PDF, as poppler's pdftotext reads it: an
// independent reader of what the server wrote (.ci/run installs it).
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext (Debian's poppler-utils) is not installed: the PDF's text cannot be checked")
	}
	cmd := exec.Command("pdftotext", "-layout", "-", "-")
	cmd.Stdin = bytes.NewReader(pdf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

// TestSuperbill: the provider gives their NPI (refused when its check
// digit is wrong); once the visit is completed its patient downloads a
// superbill PDF with the clinic, the provider and NPI, the patient, the
// day, the place of service from the check-in, the diagnoses and the
// services with their modifiers (the coded and the derived), and what was
// paid. Before the visit ends it is 409; another patient gets 404.
func TestSuperbill(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	ctx := context.Background()
	me := func(kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.doc.Token), Form: q(kv...)})
	}
	// POST /me answers its refusals in the spec's page shape (code 404
	// in the body, the reason in detail).
	for res, why := range map[*testenv.Resp]string{
		me("npi", "1234567890"): "npi must be a National Provider Identifier",
		e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token), Form: q("npi", "1234567893")}): "npi is for providers",
	} {
		if res.Status != 400 || !strings.Contains(errorIn(res).Detail, why) {
			t.Fatalf("a refused npi: %d %s", res.Status, res.Raw)
		}
	}
	mustOK(t, me("npi", "1234567893", "state", "NY"))
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token), Form: q("dob", "1980-04-12")}))

	visit := s.withVisit(t)
	sb := func(who *session) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/superbill", Header: userHeaders(s.c, who.Token)})
	}
	wantMsg(t, sb(s.pat), 409, "completed")
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/location", Header: userHeaders(s.c, s.pat.Token), Form: q("state", "NY", "at_home", "0")}))
	vid := mustID(t, visit)
	for _, who := range []*session{s.doc, s.pat} {
		p, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: s.c.Code, APIToken: who.Token}, app.NeedUser)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := calls.New(e.App.Core()).Join(ctx, p, vid, false); err != nil {
			t.Fatal(err)
		}
	}
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/codes", Header: userHeaders(s.c, s.doc.Token),
		JSON: map[string]any{"diagnoses": []string{"J06.9", "J02.9"}, "procedures": []map[string]any{{"code": "G2252", "modifiers": []string{"GC"}}}}}))
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", visit))

	if res := sb(s.pat2); res.Status != 404 {
		t.Fatalf("another patient's superbill: %d", res.Status)
	}
	res := sb(s.pat)
	if res.Status != 200 || res.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(res.Raw, []byte("%PDF-")) ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "superbill-"+visit+".pdf") {
		t.Fatalf("the superbill: %d %q %q", res.Status, res.Header.Get("Content-Type"), res.Raw[:min(len(res.Raw), 16)])
	}
	text := pdfText(t, res.Raw)
	for _, want := range []string{"Superbill", "Alpha Clinic", "Dana Doc", "1234567893", "Pat One", "1980-04-12",
		"02 — Telehealth provided other than in the patient's home", "Real-time audio and video", "J06.9", "J02.9",
		"G2252", "GC 95", "2026 rule set"} {
		if !strings.Contains(text, want) {
			t.Errorf("the superbill lacks %q:\n%s", want, text)
		}
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'visit.superbill' AND outcome = 'ok'"); n != 1 {
		t.Fatalf("%d superbill reads audited", n)
	}
}

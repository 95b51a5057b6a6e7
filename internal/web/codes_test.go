package web_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/url"
	"os"
	"strings"
	"testing"

	"teleclinic/internal/app/billing"
	"teleclinic/internal/reference"
	"teleclinic/internal/testenv"
)

// uploadRelease posts a file as /admin's codes form does.
func (b *browser) uploadRelease(name string, content []byte) *page {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("release", name)
	_, _ = fw.Write(content)
	_ = mw.Close()
	return b.send("POST", "/admin/codes", &body, map[string]string{"Content-Type": mw.FormDataContentType(), "Sec-Fetch-Site": "same-origin"})
}

// TestPortal_AdminCodes: the admin of a server with one clinic sees the
// built-in list in use and uploads CMS's FY2026 order file from /admin;
// the page then names the release and its 74,719 billable codes, and the
// diagnosis search of notes finds any of them. A cut file is refused on
// the page, saying so, and changes nothing. Once the server holds a
// second clinic, no clinic's admin is offered the upload, and one sent
// anyway is refused.
func TestPortal_AdminCodes(t *testing.T) {
	release, err := os.ReadFile(testenv.ICD10OrderFile(t))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	b := newBrowser(t, f.e)
	f.adminSignIn(t, b)
	if pg := b.get("/admin"); !strings.Contains(pg.Body, "A built-in list of") || !strings.Contains(pg.Body, `action="/admin/codes"`) {
		t.Fatalf("the codes section before a release:\n%s", pg.Body)
	}
	if pg := b.uploadRelease("icd10cm_order_2026.txt.gz", release[:len(release)/3]); pg.Status != 400 || !strings.Contains(pg.Body, "not a whole ICD-10-CM release") {
		t.Fatalf("a cut file: %d", pg.Status)
	}
	if f.e.App.ReferenceLists().ReleaseYear() != "" {
		t.Fatal("a refused file changed the codes")
	}
	if pg := b.uploadRelease("icd10cm_order_2026.txt.gz", release); pg.Status != 303 || pg.Location != "/admin?done=codes#codes" {
		t.Fatalf("the release: %d %s", pg.Status, pg.Body)
	}
	if pg := b.get("/admin?done=codes"); !strings.Contains(pg.Body, "ICD-10-CM 2026 (fiscal year 2026): 74719 billable codes") ||
		!strings.Contains(pg.Body, "The diagnosis codes are loaded") {
		t.Fatalf("the codes section after the release:\n%s", pg.Body)
	}
	if got := f.e.App.ReferenceLists().FindDiagnoses(referenceQuery("covid")); len(got) == 0 || got[0].Code != "U07.1" {
		t.Fatalf("covid after the release: %+v", got)
	}

	f.e.NewClinic("other", true)
	if pg := b.get("/admin"); strings.Contains(pg.Body, `action="/admin/codes"`) || !strings.Contains(pg.Body, "teleclinic codes import FILE") {
		t.Fatal("the upload is offered on a server of two clinics")
	}
	if pg := b.uploadRelease("icd10cm_order_2026.txt.gz", release); pg.Status != 403 {
		t.Fatalf("an upload on a server of two clinics: %d", pg.Status)
	}
}

func referenceQuery(q string) reference.Query { return reference.Query{Q: q, Limit: 5} }

// TestPortal_NoteBillsTheService: the provider of a walk-in video visit
// picks the service on the note's form and signs: the visit's billing
// codes are the note's diagnoses and that service, first, with the
// telehealth modifier 95; the signed note shows it.
func TestPortal_NoteBillsTheService(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	visit := f.walkin(t, f.p1Token, "A cough")
	prov := f.user(t, f.providerToken)
	if _, err := f.e.App.TakeVisit(bg, prov, visit); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
	path := "/visits/start/" + itoa(visit)
	if pg := b.get(path); !strings.Contains(pg.Body, `<option value="G2012">G2012 Brief check in by MD/QHP</option>`) {
		t.Fatalf("the note's form offers no services: %s", pg.Body)
	}
	if pg := b.post(path+"/note", url.Values{"subjective": {"Cough for a week."}, "diagnoses": {"R05.9"}, "procedure": {"nope"}, "action": {"save"}}); pg.Status != 400 ||
		!strings.Contains(pg.Body, "not a code of the clinic") {
		t.Fatalf("an unknown service: %d %s", pg.Status, pg.Body)
	}
	if pg := b.post(path+"/note", url.Values{"subjective": {"Cough for a week."}, "diagnoses": {"R05.9"}, "procedure": {"G2012"}, "action": {"sign"}}); pg.Status != 303 {
		t.Fatalf("sign: %d %s", pg.Status, pg.Body)
	}
	codes, err := billing.New(f.e.App.Core()).ClaimCodesOf(bg, prov, visit)
	if err != nil || len(codes.Diagnoses) != 1 || codes.Diagnoses[0] != "R05.9" || len(codes.Procedures) != 1 ||
		codes.Procedures[0].Code != "G2012" || len(codes.Procedures[0].Modifiers) != 1 || codes.Procedures[0].Modifiers[0] != "95" {
		t.Fatalf("the visit's codes: %+v %v", codes, err)
	}
	if pg := b.get(path); !strings.Contains(pg.Body, "G2012 Brief communication technology-based service") || !strings.Contains(pg.Body, "Service billed") {
		t.Fatalf("the signed note does not show its service: %s", pg.Body)
	}
}

//go:build browser

package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// fhirClientJS is SMART's own JavaScript client (npm fhirclient 2.6.x,
// its browser build), which .ci/run installs; without it the test skips.
func fhirClientJS(t *testing.T) []byte {
	t.Helper()
	path := os.Getenv("TELECLINIC_FHIRCLIENT")
	if path == "" {
		t.Skip("TELECLINIC_FHIRCLIENT does not name fhirclient's build/fhir-client.min.js (npm fhirclient@2.6.3; .ci/run installs it)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("fhirclient: %v", err)
	}
	return b
}

// The app's two pages, as fhirclient's documentation writes a standalone
// launch: launch.html sends the person to the server, app.html takes
// them back, reads the patient's Encounters and tries to create a
// Patient, and writes what happened.
const launchPage = `<!doctype html><meta charset="utf-8"><title>Launch</title>
<script src="/fhir-client.js"></script>
<script>
FHIR.oauth2.authorize({clientId: "CLIENT", iss: "ISS", redirectUri: "/app.html", pkceMode: "required",
  scope: "launch/patient openid fhirUser offline_access patient/Encounter.rs patient/Patient.rs user/Patient.c"});
</script>`

const appPage = `<!doctype html><meta charset="utf-8"><title>Diary</title>
<script src="/fhir-client.js"></script>
<pre id="out">waiting</pre>
<script>
FHIR.oauth2.ready().then(async client => {
  const tr = client.state.tokenResponse;
  const out = {patient: client.patient.id, scope: tr.scope, fhirUser: tr.fhirUser, refresh: !!tr.refresh_token, user: client.getFhirUser()};
  const bundle = await client.request("Encounter?patient=" + client.patient.id);
  out.total = bundle.total;
  out.encounters = (bundle.entry || []).map(e => e.resource.resourceType + "/" + e.resource.id);
  try {
    await client.create({resourceType: "Patient", name: [{family: "Planted", given: ["Nobody"]}]});
    out.create = "created";
  } catch (e) {
    out.create = String(e.status || e.statusCode || e.message);
  }
  document.getElementById("out").textContent = JSON.stringify(out);
}).catch(e => { document.getElementById("out").textContent = JSON.stringify({error: String(e && e.message || e)}); });
</script>`

// TestBrowser_SMARTStandaloneLaunch: SMART's own JavaScript client, in
// Chromium, launches standalone against the clinic: the patient, signed
// in to the portal, sees the consent page (what the app will read, and
// the scope their role does not hold, refused), allows it; the app gets
// the patient's context, reads their Encounters, and its attempt at what
// it was refused is answered 403.
func TestBrowser_SMARTStandaloneLaunch(t *testing.T) {
	js := fhirClientJS(t)
	ctx := chrome(t)
	f := newFixture(t, testenv.Options{PortalHere: true})

	// The app, on an origin of its own.
	mux := http.NewServeMux()
	appSrv := httptest.NewServer(mux)
	t.Cleanup(appSrv.Close)
	a := registerApp(t, f, "Symptom Diary", clinic.ClientPublic, appSrv.URL+"/app.html")
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(strings.NewReplacer("CLIENT", a.clientID, "ISS", f.e.URL+"/fhir/R4").Replace(body)))
		}
	}
	mux.HandleFunc("/launch.html", page(launchPage))
	mux.HandleFunc("/app.html", page(appPage))
	mux.HandleFunc("/fhir-client.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(js)
	})

	// Signed in to the portal as the patient (the integrator's redirect
	// login), then the app is opened.
	p1 := f.user(t, f.p1Token)
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.e.URL+"/api_v3/auth?sso_token="+f.p1Token+"&next=/visits"),
		chromedp.WaitVisible(chromedp.CSS("h1")),
		chromedp.Navigate(appSrv.URL+"/launch.html"),
		chromedp.WaitVisible(chromedp.CSS("#allow")))
	if err != nil {
		t.Fatalf("to the consent page: %v", err)
	}
	consent, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Allow Symptom Diary to use your account?", "See: your visits", "user/Patient.c", "Your account cannot do this."} {
		if !strings.Contains(consent, want) {
			t.Errorf("the consent page does not say %q:\n%s", want, consent)
		}
	}
	checkA11y(t, ctx, "consent")
	screenshot(t, ctx, "smart-consent")

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#allow"))); err != nil {
		t.Fatalf("allow: %v", err)
	}
	// The browser goes through the callback to the app, which exchanges
	// the code and reads: wait for what it writes, across those pages.
	var raw string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("out") || {}).textContent || ""`))
		if err == nil && got != "" && got != "waiting" {
			raw = got
			break
		}
	}
	if raw == "" {
		loc, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
		t.Fatalf("the app wrote nothing; the browser is at %s", loc)
	}
	var out struct {
		Error, Patient, Scope, FHIRUser, User, Create string
		Refresh                                       bool
		Total                                         int
		Encounters                                    []string
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("the app wrote %q", raw)
	}
	pid := strconv.FormatInt(p1.User.ID, 10)
	if out.Error != "" || out.Patient != pid || out.FHIRUser != f.e.URL+"/fhir/R4/Patient/"+pid || out.User != "Patient/"+pid || !out.Refresh ||
		out.Total != 1 || len(out.Encounters) != 1 || out.Encounters[0] != "Encounter/"+strconv.FormatInt(f.visitID, 10) ||
		strings.Contains(out.Scope, "user/Patient.c") || out.Create != "403" {
		t.Fatalf("the app saw: %+v", out)
	}
	screenshot(t, ctx, "smart-app")
	// The read was the app's, in the audit.
	f.e.FlushAudits()
	var n int
	if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT COUNT(*) FROM audit WHERE actor_kind = ? AND action = 'record.read'"), "user_token:app:"+a.clientID).Scan(&n); err != nil || n == 0 {
		t.Fatalf("the app's reads are not audited as its: %d %v", n, err)
	}
}

// TestBrowser_EHRLaunch: the provider's EHR opens Teleclinic in Chromium
// (SMART EHR launch, against the stand-in EHR): the browser goes through
// the EHR and back, and lands on the visit's page of the launch, with the
// patient's link to send, and the visit opens from it.
func TestBrowser_EHRLaunch(t *testing.T) {
	ctx := chrome(t)
	f := newFixture(t, testenv.Options{PortalHere: true})
	ehr := newEHR(t, f.e.URL+"/smart/callback")
	admin := f.admin(t)
	bg := f.e.App
	conn, err := bg.ConnectEHR(t.Context(), admin, app.EHRInput{ISS: ehr.iss, ClientID: ehr.clientID, Secret: ehr.secret, RoomCode: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bg.LinkEHRUser(t.Context(), admin, conn.ID, ehr.fhirUser, f.user(t, f.providerToken).User.ID); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(f.e.URL+"/smart/launch?iss="+ehr.iss+"&launch=L1"),
		chromedp.WaitVisible(chromedp.CSS("#patient-link")))
	if err != nil {
		t.Fatalf("the launch: %v", err)
	}
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
	if err != nil {
		t.Fatal(err)
	}
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("patient-link").value`))
	if err != nil {
		t.Fatal(err)
	}
	if heading != "Visit with Rosa Diaz" || !strings.HasPrefix(link, f.e.URL+"/v/") {
		t.Fatalf("landed on %q with link %q", heading, link)
	}
	checkA11y(t, ctx, "ehrlanding")
	screenshot(t, ctx, "ehr-landing")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#open-visit")), chromedp.WaitVisible(chromedp.CSS("h1")))
	if err != nil {
		t.Fatal(err)
	}
	path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil || !strings.HasPrefix(path, "/visits/start/") {
		t.Fatalf("the visit did not open: %q %v", path, err)
	}
}

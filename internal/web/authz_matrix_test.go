package web_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// The portal's authorization matrix: every page, form and stream declares,
// for each kind of caller, whether it is let through (A), sent to sign in
// or refused for its session (R: a redirect to a sign-in page, or 401) or
// denied (D: 403 or 404); N is let through to an object the fixture does
// not have (404). A 5xx fails any cell. The callers are the portal's
// sessions, in this order:
var portalCallers = []string{
	"none",                  // no session
	"expired session",       // the cookie of a session that signed out
	"other patient",         // a patient of the clinic with no part in the visit
	"other provider",        // a provider of the clinic with no part in the visit
	"guest",                 // a guest of the clinic
	"other clinic's admin",  // another clinic's admin session
	"provider of the visit", // the visit's provider, linked to the room
	"owning patient",        // the visit's and the intake's patient
	"clinic admin",          // the clinic admin's portal session
}

// portalMatrix: route → one letter per caller, in portalCallers' order.
func portalMatrix() map[string]string {
	return map[string]string{
		// Public: the sign-in pages, the clinic's and its rooms' pages, the
		// redirect login (its one-time token is the credential) and a
		// guest's join.
		"GET /auth":   "AAAAAAAAA",
		"POST /auth":  "AAAAAAAAA",
		"GET /signin": "AAAAAAAAA",
		// The root sends each to their own start (the signed-out to the
		// sign-in); a clinic's short address sends everyone to its home.
		"GET /{$}":                                 "RRAAAAAAA",
		"GET /c/{account_code}":                    "AAAAAAAAA",
		"GET /admin/signin":                        "AAAAAAAAA",
		"GET /docs":                                "AAAAAAAAA",
		"GET /lang/{tag}":                          "AAAAAAAAA",
		"GET /i18n/{file}":                         "AAAAAAAAA",
		"GET /u/{account_code}":                    "AAAAAAAAA",
		"GET /c/{account_code}/{room_code}":        "AAAAAAAAA",
		"POST /c/{account_code}/{room_code}/guest": "AAAAAAAAA",
		// A sign-in with no credentials in the form is refused whoever sends it.
		"POST /signin":       "RRRRRRRRR",
		"POST /admin/signin": "RRRRRRRRR",
		// The emailed links' pages: anyone opens them; the link's token is
		// the credential, and a form without one is refused whoever sends it.
		"GET /activate":        "AAAAAAAAA",
		"GET /reset-password":  "AAAAAAAAA",
		"POST /activate":       "AAAAAAAAA",
		"POST /reset-password": "AAAAAAAAA",
		// Invite a provider: the admin's, on their own clinic.
		"POST /admin/providers": "RRDDDADDA",
		// Anyone may sign out.
		"POST /signout": "AAAAAAAAA",
		// An EHR launch starts before anyone is signed in (a bad one is a
		// 400 for all); an EHR's answer to no launch finds nothing.
		"GET /smart/launch": "AAAAAAAAA",
		// Taking back an app's permission: the signed-in person's own; the
		// fixture's app holds none of anyone's.
		"POST /profile/apps/{client}/disconnect": "RRDDDDDDD",
		// A person's own yes to texts (or its withdrawal): every person,
		// not an admin (no phone of theirs to text); the sender is the
		// admin's, on their own clinic.
		"POST /profile/texts":                  "RRAAADAAD",
		"POST /admin/texts":                    "RRDDDADDA",
		"POST /admin/interpreters":             "RRDDDADDA",
		"POST /admin/interpreters/{id}/delete": "RRDDDNDDN",
		// Texting the patient their link: the visit's provider and the
		// admin (the fixture's clinic sends no texts: 409, past the check).
		"POST /visits/start/{id}/text-link": "RRDDDDADA",
		"GET /smart/callback":               "DDDDDDDDD",
		// An app's sign-in request that does not exist: nothing to show or
		// decide, signed in or not.
		"GET /oauth/consent/{id}":  "DDDDDDDDD",
		"POST /oauth/consent/{id}": "RRDDDDDDD",
		// A visit link that is not one: nobody gets in.
		"GET /v/{token}":        "DDDDDDDDD",
		"POST /v/{token}":       "DDDDDDDDD",
		"POST /v/{token}/again": "DDDDDDDDD",
		// An invitation link that is not one: nobody gets in.
		"GET /invite/{account_code}/{token}":  "DDDDDDDDD",
		"POST /invite/{account_code}/{token}": "DDDDDDDDD",
		// Signed in: each their own list.
		"GET /visits": "RRAAAAAAA",
		// Each their own profile (the admin's is the clinic admin user's).
		"GET /profile":  "RRAAAAAAA",
		"POST /profile": "RRAAAAAAA",
		// The visit: its patient, its provider; the clinic admin sees the page
		// but is not in its thread, call or live updates (as in the API).
		"GET /visits/start/{id}":           "RRDDDDAAA",
		"GET /visits/start/{id}/events":    "RRDDDDAAD",
		"GET /visits/call/{id}":            "RRDDDDAAD",
		"POST /visits/start/{id}/messages": "RRDDDDAAD",
		// A booked visit's changes: the fixture's visit is an e-consult,
		// so who may see it is let through to its refusal (only a booked
		// visit has a calendar entry, or moves); its patient, its
		// provider and the admin cancel it.
		"GET /visits/start/{id}/calendar.ics":  "RRDDDDNNN",
		"GET /visits/start/{id}/superbill":     "RRDDDDAAA",
		"GET /visits/start/{id}/superbill.pdf": "RRDDDDAAA",
		"GET /visits/start/{id}/reschedule":    "RRDDDDAAA",
		"POST /visits/start/{id}/reschedule":   "RRDDDDAAA",
		"POST /visits/start/{id}/reminders":    "RRDDDDDAD",
		"POST /visits/start/{id}/location":     "RRDDDDAAA",
		"POST /visits/start/{id}/cancel":       "RRDDDDAAA",
		"POST /visits/start/{id}/call/join":    "RRDDDDAAD",
		"POST /visits/start/{id}/call/relay":   "RRDDDDAAD",
		"POST /visits/start/{id}/call/signal":  "RRDDDDAAD",
		// The call's stream and leave: each participant with their own peer.
		"GET /visits/start/{id}/call/events": "RRDDDDAAD",
		"POST /visits/start/{id}/call/leave": "RRDDDDAAD",
		// A recording: the provider of the visit only (here let through to
		// a 400, since it names no recording request everyone consented to:
		// TestCall_RecordingConsent).
		"POST /visits/start/{id}/call/recording": "RRDDDDADD",
		// Inviting a guest and ending the visit: its provider (and the admin
		// ends it too).
		"POST /visits/start/{id}/call/invite": "RRDDDDADD",
		// The visit's provider is let through to an interpreter the
		// fixture does not have.
		"POST /visits/start/{id}/call/interpreter": "RRDDDDNDD",
		// The visit note: its provider writes it; the code search is for
		// providers and admins.
		"POST /visits/start/{id}/note":         "RRDDDDADD",
		"POST /visits/start/{id}/note/addenda": "RRDDDDADD",
		"GET /providers/diagnoses":             "RRDADAADA",
		// Closing an answered e-consult: its provider and the admin (who
		// moves any visit, as in the API).
		"POST /providers/visits/{id}/done": "RRDDDDADA",
		// Start visit: the dashboard's, for the visit's provider.
		"POST /providers/visits/{id}/start": "RRDDDDADD",
		"POST /visits/start/{id}/call/end":  "RRDDDDADA",
		// An intake's payment and booking: its patient and the admin.
		"GET /c/{account_code}/{room_code}/intake/{intake_id}/pay":   "RRDDDDDAA",
		"POST /c/{account_code}/{room_code}/intake/{intake_id}/pay":  "RRDDDDDAA",
		"GET /c/{account_code}/{room_code}/intake/{intake_id}/book":  "RRDDDDDAA",
		"POST /c/{account_code}/{room_code}/intake/{intake_id}/book": "RRDDDDDAA",
		// Filing an intake: any session of this clinic.
		"POST /c/{account_code}/{room_code}/intake": "RRAAADAAA",
		// Providers' pages: any provider; a visit's moves: its provider; a
		// patient's chart: the provider of their visit and the admin.
		"GET /providers/dashboard":             "RRDADDADD",
		"GET /providers/dashboard/events":      "RRDADDADD",
		"POST /providers/slots":                "RRDADDADD",
		"POST /providers/visits/{id}/{action}": "RRDDDDADD",
		"GET /providers/patient/{user_id}":     "RRDDDDADA",
		// The admin's pages: an admin session, each on its own clinic (the
		// other clinic's admin has no room "main").
		"GET /admin":                        "RRDDDADDA",
		"GET /admin/numbers":                "RRDDDADDA",
		"GET /admin/numbers.csv":            "RRDDDADDA",
		"POST /admin/rooms":                 "RRDDDADDA",
		"POST /admin/webhook":               "RRDDDADDA",
		"POST /admin/endpoints":             "RRDDDADDA",
		"POST /admin/endpoints/{id}/delete": "RRDDDNDDN",
		"POST /admin/apps":                  "RRDDDADDA",
		"POST /admin/apps/{id}/revoke":      "RRDDDNDDN",
		"POST /admin/ehrs":                  "RRDDDADDA",
		"POST /admin/ehrs/{id}/delete":      "RRDDDNDDN",
		"POST /admin/ehrs/{id}/links":       "RRDDDNDDN",
		"POST /admin/rotate":                "RRDDDADDA",
		// Loading the server's code release: an admin, here let through
		// to the refusal of a form without a file.
		"POST /admin/codes": "RRDDDADDA",
		// A provider's standing: the admin's, on its own clinic's users
		// (the other clinic's admin finds no such user).
		"POST /admin/providers/{id}/{change}":   "RRDDDDDDA",
		"GET /admin/rooms/{code}":               "RRDDDDDDA",
		"POST /admin/rooms/{code}":              "RRDDDDDDA",
		"POST /admin/rooms/{code}/providers":    "RRDDDDDDA",
		"POST /admin/deliveries/{id}/redeliver": "RRDDDDDDN",
		// A payment that is not one: the admin is let through to its 404.
		"POST /admin/payments/{id}/refund": "RRDDDDDDN",
	}
}

func TestPortalAuthzMatrix(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	f.accept(t)
	a := f.e.App
	p1 := f.user(t, f.p1Token)
	reason := "A rash"
	it, err := a.CreateIntake(bg, p1, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	if err != nil {
		t.Fatal(err)
	}
	beta := f.e.NewClinic("beta", true)
	sessions := map[string]*browser{}
	signIn := func(who, token string) {
		b := newBrowser(t, f.e)
		f.redirectLogin(t, b, token, "/visits", nil)
		sessions[who] = b
	}
	sessions["none"] = newBrowser(t, f.e)
	signIn("expired session", f.sso(t, clinic.UserMember, "pat-1", "Ada", "Lovelace"))
	if pg := sessions["expired session"].post("/signout", url.Values{}); pg.Status >= 400 {
		t.Fatalf("signout: %d", pg.Status)
	}
	signIn("other patient", f.p2Token)
	signIn("other provider", f.sso(t, clinic.UserProvider, "dr-2", "Other", "Doctor"))
	signIn("guest", f.sso(t, clinic.UserGuest, "", "Gus", "Guest"))
	signIn("provider of the visit", f.providerToken)
	signIn("owning patient", f.p1Token)
	adminSession := func(code, token string) *browser {
		b := newBrowser(t, f.e)
		if pg := b.post("/admin/signin", url.Values{"clinic": {code}, "token": {token}}); pg.Status != http.StatusSeeOther {
			t.Fatalf("admin signin %s: %d %s", code, pg.Status, pg.Body)
		}
		return b
	}
	sessions["clinic admin"] = adminSession("acme", f.clinic.AdminToken)
	sessions["other clinic's admin"] = adminSession("beta", beta.AdminToken)

	// The visit's participants join its call, so the call's routes are
	// judged with a peer of their own; everyone else names a peer that is
	// not theirs.
	peers := map[string]string{}
	for _, who := range []string{"provider of the visit", "owning patient"} {
		pg, j := sessions[who].join(t, f)
		if pg.Status != http.StatusOK || j.Peer == "" {
			t.Fatalf("%s joins: %d %s", who, pg.Status, pg.Body)
		}
		peers[who] = j.Peer
	}
	peerOf := func(who string) string {
		if p, ok := peers[who]; ok {
			return p
		}
		return peers["owning patient"]
	}
	values := map[string]string{
		"{id}": strconv.FormatInt(f.visitID, 10), "{account_code}": "acme", "{room_code}": "main", "{code}": "main",
		"{intake_id}": strconv.FormatInt(it.ID, 10), "{user_id}": strconv.FormatInt(p1.User.ID, 10), "{token}": "not-an-invite",
		"{action}": "inprogress", "{tag}": "es", "{file}": "es.js", "{change}": "reactivate", "{$}": "",
	}
	provider := strconv.FormatInt(f.user(t, f.providerToken).User.ID, 10)
	declared := portalMatrix()
	// Forms where an empty one would be refused before the caller's rights
	// are judged.
	forms := map[string]url.Values{
		"POST /visits/start/{id}/messages":         {"content": {"Hello"}},
		"POST /invite/{account_code}/{token}":      {"first_name": {"Gia"}, "last_name": {"Guest"}},
		"POST /c/{account_code}/{room_code}/guest": {"first_name": {"Gia"}, "last_name": {"Guest"}},
	}
	testenv.Matrix{
		Name:    "portal authorization matrix",
		Callers: portalCallers,
		Routes:  f.e.Portal().Patterns(),
		Want: func(route string) []testenv.Outcome {
			if row, ok := declared[route]; ok {
				return testenv.Row(row)
			}
			return nil
		},
		// Reads first; then forms; what ends a session or a visit last.
		Rank: func(k string) int {
			switch {
			case strings.HasSuffix(k, "/guest"):
				return 5 // a guest's join replaces the browser's session
			case strings.HasSuffix(k, "/signout"):
				return 4
			case strings.HasPrefix(k, "POST /admin/rotate"):
				return 3
			case strings.HasSuffix(k, "/call/end"), strings.HasSuffix(k, "/cancel"), strings.HasSuffix(k, "/done"):
				return 2
			case strings.HasPrefix(k, "GET"):
				return 0
			}
			return 1
		},
		Do: func(key, who string) testenv.Answer {
			method, pattern, _ := strings.Cut(key, " ")
			path := pattern
			if strings.HasPrefix(pattern, "/admin/deliveries/") || strings.HasPrefix(pattern, "/admin/payments/") {
				path = strings.ReplaceAll(path, "{id}", "1")
			}
			if strings.HasPrefix(pattern, "/admin/providers/") { // a provider's standing: reactivating an active one changes nothing
				path = strings.ReplaceAll(path, "{id}", provider)
			}
			for k, v := range values {
				path = strings.ReplaceAll(path, k, v)
			}
			b := sessions[who]
			var pg *page
			switch {
			case method == "GET" && strings.HasSuffix(pattern, "/events"):
				p := path
				if strings.Contains(pattern, "/call/") {
					p += "?after=0&peer=" + peerOf(who)
				}
				st := b.stream(t, p, nil)
				pg = &page{Status: st.Status, Location: st.Header.Get("Location")}
				st.Close()
			case method == "GET":
				pg = b.get(path)
			case strings.HasSuffix(pattern, "/call/recording"):
				// A whole recording, so that only the caller's part in
				// the call decides.
				var body bytes.Buffer
				mw := multipart.NewWriter(&body)
				fw, _ := mw.CreateFormFile("file", "call.webm")
				fw.Write([]byte("\x1a\x45\xdf\xa3 not really webm"))
				for k, v := range map[string]string{"peer": peerOf(who), "request": "1", "start": "1", "end": "2"} {
					mw.WriteField(k, v)
				}
				mw.Close()
				pg = b.send("POST", path, &body, map[string]string{"Content-Type": mw.FormDataContentType(), "Sec-Fetch-Site": "same-origin"})
			case strings.Contains(pattern, "/call/"):
				pg = b.postJSON(path, `{"peer":"`+peerOf(who)+`","to":"`+peerOf("owning patient")+`","kind":"ice","body":"{}"}`)
			default:
				pg = b.post(path, forms[key])
			}
			o := portalOutcome(pg)
			if strings.HasSuffix(pattern, "/signout") && pg.Status/100 == 3 {
				o = testenv.Allow // a sign-out ends on the sign-in page
			}
			return testenv.Answer{Status: pg.Status, Class: o, Detail: pg.Location}
		},
	}.Run(t)
}

// portalOutcome classifies a page's answer: a 401 or the sign-in page
// refuses, 403 and 404 deny.
func portalOutcome(pg *page) testenv.Outcome {
	switch {
	case pg.Status == http.StatusUnauthorized, pg.Status/100 == 3 && strings.Contains(pg.Location, "signin"):
		return testenv.Refuse
	case pg.Status == http.StatusForbidden, pg.Status == http.StatusNotFound:
		return testenv.Deny
	}
	return testenv.Allow
}

package web_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// TestPortal_InviteProvider: the admin invites a provider from /admin; the
// invitation email holds an activation link; the provider opens it, sets
// a password and lands on their dashboard, signed in, in the room the
// admin chose; the admin's list shows them invited, then not; the same
// email again is refused in words; the link works once.
func TestPortal_InviteProvider(t *testing.T) {
	mailer := testenv.NewSMTPServer(t)
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.Mail = mailer.Sender() }})
	admin := newBrowser(t, f.e)
	f.adminSignIn(t, admin)
	form := url.Values{"first_name": {"Maya"}, "last_name": {"Medic"}, "title": {"MD"}, "email": {"maya@clinic.example"}, "rooms": {"main"}}
	pg := admin.post("/admin/providers", form)
	if pg.Status != 303 || !strings.Contains(pg.Location, "done=invited") {
		t.Fatalf("invite: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	if list := admin.get(pg.Location); !strings.Contains(list.Body, "The invitation is on its way") || !regexp.MustCompile(`Maya Medic <span class="muted">maya@clinic.example</span> <span class="status">invited</span>`).MatchString(list.Body) {
		t.Fatalf("the admin's list after inviting: %s", list.Body)
	}
	if pg := admin.post("/admin/providers", form); pg.Status != 409 || !strings.Contains(pg.Body, "already has a user with the email") {
		t.Fatalf("the same email again: %d", pg.Status)
	}

	f.e.App.DeliverMail(t.Context(), mailer.Sender())
	got := mailer.WaitFor(t, 1)
	link := regexp.MustCompile(`https://portal\.teleclinic\.test(/activate\?account=acme&token=[A-Za-z0-9_%-]+)`).FindStringSubmatch(got[0].Text())
	if got[0].To != "maya@clinic.example" || link == nil {
		t.Fatalf("the invitation: to %s\n%s", got[0].To, got[0].Text())
	}
	prov := newBrowser(t, f.e)
	page := prov.get(link[1])
	if page.Status != 200 || !strings.Contains(page.Body, "choose your password") {
		t.Fatalf("the activation page: %d %s", page.Status, page.Body)
	}
	u, _ := url.Parse(link[1])
	fields := url.Values{"account": {"acme"}, "token": {u.Query().Get("token")}, "password": {"correct horse battery"}, "password2": {"correct horse"}}
	if pg := prov.post("/activate", fields); pg.Status != 400 || !strings.Contains(pg.Body, "The two passwords differ") {
		t.Fatalf("two passwords that differ: %d", pg.Status)
	}
	fields.Set("password2", "correct horse battery")
	pg = prov.post("/activate", fields)
	if pg.Status != 303 || pg.Location != "/providers/dashboard" {
		t.Fatalf("activate: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	if dash := prov.get("/providers/dashboard"); dash.Status != 200 || !strings.Contains(dash.Body, `<option value="main">Main Room</option>`) {
		t.Fatalf("the new provider's dashboard: %d %s", dash.Status, dash.Body)
	}
	if list := admin.get("/admin"); strings.Contains(list.Body, `maya@clinic.example</span> <span class="status">invited</span>`) {
		t.Errorf("still shown as invited after activating")
	}
	if pg := newBrowser(t, f.e).post("/activate", fields); pg.Status == 303 {
		t.Fatalf("the link worked twice")
	}
	// The password signs in.
	if pg := newBrowser(t, f.e).post("/signin", url.Values{"clinic": {"acme"}, "login": {"maya@clinic.example"}, "password": {"correct horse battery"}}); pg.Status != 303 {
		t.Fatalf("sign in with the new password: %d %s", pg.Status, pg.Body)
	}
}

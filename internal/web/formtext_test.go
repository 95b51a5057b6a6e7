package web_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"teleclinic/internal/app"
)

// TestPortal_FormsTakeOnlyText: a NUL, an invalid byte or a control
// character in any field of a portal form (or a field's name) is a 400
// with the page's words before any page reads the form, urlencoded or
// multipart, signed in or not; nothing of it is stored.
func TestPortal_FormsTakeOnlyText(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.e)
	f.redirectLogin(t, b, f.p1Token, "/c/acme/main", nil)
	bad := map[string]string{"NUL": "Head\x00ache", "invalid UTF-8": "Head\xffache", "escape": "Head\x1b[31mache"}
	for what, v := range bad {
		form := url.Values{"reason_for_visit": {v}, "terms": {"1"}, "kind": {"econsult"}}
		if pg := b.post("/c/acme/main/intake", form); pg.Status != 400 || !strings.Contains(pg.Body, "reason_for_visit") {
			t.Errorf("an intake with %s: %d", what, pg.Status)
		}
		if pg := b.post("/profile", url.Values{"timezone": {v}}); pg.Status != 400 {
			t.Errorf("a profile with %s: %d", what, pg.Status)
		}
		if pg := b.post("/c/acme/main/intake", url.Values{"reason_for_visit": {"fine"}, v: {"x"}}); pg.Status != 400 {
			t.Errorf("a field named with %s: %d", what, pg.Status)
		}
		// Signed out: a guest's name on the room's form.
		anon := newBrowser(t, f.e)
		if pg := anon.post("/signin", url.Values{"clinic": {"acme"}, "username": {v}, "password": {"x"}}); pg.Status != 400 {
			t.Errorf("a sign-in with %s: %d", what, pg.Status)
		}
	}
	// The same in a multipart form, as the room's form with files sends it.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range map[string]string{"reason_for_visit": "Head\x00ache", "terms": "1", "kind": "econsult"} {
		_ = mw.WriteField(k, v)
	}
	_ = mw.Close()
	req, _ := http.NewRequest("POST", f.e.URL+"/c/acme/main/intake", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Errorf("a multipart intake with a NUL: %d", res.StatusCode)
	}
	list, err := f.e.App.ListVisits(context.Background(), f.user(t, f.p1Token), app.VisitQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 { // the fixture's e-consult only
		t.Fatalf("visits after the refused forms: %d", len(list.Items))
	}
}

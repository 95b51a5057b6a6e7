package web_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// sessionEnding is one way a portal session ends while its page's stream
// is open.
type sessionEnding struct {
	name string
	end  func(t *testing.T, f *fixture, b *browser)
}

var sessionEndings = []sessionEnding{
	{"SignOut", func(t *testing.T, f *fixture, b *browser) {
		if pg := b.post("/signout", nil); pg.Status != 303 {
			t.Fatalf("sign out: %d", pg.Status)
		}
	}},
	// The admin revokes the session's token (POST /users/logout with tokens).
	{"Revoked", func(t *testing.T, f *fixture, b *browser) {
		if err := f.e.App.Logout(context.Background(), f.admin(t), []string{b.session(t)}); err != nil {
			t.Fatal(err)
		}
	}},
	{"Expired", func(t *testing.T, f *fixture, b *browser) { f.e.Clock.Advance(31 * time.Minute) }},
}

// session is the browser's session token, from its cookie.
func (b *browser) session(t *testing.T) string {
	t.Helper()
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "tc_session" {
			return c.Value
		}
	}
	t.Fatal("the browser holds no session")
	return ""
}

// streamEnded is the portal's end event.
type streamEnded struct {
	Code   string `json:"code"`
	Status string `json:"status"`
}

// wantEnded fails unless the stream's next event is the portal's end for
// a session that is no longer good, and the stream then closes.
func wantEnded(t *testing.T, st *testenv.Stream) {
	t.Helper()
	st.End(t, "ended", clinic.EUnauthenticated)
}

// TestStreams_EndWithTheSession: each of the portal's streams (the visit
// page's, the dashboard's, the call's) sends nothing more once the session
// has ended. The keep-alive is the default (20 s), so the end must come
// from the session's check before the next event.
func TestStreams_EndWithTheSession(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	for _, end := range sessionEndings {
		t.Run("Visit"+end.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			b := newBrowser(t, f.e)
			f.redirectLogin(t, b, f.p1Token, f.visitPath(), nil)
			st := testenv.OpenStream(t, b.c, f.e.URL+f.visitPath()+"/events?last_event_id=1", nil)
			if st.Status != 200 {
				t.Fatalf("open: %d", st.Status)
			}
			f.accept(t) // the provider, whose principal must outlive the session
			st.Next(t)  // "changed": the visit moved
			prov := f.user(t, f.providerToken)
			end.end(t, f, b)
			text := "Not for a closed session"
			if _, err := f.e.App.PostMessage(bg, prov, f.visitID, app.NewMessage{Content: &text}); err != nil {
				t.Fatal(err)
			}
			wantEnded(t, st)
		})
		t.Run("Dashboard"+end.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			b := newBrowser(t, f.e)
			f.redirectLogin(t, b, f.providerToken, "/providers/dashboard", nil)
			st := testenv.OpenStream(t, b.c, f.e.URL+"/providers/dashboard/events", nil)
			if st.Status != 200 {
				t.Fatalf("open: %d", st.Status)
			}
			// The dashboard hears every change of its rooms: the
			// fixture's own may still be on their way.
			st.Settle(300 * time.Millisecond)
			pat := f.user(t, f.p1Token)
			end.end(t, f, b)
			text := "Not for a closed session"
			if _, err := f.e.App.PostMessage(bg, pat, f.visitID, app.NewMessage{Content: &text}); err != nil {
				t.Fatal(err)
			}
			wantEnded(t, st)
		})
		t.Run("Call"+end.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.accept(t)
			b := newBrowser(t, f.e)
			f.redirectLogin(t, b, f.p1Token, f.visitPath(), nil)
			pg, pj := b.join(t, f)
			if pg.Status != 200 {
				t.Fatalf("join: %d %s", pg.Status, pg.Body)
			}
			prov := f.user(t, f.providerToken)
			vj, err := calls.New(f.e.App.Core()).Join(bg, prov, f.visitID, false)
			if err != nil {
				t.Fatal(err)
			}
			st := testenv.OpenStream(t, b.c, f.e.URL+f.visitPath()+"/call/events?peer="+pj.Peer+"&after="+itoa(pj.After), nil)
			if ev := st.Next(t); ev.Name != "signal" {
				t.Fatalf("the provider's join: %+v", ev)
			}
			end.end(t, f, b)
			if _, err := calls.New(f.e.App.Core()).Send(bg, prov, f.visitID, calls.SignalInput{Peer: vj.Peer, To: pj.Peer, Kind: "offer", Body: json.RawMessage(`{"sdp":"v=0"}`)}); err != nil {
				t.Fatal(err)
			}
			wantEnded(t, st)
		})
	}
}

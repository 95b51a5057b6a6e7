package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/livekit/protocol/auth"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/media"
	"teleclinic/internal/testenv"
)

// A LiveKit server cannot run here, so LiveKit mode is tested up to its
// edge: the tokens the server issues, checked with LiveKit's own
// protocol/auth, and the visit page that hands its token to the LiveKit
// address it is configured with.

const liveKitSecret = testenv.LiveKitSecret

// checkRoomToken verifies a LiveKit token as LiveKit would and checks that
// it joins room only, as identity, for at most ten minutes.
func checkRoomToken(t *testing.T, raw, room, identity string) {
	t.Helper()
	parsed, err := auth.ParseAPIToken(raw)
	if err != nil {
		t.Fatalf("LiveKit token: %v", err)
	}
	claims, grants, err := parsed.Verify(liveKitSecret)
	if err != nil || parsed.APIKey() != "APIvisits" {
		t.Fatalf("LiveKit token does not verify: %v (key %q)", err, parsed.APIKey())
	}
	v := grants.Video
	if v == nil || !v.RoomJoin || v.Room != room || v.RoomAdmin || v.RoomCreate || v.RoomList || v.RoomRecord {
		t.Fatalf("grant %+v: a join of %s only expected", v, room)
	}
	if grants.Identity != identity {
		t.Fatalf("identity %q, want %q", grants.Identity, identity)
	}
	if ttl := time.Until(claims.ExpiresAt.Time); ttl <= 0 || ttl > media.LiveKitTokenTTL {
		t.Fatalf("the token expires in %v", ttl)
	}
}

// TestCall_LiveKit: with LiveKit configured, the join answers a token of
// the visit's LiveKit room for the participant (and refuses others as in
// peer-to-peer mode), and the visit page is in LiveKit mode: it loads the
// LiveKit client, and its policy lets it connect to the LiveKit server.
func TestCall_LiveKit(t *testing.T) {
	sfu := testenv.NewLiveKitStandIn(t)
	lk := sfu.Config()
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.LiveKit = lk }})
	f.accept(t)
	pat, other := newBrowser(t, f.e), newBrowser(t, f.e)
	pg := f.redirectLogin(t, pat, f.p1Token, f.visitPath(), nil)
	pg = pat.get(pg.Location)
	if pg.Status != 200 || !strings.Contains(pg.Body, `data-mode="livekit"`) || !strings.Contains(pg.Body, "/static/vendor/livekit-client-2.23.0.umd.js") {
		t.Fatalf("visit page in LiveKit mode: %d %s", pg.Status, pg.Body)
	}
	if csp := pg.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' "+lk.URL+" "+lk.HTTPURL()+";") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP: %q", csp)
	}
	if js := pat.get("/static/vendor/livekit-client-2.23.0.umd.js"); js.Status != 200 || !strings.Contains(js.Body, "LivekitClient") {
		t.Fatalf("the LiveKit client: %d", js.Status)
	}
	res, j := pat.join(t, f)
	// The page takes a seat in the call too: the recording's notice and
	// consents go on the server's signals.
	if res.Status != 200 || j.Mode != "livekit" || j.URL != lk.URL || j.Peer == "" {
		t.Fatalf("join: %d %s", res.Status, res.Body)
	}
	checkRoomToken(t, j.Token, "acme-visit-"+itoa(f.visitID), f.user(t, f.p1Token).User.SvcID)
	// The join made the visit's room on the LiveKit server first, with
	// its empty timeout, through LiveKit's server API.
	room := "acme-visit-" + itoa(f.visitID)
	if got := sfu.Rooms()[room]; got.EmptyTimeout != int(calls.LiveKitRoomEmpty/time.Second) || got.MaxParticipants != calls.LiveKitMaxParticipants {
		t.Fatalf("rooms made: %+v", sfu.Rooms())
	}
	// LiveKit down: the join says so (502, the upstream failed), and hands out no token.
	sfu.Fail(true)
	if res, _ := pat.join(t, f); res.Status != 502 || strings.Contains(res.Body, "livekit_token") {
		t.Fatalf("join with LiveKit down: %d %s", res.Status, res.Body)
	}
	sfu.Fail(false)
	f.redirectLogin(t, other, f.p2Token, "/visits", nil)
	if res, _ := other.join(t, f); res.Status != 403 || strings.Contains(res.Body, "livekit_token") {
		t.Fatalf("another patient: %d %s", res.Status, res.Body)
	}
}

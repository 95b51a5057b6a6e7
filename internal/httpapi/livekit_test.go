package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/livekit/protocol/auth"
	"github.com/livekit/protocol/livekit"
	"github.com/livekit/protocol/webhook"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// TestLiveKit_Webhook: LiveKit's own webhook sender (protocol/webhook, as
// the LiveKit server runs it) reports a visit's room: the patient joining
// changes nothing, the visit's provider joining starts the visit, the room
// finishing ends it. Requests LiveKit did not sign, or whose body was
// changed, are refused; a server without LiveKit has no such route.
func TestLiveKit_Webhook(t *testing.T) {
	t.Parallel()
	sfu := testenv.NewLiveKitStandIn(t)
	e := testenv.New(t, testenv.Options{Config: func(c *app.Config) { c.LiveKit = sfu.Config() }})
	s := newClinicSetup(t, e, "alpha")
	visit := s.withVisit(t) // accepted by the provider: confirmed
	room := "alpha-visit-" + visit
	url := e.URL + "/api_v3/livekit/webhook"
	status := func() int {
		t.Helper()
		return int(dataOf[client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit, Header: userHeaders(s.c, s.doc.Token)})).Status)
	}
	send := func(event, identity string) {
		t.Helper()
		n := webhook.NewURLNotifier(webhook.URLNotifierParams{URL: url, APIKey: testenv.LiveKitKey, APISecret: testenv.LiveKitSecret})
		ev := &livekit.WebhookEvent{Event: event, Id: "EV_" + event + identity, CreatedAt: time.Now().Unix(), Room: &livekit.Room{Sid: "RM_1", Name: room}}
		if identity != "" {
			ev.Participant = &livekit.ParticipantInfo{Sid: "PA_1", Identity: identity}
		}
		if err := n.QueueNotify(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		n.Stop(false) // waits for the queue to be sent
	}
	webhook.InitWebhookStats(nil) // the sender counts what it sends
	svcid := func(who *session) string { return who.Profile.Svcid }

	if got := status(); got != clinic.VisitConfirmed {
		t.Fatalf("start: %d", got)
	}
	send("room_started", "")
	send("participant_joined", svcid(s.pat))
	if got := status(); got != clinic.VisitConfirmed {
		t.Fatalf("after the patient joined: %d", got)
	}
	send("participant_joined", svcid(s.doc))
	waitFor(t, "the visit in progress", func() bool { return status() == clinic.VisitInProgress })
	send("participant_joined", svcid(s.doc)) // again: nothing more to do
	send("room_finished", "")
	waitFor(t, "the visit completed", func() bool { return status() == clinic.VisitCompleted })
	send("room_finished", "") // a retry: answered, nothing changes

	t.Run("ErrNotSigned", func(t *testing.T) {
		body := `{"event":"room_finished","room":{"name":"` + room + `"}}`
		sign := func(secret, payload string) string {
			sum := sha256.Sum256([]byte(payload))
			tok, err := auth.NewAccessToken(testenv.LiveKitKey, secret).SetValidFor(time.Minute).SetSha256(base64.StdEncoding.EncodeToString(sum[:])).ToJWT()
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		for name, authz := range map[string]string{
			"none":             "",
			"another secret":   sign("another-secret-of-at-least-32-chars", body),
			"another body":     sign(testenv.LiveKitSecret, body+" "),
			"not a token":      "Bearer x.y.z",
			"the key's secret": sign(testenv.LiveKitSecret, body)[:20],
		} {
			res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/livekit/webhook", Header: map[string]string{"Content-Type": "application/webhook+json", "Authorization": authz}, RawBody: []byte(body)})
			if res.Status != http.StatusUnauthorized {
				t.Errorf("%s: %d %s", name, res.Status, res.Raw)
			}
		}
		// Signed, but not LiveKit's JSON.
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/livekit/webhook", Header: map[string]string{"Content-Type": "application/webhook+json", "Authorization": sign(testenv.LiveKitSecret, "[1]")}, RawBody: []byte("[1]")})
		if res.Status != http.StatusBadRequest {
			t.Errorf("a signed non-event: %d %s", res.Status, res.Raw)
		}
	})
	t.Run("ErrNoLiveKit", func(t *testing.T) {
		plain := testenv.New(t)
		res := plain.Do(testenv.Req{Method: "POST", Path: "/api_v3/livekit/webhook", Header: map[string]string{"Content-Type": "application/webhook+json"}, RawBody: []byte(`{}`)})
		if res.Status != http.StatusNotFound {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	// The moves are the clinic's, on LiveKit's report: audited as the system.
	e.FlushAudits()
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action IN ('visit.inprogress', 'visit.close') AND actor_kind = 'system' AND object_id = ?", visit); n != 2 {
		t.Fatalf("%d audited moves", n)
	}
	if !strings.HasPrefix(room, "alpha-") {
		t.Fatal(room)
	}
}

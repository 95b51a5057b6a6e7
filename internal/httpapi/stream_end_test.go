package httpapi_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

// streamEnding is one way a caller's right to a stream ends.
type streamEnding struct {
	name string
	end  func(t *testing.T, s *clinicSetup, token string)
}

// userEndings end a user's access token: their own logout, the admin
// revoking it, and its idle expiry.
var userEndings = []streamEnding{
	{"Logout", func(t *testing.T, s *clinicSetup, token string) {
		if res := s.post(token, "/api_v3/users/logout"); res.Status != 200 {
			t.Fatalf("logout: %s", res.Raw)
		}
	}},
	{"Revoked", func(t *testing.T, s *clinicSetup, token string) {
		res := s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/logout", Header: adminHeaders(s.c), Form: q("tokens", token)})
		if res.Status != 200 {
			t.Fatalf("revoke: %s", res.Raw)
		}
	}},
	{"Expired", func(t *testing.T, s *clinicSetup, token string) { s.e.Clock.Advance(31 * time.Minute) }},
}

// wantEnded fails unless the stream's next event is the API's end for an
// unauthenticated caller, with a message, and the stream then closes.
func wantEnded(t *testing.T, st *testenv.Stream) {
	t.Helper()
	var end struct{ Message string }
	if st.End(t, "error", clinic.EUnauthenticated).Decode(t, &end); end.Message == "" {
		t.Fatal("the end event has no message")
	}
}

func principal(t *testing.T, e *testenv.Env, c *testenv.Clinic, token string) *clinic.Principal {
	t.Helper()
	p, err := e.App.Authenticate(context.Background(), app.Credentials{AccountCode: c.Code, APIToken: token}, app.NeedUser)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreams_EndWithTheCredential: an open stream of the API sends
// nothing more once its caller's credential has ended. The keep-alive is
// the default (20 s), so the end must come from the check before the next
// event: the change made after the credential ended is not sent, the
// stream's end is.
func TestStreams_EndWithTheCredential(t *testing.T) {
	t.Parallel()
	for _, end := range userEndings {
		t.Run("Messages"+end.name, func(t *testing.T) {
			t.Parallel()
			e := testenv.New(t)
			s := newClinicSetup(t, e, "alpha")
			visit := s.econsult(t, s.pat)
			doc := principal(t, e, s.c, s.doc.Token)
			st := openStream(t, e, "/api/visits/"+visit+"/messages/events", map[string]string{"X-ApiToken": s.pat.Token})
			if st.Status != 200 {
				t.Fatalf("open: %d", st.Status)
			}
			end.end(t, s, s.pat.Token)
			id, _ := strconv.ParseInt(visit, 10, 64)
			text := "A message the signed-out patient must not read"
			if _, err := e.App.PostMessage(context.Background(), doc, id, app.NewMessage{Content: &text}); err != nil {
				t.Fatal(err)
			}
			wantEnded(t, st)
		})
		t.Run("Queue"+end.name, func(t *testing.T) {
			t.Parallel()
			e := testenv.New(t)
			s := newClinicSetup(t, e, "alpha")
			first := s.walkin(t, s.pat2)
			s.walkin(t, s.pat)
			st := openStream(t, e, "/api_v3/rooms/main/queue/events", userHeaders(s.c, s.pat.Token))
			if ev := st.Next(t); ev.Name != "queue" {
				t.Fatalf("the queue at once: %+v", ev)
			}
			doc := principal(t, e, s.c, s.doc.Token)
			end.end(t, s, s.pat.Token)
			s.accept(t, doc, first)
			wantEnded(t, st)
		})
	}
	// The admin token read the queue; a rotation ends it.
	t.Run("QueueAdminRotated", func(t *testing.T) {
		t.Parallel()
		e := testenv.New(t)
		s := newClinicSetup(t, e, "alpha")
		first := s.walkin(t, s.pat2)
		st := openStream(t, e, "/api_v3/rooms/main/queue/events", adminHeaders(s.c))
		if ev := st.Next(t); ev.Name != "queue" {
			t.Fatalf("the queue at once: %+v", ev)
		}
		if _, err := e.App.Rotate(context.Background(), s.c.Code, app.RotateAdminToken); err != nil {
			t.Fatal(err)
		}
		s.accept(t, principal(t, e, s.c, s.doc.Token), first)
		wantEnded(t, st)
	})
	// A quiet stream ends at its next keep-alive.
	t.Run("QuietAtTheKeepAlive", func(t *testing.T) {
		t.Parallel()
		e := testenv.New(t, testenv.Options{KeepAlive: 100 * time.Millisecond})
		s := newClinicSetup(t, e, "alpha")
		visit := s.econsult(t, s.pat)
		st := openStream(t, e, "/api/visits/"+visit+"/messages/events", map[string]string{"X-ApiToken": s.pat.Token})
		userEndings[0].end(t, s, s.pat.Token)
		wantEnded(t, st)
	})
}

// walkin puts who in the room's queue and returns the visit's id.
func (s *clinicSetup) walkin(t *testing.T, who *session) string {
	t.Helper()
	return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits/add_walkin", "intake_id", s.intake(t, who), "room_code", "main")).Id
}

// accept has provider p accept visit id, through app: the change a stream
// hears, made whatever the test's clock says of the tokens.
func (s *clinicSetup) accept(t *testing.T, p *clinic.Principal, visit string) {
	t.Helper()
	id, _ := strconv.ParseInt(visit, 10, 64)
	if _, err := s.e.App.MoveVisit(context.Background(), p, id, app.ActAccept, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
}

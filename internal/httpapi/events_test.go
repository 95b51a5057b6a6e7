package httpapi_test

import (
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/live"
	"teleclinic/internal/testenv"
)

// openStream GETs path with headers and reads its events as they come.
func openStream(t *testing.T, e *testenv.Env, path string, h map[string]string) *testenv.Stream {
	t.Helper()
	return testenv.OpenStream(t, nil, e.URL+path, h)
}

// eventData is an event's data as T.
func eventData[T any](t *testing.T, ev testenv.Event) T {
	t.Helper()
	var v T
	ev.Decode(t, &v)
	return v
}

// TestEvents_Queue: the queue's stream answers the queue at once and again
// when a walk-in joins and when a provider accepts one, with the calling
// patient's own before_me; a message does not move it. It takes a
// credential with a part in the queue (unlike the spec's one read).
func TestEvents_Queue(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	path := "/api_v3/rooms/main/queue/events"
	walkin := func(who *session) string {
		t.Helper()
		return dataOf[client.Visit](t, s.post(who.Token, "/api_v3/visits/add_walkin", "intake_id", s.intake(t, who), "room_code", "main")).Id
	}
	first := walkin(s.pat)

	// OK: the room's provider; a patient's stream counts ahead of them.
	t.Run("OKLiveQueue", func(t *testing.T) {
		anon := openStream(t, e, path, userHeaders(s.c, s.doc.Token))
		if anon.Status != 200 || anon.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %s", anon.Status, anon.Header.Get("Content-Type"))
		}
		if ev := anon.Next(t); ev.Name != "queue" || eventData[queueInfo](t, ev).Length != 1 {
			t.Fatalf("first event %+v", ev)
		}
		second := walkin(s.pat2)
		if ev := anon.Next(t); eventData[queueInfo](t, ev).Length != 2 {
			t.Fatalf("after a walk-in: %+v", ev)
		}
		mine := openStream(t, e, path, userHeaders(s.c, s.pat2.Token))
		if q := eventData[queueInfo](t, mine.Next(t)); q.BeforeMe != 1 || q.Length != 2 {
			t.Fatalf("pat2's queue: %v", q)
		}
		// A message on the first visit's thread moves nothing.
		if res := postMsg(e, s.pat.Token, first, "Still here"); res.Status != 201 {
			t.Fatalf("%s", res.Raw)
		}
		anon.Quiet(t, 100*time.Millisecond)
		// The room's provider accepts the first walk-in: pat2 is next.
		if res := s.post(s.doc.Token, "/api_v3/visits/accept", "id", first); res.Status != 200 {
			t.Fatalf("accept: %s", res.Raw)
		}
		if q := eventData[queueInfo](t, mine.Next(t)); q.BeforeMe != 0 || q.Length != 1 {
			t.Fatalf("pat2's queue after the accept: %v", q)
		}
		if q := eventData[queueInfo](t, anon.Next(t)); q.Length != 1 {
			t.Fatalf("the queue after the accept: %v", q)
		}
		_ = second
	})
	t.Run("ErrWithoutAPartInTheQueue", func(t *testing.T) {
		if st := openStream(t, e, path, nil); st.Status != 401 {
			t.Fatalf("no account code: %d", st.Status)
		}
		if st := openStream(t, e, path, map[string]string{"X-AccountCode": s.c.Code}); st.Status != 401 {
			t.Fatalf("the clinic's code alone: %d", st.Status)
		}
		outsider := mustSSO(t, e, s.c, "200", "p-out", "Out", "Sider")
		if st := openStream(t, e, path, userHeaders(s.c, outsider.Token)); st.Status != 403 {
			t.Fatalf("a patient with no visit in the room: %d", st.Status)
		}
		if st := openStream(t, e, "/api_v3/rooms/nope/queue/events", userHeaders(s.c, s.doc.Token)); st.Status != 404 {
			t.Fatalf("unknown room: %d", st.Status)
		}
	})
}

// TestEvents_Messages: a visit's stream sends the thread after
// Last-Event-ID, each new message as it is posted, the visit's state
// changes, and is refused to whoever may not read the thread.
func TestEvents_Messages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{KeepAlive: 100 * time.Millisecond})
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	path := "/api/visits/" + visit + "/messages/events"
	mustPost(t, e, s.pat.Token, visit, "one")
	mustPost(t, e, s.pat.Token, visit, "two")

	t.Run("OKLiveThread", func(t *testing.T) {
		pat := openStream(t, e, path, map[string]string{"X-ApiToken": s.pat.Token})
		for i, want := range []string{"one", "two"} {
			ev := pat.Next(t)
			if m := eventData[client.Message](t, ev); ev.Name != "message" || ev.ID != []string{"1", "2"}[i] || m.Content != want || m.VisitId != visit {
				t.Fatalf("event %d: %+v", i, ev)
			}
		}
		// The room's provider resumes after the first and hears the rest.
		doc := openStream(t, e, path, map[string]string{"X-ApiToken": s.doc.Token, "Last-Event-ID": "1"})
		if ev := doc.Next(t); ev.ID != "2" || eventData[client.Message](t, ev).Content != "two" {
			t.Fatalf("resumed: %+v", ev)
		}
		mustPost(t, e, s.doc.Token, visit, "three")
		for _, st := range []*testenv.Stream{pat, doc} {
			ev := st.Next(t)
			m := eventData[client.Message](t, ev)
			if ev.ID != "3" || m.Content != "three" || m.Actor.DisplayName != "Dana Doc" {
				t.Fatalf("new message: %+v", ev)
			}
		}
		if res := s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit); res.Status != 200 {
			t.Fatalf("accept: %s", res.Raw)
		}
		if ev := pat.Next(t); ev.Name != "visit" || eventData[client.Visit](t, ev).Status != 20 {
			t.Fatalf("state change: %+v", ev)
		}
	})
	t.Run("ErrAsTheRead", func(t *testing.T) {
		for _, c := range []struct {
			h    map[string]string
			path string
			want int
		}{
			{nil, path, 400}, // no token: 400 on visit messages (spec: Errors)
			{map[string]string{"X-ApiToken": "not-a-token"}, path, 401},
			{map[string]string{"X-ApiToken": s.pat2.Token}, path, 403},
			{adminHeaders(s.c), path, 403},
			{map[string]string{"X-ApiToken": s.pat.Token}, "/api/visits/999999/messages/events", 404},
			{map[string]string{"X-ApiToken": s.pat.Token, "Last-Event-ID": "x"}, path, 400},
		} {
			if st := openStream(t, e, c.path, c.h); st.Status != c.want {
				t.Errorf("%v %s: %d, want %d", c.h, c.path, st.Status, c.want)
			}
		}
	})
	// A signed-out caller's stream ends at the next keep-alive, saying why.
	t.Run("ErrSignedOut", func(t *testing.T) {
		pat := openStream(t, e, path, map[string]string{"X-ApiToken": s.pat.Token, "Last-Event-ID": "3"})
		if res := s.post(s.pat.Token, "/api_v3/users/logout"); res.Status != 200 {
			t.Fatalf("logout: %s", res.Raw)
		}
		ev := pat.Next(t)
		if ev.Name != "error" || eventData[struct {
			Code string `json:"code"`
		}](t, ev).Code != "unauthenticated" {
			t.Fatalf("after logout: %+v", ev)
		}
	})
}

// TestEvents_Limits: the event streams open at once are bounded per
// credential and per client address (429) and in all (503), each with
// Retry-After; a stream that closes gives its place back.
func TestEvents_Limits(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Streams: live.NewLimits(2, 3, -1)})
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	path := "/api/visits/" + visit + "/messages/events"
	pat := map[string]string{"X-ApiToken": s.pat.Token}
	first, second := openStream(t, e, path, pat), openStream(t, e, path, pat)
	if first.Status != 200 || second.Status != 200 {
		t.Fatalf("two streams: %d %d", first.Status, second.Status)
	}
	third := openStream(t, e, path, pat)
	if third.Status != 429 || third.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream of one token: %d (Retry-After %q)", third.Status, third.Header.Get("Retry-After"))
	}
	// The address: a third stream with another credential, then a fourth.
	if st := openStream(t, e, "/api_v3/rooms/main/queue/events", userHeaders(s.c, s.doc.Token)); st.Status != 200 {
		t.Fatalf("the provider's stream: %d", st.Status)
	}
	if st := openStream(t, e, "/api_v3/rooms/main/queue/events", adminHeaders(s.c)); st.Status != 429 {
		t.Fatalf("a fourth stream from one address: %d", st.Status)
	}
	// A closed stream gives its place back (once the server has seen it go).
	first.Close()
	waitStatus(t, func() int {
		st := openStream(t, e, path, pat)
		defer st.Close()
		return st.Status
	}, 200)

	// The server's own bound: 503.
	e2 := testenv.New(t, testenv.Options{Streams: live.NewLimits(-1, -1, 1)})
	s2 := newClinicSetup(t, e2, "beta")
	v2 := s2.econsult(t, s2.pat)
	if st := openStream(t, e2, "/api/visits/"+v2+"/messages/events", map[string]string{"X-ApiToken": s2.pat.Token}); st.Status != 200 {
		t.Fatalf("the one stream: %d", st.Status)
	}
	if st := openStream(t, e2, "/api_v3/rooms/main/queue/events", adminHeaders(s2.c)); st.Status != 503 || st.Header.Get("Retry-After") == "" {
		t.Fatalf("past the server's bound: %d (Retry-After %q)", st.Status, st.Header.Get("Retry-After"))
	}
}

// waitStatus polls get until it answers want, for a few seconds.
func waitStatus(t *testing.T, get func() int, want int) {
	t.Helper()
	var got int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got = get(); got == want {
			return
		}
	}
	t.Fatalf("status %d, want %d", got, want)
}

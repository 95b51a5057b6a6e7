package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/mail"
	"teleclinic/internal/push"
	"teleclinic/internal/testenv"
)

// pushBox is a push.Sender that records what it is given and answers
// ErrUnregistered for tokens it is told are gone.
type pushBox struct {
	mu   sync.Mutex
	msgs []push.Message
	gone map[string]bool
}

func (b *pushBox) Send(_ context.Context, m push.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone[m.Token] {
		return push.ErrUnregistered
	}
	b.msgs = append(b.msgs, m)
	return nil
}

func (b *pushBox) sent() []push.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]push.Message(nil), b.msgs...)
}

type mailBox struct {
	mu   sync.Mutex
	msgs []mail.Message
}

func (b *mailBox) Send(_ context.Context, m mail.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
	return nil
}

const apnsTok = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

func TestNotifications_Endpoints(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	reg := func(who *session, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/endpoints.json", Header: map[string]string{"X-ApiToken": who.Token}, Form: q(kv...)})
	}
	endpoint := func(res *testenv.Resp) client.Endpoint { t.Helper(); return dataOf[client.Endpoint](t, res) }
	ep := endpoint(reg(s.pat, "key", apnsTok, "type", "30"))
	if ep.Key != apnsTok || ep.Type != 30 || ep.UserId != s.pat.UserID || !strings.Contains(deref(ep.Arn), "apns") {
		t.Fatalf("%+v", ep)
	}
	fcm := endpoint(reg(s.pat, "key", "fcm-registration-token:APA91bH", "type", "40"))
	if email := endpoint(reg(s.pat, "key", "pat@example.com", "type", "10")); email.Arn != nil {
		t.Fatal("an email endpoint has no arn")
	}
	if again := endpoint(reg(s.pat, "key", strings.ToUpper(apnsTok), "type", "30")); again.Id != ep.Id {
		t.Fatal("registering a token again makes a second endpoint")
	}
	for _, bad := range [][]string{{"type", "30"}, {"key", apnsTok}, {"key", apnsTok, "type", "20"}, {"key", "not-hex!", "type", "30"}, {"key", "short", "type", "40"}, {"key", "nope", "type", "10"}} {
		wantErr(t, reg(s.pat, bad...), 400, 400)
	}
	list := func(who *session, kv ...string) []client.Endpoint {
		t.Helper()
		return dataOf[[]client.Endpoint](t, e.Do(testenv.Req{Path: "/api_v3/endpoints", Header: userHeaders(s.c, who.Token), Query: q(kv...)}))
	}
	if n := len(list(s.pat)); n != 3 {
		t.Fatalf("%d endpoints", n)
	}
	if l := list(s.pat, "type", "40"); len(l) != 1 || l[0].Id != fcm.Id {
		t.Fatalf("%+v", l)
	}
	if len(list(s.pat2)) != 0 {
		t.Fatal("another user sees the endpoints")
	}
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/endpoints", Header: userHeaders(s.c, s.pat.Token), Query: q("type", "99")}), 400, 400)
	if one := endpoint(e.Do(testenv.Req{Path: "/api_v3/endpoints/" + ep.Id, Header: userHeaders(s.c, s.pat.Token)})); one.Key != apnsTok {
		t.Fatalf("%+v", one)
	}
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/endpoints/" + ep.Id, Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/endpoints/" + ep.Id, Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/endpoints"}), 401, 401)
	if del := endpoint(e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/endpoints/" + fcm.Id, Header: userHeaders(s.c, s.pat.Token)})); del.Id != fcm.Id {
		t.Fatalf("%+v", del)
	}
	wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/endpoints/" + fcm.Id, Header: userHeaders(s.c, s.pat.Token)}), 404, 404)
	// A device that changes hands follows the user who registers it last.
	moved := endpoint(reg(s.pat2, "key", apnsTok, "type", "30"))
	if moved.Id != ep.Id || moved.UserId != s.pat2.UserID || len(list(s.pat, "type", "30")) != 0 {
		t.Fatalf("%+v", moved)
	}
}

func TestNotifications_ListBadgePush(t *testing.T) {
	t.Parallel()
	apns, fcm, mbox := &pushBox{gone: map[string]bool{}}, &pushBox{}, &mailBox{}
	e := testenv.New(t, testenv.Options{Config: func(c *app.Config) { c.APNs, c.FCM, c.Mail = apns, fcm, mbox }})
	s := newClinicSetup(t, e, "alpha")
	for _, r := range []struct {
		who      *session
		key, typ string
	}{
		{s.pat, apnsTok, "30"}, {s.pat, "pat@example.com", "10"}, {s.doc, "doc-fcm-registration-token-1", "40"},
	} {
		if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/endpoints", Header: userHeaders(s.c, r.who.Token), Form: q("key", r.key, "type", r.typ)}); res.Status != 200 {
			t.Fatal(res.Raw)
		}
	}
	notes := func(who *session, kv ...string) []client.Notification {
		t.Helper()
		return dataOf[[]client.Notification](t, e.Do(testenv.Req{Path: "/api_v3/notifications", Header: userHeaders(s.c, who.Token), Query: q(kv...)}))
	}
	badge := func(who *session) int {
		t.Helper()
		return dataOf[int](t, e.Do(testenv.Req{Path: "/api_v3/notifications/badge", Header: userHeaders(s.c, who.Token)}))
	}

	visit := s.econsult(t, s.pat)
	mustPost(t, e, s.pat.Token, visit, "The rash is spreading.")
	// The host provider is told; the sender is not.
	if n := notes(s.doc); len(n) != 1 || n[0].Type != "visit_message" || n[0].Title != "New message from Pat One" || deref(n[0].VisitId) != visit || !n[0].IsNew || n[0].Read {
		t.Fatalf("%+v", n)
	}
	if len(notes(s.pat)) != 0 || len(notes(s.other)) != 0 {
		t.Fatal("the sender or a stranger was notified")
	}
	e.Clock.Advance(time.Second)
	mustPost(t, e, s.doc.Token, visit, "Please send a photo.")
	e.Clock.Advance(time.Second)
	for _, step := range []string{"accept", "inprogress", "close"} {
		mustOK(t, s.post(s.doc.Token, "/api_v3/visits/"+step, "id", visit))
		e.Clock.Advance(time.Second)
	}
	n := notes(s.pat)
	var types []string
	for _, x := range n {
		types = append(types, string(x.Type))
	}
	if strings.Join(types, ",") != "visit_completed,visit_started,visit_message" {
		t.Fatalf("%v", types)
	}
	if badge(s.pat) != 3 {
		t.Fatal("badge")
	}

	// Paging by mtime.
	t.Run("OKPagingByMtime", func(t *testing.T) {
		first := notes(s.pat, "size", "2")
		if len(first) != 2 {
			t.Fatalf("%v", first)
		}
		rest := notes(s.pat, "last", fmt.Sprint(first[1].Mtime))
		if len(rest) != 1 || rest[0].Type != "visit_message" || rest[0].Mtime >= first[1].Mtime {
			t.Fatalf("%+v", rest)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/notifications", Header: userHeaders(s.c, s.pat.Token), Query: q("size", "0")}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/notifications", Header: userHeaders(s.c, s.pat.Token), Query: q("last", "soon")}), 400, 400)
	})
	// Read, badge, reset.
	t.Run("OKReadBadgeReset", func(t *testing.T) {
		id := n[0].Id
		if got := dataOf[client.Notification](t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/notifications/" + id, Header: userHeaders(s.c, s.pat.Token)})); !got.Read || got.IsNew {
			t.Fatalf("%+v", got)
		}
		if badge(s.pat) != 2 {
			t.Fatal("reading lowers the badge")
		}
		wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/notifications/" + id, Header: userHeaders(s.c, s.doc.Token)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/notifications/x", Header: userHeaders(s.c, s.pat.Token)}), 404, 404)
		if reset := dataOf[bool](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/notifications/badge", Header: userHeaders(s.c, s.pat.Token)})); !reset || badge(s.pat) != 0 {
			t.Fatalf("reset %v, badge %d", reset, badge(s.pat))
		}
		if len(notes(s.pat)) != 3 {
			t.Fatal("resetting the badge removes nothing")
		}
	})
	// Each notification goes to the user's endpoints after commit.
	t.Run("OKPushedAfterCommit", func(t *testing.T) {
		if len(apns.sent()) != 0 {
			t.Fatal("sent before the worker ran")
		}
		for e.App.DeliverPush(context.Background()) > 0 {
		}
		a, f := apns.sent(), fcm.sent()
		if len(a) != 3 || len(f) != 1 || len(mbox.msgs) != 3 {
			t.Fatalf("apns %d fcm %d mail %d", len(a), len(f), len(mbox.msgs))
		}
		if a[0].Token != apnsTok || a[0].Title != "New message from Dana Doc" || a[0].Data["visit_id"] != visit || a[0].Data["type"] != "visit_message" {
			t.Fatalf("%+v", a[0])
		}
		if f[0].Token != "doc-fcm-registration-token-1" || f[0].Title != "New message from Pat One" || f[0].Badge != 1 {
			t.Fatalf("%+v", f[0])
		}
		if mbox.msgs[0].To != "pat@example.com" || strings.Contains(mbox.msgs[0].Body, "photo") {
			t.Fatalf("%+v", mbox.msgs[0])
		}
	})
	// An unregistered device loses its endpoint.
	t.Run("OKUnregisteredDeviceRemoved", func(t *testing.T) {
		apns.mu.Lock()
		apns.gone[apnsTok] = true
		apns.mu.Unlock()
		visit2 := s.econsult(t, s.pat)
		mustPost(t, e, s.doc.Token, visit2, "hello")
		for e.App.DeliverPush(context.Background()) > 0 {
		}
		if l := dataOf[[]client.Endpoint](t, e.Do(testenv.Req{Path: "/api_v3/endpoints", Header: userHeaders(s.c, s.pat.Token), Query: q("type", "30")})); len(l) != 0 {
			t.Fatalf("%+v", l)
		}
	})
}

// TestNotifications_ChannelOff: with no push service configured nothing is
// queued for push endpoints; the notification itself is still kept.
func TestNotifications_ChannelOff(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/endpoints", Header: userHeaders(s.c, s.doc.Token), Form: q("key", apnsTok, "type", "30")}); res.Status != 200 {
		t.Fatal(res.Raw)
	}
	visit := s.econsult(t, s.pat)
	mustPost(t, e, s.pat.Token, visit, "hello")
	var n int
	_ = e.Store.DB().QueryRow("SELECT COUNT(*) FROM outbox WHERE topic = 'push'").Scan(&n)
	if n != 0 {
		t.Fatalf("%d push items queued for an unconfigured channel", n)
	}
	if n := dataOf[int](t, e.Do(testenv.Req{Path: "/api_v3/notifications/badge", Header: userHeaders(s.c, s.doc.Token)})); n != 1 {
		t.Fatalf("badge %d", n)
	}
}

// Notifications of one millisecond are each on a page when the pages
// follow Link rel=next (before, an id): the spec's last (milliseconds)
// skips the rest of them.
func TestNotifications_PagesInOneMillisecond(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	for i := range 7 { // the clock stands still: one millisecond
		mustPost(t, e, s.pat.Token, visit, fmt.Sprintf("Message %d.", i))
	}
	h := userHeaders(s.c, s.doc.Token)
	res := e.Do(testenv.Req{Path: "/api_v3/notifications", Header: h, Query: q("size", "100")})
	whole := dataOf[[]json.RawMessage](t, res)
	if len(whole) != 7 || res.Header.Get("Link") != "" {
		t.Fatalf("%d notifications, Link %q", len(whole), res.Header.Get("Link"))
	}
	notes, pages := pageWalk{path: "/api_v3/notifications", query: q("size", "3"), header: h, cursor: "before", idKey: "id", limit: 3}.walk(t, e)
	if got, want := idsOf(notes, "id"), idsOf(whole, "id"); strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
		t.Fatalf("the pages hold %v in %d pages, want %v in 3", got, pages, want)
	}
	// What the spec's last gives after the first page of three.
	if rest := dataOf[[]client.Notification](t, e.Do(testenv.Req{Path: "/api_v3/notifications", Header: h, Query: q("size", "3", "last", idsOf(notes[2:3], "mtime")[0])})); len(rest) != 0 {
		t.Fatalf("last gave %d notifications of the same millisecond", len(rest))
	}
	mustPost(t, e, s.doc.Token, visit, "Thank you.")
	theirs := dataOf[[]client.Notification](t, e.Do(testenv.Req{Path: "/api_v3/notifications", Header: userHeaders(s.c, s.pat.Token)}))
	if len(theirs) != 1 {
		t.Fatalf("the patient's notifications: %+v", theirs)
	}
	for _, before := range []string{theirs[0].Id, "999999", "-1", "soon"} {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/notifications", Header: h, Query: q("before", before)}), 400, 400)
	}
}

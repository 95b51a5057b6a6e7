package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/media"
	"teleclinic/internal/testenv"

	"github.com/google/go-cmp/cmp"
)

// joined is the answer to POST {call}/join.
type joined struct {
	Mode       string `json:"mode"`
	Role       string `json:"role"`
	Peer       string `json:"peer"`
	After      int64  `json:"after"`
	Peers      []struct{ Peer, Name, Role string }
	ICEServers []media.ICEServer `json:"ice_servers"`
	Policy     string            `json:"ice_transport_policy"`
	Token      string            `json:"livekit_token"`
	URL        string            `json:"livekit_url"`
}

// accept has the fixture's provider take its e-consult: from then on they
// are the visit's provider, and in its call.
func (f *fixture) accept(t *testing.T) {
	t.Helper()
	if _, err := f.e.App.MoveVisit(context.Background(), f.user(t, f.providerToken), f.visitID, app.ActAccept, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
}

// postJSON sends body as JSON from the portal's own pages.
func (b *browser) postJSON(path, body string) *page {
	b.t.Helper()
	return b.send("POST", path, strings.NewReader(body), map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"})
}

func (b *browser) join(t *testing.T, f *fixture) (*page, joined) {
	t.Helper()
	pg := b.postJSON(f.visitPath()+"/call/join", "{}")
	var j joined
	if pg.Status == 200 {
		if err := json.Unmarshal([]byte(pg.Body), &j); err != nil {
			t.Fatalf("join: %v in %s", err, pg.Body)
		}
	}
	return pg, j
}

// stream opens one of the browser's event streams.
func (b *browser) stream(t *testing.T, path string, header map[string]string) *testenv.Stream {
	t.Helper()
	return testenv.OpenStream(t, b.c, b.base+path, header)
}

// TestCall_Signalling: the call's routes on the portal session. Only the
// visit's patient and its assigned provider join; the provider's join
// starts the visit; signals reach the peer they are for, in order, and a
// stream resumes after the last one it had; another user can neither join
// nor read nor send; the mesh holds four; a closed visit ends the call.
// The steps run in order on one visit (callScript).
func TestCall_Signalling(t *testing.T) {
	ice := media.Config{STUN: []string{"stun:stun.example:3478"}, TURN: []string{"turn:turn.example:3478"}, Secret: "north"}
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.ICE = ice }, KeepAlive: 200 * time.Millisecond})
	c := &callScript{root: t, f: f, pat: newBrowser(t, f.e), prov: newBrowser(t, f.e), other: newBrowser(t, f.e), base: f.visitPath() + "/call"}
	f.redirectLogin(t, c.pat, f.p1Token, f.visitPath(), nil)
	f.redirectLogin(t, c.prov, f.providerToken, f.visitPath(), nil)
	f.redirectLogin(t, c.other, f.p2Token, "/visits", nil)
	testenv.Steps(t, []testenv.Step{
		{Name: "ErrProviderBeforeAccepting", Run: c.providerBeforeAccepting},
		{Name: "OKPatientJoins", Run: c.patientJoins},
		{Name: "ErrOthersRefused", Run: c.othersRefused},
		{Name: "OKProviderJoinStartsTheVisit", Run: c.providerJoins},
		{Name: "OKOfferReachesThePatient", Run: c.offerReachesThePatient},
		{Name: "ErrBadSignals", Run: c.badSignals},
		{Name: "OKStreamResumes", Run: c.streamResumes},
		{Name: "ErrMeshOfFourFull", Run: c.meshFull},
		{Name: "OKLeaveTold", Run: c.leave},
		{Name: "OKProviderEndsTheCall", Run: c.providerEnds},
	})
}

// callScript is TestCall_Signalling's visit, its three browsers and what
// the steps have learned.
type callScript struct {
	root             *testing.T // the test, whose end ends what the steps open
	f                *fixture
	pat, prov, other *browser
	base             string
	pj, vj           joined          // the patient's and the provider's joins
	events           *testenv.Stream // the patient's stream
	joinSeq, offer   string
}

// signal is a "signal" event's data.
type signal struct {
	From string
	Type string
	Data json.RawMessage
}

// nextSignal is the stream's next event, which must be a signal.
func nextSignal(t *testing.T, st *testenv.Stream) (testenv.Event, signal) {
	t.Helper()
	ev := st.Next(t)
	var sg signal
	if ev.Name != "signal" {
		t.Fatalf("want a signal, got %s %s", ev.Name, ev.Data)
	}
	ev.Decode(t, &sg)
	return ev, sg
}

// The room's provider sees the waiting e-consult but is not in its call
// until they accept it; nor is the patient, who gets no TURN credential
// before a provider has taken the visit.
func (c *callScript) providerBeforeAccepting(t *testing.T) {
	if pg, _ := c.prov.join(t, c.f); pg.Status != 403 || !strings.Contains(pg.Body, `"code"`) {
		t.Fatalf("provider before accepting: %d %s", pg.Status, pg.Body)
	}
	if pg, _ := c.pat.join(t, c.f); pg.Status != 409 || !strings.Contains(pg.Body, "No provider has taken") || strings.Contains(pg.Body, "turn:") {
		t.Fatalf("patient before a provider took the visit: %d %s", pg.Status, pg.Body)
	}
	c.f.accept(t)
}

// The patient joins peer to peer with STUN and a TURN credential of
// their own; their join does not start the visit.
func (c *callScript) patientJoins(t *testing.T) {
	pg, pj := c.pat.join(t, c.f)
	if pg.Status != 200 {
		t.Fatalf("patient joins: %d %s", pg.Status, pg.Body)
	}
	c.pj = pj
	user := c.f.user(t, c.f.p1Token).User.SvcID
	name, pass := media.TURNCredential("north", user, c.f.e.Clock.Now().Add(media.DefaultTURNTTL)) // two hours
	type join struct {
		Mode, Role, Policy string
		Peers              int
		TURN               media.ICEServer
	}
	got := join{Mode: pj.Mode, Role: pj.Role, Policy: pj.Policy, Peers: len(pj.Peers)}
	if len(pj.ICEServers) == 2 {
		got.TURN = pj.ICEServers[1]
	}
	want := join{Mode: "p2p", Role: "patient", Policy: "all", TURN: media.ICEServer{URLs: []string{"turn:turn.example:3478"}, Username: name, Credential: pass}}
	if diff := cmp.Diff(want, got); diff != "" || pj.Peer == "" {
		t.Fatalf("the patient's join (-want +got):\n%s\npeer %q", diff, pj.Peer)
	}
	if d, _ := c.f.e.App.GetVisit(context.Background(), c.f.user(t, c.f.p1Token), c.f.visitID, false); d.Visit.ActualStart != 0 {
		t.Fatalf("the patient's join started the visit: %+v", d.Visit)
	}
	c.events = c.pat.stream(c.root, c.base+"/events?peer="+pj.Peer+"&after="+itoa(pj.After), nil)
	if c.events.Status != 200 || c.events.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("patient's stream: %d", c.events.Status)
	}
}

// Another patient gets 403 on every route, even with the patient's own
// peer; a browser not signed in gets 401 as JSON, not the sign-in page.
func (c *callScript) othersRefused(t *testing.T) {
	if pg, _ := c.other.join(t, c.f); pg.Status != 403 {
		t.Errorf("another patient joins: %d %s", pg.Status, pg.Body)
	}
	if pg := c.other.get(c.base + "/events?peer=" + c.pj.Peer); pg.Status != 403 || strings.Contains(pg.Body, "event:") {
		t.Errorf("another patient reads the signals: %d %s", pg.Status, pg.Body)
	}
	if pg := c.other.postJSON(c.base+"/signal", `{"peer":"`+c.pj.Peer+`","to":"x","type":"offer","data":{}}`); pg.Status != 403 {
		t.Errorf("another patient signals: %d %s", pg.Status, pg.Body)
	}
	if pg := newBrowser(t, c.f.e).postJSON(c.base+"/join", "{}"); pg.Status != 401 || !strings.Contains(pg.Body, `"unauthenticated"`) {
		t.Errorf("not signed in: %d %s", pg.Status, pg.Body)
	}
}

// The provider joins: the visit starts, and the patient's stream hears
// the join with the provider's name.
func (c *callScript) providerJoins(t *testing.T) {
	pg, vj := c.prov.join(t, c.f)
	if pg.Status != 200 || vj.Role != "provider" || len(vj.Peers) != 1 || vj.Peers[0].Peer != c.pj.Peer {
		t.Fatalf("provider joins: %d %s", pg.Status, pg.Body)
	}
	c.vj = vj
	if d, _ := c.f.e.App.GetVisit(context.Background(), c.f.user(t, c.f.p1Token), c.f.visitID, false); d.Visit.Status != clinic.VisitInProgress || d.Visit.ActualStart == 0 {
		t.Fatalf("the provider's join did not start the visit: %+v", d.Visit)
	}
	ev, sg := nextSignal(t, c.events)
	if sg.Type != "join" || sg.From != vj.Peer || !strings.Contains(string(sg.Data), "Grace Hopper") {
		t.Fatalf("patient's first event: %+v", ev)
	}
	c.joinSeq = ev.ID
}

// The provider's offer reaches the patient as sent.
func (c *callScript) offerReachesThePatient(t *testing.T) {
	c.offer = `{"peer":"` + c.vj.Peer + `","to":"` + c.pj.Peer + `","type":"offer","data":{"sdp":"v=0 offer"}}`
	if pg := c.prov.postJSON(c.base+"/signal", c.offer); pg.Status != 200 || !strings.Contains(pg.Body, `"seq":`) {
		t.Fatalf("offer: %d %s", pg.Status, pg.Body)
	}
	_, sg := nextSignal(t, c.events)
	if diff := cmp.Diff(signal{From: c.vj.Peer, Type: "offer", Data: json.RawMessage(`{"sdp":"v=0 offer"}`)}, sg); diff != "" {
		t.Fatalf("the patient's offer (-want +got):\n%s", diff)
	}
}

// The provider cannot send as the patient's peer; bad signals are 400,
// an oversized one 413, each with a message.
func (c *callScript) badSignals(t *testing.T) {
	pj, vj := c.pj, c.vj
	for _, bad := range []struct {
		body   string
		status int
	}{
		{`{"peer":"` + pj.Peer + `","to":"` + vj.Peer + `","type":"answer","data":{}}`, 403},
		{`{"peer":"` + vj.Peer + `","to":"` + pj.Peer + `","type":"bye","data":{}}`, 400},
		{`{"peer":"` + vj.Peer + `","type":"offer","data":{}}`, 400},
		{`{"peer":`, 400},
		{`{"peer":"` + vj.Peer + `","to":"` + pj.Peer + `","type":"offer","data":"` + strings.Repeat("a", calls.MaxSignal+2000) + `"}`, 413},
	} {
		if pg := c.prov.postJSON(c.base+"/signal", bad.body); pg.Status != bad.status || !strings.Contains(pg.Body, `"message"`) {
			t.Errorf("signal %.60s…: %d %s, want %d", bad.body, pg.Status, pg.Body, bad.status)
		}
	}
}

// A stream that reconnects with Last-Event-ID gets what came after.
func (c *callScript) streamResumes(t *testing.T) {
	again := c.pat.stream(t, c.base+"/events?peer="+c.pj.Peer+"&after=0", map[string]string{"Last-Event-ID": c.joinSeq})
	if _, sg := nextSignal(t, again); sg.Type != "offer" {
		t.Fatalf("resumed stream: %+v", sg)
	}
}

// Four pages in the mesh, then 409.
func (c *callScript) meshFull(t *testing.T) {
	for _, name := range []string{"Ines", "Jon"} {
		if pg, _ := guestIn(t, c.f, c.prov, name).join(t, c.f); pg.Status != 200 {
			t.Fatalf("%s, the third or fourth person: %d %s", name, pg.Status, pg.Body)
		}
	}
	if pg, _ := guestIn(t, c.f, c.prov, "Kim").join(t, c.f); pg.Status != 409 || !strings.Contains(pg.Body, "full") {
		t.Fatalf("a fifth person: %d %s", pg.Status, pg.Body)
	}
}

// guestIn is a browser of a guest the provider (b) invited to the
// fixture's call, signed in by the invitation.
func guestIn(t *testing.T, f *fixture, b *browser, first string) *browser {
	t.Helper()
	g := newBrowser(t, f.e)
	if pg := g.post(invite(t, f, b), url.Values{"first_name": {first}, "last_name": {"Guest"}}); pg.Status != 303 {
		t.Fatalf("%s accepts the invitation: %d %s", first, pg.Status, pg.Body)
	}
	return g
}

// Leaving tells the others; leaving twice is no error; a peer that left
// sends nothing more.
func (c *callScript) leave(t *testing.T) {
	if pg := c.prov.postJSON(c.base+"/leave", `{"peer":"`+c.vj.Peer+`"}`); pg.Status != 204 {
		t.Fatalf("leave: %d %s", pg.Status, pg.Body)
	}
	_, sg := nextSignal(t, c.events)
	for sg.Type == "join" { // the third and fourth pages
		_, sg = nextSignal(t, c.events)
	}
	if sg.Type != "leave" || sg.From != c.vj.Peer {
		t.Fatalf("after the provider left: %+v", sg)
	}
	if pg := c.prov.postJSON(c.base+"/leave", `{"peer":"`+c.vj.Peer+`"}`); pg.Status != 204 {
		t.Fatalf("leave again: %d %s", pg.Status, pg.Body)
	}
	if pg := c.prov.postJSON(c.base+"/signal", c.offer); pg.Status != 409 {
		t.Fatalf("a signal from a peer that left: %d %s", pg.Status, pg.Body)
	}
}

// The patient may not end the visit; the provider may, which ends the
// call: the stream says so with the visit's status, and a join is 409.
func (c *callScript) providerEnds(t *testing.T) {
	if pg := c.pat.postJSON(c.base+"/end", "{}"); pg.Status != 403 {
		t.Fatalf("the patient ends the visit: %d %s", pg.Status, pg.Body)
	}
	if pg := c.prov.postJSON(c.base+"/end", "{}"); pg.Status != 200 || !strings.Contains(pg.Body, "completed") {
		t.Fatalf("the provider ends the visit: %d %s", pg.Status, pg.Body)
	}
	ev := c.events.Next(t)
	var end streamEnded
	if ev.Name == "ended" {
		ev.Decode(t, &end)
	}
	if diff := cmp.Diff(streamEnded{Code: clinic.EConflict, Status: "completed"}, end); ev.Name != "ended" || diff != "" {
		t.Fatalf("the patient's stream after the end: %s (-want +got):\n%s", ev.Name, diff)
	}
	if pg, _ := c.pat.join(t, c.f); pg.Status != 409 {
		t.Fatalf("join a completed visit: %d %s", pg.Status, pg.Body)
	}
}

// TestCall_GuestInvite: the visit's provider makes a one-time link; a
// guest who opens it gives a name, is signed in as a new guest, and joins
// the call, and only the call: the visit page and its thread stay closed
// to them. The link works once, for two hours, in its own clinic.
func TestCall_GuestInvite(t *testing.T) {
	f := newFixture(t)
	f.accept(t)
	pat, prov := newBrowser(t, f.e), newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, f.visitPath(), nil)
	f.redirectLogin(t, prov, f.providerToken, f.visitPath(), nil)
	if pg := pat.postJSON(f.visitPath()+"/call/invite", "{}"); pg.Status != 403 {
		t.Fatalf("the patient invites: %d %s", pg.Status, pg.Body)
	}
	link := invite(t, f, prov)

	guest := newBrowser(t, f.e)
	if pg := guest.get(link); pg.Status != 200 || !strings.Contains(pg.Body, `name="first_name"`) {
		t.Fatalf("the invitation page: %d %s", pg.Status, pg.Body)
	}
	if pg := guest.post(link, url.Values{"first_name": {""}, "last_name": {"Only"}}); pg.Status != 400 || !strings.Contains(pg.Body, "first and last name") {
		t.Fatalf("no first name: %d", pg.Status)
	}
	pg := guest.post(link, url.Values{"first_name": {"Ines"}, "last_name": {"Interpreter"}})
	if pg.Status != 303 || pg.Location != "/visits/call/"+itoa(f.visitID) {
		t.Fatalf("accept: %d %q %s", pg.Status, pg.Location, pg.Body)
	}
	if pg := guest.get(pg.Location); pg.Status != 200 || !strings.Contains(pg.Body, `data-role="guest"`) || strings.Contains(pg.Body, "It is worse at night") {
		t.Fatalf("the guest's call page: %d %s", pg.Status, pg.Body)
	}
	if pg, j := guest.join(t, f); pg.Status != 200 || j.Role != "guest" {
		t.Fatalf("the guest joins: %d %s", pg.Status, pg.Body)
	}
	// The call, and nothing else of the visit.
	if pg := guest.get(f.visitPath()); pg.Status != 404 || strings.Contains(pg.Body, "It is worse at night") || strings.Contains(pg.Body, "A cough") {
		t.Fatalf("the guest opens the visit page: %d", pg.Status)
	}
	if pg := guest.post(f.visitPath()+"/messages", url.Values{"content": {"hello"}}); pg.Status != 403 {
		t.Fatalf("the guest writes to the thread: %d", pg.Status)
	}
	if pg := guest.postJSON(f.visitPath()+"/call/invite", "{}"); pg.Status != 403 {
		t.Fatalf("the guest invites: %d %s", pg.Status, pg.Body)
	}

	// Once only; not from another clinic's address; not after two hours.
	if pg := newBrowser(t, f.e).post(link, url.Values{"first_name": {"Second"}, "last_name": {"Try"}}); pg.Status != 404 || !strings.Contains(pg.Body, "used or has expired") ||
		strings.Contains(pg.Body, "Go to your visits") {
		t.Fatalf("a used link (to someone with no visits to go to): %d %s", pg.Status, pg.Body)
	}
	f.e.NewClinic("other", true)
	link2 := invite(t, f, prov)
	if pg := newBrowser(t, f.e).get(strings.Replace(link2, "/acme/", "/other/", 1)); pg.Status != 404 {
		t.Fatalf("the link under another clinic: %d", pg.Status)
	}
	f.e.Clock.Advance(calls.InviteTTL + time.Second)
	if pg := newBrowser(t, f.e).get(link2); pg.Status != 404 {
		t.Fatalf("an expired link: %d", pg.Status)
	}
}

// TestCall_RecordingConsent: the provider's page keeps a recording only
// when everyone in the call agreed to its notice; only the provider sends
// one; it lands with the visit's recordings, naming who took part.
func TestCall_RecordingConsent(t *testing.T) {
	f := newFixture(t)
	bg := context.Background()
	f.accept(t)
	pat, prov := newBrowser(t, f.e), newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, f.visitPath(), nil)
	f.redirectLogin(t, prov, f.providerToken, f.visitPath(), nil)
	_, pj := pat.join(t, f)
	_, vj := prov.join(t, f)
	base := f.visitPath() + "/call"
	signal := func(b *browser, from, to, typ, data string) int64 {
		t.Helper()
		pg := b.postJSON(base+"/signal", `{"peer":"`+from+`","to":"`+to+`","type":"`+typ+`","data":`+data+`}`)
		var out struct{ Seq int64 }
		if pg.Status != 200 || json.Unmarshal([]byte(pg.Body), &out) != nil || out.Seq == 0 {
			t.Fatalf("%s: %d %s", typ, pg.Status, pg.Body)
		}
		return out.Seq
	}
	upload := func(b *browser, peer string, request int64) *page {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", "call.webm")
		fw.Write([]byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x84webm\x42\x87\x81\x04\x42\x85\x81\x02"))
		for k, v := range map[string]string{"start": "1772442000", "end": "1772442060", "peer": peer, "request": itoa(request)} {
			mw.WriteField(k, v)
		}
		mw.Close()
		return b.send("POST", base+"/recording", &body, map[string]string{"Content-Type": mw.FormDataContentType(), "Sec-Fetch-Site": "same-origin"})
	}
	req := signal(prov, vj.Peer, "", "record", `{"name":"Grace Hopper"}`)
	if pg := upload(pat, pj.Peer, req); pg.Status != 403 {
		t.Fatalf("the patient sends a recording: %d %s", pg.Status, pg.Body)
	}
	if pg := upload(prov, vj.Peer, req); pg.Status != 409 || !strings.Contains(pg.Body, "Ada Lovelace has not agreed") {
		t.Fatalf("no answer yet: %d %s", pg.Status, pg.Body)
	}
	signal(pat, pj.Peer, vj.Peer, "consent", `{"agree":false}`)
	if pg := upload(prov, vj.Peer, req); pg.Status != 409 {
		t.Fatalf("the patient said no: %d %s", pg.Status, pg.Body)
	}
	signal(pat, pj.Peer, vj.Peer, "consent", `{"agree":true}`)
	if pg := upload(prov, vj.Peer, req-1); pg.Status != 400 {
		t.Fatalf("request names another signal: %d %s", pg.Status, pg.Body)
	}
	pg := upload(prov, vj.Peer, req)
	if pg.Status != 200 || !strings.Contains(pg.Body, `"content_type":"video/webm"`) {
		t.Fatalf("with consent: %d %s", pg.Status, pg.Body)
	}
	recs, err := f.e.Store.Read().RecordingsOfVisits(bg, f.user(t, f.p1Token).Account.ID, []int64{f.visitID})
	if err != nil || len(recs[f.visitID]) != 1 {
		t.Fatalf("the visit's recordings: %+v, %v", recs, err)
	}
	r := recs[f.visitID][0]
	if len(r.Participants) != 2 || r.Participants[1].FirstName != "Ada" || r.Size == 0 {
		t.Fatalf("recording %+v", r)
	}
}

// TestCall_Concurrent: eight pages of one person joining at once leave
// them one seat; eight people joining one call at once get exactly four
// seats; and eight people accepting one invitation at once let
// exactly one guest in (and leave no other guest user behind).
func TestCall_Concurrent(t *testing.T) {
	f := newFixture(t)
	f.accept(t)
	prov := newBrowser(t, f.e)
	f.redirectLogin(t, prov, f.providerToken, f.visitPath(), nil)
	statuses := func(n int, do func() int) map[int]int {
		var mu sync.Mutex
		var wg sync.WaitGroup
		out := map[int]int{}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := do()
				mu.Lock()
				out[st]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return out
	}
	// Eight pages of one person at once: each takes the seat over from
	// the one before, and the person has one seat in the end.
	got := statuses(8, func() int { pg, _ := prov.join(t, f); return pg.Status })
	peers, err := f.e.Store.Read().CallPeers(context.Background(), f.key.Account.ID, f.visitID, 0)
	if got[200] != 8 || err != nil || len(peers) != 1 {
		t.Fatalf("eight joins of the provider at once: %v, then peers %+v (%v)", got, peers, err)
	}
	// The provider and seven guests: eight people, four seats.
	people := []*browser{prov}
	for i := range 7 {
		people = append(people, guestIn(t, f, prov, "Guest"+itoa(int64(i))))
	}
	var next atomic.Int32
	got = statuses(8, func() int { pg, _ := people[next.Add(1)-1].join(t, f); return pg.Status })
	if got[200] != calls.MaxPeers || got[409] != 8-calls.MaxPeers {
		t.Fatalf("eight people joining at once: %v", got)
	}

	link := invite(t, f, prov)
	guestsBefore := countUsers(t, f, clinic.UserGuest)
	got = statuses(8, func() int {
		return newBrowser(t, f.e).post(link, url.Values{"first_name": {"Same"}, "last_name": {"Link"}}).Status
	})
	if got[303] != 1 || got[404] != 7 {
		t.Fatalf("eight acceptances of one link: %v", got)
	}
	if n := countUsers(t, f, clinic.UserGuest); n != guestsBefore+1 {
		t.Fatalf("%d guest users after one acceptance, had %d", n, guestsBefore)
	}
}

// invite is the provider's (signed in on b) one-time link for a guest,
// as a path on the test server.
func invite(t *testing.T, f *fixture, b *browser) string {
	t.Helper()
	pg := b.postJSON(f.visitPath()+"/call/invite", "{}")
	var out struct{ URL string }
	if pg.Status != 200 || json.Unmarshal([]byte(pg.Body), &out) != nil || !strings.HasPrefix(out.URL, "https://portal.teleclinic.test/invite/acme/") {
		t.Fatalf("invite: %d %s", pg.Status, pg.Body)
	}
	return strings.TrimPrefix(out.URL, "https://portal.teleclinic.test")
}

func countUsers(t *testing.T, f *fixture, typ int) int {
	t.Helper()
	var n int
	if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT COUNT(*) FROM users WHERE type = ?"), typ).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCall_OnePeerPerPerson: a person's second page (another tab, or a
// reload whose leave was lost) takes their seat over: the first page's
// stream is told it was replaced and ends, the others see the first peer
// leave and the new one join, and the first peer can no longer signal.
func TestCall_OnePeerPerPerson(t *testing.T) {
	// With a keep-alive every few milliseconds, the peer's keep-alive
	// check meets the replacement before, with and after its "replaced"
	// is read: the page is told in every order.
	for _, keep := range []time.Duration{200 * time.Millisecond, 2 * time.Millisecond} {
		t.Run(keep.String(), func(t *testing.T) { testOnePeerPerPerson(t, keep) })
	}
}

func testOnePeerPerPerson(t *testing.T, keep time.Duration) {
	f := newFixture(t, testenv.Options{KeepAlive: keep})
	f.accept(t)
	pat, prov := newBrowser(t, f.e), newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, f.visitPath(), nil)
	f.redirectLogin(t, prov, f.providerToken, f.visitPath(), nil)
	base := f.visitPath() + "/call"
	_, first := pat.join(t, f)
	firstEvents := pat.stream(t, base+"/events?peer="+first.Peer+"&after="+itoa(first.After), nil)
	_, vj := prov.join(t, f)
	provEvents := prov.stream(t, base+"/events?peer="+vj.Peer+"&after="+itoa(vj.After), nil)
	if _, sg := nextSignal(t, firstEvents); sg.Type != "join" || sg.From != vj.Peer {
		t.Fatalf("the patient's first page: %+v", sg)
	}

	pg, second := pat.join(t, f)
	if pg.Status != 200 || second.Peer == first.Peer || len(second.Peers) != 1 || second.Peers[0].Peer != vj.Peer {
		t.Fatalf("the second page's join: %d %s", pg.Status, pg.Body)
	}
	if _, sg := nextSignal(t, firstEvents); sg.Type != "replaced" || sg.From != second.Peer {
		t.Fatalf("the first page is told: %+v", sg)
	}
	if ev := firstEvents.Next(t); ev.Name != "ended" {
		t.Fatalf("the first page's stream goes on: %s %s", ev.Name, ev.Data)
	}
	var seen []signal
	for range 2 {
		_, sg := nextSignal(t, provEvents)
		seen = append(seen, signal{From: sg.From, Type: sg.Type})
	}
	if diff := cmp.Diff([]signal{{From: first.Peer, Type: "leave"}, {From: second.Peer, Type: "join"}}, seen); diff != "" {
		t.Fatalf("the provider's stream (-want +got):\n%s", diff)
	}
	if pg := pat.postJSON(base+"/signal", `{"peer":"`+first.Peer+`","to":"`+vj.Peer+`","type":"offer","data":{"sdp":"v=0"}}`); pg.Status != 409 {
		t.Fatalf("a signal from the replaced page: %d %s", pg.Status, pg.Body)
	}
	// Its leave, arriving late, leaves the new page in.
	if pg := pat.postJSON(base+"/leave", `{"peer":"`+first.Peer+`"}`); pg.Status != 204 {
		t.Fatalf("the replaced page's leave: %d %s", pg.Status, pg.Body)
	}
	peers, err := f.e.Store.Read().CallPeers(context.Background(), f.key.Account.ID, f.visitID, 0)
	if err != nil || len(peers) != 2 {
		t.Fatalf("the call's peers: %+v, %v", peers, err)
	}
}

// TestCall_SignalBounds: what one participant can store in a call is
// bounded. A signal is at most calls.MaxSignal bytes; one to a peer
// that is not in the call is refused; a peer's queue holds at most
// calls.MaxQueuedSignals from each sender (then 429 with Retry-After),
// so one cannot shut another out; the call's
// signals go when the visit ends, and the sweep takes old ones.
func TestCall_SignalBounds(t *testing.T) {
	f := newFixture(t)
	f.accept(t)
	pat, prov := newBrowser(t, f.e), newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, "/visits", nil)
	f.redirectLogin(t, prov, f.providerToken, "/visits", nil)
	_, pj := pat.join(t, f)
	_, vj := prov.join(t, f)
	if pj.Peer == "" || vj.Peer == "" {
		t.Fatal("joins failed")
	}
	base := f.visitPath() + "/call"
	signal := func(b *browser, from, to, data string) *page {
		return b.postJSON(base+"/signal", `{"peer":"`+from+`","to":"`+to+`","type":"candidate","data":"`+data+`"}`)
	}
	count := func(where string, args ...any) int {
		var n int
		if err := f.e.Store.DB().QueryRow(f.e.Store.Rebind("SELECT COUNT(*) FROM call_signals WHERE visit_id = ?"+where), append([]any{f.visitID}, args...)...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stored := func() int { return count("") }
	if pg := signal(pat, pj.Peer, vj.Peer, strings.Repeat("a", 60<<10)); pg.Status != 413 {
		t.Errorf("a 60 KiB signal: %d", pg.Status)
	}
	if pg := signal(pat, pj.Peer, vj.Peer, strings.Repeat("a", calls.MaxSignal-100)); pg.Status != 200 {
		t.Errorf("a signal of almost the bound: %d %s", pg.Status, pg.Body)
	}
	if pg := signal(pat, pj.Peer, "no-such-peer", "x"); pg.Status != 409 || !strings.Contains(pg.Body, "not in this call") {
		t.Errorf("a signal to a peer not in the call: %d %s", pg.Status, pg.Body)
	}
	for i := count(" AND to_peer = ?", vj.Peer); i < calls.MaxQueuedSignals; i++ {
		if pg := signal(pat, pj.Peer, vj.Peer, "c"); pg.Status != 200 {
			t.Fatalf("signal %d: %d %s", i, pg.Status, pg.Body)
		}
	}
	pg := signal(pat, pj.Peer, vj.Peer, "c")
	if pg.Status != 429 || pg.Header.Get("Retry-After") == "" {
		t.Fatalf("a signal past the queue's bound: %d %s (Retry-After %q)", pg.Status, pg.Body, pg.Header.Get("Retry-After"))
	}
	if n := count(" AND to_peer = ?", vj.Peer); n != calls.MaxQueuedSignals {
		t.Errorf("stored for the provider: %d", n)
	}
	// The queue is per sender: a guest (an interpreter) the patient's
	// flood would have shut out still reaches the provider.
	inv := prov.postJSON(base+"/invite", "{}")
	link := regexp.MustCompile(`/invite/acme/[0-9a-f]+`).FindString(inv.Body)
	guest := newBrowser(t, f.e)
	if pg := guest.post(link, url.Values{"first_name": {"Ana"}, "last_name": {"Ruiz"}}); pg.Status != 303 {
		t.Fatalf("the guest's invitation: %d %s", pg.Status, pg.Body)
	}
	gj := guest.postJSON(base+"/join", "{}")
	gPeer := regexp.MustCompile(`"peer":"([0-9a-f]+)"`).FindStringSubmatch(gj.Body)
	if gj.Status != 200 || gPeer == nil {
		t.Fatalf("the guest's join: %d %s", gj.Status, gj.Body)
	}
	if pg := signal(guest, gPeer[1], vj.Peer, "c"); pg.Status != 200 {
		t.Errorf("the guest's signal to the provider past the patient's flood: %d %s", pg.Status, pg.Body)
	}
	// The other direction has its own queue.
	if pg := signal(prov, vj.Peer, pj.Peer, "c"); pg.Status != 200 {
		t.Errorf("the provider's signal to the patient: %d %s", pg.Status, pg.Body)
	}
	// The sweep takes signals older than their lifetime.
	f.e.Clock.Advance(11 * time.Minute)
	f.e.App.SweepCallSignals(context.Background())
	if n := stored(); n != 0 {
		t.Errorf("after the sweep: %d signals", n)
	}
	// The end of the visit takes the rest.
	if pg := signal(prov, vj.Peer, pj.Peer, "c"); pg.Status != 200 {
		t.Fatalf("signal: %d %s", pg.Status, pg.Body)
	}
	if pg := prov.postJSON(base+"/end", "{}"); pg.Status != 200 {
		t.Fatalf("end: %d %s", pg.Status, pg.Body)
	}
	if n := stored(); n != 0 {
		t.Errorf("after the visit ended: %d signals", n)
	}
}

// TestCall_TURNThrottled: each join hands out a TURN credential, so joins
// are counted per visit and per client address in the throttle's window:
// past the bound a join is 429 with Retry-After, and gives no credential.
func TestCall_TURNThrottled(t *testing.T) {
	ice := media.Config{TURN: []string{"turn:turn.example:3478"}, Secret: "north"}
	f := newFixture(t, testenv.Options{Config: func(c *app.Config) { c.ICE = ice }})
	f.accept(t)
	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, "/visits", nil)
	join := func(visit int64) *page { return pat.postJSON("/visits/start/"+itoa(visit)+"/call/join", "{}") }
	for i := range 40 {
		if pg := join(f.visitID); pg.Status != 200 || !strings.Contains(pg.Body, "turn:turn.example") {
			t.Fatalf("join %d: %d %s", i+1, pg.Status, pg.Body)
		}
	}
	pg := join(f.visitID)
	if pg.Status != 429 || pg.Header.Get("Retry-After") == "" || strings.Contains(pg.Body, "turn:") {
		t.Fatalf("join 41 of one visit: %d %s (Retry-After %q)", pg.Status, pg.Body, pg.Header.Get("Retry-After"))
	}
	// One address, other visits: 100 joins in the window, then 429.
	bg := context.Background()
	joined := 41 // the refused one counted too
	for joined < 100 {
		v := f.walkin(t, f.p1Token, "Another")
		if _, err := f.e.App.MoveVisit(bg, f.user(t, f.providerToken), v, app.ActAccept, app.MoveInput{}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30 && joined < 100; i++ {
			if pg := join(v); pg.Status != 200 {
				t.Fatalf("join %d from the address: %d %s", joined+1, pg.Status, pg.Body)
			}
			joined++
		}
	}
	v := f.walkin(t, f.p1Token, "One more")
	if _, err := f.e.App.MoveVisit(bg, f.user(t, f.providerToken), v, app.ActAccept, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
	if pg := join(v); pg.Status != 429 {
		t.Fatalf("join 101 from one address: %d %s", pg.Status, pg.Body)
	}
	// The window passes.
	f.e.Clock.Advance(16 * time.Minute)
	if pg := join(v); pg.Status != 200 {
		t.Fatalf("a join after the window: %d %s", pg.Status, pg.Body)
	}
}

// TestPortal_StreamLimits: the portal's streams share the API's bounds:
// one session's second page stream past its bound is 429 with
// Retry-After, and the visit's page still draws.
func TestPortal_StreamLimits(t *testing.T) {
	f := newFixture(t, testenv.Options{Streams: live.NewLimits(1, -1, -1)})
	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, "/visits", nil)
	if st := pat.stream(t, f.visitPath()+"/events", nil); st.Status != 200 {
		t.Fatalf("the page's stream: %d", st.Status)
	}
	st := pat.stream(t, f.visitPath()+"/events", nil)
	if st.Status != 429 || st.Header.Get("Retry-After") == "" {
		t.Fatalf("a second stream of one session: %d (Retry-After %q)", st.Status, st.Header.Get("Retry-After"))
	}
	if pg := pat.get(f.visitPath()); pg.Status != 200 {
		t.Fatalf("the page: %d", pg.Status)
	}
}

// TestPortal_CallRelayCheck: the device check's relay test follows the
// join's rules: nothing before a provider has the visit (409), nothing
// for someone outside it (404), and, once taken, the ICE servers a join
// would get (none here: this server has no relay).
func TestPortal_CallRelayCheck(t *testing.T) {
	f := newFixture(t)
	pat := newBrowser(t, f.e)
	f.redirectLogin(t, pat, f.p1Token, f.visitPath(), nil)
	relay := f.visitPath() + "/call/relay"
	if pg := pat.postJSON(relay, "{}"); pg.Status != 409 {
		t.Fatalf("before a provider has the visit: %d %s", pg.Status, pg.Body)
	}
	f.accept(t)
	other := newBrowser(t, f.e)
	f.redirectLogin(t, other, f.p2Token, "/visits", nil)
	if pg := other.postJSON(relay, "{}"); pg.Status != 404 && pg.Status != 403 {
		t.Fatalf("another patient: %d %s", pg.Status, pg.Body)
	}
	pg := pat.postJSON(relay, "{}")
	if pg.Status != 200 || !strings.Contains(pg.Body, `"ice_servers":[]`) {
		t.Fatalf("the visit's patient: %d %s", pg.Status, pg.Body)
	}
}

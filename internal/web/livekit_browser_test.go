//go:build browser

package web_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/media"
	"teleclinic/internal/testenv"
)

// TestBrowser_CallLiveKit: in a browser, the visit page's Join connects to
// the configured LiveKit address with the token of the visit's room. A
// stand-in for the LiveKit server (testenv) records what the page presents.
func TestBrowser_CallLiveKit(t *testing.T) {
	browser := chrome(t)
	sfu := testenv.NewLiveKitStandIn(t)
	lk := sfu.Config()
	f := newFixture(t, testenv.Options{Clock: testenv.ClockAt(time.Now()), Config: func(c *app.Config) { c.LiveKit = lk }})
	f.accept(t)
	patient := separate(t, browser)
	openVisit(t, patient, f.e.URL, f.p1Token, f.visitID)
	mode, err := chromedp.Run(patient, chromedp.Evaluate[string](`window.teleclinicCall.mode + "/" + typeof window.LivekitClient`))
	if err != nil || mode != "livekit/object" {
		t.Fatalf("page mode %q: %v", mode, err)
	}
	if err := chromedp.Do(patient, chromedp.Click(chromedp.CSS("#call-join"))); err != nil {
		t.Fatal(err)
	}
	var got string
	for end := time.Now().Add(10 * time.Second); got == "" && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if toks := sfu.Tokens(); len(toks) > 0 {
			got = toks[0]
		}
	}
	if got == "" {
		status, _ := chromedp.Run(patient, chromedp.Text(chromedp.CSS("#call-status")))
		t.Fatalf("the page did not connect to LiveKit within 10 s (status %q)", status)
	}
	checkRoomToken(t, got, "acme-visit-"+itoa(f.visitID), f.user(t, f.p1Token).User.SvcID)
	// The stand-in refuses; the page says the call could not start.
	waitText(t, patient, "#call-status", "could not")
}

// TestBrowser_CallThroughLiveKit: a call through a running LiveKit server
// (built by .ci/run; skipped without one). The patient and the provider
// join; each receives the other's video and sound through the SFU; a
// recording is asked for, refused, asked again, agreed to and saved; a
// guest invited by the provider joins and all three receive the two
// others; when everyone has left, LiveKit closes the room and reports it
// to the server's webhook, which completes the visit. The call's set-up
// time (Join to the first remote frame) is logged beside the P2P figure.
func TestBrowser_CallThroughLiveKit(t *testing.T) {
	var lk *testenv.LiveKitServer
	f := newFixture(t, testenv.Options{PortalHere: true, Clock: testenv.ClockAt(time.Now()), LiveKit: func(base string) media.LiveKit {
		lk = testenv.StartLiveKit(t, base)
		c := lk.LiveKit
		c.Departure = 2 * time.Second
		return c
	}})
	browser := chrome(t)
	f.accept(t)
	patient, provider := visitPages(t, browser, f, f.e.URL)
	mode, err := chromedp.Run(patient, chromedp.Evaluate[string](`window.teleclinicCall.mode`))
	if err != nil || mode != "livekit" {
		t.Fatalf("page mode %q: %v", mode, err)
	}
	joinCall(t, patient)
	joinCall(t, provider)
	waitText(t, provider, "#visit-status", "in progress")
	receiving(t, provider, "the provider")
	receiving(t, patient, "the patient")
	t.Logf("call set-up through LiveKit, Join to the first remote frame: %.0f ms", setupMillis(t, provider))
	// Recording asks everyone first, as peer to peer: the notice and the
	// consents go on the server's call signals; a no keeps nothing, a yes
	// records the call with everyone's sound.
	browserStep(t, provider, "the provider asks to record", chromedp.Click(chromedp.CSS("#call-record")))
	browserStep(t, patient, "the patient declines", chromedp.WaitVisible(chromedp.CSS("#record-consent")),
		chromedp.Click(chromedp.Search(`//dialog[@id="record-consent"]//button[normalize-space()="I do not agree"]`)))
	waitText(t, provider, "#call-status", "did not agree; nothing is recorded")
	browserStep(t, provider, "the provider asks again", chromedp.Click(chromedp.CSS("#call-record")))
	browserStep(t, patient, "the patient agrees", chromedp.WaitVisible(chromedp.CSS("#record-consent")), chromedp.Click(chromedp.CSS("#consent-yes")))
	waitText(t, provider, "#call-status", "the call is being recorded")
	waitText(t, patient, "#rec-indicator", "This call is being recorded")
	time.Sleep(2 * time.Second)
	browserStep(t, provider, "the provider stops the recording", chromedp.Click(chromedp.CSS("#call-record")))
	waitText(t, provider, "#call-status", "is saved with the visit")
	recs, err := f.e.Store.Read().RecordingsOfVisits(context.Background(), f.key.Account.ID, []int64{f.visitID})
	if err != nil || len(recs[f.visitID]) != 1 {
		t.Fatalf("recordings: %+v %v", recs, err)
	}
	if r := recs[f.visitID][0]; r.ContentType != "video/webm" || r.Size < 10000 || len(r.Participants) != 2 {
		t.Fatalf("recording %+v", r)
	}

	var link string
	guest := inviteGuest(t, browser, provider, &link, "Ines", "Interpreter")
	for who, ctx := range map[string]context.Context{"the guest": guest, "the patient": patient, "the provider": provider} {
		receivingFrom(t, ctx, who, 2)
	}
	waitText(t, patient, ".stage", "Ines Interpreter")
	screenshot(t, guest, "call-livekit-guest")

	for _, ctx := range []context.Context{guest, patient, provider} {
		leaveCall(t, ctx)
	}
	// The room closes Departure after the last one left; LiveKit's
	// room_finished, signed with the API secret, ends the visit.
	waitFor(t, "LiveKit's room_finished completes the visit", func() bool {
		v, err := f.e.Store.Read().VisitByID(context.Background(), f.key.Account.ID, f.visitID)
		return err == nil && v.Status == clinic.VisitCompleted
	})
	if !strings.Contains(lk.Log.String(), "room_finished") && testing.Verbose() {
		t.Logf("LiveKit's log:\n%s", lk.Log.String())
	}
}

// TestBrowser_CallSetupTimeLiveKit: the call's set-up time through a
// running LiveKit server, ten times, as TestBrowser_CallSetupTime measures
// it peer to peer: the provider joins the room the patient is in, and the
// time from their Join to the patient's first frame on their page is
// logged (median, min, max). The patient stays, so the room does too.
func TestBrowser_CallSetupTimeLiveKit(t *testing.T) {
	if testing.Short() {
		t.Skip("ten calls")
	}
	f := newFixture(t, testenv.Options{Clock: testenv.ClockAt(time.Now()), LiveKit: func(base string) media.LiveKit {
		return testenv.StartLiveKit(t, base).LiveKit
	}})
	browser := chromeFor(t, 5*time.Minute)
	f.accept(t)
	patient, provider := visitPages(t, browser, f, f.e.URL)
	joinCall(t, patient)
	var times []float64
	for i := range 10 {
		joinCall(t, provider)
		receiving(t, provider, "the provider, call "+strconv.Itoa(i+1))
		times = append(times, setupMillis(t, provider))
		leaveCall(t, provider)
		waitFor(t, "the patient's page sees the provider leave", func() bool {
			n, err := chromedp.Run(patient, chromedp.Evaluate[int](`window.teleclinicCall.peers().length`))
			return err == nil && n == 0
		})
	}
	sort.Float64s(times)
	t.Logf("call set-up through LiveKit, Join to first remote frame, 10 calls: median %.0f ms, min %.0f, max %.0f", (times[4]+times[5])/2, times[0], times[9])
}

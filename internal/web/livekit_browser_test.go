//go:build browser

package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/app"
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

//go:build browser

package web_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/media"
	"teleclinic/internal/testenv"
)

// Group visits: the patient, the provider and guests the provider invites
// (an interpreter, a relative, a second clinician), up to four browser to
// browser (each page sends to every other) and more through LiveKit. The
// page says which.

// newInvite has the provider make a one-time link and returns it; prev is
// the link the provider's page showed before, replaced by the new one.
func newInvite(t *testing.T, provider context.Context, prev *string) string {
	t.Helper()
	// A click lands where the button was: as guests' videos arrive the
	// stage above it grows, and a click made as it moved hits the stage
	// (CI, 2026-11-26: the link stayed the last guest's for 20 s). The
	// provider clicks again then, as a person would.
	for try := 1; ; try++ {
		browserStep(t, provider, "the provider invites a guest", chromedp.Click(chromedp.CSS("#call-invite")), chromedp.WaitVisible(chromedp.CSS("#invite-link")))
		for end := time.Now().Add(stepBudget / 2); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			l, err := chromedp.Run(provider, chromedp.Evaluate[string](`document.getElementById("invite-link").value`))
			if err == nil && l != "" && l != *prev {
				*prev = l
				return l
			}
		}
		if try == 3 {
			status, _ := chromedp.Run(provider, chromedp.Text(chromedp.CSS("#call-status")))
			t.Fatalf("no new invitation link after %d clicks (the page says %q)", try, status)
		}
	}
}

// inviteGuest has the provider make a one-time link, and a new browser
// context open it, give a name, and join the call.
func inviteGuest(t *testing.T, browser, provider context.Context, prev *string, first, last string) context.Context {
	t.Helper()
	guest := separate(t, browser)
	link := newInvite(t, provider, prev)
	// The guest's pages load beside the pages already in the call, each
	// encoding video on the same cores: on CI (2026-11-27) the fourth
	// guest's visit page still said "Asking for your camera and
	// microphone…" at stepBudget, as the mesh's fifth did on 2026-11-26.
	browserStepWithin(t, guest, joinBudget, first+" opens the invitation", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#first_name")))
	browserStepWithin(t, guest, joinBudget, first+" gives a name and continues",
		chromedp.SendKeys(chromedp.CSS("#first_name"), first),
		chromedp.SendKeys(chromedp.CSS("#last_name"), last),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Continue"]`)),
		chromedp.WaitVisible(chromedp.CSS("#call-join")))
	joinCall(t, guest)
	return guest
}

// receivingFrom waits until the page receives video from n others, within
// groupMediaBudget.
func receivingFrom(t *testing.T, ctx context.Context, who string, n int) {
	t.Helper()
	var last []callStats
	for end := time.Now().Add(groupMediaBudget); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]callStats](`window.teleclinicCall.stats()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		last = got
		k := 0
		for _, s := range got {
			if s.VideoBytes > 0 && s.Width > 0 {
				k++
			}
		}
		if k >= n {
			return
		}
	}
	t.Fatalf("%s does not receive video from %d others within %v: %+v", who, n, groupMediaBudget, last)
}

// groupMediaBudget bounds how long a page of a group call may take to
// receive every other person's video. Six Chromium pages encoding fake
// video share two cores with the other packages' suites in CI; on
// 2026-11-26 the patient's page had four of five videos and the fifth's
// sound, not yet its video, at 30 s (mediaBudget), and the whole test
// passed alone in 107 s. A video that never comes still fails here, with
// every peer's bytes in the message. On 2026-11-28 a full CI run on two
// cores had one peer's sound and no video yet at 90 s: the budget is 150 s.
const groupMediaBudget = 150 * time.Second

// TestBrowser_GroupVisitMesh: four people browser to browser, the most
// a mesh takes: each page receives the three others' video; a fifth is
// refused, and the page says the call is full.
func TestBrowser_GroupVisitMesh(t *testing.T) {
	browser := chromeFor(t, 4*time.Minute)
	f := newFixture(t, testenv.Options{PortalHere: true})
	f.accept(t)
	patient, provider := visitPages(t, browser, f, f.e.URL)
	if mode, err := chromedp.Run(patient, chromedp.Text(chromedp.CSS("#call-mode"))); err != nil || !strings.Contains(mode, "Browser to browser") || !strings.Contains(mode, "up to 4 people") {
		t.Fatalf("the page's mode: %q %v", mode, err)
	}
	joinCall(t, patient)
	joinCall(t, provider)
	waitText(t, provider, "#visit-status", "in progress")
	receiving(t, provider, "the provider")
	cpu0 := processCPU(t)
	pages := map[string]context.Context{"the patient": patient, "the provider": provider}
	var link string
	pages["the interpreter"] = inviteGuest(t, browser, provider, &link, "Ines", "Interpreter")
	pages["the daughter"] = inviteGuest(t, browser, provider, &link, "Dora", "Daughter")
	for who, ctx := range pages {
		receivingFrom(t, ctx, who, 3)
	}
	cpu1 := processCPU(t)
	time.Sleep(10 * time.Second)
	cpu2 := processCPU(t)
	for who, ctx := range pages {
		receivingFrom(t, ctx, who, 3)
	}
	t.Logf("mesh of 4: the server's CPU (the test process, the browsers' driving included) %.0f ms to set up the two guests' joins, %.1f ms per second of the held call",
		float64(cpu1-cpu0)/float64(time.Millisecond), float64(cpu2-cpu1)/10/float64(time.Millisecond))
	screenshot(t, patient, "call-group-mesh")

	// A fifth is one too many for the mesh: the join says so. Its page
	// loads beside four pages encoding video: on 2026-11-26 CI had its
	// device check done, and Join not yet shown, at stepBudget.
	fifth := separate(t, browser)
	browserStepWithin(t, fifth, joinBudget, "the fifth opens the invitation", chromedp.Navigate(newInvite(t, provider, &link)), chromedp.WaitVisible(chromedp.CSS("#first_name")),
		chromedp.SendKeys(chromedp.CSS("#first_name"), "Fred"), chromedp.SendKeys(chromedp.CSS("#last_name"), "Fifth"),
		chromedp.Click(chromedp.Search(`//button[normalize-space()="Continue"]`)), chromedp.WaitVisible(chromedp.CSS("#call-join")))
	browserStep(t, fifth, "the fifth presses Join", chromedp.Click(chromedp.CSS("#call-join")))
	waitText(t, fifth, "#call-status", "full")
}

// TestBrowser_GroupVisitLiveKit: six people through a running LiveKit
// server (skipped without one): each page receives the five others'
// video. LiveKit's CPU and memory with the six are logged.
func TestBrowser_GroupVisitLiveKit(t *testing.T) {
	var lk *testenv.LiveKitServer
	f := newFixture(t, testenv.Options{PortalHere: true, Clock: testenv.ClockAt(time.Now()), LiveKit: func(base string) media.LiveKit {
		lk = testenv.StartLiveKit(t, base)
		return lk.LiveKit
	}})
	browser := chromeFor(t, 7*time.Minute)
	f.accept(t)
	patient, provider := visitPages(t, browser, f, f.e.URL)
	if mode, err := chromedp.Run(patient, chromedp.Text(chromedp.CSS("#call-mode"))); err != nil || !strings.Contains(mode, "video server") || !strings.Contains(mode, "up to 12 people") {
		t.Fatalf("the page's mode: %q %v", mode, err)
	}
	joinCall(t, patient)
	joinCall(t, provider)
	waitText(t, provider, "#visit-status", "in progress")
	receiving(t, provider, "the provider")
	pages := map[string]context.Context{"the patient": patient, "the provider": provider}
	var link string
	for i, name := range []string{"Ines", "Dora", "Carl", "Gwen"} {
		pages["guest "+strconv.Itoa(i+1)] = inviteGuest(t, browser, provider, &link, name, "Guest")
	}
	for who, ctx := range pages {
		receivingFrom(t, ctx, who, 5)
	}
	cpu0, rss0 := procStat(t, lk.Pid)
	time.Sleep(10 * time.Second)
	cpu1, rss1 := procStat(t, lk.Pid)
	t.Logf("LiveKit with 6 participants (each sending video and sound to 5): %.0f ms CPU per second, %.0f MB RSS (%.0f MB after 10 s)",
		float64(cpu1-cpu0)/10/float64(time.Millisecond), float64(rss0)/(1<<20), float64(rss1)/(1<<20))
	screenshot(t, patient, "call-group-livekit")
}

// procStat is a process's CPU time so far and its resident memory, from
// /proc.
func procStat(t *testing.T, pid int) (time.Duration, int64) {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	rssPages, _ := strconv.ParseInt(f[21], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / hz, rssPages * int64(os.Getpagesize())
}

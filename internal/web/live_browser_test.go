//go:build browser

package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// typed is what a person has put into a page: the values of some
// controls, the control they are in and its selection.
type typed struct {
	Values   map[string]string `json:"values"`
	Focus    string            `json:"focus"`
	SelStart int               `json:"selStart"`
	SelEnd   int               `json:"selEnd"`
}

// readTyped reads ids' values, the focus and the selection of the page in
// ctx.
func readTyped(t *testing.T, ctx context.Context, ids ...string) typed {
	t.Helper()
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.Quote(id)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[typed](`(function () {
		var out = { values: {}, focus: "", selStart: -1, selEnd: -1 };
		[`+strings.Join(q, ",")+`].forEach(function (id) {
			var el = document.getElementById(id);
			out.values[id] = el ? el.value : "(gone)";
		});
		var a = document.activeElement;
		if (a && a !== document.body) {
			out.focus = a.id;
			if (typeof a.selectionStart === "number") { out.selStart = a.selectionStart; out.selEnd = a.selectionEnd; }
		}
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// typeInto types text into the field of id as a person does (key events).
// A field in a region that a redraw replaced between chromedp finding it
// and typing is looked up again (as clickLive does): the refusal comes
// before any key is sent.
func typeInto(t *testing.T, ctx context.Context, id, text string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		step, cancel := context.WithTimeout(ctx, stepBudget)
		err := chromedp.Do(step, chromedp.SendKeys(chromedp.CSS("#"+id), text))
		cancel()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || time.Now().After(end) {
			t.Fatalf("typing into #%s: %v", id, err)
		}
	}
}

// selectIn focuses id and selects from..to in it.
func selectIn(t *testing.T, ctx context.Context, id string, from, to int) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () { var el = document.getElementById(`+strconv.Quote(id)+`);
		el.focus(); el.setSelectionRange(`+strconv.Itoa(from)+`, `+strconv.Itoa(to)+`); return true; })()`)); err != nil {
		t.Fatal(err)
	}
}

// keeps fails t when the page no longer holds what the person typed.
func keeps(t *testing.T, after string, want, got typed) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("after %s the page lost what was typed (-before +after):\n%s", after, d)
	}
}

// suggests waits until the note's diagnosis search, given q, has asked the
// server again and lists code.
func suggests(t *testing.T, ctx context.Context, q, code string) {
	t.Helper()
	before, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.teleclinicNote ? window.teleclinicNote.asked : -1`))
	if err != nil {
		t.Fatal(err)
	}
	typeInto(t, ctx, "dx-search", q)
	waitFor(t, "the code search asks the server for "+q, func() bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.teleclinicNote ? window.teleclinicNote.asked : -1`))
		return err == nil && n > before
	})
	waitFor(t, "the code search suggests "+code, func() bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#dx-options option[value=`+strconv.Quote(code)+`]').length`))
		return err == nil && n == 1
	})
}

// TestBrowser_LiveRedrawKeepsInput: the portal's rule for live redraws,
// on every form that shares a page with a live region. A provider writes
// the visit note and half a message while every kind of event redraws the
// page around them (a message from the patient, their own message sent in
// place, the visit's status, their own draft saved): each field keeps what
// was typed, the field they are in keeps the focus and the caret, the
// call's controls stay the same elements, and the diagnosis search still
// asks the server after each redraw. A patient in the waiting room typing
// a message keeps it as the queue moves; a provider filling the
// dashboard's slot form keeps it as patients arrive.
func TestBrowser_LiveRedrawKeepsInput(t *testing.T) {
	browser := chrome(t)
	f := newFixture(t)
	bg := context.Background()
	f.accept(t)
	prov := f.user(t, f.providerToken)
	p1 := f.user(t, f.p1Token)
	patientSays := func(msg string) {
		t.Helper()
		if _, err := f.e.App.PostMessage(bg, p1, f.visitID, app.NewMessage{Content: &msg}); err != nil {
			t.Fatal(err)
		}
	}

	provider := separate(t, browser)
	openVisit(t, provider, f.e.URL, f.providerToken, f.visitID)
	markPage(t, provider)
	if _, err := chromedp.Run(provider, chromedp.Evaluate[bool](`document.getElementById("call").teleclinicMark = true`)); err != nil {
		t.Fatal(err)
	}
	note := []string{"subjective", "objective", "assessment", "plan", "patient_summary", "dx-text", "content"}
	typeInto(t, provider, "subjective", "Blocked nose for 10 days.")
	typeInto(t, provider, "assessment", "Acute sinusitis.")
	typeInto(t, provider, "dx-text", "R51.9")
	typeInto(t, provider, "content", "Could you also")
	typeInto(t, provider, "plan", "Saline rinses.")
	selectIn(t, provider, "plan", 0, 6)
	want := readTyped(t, provider, note...)
	if want.Focus != "plan" || want.Values["subjective"] != "Blocked nose for 10 days." {
		t.Fatalf("the fields as typed: %+v", want)
	}

	// 1. A message from the patient redraws the thread.
	patientSays("It hurts when I bend down.")
	waitText(t, provider, "#visit-thread", "It hurts when I bend down.")
	keeps(t, "the patient's message", want, readTyped(t, provider, note...))

	// 2. The visit's status changes: the status line is redrawn.
	if _, err := f.e.App.MoveVisit(bg, prov, f.visitID, app.ActInProgress, app.MoveInput{}); err != nil {
		t.Fatal(err)
	}
	waitText(t, provider, "#visit-status", "in progress")
	keeps(t, "the status change", want, readTyped(t, provider, note...))

	// 3. The provider finishes the message and sends it in place: the
	// thread is redrawn with it, the message box empties, the note stays.
	typeInto(t, provider, "content", " send a photo?")
	press(t, provider, "Send")
	waitText(t, provider, "#visit-thread", "Could you also send a photo?")
	waitFor(t, "the message box empties", func() bool {
		return readTyped(t, provider, "content").Values["content"] == ""
	})
	got := readTyped(t, provider, note...)
	want.Values["content"], want.Focus, want.SelStart, want.SelEnd = "", got.Focus, got.SelStart, got.SelEnd
	keeps(t, "sending a message", want, got)

	// 4. The diagnosis search still works, and its choice survives events.
	suggests(t, provider, "acute sinusitis", "J01.90")
	browserStep(t, provider, "pick the first suggestion",
		chromedp.SendKeys(chromedp.CSS("#dx-search"), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`#dx-chosen input[value="J01.90"]`)))
	patientSays("Thank you.")
	waitText(t, provider, "#visit-thread", "Thank you.")
	if n, err := chromedp.Run(provider, chromedp.Evaluate[int](`document.querySelectorAll('#dx-chosen input[value="J01.90"]:checked').length`)); err != nil || n != 1 {
		t.Fatalf("the chosen diagnosis after a message: %d (%v)", n, err)
	}

	// 5. The draft is saved: the note's section is redrawn from what was
	// stored, the search asks again in the new section, and what is typed
	// after the save survives the next event.
	press(t, provider, "Save draft")
	waitText(t, provider, "main", "The note is saved as a draft.")
	n, err := f.e.App.VisitNote(bg, prov, f.visitID)
	if err != nil || n.Subjective != "Blocked nose for 10 days." || n.Assessment != "Acute sinusitis." || n.Plan != "Saline rinses." || len(n.Diagnoses) != 2 {
		t.Fatalf("the saved draft: %+v %v", n, err)
	}
	suggests(t, provider, "otitis media", "H66.90")
	typeInto(t, provider, "objective", "Tender maxillary sinuses.")
	want = readTyped(t, provider, note...)
	patientSays("Will do.")
	waitText(t, provider, "#visit-thread", "Will do.")
	keeps(t, "a message after the save", want, readTyped(t, provider, note...))
	stillMarked(t, provider, "the provider")
	if same, err := chromedp.Run(provider, chromedp.Evaluate[bool](`document.getElementById("call").teleclinicMark === true`)); err != nil || !same {
		t.Fatalf("the call's section was replaced by a redraw (%v)", err)
	}
	screenshot(t, provider, "live-redraw-note")

	// 6. A patient waits behind another and types a message; the queue
	// moves (the one ahead is started): "You are next", the message kept.
	first := f.walkin(t, f.p2Token, "A rash")
	waiting := f.walkin(t, f.p1Token, "A sore throat")
	patient := separate(t, browser)
	openVisit(t, patient, f.e.URL, f.p1Token, waiting)
	waitText(t, patient, "#visit-live", "1 patient before you")
	typeInto(t, patient, "content", "I also have a fever")
	selectIn(t, patient, "content", 2, 6)
	wantPatient := readTyped(t, patient, "content")
	for _, act := range []string{app.ActAccept, app.ActInProgress} {
		if _, err := f.e.App.MoveVisit(bg, prov, first, act, app.MoveInput{}); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, patient, "#visit-live", "You are next.")
	keeps(t, "the queue moving", wantPatient, readTyped(t, patient, "content"))

	// 7. The dashboard: the slot form half filled, the focus in it, as a
	// patient arrives (the waiting room is redrawn).
	dash := separate(t, browser)
	browserStep(t, dash, "open the dashboard",
		chromedp.Navigate(f.e.URL+"/auth?sso_token="+f.providerToken+"&next=/providers/dashboard"),
		chromedp.WaitVisible(chromedp.CSS("#dashboard-live")))
	if _, err := chromedp.Run(dash, chromedp.Evaluate[bool](`(function () {
		document.getElementById("slot-length").value = "20";
		document.getElementById("slot-start").value = "14:00";
		document.getElementById("slot-from").value = "2030-01-07";
		document.getElementById("slot-length").focus();
		return true; })()`)); err != nil {
		t.Fatal(err)
	}
	slots := []string{"slot-from", "slot-start", "slot-end", "slot-length"}
	wantDash := readTyped(t, dash, slots...)
	f.walkin(t, f.sso(t, clinic.UserMember, "pat-3", "Alan", "Turing"), "A headache")
	waitText(t, dash, "#dashboard-live", "Alan Turing")
	keeps(t, "a patient's arrival", wantDash, readTyped(t, dash, slots...))
	// The focus on a button inside the redrawn region stays on it.
	startID := "start-" + strconv.FormatInt(waiting, 10)
	if _, err := chromedp.Run(dash, chromedp.Evaluate[bool](`(function () { document.getElementById(`+strconv.Quote(startID)+`).focus(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	f.walkin(t, f.sso(t, clinic.UserMember, "pat-4", "Ada", "Byron"), "A cough")
	waitText(t, dash, "#dashboard-live", "Ada Byron")
	if got := readTyped(t, dash).Focus; got != startID {
		t.Fatalf("the dashboard's redraw moved the focus from %s to %q", startID, got)
	}
}

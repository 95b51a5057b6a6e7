//go:build browser

package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The browser tests check the pages they reach with axe-core, the
// accessibility engine of browsers' own audits, from npm (.ci/run installs
// it and names it in TELECLINIC_AXE). Without it the check is skipped,
// saying so; CI always has it.

// axeSource is axe.min.js, or "" when there is none.
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("TELECLINIC_AXE")
	if path == "" {
		t.Log("accessibility check skipped: TELECLINIC_AXE does not name axe.min.js (npm install axe-core)")
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("TELECLINIC_AXE: %v", err)
	}
	return string(b)
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []string `json:"target"`
	} `json:"nodes"`
}

// checkA11y runs axe-core on the page ctx shows (WCAG 2 A and AA rules)
// and fails t for each serious or critical violation.
func checkA11y(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	fitsScreen(t, ctx, page)
	src := axeSource(t)
	if src == "" {
		return
	}
	// Evaluated through the DevTools protocol, which the page's CSP does
	// not govern: the pages themselves load no script from elsewhere.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+";true")); err != nil {
		t.Fatalf("%s: loading axe: %v", page, err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}).then(r => JSON.stringify(r.violations))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: axe: %v", page, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("%s: axe answer: %v", page, err)
	}
	for _, v := range vs {
		if v.Impact != "serious" && v.Impact != "critical" {
			continue
		}
		var where []string
		for _, n := range v.Nodes {
			where = append(where, strings.Join(n.Target, " "))
		}
		t.Errorf("%s: accessibility (%s) %s: %s at %s", page, v.Impact, v.ID, v.Help, strings.Join(where, ", "))
	}
}

// screenshot saves the page ctx shows as name.png in the directory
// TELECLINIC_SCREENSHOTS names (the README's pictures are taken so); it
// does nothing without one.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("TELECLINIC_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fitsScreen fails t when the page is wider than the browser's phone-sized
// window (a table may scroll inside its own box), naming what sticks out.
func fitsScreen(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const w = document.documentElement.clientWidth, wide = [];
		for (const el of document.querySelectorAll("body *")) {
			if (el.parentElement && el.parentElement.closest(".table-scroll")) continue;
			const r = el.getBoundingClientRect();
			if (r.right > w + 1) wide.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : "") + " " + Math.round(r.right) + "px");
		}
		if (document.documentElement.scrollWidth > w + 1) wide.push("the page scrolls sideways: " + document.documentElement.scrollWidth + "px in " + w + "px");
		return wide.slice(0, 5);
	})()`))
	if err != nil {
		t.Fatalf("%s: measuring: %v", page, err)
	}
	if len(out) > 0 {
		t.Errorf("%s: wider than the screen: %s", page, strings.Join(out, ", "))
	}
}

//go:build browser

package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"teleclinic/internal/testenv"
)

// TestBrowser_Docs: /docs draws the API reference from /openapi.yaml in a
// real browser under its own policy: the title, the conventions, the
// licence and the sections of the tags are on the page.
func TestBrowser_Docs(t *testing.T) {
	browser := chrome(t)
	e := testenv.New(t)
	ctx := separate(t, browser)
	browserStep(t, ctx, "open /docs", chromedp.Navigate(e.URL+"/docs"))
	var text string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := chromedp.Run(c, chromedp.Evaluate[string](`document.body.innerText + " | sections " + document.querySelectorAll("[data-section-id]").length + " | " + Array.from(document.querySelectorAll("[data-section-id]")).slice(0, 8).map(e => e.getAttribute("data-section-id")).join(",")`))
		cancel()
		if err == nil {
			text = got
		}
		// Redoc draws the operations as they scroll into view; the
		// sections of every tag are there at once.
		if strings.Contains(text, "Teleclinic API") && strings.Contains(text, "Conventions") && strings.Contains(text, "Apache-2.0") &&
			strings.Contains(text, "/users,") && strings.Contains(text, "/visits") {
			// Redoc scrolls inside its own container, so the picture is
			// of the window, not the whole page.
			if dir := os.Getenv("TELECLINIC_SCREENSHOTS"); dir != "" {
				png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "docs.png"), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return
		}
	}
	t.Fatalf("/docs did not draw the reference; the page says (%d chars): %.300q … %q", len(text), text, text[max(0, len(text)-300):])
}

package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"teleclinic/internal/app"
)

// TestSlots_ListTurns: of many concurrent requests to a slot-list route, no
// more than MaxSlotLists run at once, and every one is answered.
func TestSlots_ListTurns(t *testing.T) {
	const turns, clients = 2, 24
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), mux: http.NewServeMux(), lists: make(chan struct{}, turns)}
	var running, most atomic.Int32
	s.handleSlotList("GET", "/list", app.NeedNone, famCode, func(w http.ResponseWriter, r *http.Request, c *call) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond) // long enough for the others to pile up
		return ok(w, []int{1, 2, 3})
	})
	s.handler = http.HandlerFunc(s.serve)
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			res, err := http.Get(srv.URL + "/list")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	if m := most.Load(); m < 1 || m > turns {
		t.Fatalf("%d ran at once; the bound is %d", m, turns)
	}
}

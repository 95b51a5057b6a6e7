package httpapi_test

import (
	"bytes"
	"fmt"
	"image"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/imaging"
	"teleclinic/internal/testenv"
)

// TestFiles_ResizeBounded: resizes share a memory budget; past it, with
// no room within the wait, a resize answers 503 with Retry-After instead of
// decoding; a resized image is kept per file and size, so asking again
// needs neither the budget nor the file.
func TestFiles_ResizeBounded(t *testing.T) {
	t.Parallel()
	blobs := filepath.Join(t.TempDir(), "blobs")
	// Room for one decode of the picture at a time, and almost no wait.
	e := testenv.New(t, testenv.Options{BlobDir: blobs, Config: func(c *app.Config) {
		c.ResizeMemory = imaging.MemoryFor(1500, 1500, 64, 64) + 1<<20
		c.ResizeWait = time.Millisecond
	}})
	s := newClinicSetup(t, e, "alpha")
	f := mustUpload(t, e, s.c, s.pat.Token, "scan.png", pngBytes(t, 1500, 1500))
	link := f.Fullpath
	if link == "" {
		t.Fatalf("%+v", f)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := view(t, e, link, "size", fmt.Sprintf("%dx%d", 40+i, 40+i)) // distinct sizes: none is cached
			mu.Lock()
			defer mu.Unlock()
			got[res.Status]++
			if res.Status == 503 && res.Header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
		}()
	}
	wg.Wait()
	if got[200] == 0 || got[503] == 0 || got[200]+got[503] != 8 {
		t.Fatalf("answers %v: want some resized and the rest refused with 503", got)
	}

	// Cached: with the file's bytes gone, the size asked before is still
	// served; another size is not. A resize gives its share of the budget
	// back as its handler returns, which may be just after its answer
	// reached the client: the first ask waits for that, as a client told
	// Retry-After would.
	var first *testenv.Resp
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if first = view(t, e, link, "size", "64x64"); first.Status != 503 || time.Now().After(end) {
			break
		}
	}
	if first.Status != 200 {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	var key string
	if err := e.Store.DB().QueryRow("SELECT blob_key FROM files WHERE id = " + f.Id).Scan(&key); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(blobs, filepath.FromSlash(key))); err != nil {
		t.Fatal(err)
	}
	again := view(t, e, link, "size", "64x64")
	cfg, _, err := image.DecodeConfig(bytes.NewReader(again.Raw))
	if again.Status != 200 || err != nil || cfg.Width != 64 || !bytes.Equal(again.Raw, first.Raw) {
		t.Fatalf("cached: %d %v %+v", again.Status, err, cfg)
	}
	u, _ := url.Parse(link)
	if res := e.Do(testenv.Req{Path: u.Path, Query: func() url.Values { v := u.Query(); v.Set("size", "65x65"); return v }(), NoValidate: true}); res.Status == 200 {
		t.Fatal("a size never asked for was served without the file")
	}
}

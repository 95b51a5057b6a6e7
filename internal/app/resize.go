package app

import (
	"container/list"
	"context"
	"sync"
	"time"

	"teleclinic/internal/clinic"
)

// Resizes of GET /files/view?size= are bounded and cached (docs/
// design-notes.md, "Bounded work per request"). Measured before: eight
// parallel resizes of a 6000×6000 image took the server from 683 to
// 1,313 MB. Each resize reserves the memory its decode will hold
// (imaging.MemoryFor) from ResizeMemory before it decodes a pixel; a
// request that cannot reserve it within ResizeWait is refused with 503 and
// Retry-After. Results are kept per file and size in an LRU of
// ResizeCacheBytes, so a page of thumbnails asked again costs no decode.
const (
	defaultResizeMemory     = 256 << 20
	defaultResizeCacheBytes = 32 << 20
	defaultResizeWait       = 10 * time.Second
)

// admitResize reserves bytes of the resize budget, waiting up to
// ResizeWait.
func (a *App) admitResize(ctx context.Context) func(int64) (func(), error) {
	return func(bytes int64) (func(), error) {
		if bytes > a.cfg.ResizeMemory {
			return nil, clinic.Errorf(clinic.ETooLarge, "The image needs more memory to resize than this server gives a resize; fetch it without size.")
		}
		wait, cancel := context.WithTimeout(ctx, a.cfg.ResizeWait)
		defer cancel()
		if err := a.resizes.Acquire(wait, bytes); err != nil {
			e := clinic.Errorf(clinic.EBusy, "The server is resizing other images; try again in a moment.")
			e.RetryAfter = max(1, int64(a.cfg.ResizeWait/time.Second))
			return nil, e
		}
		return func() { a.resizes.Release(bytes) }, nil
	}
}

// resizeCache is an LRU of resized images by file blob and size, bounded
// in bytes.
type resizeCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // front: most recently used
	byKey map[string]*list.Element
}

type resized struct {
	key  string
	body []byte
}

func newResizeCache(max int64) *resizeCache {
	return &resizeCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *resizeCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*resized).body, true
}

func (c *resizeCache) put(key string, body []byte) {
	if int64(len(body)) > c.max/4 {
		return // one image may not push out most of the others
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&resized{key: key, body: body})
	c.size += int64(len(body))
	for c.size > c.max {
		old := c.order.Back()
		r := old.Value.(*resized)
		c.order.Remove(old)
		delete(c.byKey, r.key)
		c.size -= int64(len(r.body))
	}
}

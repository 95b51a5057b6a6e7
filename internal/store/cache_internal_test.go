package store

import (
	"sync"
	"testing"
	"time"
)

func TestCaches_ReadCache(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	// A value read before a write is not stored after it.
	t.Run("OKGeneration", func(t *testing.T) {
		c := newReadCache[string, int](time.Second, 10)
		gen := c.generation() // a reader starts
		c.invalidate()        // a write commits
		c.put("k", 1, gen, t0)
		if _, ok := c.get("k", t0); ok {
			t.Fatal("the stale read was stored")
		}
		c.put("k", 2, c.generation(), t0)
		if v, ok := c.get("k", t0); !ok || v != 2 {
			t.Fatalf("got %v %v", v, ok)
		}
	})
	// Entries expire after the TTL; a negative TTL keeps nothing.
	t.Run("OKExpiry", func(t *testing.T) {
		c := newReadCache[string, int](time.Second, 10)
		c.put("k", 1, c.generation(), t0)
		if _, ok := c.get("k", t0.Add(999*time.Millisecond)); !ok {
			t.Fatal("expired early")
		}
		if _, ok := c.get("k", t0.Add(time.Second)); ok {
			t.Fatal("served after the TTL")
		}
		off := newReadCache[string, int](-1, 10)
		off.put("k", 1, off.generation(), t0)
		if _, ok := off.get("k", t0); ok {
			t.Fatal("a cache switched off kept a value")
		}
	})
	// A full cache starts over.
	t.Run("OKFull", func(t *testing.T) {
		c := newReadCache[int, int](time.Second, 3)
		for i := range 4 {
			c.put(i, i, c.generation(), t0)
		}
		if _, ok := c.get(0, t0); ok {
			t.Fatal("the cache grew past its bound")
		}
		if v, ok := c.get(3, t0); !ok || v != 3 {
			t.Fatal("the newest entry is missing")
		}
	})
	// Concurrent readers and writers.
	t.Run("OKConcurrent", func(t *testing.T) {
		// Writers bump a version and invalidate after; readers put what they
		// read. Once the writers stop, what the cache holds is the last version.
		c := newReadCache[string, int](time.Hour, 10)
		var mu sync.Mutex
		version := 0
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for range 500 {
					mu.Lock()
					version++
					mu.Unlock()
					c.invalidate()
				}
			}()
			go func() {
				defer wg.Done()
				for range 500 {
					gen := c.generation()
					mu.Lock()
					v := version
					mu.Unlock()
					c.put("v", v, gen, t0)
				}
			}()
		}
		wg.Wait()
		if v, ok := c.get("v", t0); ok && v != version {
			t.Fatalf("the cache holds version %d after the last write made %d", v, version)
		}
	})
}

package store

import (
	"strings"
	"testing"

	"teleclinic/internal/clinic"
)

func msgs(from, to int, size int) []*clinic.Message {
	var out []*clinic.Message
	for i := from; i <= to; i++ {
		out = append(out, &clinic.Message{Seq: i, Content: strings.Repeat("x", size)})
	}
	return out
}

// TestCaches_Thread: a thread grows only from the prefix its reader saw, what
// was handed out never changes, and the bytes held stay within the bound.
func TestCaches_Thread(t *testing.T) {
	c := newThreadCache(1 << 20)
	k := threadKey{1, 1, 1}
	c.extend(k, nil, msgs(1, 2, 10))
	first := c.prefix(k)
	c.extend(k, nil, msgs(1, 1, 10)) // read before the first extend: dropped
	if got := c.prefix(k); len(got) != 2 {
		t.Fatalf("a stale extend changed the thread: %d", len(got))
	}
	c.extend(k, first, msgs(3, 4, 10))
	got := c.prefix(k)
	for i, m := range got {
		if m.Seq != i+1 {
			t.Fatalf("place %d holds %d", i+1, m.Seq)
		}
	}
	if len(first) != 2 || len(got) != 4 {
		t.Fatalf("handed-out %d, now %d", len(first), len(got))
	}
	if c.extend(k, got, msgs(5, threadCacheLen+1, 0)); len(c.prefix(k)) != 4 {
		t.Fatal("a thread grew past threadCacheLen")
	}

	// The bound: threads are dropped until the bytes fit.
	small := newThreadCache(10 * messageBytes(msgs(1, 1, 100)[0]))
	for v := range 20 {
		small.extend(threadKey{1, int64(v), 1}, nil, msgs(1, 3, 100))
		held := 0
		for _, th := range small.m {
			for _, m := range th {
				held += messageBytes(m)
			}
		}
		if held != small.bytes || small.bytes > small.max {
			t.Fatalf("after %d threads: held %d, counted %d, max %d", v+1, held, small.bytes, small.max)
		}
	}
	if len(small.m) == 0 || len(small.m) > 3 {
		t.Fatalf("%d threads held", len(small.m))
	}
}

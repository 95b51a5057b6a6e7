package store

import (
	"context"
	"fmt"
	"sync"

	"teleclinic/internal/clinic"
)

// threadCache keeps the messages of visit threads read lately. A message
// never changes once written, and a thread only grows, each message at the
// next place, so a thread's first n messages read once are right for as
// long as the process lives: a page whose places the cache holds needs no
// query, and a reader polling for new messages reads only those. The
// visit's message count, read with the visit on every request, says which
// places exist; nothing here can show a message that count does not cover.
// Authors' names are not kept with the messages, since a name may change
// (Store.UserNames).
//
// It is bounded by the bytes of the messages held; past that, threads are
// dropped at random (Go's map order) until it fits.
type threadCache struct {
	mu    sync.Mutex
	m     map[threadKey][]*clinic.Message // index i holds place i+1
	bytes int
	max   int
}

type threadKey struct {
	accountID, visitID int64
	created            int64 // the visit's creation: a key never names two visits
}

const (
	// threadCacheBytes bounds the messages held.
	threadCacheBytes = 16 << 20
	// threadCacheLen is the longest thread prefix kept: a page further in
	// is read from the database each time.
	threadCacheLen = 1000
)

func newThreadCache(max int) *threadCache {
	return &threadCache{m: make(map[threadKey][]*clinic.Message), max: max}
}

func messageBytes(m *clinic.Message) int {
	return 160 + len(m.Content) + len(m.Type) + 8*len(m.Attachments)
}

// prefix returns the first messages of k's thread that are held.
func (c *threadCache) prefix(k threadKey) []*clinic.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// extend appends ms, which follow have, to k's thread, unless another
// reader changed it meanwhile. Slices handed out earlier stay valid: they
// never see past their length, and held messages are never written.
func (c *threadCache) extend(k threadKey, have []*clinic.Message, ms []*clinic.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[k]
	if len(cur) != len(have) || len(cur)+len(ms) > threadCacheLen {
		return
	}
	for _, m := range ms {
		c.bytes += messageBytes(m)
	}
	c.m[k] = append(cur, ms...)
	for key, t := range c.m {
		if c.bytes <= c.max {
			break
		}
		for _, m := range t {
			c.bytes -= messageBytes(m)
		}
		delete(c.m, key)
	}
}

// ThreadPage returns the messages at places from to to (inclusive) of a
// visit's thread whose message count is at least to, from the thread cache
// where it holds them. created is the visit's creation time: with the ids
// it keys the thread, so a key never names two visits.
func (s *Store) ThreadPage(ctx context.Context, accountID, visitID, created int64, from, to int) ([]*clinic.Message, error) {
	if from > to {
		return nil, nil
	}
	k := threadKey{accountID, visitID, created}
	have := s.c.threads.prefix(k)
	if to <= len(have) {
		return have[from-1 : to], nil
	}
	// Read what the cache lacks up to the page's end, if that is not much
	// more than the page itself; otherwise just the page.
	if to > threadCacheLen || to-len(have) > max(threadReadAhead, 2*(to-from+1)) {
		return s.Read().ThreadMessages(ctx, accountID, visitID, from, to)
	}
	ms, err := s.Read().ThreadMessages(ctx, accountID, visitID, len(have)+1, to)
	if err != nil {
		return nil, err
	}
	all := append(have[:len(have):len(have)], ms...)
	if len(all) != to {
		// A place below the count was empty, which the count rules out.
		return nil, fmt.Errorf("thread of visit %d: %d messages for %d places", visitID, len(all), to)
	}
	s.c.threads.extend(k, have, ms)
	return all[from-1 : to], nil
}

// threadReadAhead is how far past the held prefix a page may start and
// still be read with the places before it, to be held too.
const threadReadAhead = 200

// UserNames returns the current full names of users ids (none for a user
// who is gone), from a cache that the store's own profile writes clear
// and that other processes' writes reach within the cache's TTL.
func (s *Store) UserNames(ctx context.Context, accountID int64, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	var missing []int64
	now := s.now()
	for _, id := range ids {
		if _, ok := out[id]; ok {
			continue
		}
		if n, ok := s.c.names.get(userKey{accountID, id}, now); ok {
			out[id] = n
			continue
		}
		out[id] = ""
		missing = append(missing, id)
	}
	if len(missing) == 0 {
		return out, nil
	}
	gen := s.c.names.generation()
	names, err := s.Read().UserNames(ctx, accountID, missing)
	if err != nil {
		return nil, err
	}
	for _, id := range missing {
		out[id] = names[id]
		s.c.names.put(userKey{accountID, id}, names[id], gen, now)
	}
	return out, nil
}

type userKey struct{ accountID, userID int64 }

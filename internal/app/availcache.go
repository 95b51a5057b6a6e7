package app

import "sync"

// availCache keeps the answers of GET /availability for the second they
// were computed in, while this process has ended no write since
// (store.Writes). A clinic's patients choosing a time ask the same
// question of the same room: an answer is the room's slots in a window
// (576 slots and ~170 KB of JSON in the load tool's 6-hour window), and
// reading and encoding them cost 5.9–6.5 ms of CPU a request
// (docs/performance.md, "Availability"), against a target of 1 ms. An
// answer held is read once, and the API encodes it once (httpapi's
// availBodies).
//
// Why it is right: an answer depends on the slots, the room and its
// providers (all written through the store, so any write of this process
// moves Writes and the next question is answered afresh) and on the time
// (holds expire, slots start: the second is part of the key). A write in
// another process (PostgreSQL, several processes) shows within the
// second. The booking itself never reads the cache: a slot shown free
// that was just taken is refused (409) by the booking's conditional
// UPDATE, as between any two patients.
type availCache struct {
	mu sync.Mutex
	m  map[availKey]*Availability
}

// availKey is what an answer depends on besides the data: the clinic,
// the room, the question's provider, location, window, length and
// intake (an intake's own hold is free for it), and the second.
type availKey struct {
	account, room, provider, start, end, need, intake int64
	location                                          string
	now                                               int64
	writes                                            uint64
}

// availCacheMax bounds the answers held (a few MB at most): past it the
// cache starts again.
const availCacheMax = 256

func (c *availCache) get(k availKey) *Availability {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *availCache) put(k availKey, v *Availability) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= availCacheMax {
		c.m = map[availKey]*Availability{}
	}
	// Entries of an earlier second or write count are never asked for
	// again: drop them as the key moves on.
	for old := range c.m {
		if old.now != k.now || old.writes != k.writes {
			delete(c.m, old)
		}
	}
	c.m[k] = v
}

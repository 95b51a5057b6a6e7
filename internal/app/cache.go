package app

import (
	"sync"
	"time"

	"teleclinic/internal/clinic"
)

// readCache keeps rows that nearly every request reads and that change
// rarely: the clinic an account code or token names, and a clinic's public
// room list. Under load each of those reads was a SQLite query whose cost is
// dominated by re-validating the connection's page cache after the last
// commit, so skipping them is most of what GET /rooms costs
// (docs/design-notes.md, Performance). Cached values are shared: callers
// copy what they would change.
//
// Correctness within a process comes from invalidate, which every write of
// the cached rows calls after its commit, and from the generation: a reader
// notes it before going to the database and put drops the value if a write
// committed in between, so a value read before a write is never stored after
// it. Other processes sharing the database invalidate nothing here, so their
// writes are seen within ttl.
type readCache[K comparable, V any] struct {
	mu  sync.Mutex
	gen uint64
	m   map[K]cached[V]
	ttl time.Duration
	max int
}

type cached[V any] struct {
	v       V
	expires time.Time
}

func newReadCache[K comparable, V any](ttl time.Duration, max int) *readCache[K, V] {
	return &readCache[K, V]{m: make(map[K]cached[V]), ttl: ttl, max: max}
}

// get returns the value for k if it is fresh at now.
func (c *readCache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// generation is read before the database, and handed to put.
func (c *readCache[K, V]) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores v unless a write was invalidated since gen was read. A full
// cache starts over rather than tracking use: the keys are few (clinics, and
// the pages of their room lists) unless a caller invents them.
func (c *readCache[K, V]) put(k K, v V, gen uint64, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = cached[V]{v: v, expires: now.Add(c.ttl)}
}

// forget drops k's value.
func (c *readCache[K, V]) forget(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// invalidate forgets everything; it is called after a write commits.
func (c *readCache[K, V]) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}

// userCache keeps the users that tokens name, each as read at its row's
// version. Authentication reads the version with the token, in the same
// query, and takes a user from here only if the versions are equal: a
// trigger moves the version on every change to the row, so an equal version
// is the same row, whichever process changed it. Unlike readCache there is
// no staleness window: a disabled user is refused on their next request.
//
// Cached users are shared; get hands out a copy of the struct, and callers
// that change a user's map or slice fields clone them first (as applyProfile
// does).
type userCache struct {
	mu  sync.Mutex
	m   map[int64]*clinic.User
	max int
}

func newUserCache(max int) *userCache {
	return &userCache{m: make(map[int64]*clinic.User), max: max}
}

// get returns a copy of user id as read at version, if it is here.
func (c *userCache) get(id, version int64) (*clinic.User, bool) {
	c.mu.Lock()
	u, ok := c.m[id]
	c.mu.Unlock()
	if !ok || u.Version != version {
		return nil, false
	}
	cp := *u
	return &cp, true
}

// put keeps u unless a newer version of it is here already. A full cache
// drops an entry at random (map order): a user missing costs one read.
func (c *userCache) put(u *clinic.User) {
	cp := *u
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[u.ID]; ok && old.Version > u.Version {
		return
	}
	if _, ok := c.m[u.ID]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[u.ID] = &cp
}

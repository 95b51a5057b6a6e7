package store

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"teleclinic/internal/clinic"
)

// The store's caches keep rows that nearly every request reads, each in
// the layer that writes those rows: a write through Q of a cached family
// invalidates its cache, at once and again after its transaction commits
// (Q.changed), so no caller above the store invalidates anything.
type caches struct {
	accounts *readCache[accountKey, *clinic.Account]
	rooms    *readCache[RoomFilter, *clinic.RoomPage]
	names    *readCache[userKey, string] // authors' names in threads
	users    *userCache                  // the users tokens name, by row version
	threads  *threadCache
}

// Options are the store's settings; the zero value is the default.
type Options struct {
	// CacheTTL is how long this process keeps a clinic's account row, its
	// public room list and authors' names (default 1 s; negative: not
	// cached). This process's own writes show at once; another process's
	// within the TTL.
	CacheTTL time.Duration
	// Now is the clock the caches' TTL runs on (default time.Now).
	Now func() time.Time
	// Logger receives what the store's background work has to report
	// (default: nothing).
	Logger *slog.Logger
	// AuditKey keys the hash chain of the audit trail (HMAC-SHA256), so
	// that someone who can write the database but does not hold the
	// server key cannot recompute the chain over an edit. Every process of
	// a database must use the same key (default: none, plain SHA-256).
	AuditKey []byte
}

// userCacheMax bounds the user cache: about 1 KB a user, so at most ~10 MB.
const userCacheMax = 10_000

func newCaches(o Options) *caches {
	ttl := o.CacheTTL
	if ttl == 0 {
		ttl = time.Second
	}
	return &caches{
		accounts: newReadCache[accountKey, *clinic.Account](ttl, 1024),
		rooms:    newReadCache[RoomFilter, *clinic.RoomPage](ttl, 1024),
		names:    newReadCache[userKey, string](ttl, 4096),
		users:    newUserCache(userCacheMax),
		threads:  newThreadCache(threadCacheBytes),
	}
}

// invalidator is a cache a write clears.
type invalidator interface{ invalidate() }

// changed is deferred by a write of rows that c caches, so it runs after
// the write's statement. Outside a transaction the write has committed;
// inside one, c is cleared now and again once the transaction commits, so
// that a value read in between (before the commit) is not kept after it.
func (q *Q) changed(c invalidator) {
	c.invalidate()
	if q.after != nil {
		*q.after = append(*q.after, c.invalidate)
	}
}

// accountKey names a cached account by its code or by its id.
type accountKey struct {
	code string
	id   int64
}

// AccountByCode and AccountByID are the request path's account reads,
// through the account cache. Each caller gets its own copy.
func (s *Store) AccountByCode(ctx context.Context, code string) (*clinic.Account, error) {
	return s.cachedAccount(accountKey{code: code}, func() (*clinic.Account, error) { return s.Read().AccountByCode(ctx, code) })
}

// AccountByID is AccountByCode by the account's id.
func (s *Store) AccountByID(ctx context.Context, id int64) (*clinic.Account, error) {
	return s.cachedAccount(accountKey{id: id}, func() (*clinic.Account, error) { return s.Read().AccountByID(ctx, id) })
}

func (s *Store) cachedAccount(k accountKey, read func() (*clinic.Account, error)) (*clinic.Account, error) {
	now := s.now()
	if acct, ok := s.c.accounts.get(k, now); ok {
		return copyAccount(acct), nil
	}
	gen := s.c.accounts.generation()
	acct, err := read()
	if err != nil {
		return nil, err
	}
	s.c.accounts.put(k, copyAccount(acct), gen, now)
	return acct, nil
}

func copyAccount(acct *clinic.Account) *clinic.Account {
	c := *acct
	c.Features = slices.Clone(acct.Features)
	return &c
}

// Rooms is ListRooms through the room cache. Unfiltered pages are what
// clients poll; a search is not kept, so made-up terms cannot churn the
// cache. The page is shared: callers do not change it.
func (s *Store) Rooms(ctx context.Context, f RoomFilter) (*clinic.RoomPage, error) {
	now := s.now()
	if f.Search == "" {
		if page, ok := s.c.rooms.get(f, now); ok {
			return page, nil
		}
	}
	gen := s.c.rooms.generation()
	rooms, filtered, total, err := s.Read().ListRooms(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &clinic.RoomPage{Rooms: rooms, Filtered: filtered, Total: total}
	if f.Search == "" {
		s.c.rooms.put(f, page, gen, now)
	}
	return page, nil
}

// TokenUser finds an access token by hash and its user. The user comes
// from the user cache when the row's version, read with the token, is the
// one cached; otherwise it is read and cached. ErrNotFound when there is
// no such token, or its user went between the two reads.
func (s *Store) TokenUser(ctx context.Context, hash string) (*TokenAuth, *clinic.User, error) {
	t, err := s.Read().TokenForAuth(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	if u, ok := s.c.users.get(t.UserID, t.UserVersion); ok {
		return t, u, nil
	}
	u, err := s.Read().UserByID(ctx, t.AccountID, t.UserID)
	if err != nil {
		return nil, nil, err
	}
	s.c.users.put(u)
	return t, u, nil
}

// readCache keeps rows that nearly every request reads and that change
// rarely: the clinic an account code or token names, and a clinic's public
// room list. Under load each of those reads was a SQLite query whose cost is
// dominated by re-validating the connection's page cache after the last
// commit, so skipping them is most of what GET /rooms costs
// (docs/design-notes.md, Performance). Cached values are shared: callers
// copy what they would change.
//
// Correctness within a process comes from invalidate, which every write of
// the cached rows calls (Q.changed), and from the generation: a reader
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

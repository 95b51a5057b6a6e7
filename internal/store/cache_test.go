package store_test

import (
	"context"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// TestCaches_WritesInvalidate: the store's cached reads show the store's
// own writes at once, including a room list read while the writing
// transaction was still open (which the read cached), once it commits.
func TestCaches_WritesInvalidate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.OpenStore(t, testenv.DSN(t), store.Options{CacheTTL: 3600e9})
	acct := &clinic.Account{Code: "caches", Name: "Caches", Domain: "caches.test", Features: []string{}}
	if err := st.Write().CreateAccount(ctx, acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	room := &clinic.Room{AccountID: acct.ID, Code: "r1", Slug: "r1", Name: "Before", Domain: "caches.test", Active: true}
	if err := st.Write().CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	f := store.RoomFilter{AccountID: acct.ID, Limit: 10}
	name := func() string {
		t.Helper()
		page, err := st.Rooms(ctx, f)
		if err != nil || len(page.Rooms) != 1 {
			t.Fatalf("rooms: %+v, %v", page, err)
		}
		return page.Rooms[0].Name
	}

	t.Run("OK", func(t *testing.T) {
		if got := name(); got != "Before" {
			t.Fatalf("name %q", got)
		}
		room.Name = "Outside"
		if err := st.Write().UpdateRoom(ctx, room); err != nil {
			t.Fatal(err)
		}
		if got := name(); got != "Outside" {
			t.Fatalf("after an autocommitted write: %q", got)
		}
		acct.SSOEnabled = true
		if err := st.Write().SetAccountSSO(ctx, acct.ID, true, 1); err != nil {
			t.Fatal(err)
		}
		if a, err := st.AccountByCode(ctx, "caches"); err != nil || !a.SSOEnabled {
			t.Fatalf("account after the write: %+v, %v", a, err)
		}
	})

	// ReadDuringTransaction.
	t.Run("OKReadDuringTransaction", func(t *testing.T) {
		err := st.Tx(ctx, func(q *store.Q) error {
			room.Name = "Inside"
			if err := q.UpdateRoom(ctx, room); err != nil {
				return err
			}
			// Another reader, before the commit, sees the old name and
			// caches it.
			if got := name(); got != "Outside" {
				t.Errorf("a reader saw the uncommitted name %q", got)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := name(); got != "Inside" {
			t.Fatalf("after the commit the cache still shows %q", got)
		}
	})

	t.Run("ErrRolledBack", func(t *testing.T) {
		_ = st.Tx(ctx, func(q *store.Q) error {
			r := *room
			r.Name = "Undone"
			if err := q.UpdateRoom(ctx, &r); err != nil {
				return err
			}
			return store.ErrConflict
		})
		if got := name(); got != "Inside" {
			t.Fatalf("a rolled-back write shows: %q", got)
		}
	})
}

// TestStore_WritesAfterTheStatement: a statement of a Write handle moves
// Writes after it has run, not only before: an answer computed while it
// ran (app's availability cache keys on Writes) is not taken for one made
// after it.
func TestStore_WritesAfterTheStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.OpenStore(t, testenv.DSN(t))
	before := st.Writes()
	w := st.Write()
	if st.Writes() != before {
		t.Fatalf("making a handle moved Writes: %d → %d", before, st.Writes())
	}
	acct := &clinic.Account{Code: "writes", Name: "Writes", Domain: "writes.test", Features: []string{}}
	if err := w.CreateAccount(ctx, acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	if moved := st.Writes() - before; moved < 2 {
		t.Fatalf("a write moved Writes by %d: once before and once after its statement, at least", moved)
	}
}

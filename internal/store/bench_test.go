package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"teleclinic/internal/clinic"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	return st
}

const benchQuery = "SELECT id, code, name FROM accounts WHERE code = ?"

// BenchmarkQuery_Prepared is a small read through the store's statement
// cache; BenchmarkQuery_Unprepared the same read parsed every time, as
// before the cache.
func BenchmarkQuery_Prepared(b *testing.B) {
	st := benchStore(b)
	ctx := context.Background()
	q := st.Read()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var id int64
		var code, name string
		for pb.Next() {
			if err := q.queryRow(ctx, benchQuery, []any{"none"}, &id, &code, &name); err != ErrNotFound {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkQuery_Unprepared(b *testing.B) {
	st := benchStore(b)
	ctx := context.Background()
	q := &Q{db: st.r, d: st.d}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var id int64
		var code, name string
		for pb.Next() {
			if err := q.queryRow(ctx, benchQuery, []any{"none"}, &id, &code, &name); err != ErrNotFound {
				b.Fatal(err)
			}
		}
	})
}

// TestStmtCache_InTransaction: a statement first used inside a transaction
// on SQLite's single writer runs unprepared instead of waiting for the
// connection the transaction holds, and is prepared after it.
func TestStmtCache_InTransaction(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const query = "SELECT COUNT(*) FROM accounts WHERE id > ?"
	for range 2 {
		err := st.Tx(ctx, func(q *Q) error {
			var n int
			return q.queryRow(ctx, query, []any{0}, &n)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The statement is prepared in the background once the transaction
	// has released the connection.
	wc := st.eng.(*sqliteEngine).wc
	prepared := func() bool {
		wc.mu.RLock()
		defer wc.mu.RUnlock()
		return wc.m[query] != nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for !prepared() {
		if time.Now().After(deadline) {
			t.Fatal("the statement was not prepared after the transaction")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var n int
	if err := st.Write().queryRow(ctx, query, []any{0}, &n); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTokenUser_Cached is a request's token lookup as the server does
// it: the token and its user's row version in one narrow query, the user
// from the user cache. BenchmarkTokenUser_Read reads the user's row each
// time, as a cache miss does.
func BenchmarkTokenUser_Cached(b *testing.B) { benchTokenUser(b, false) }

func BenchmarkTokenUser_Read(b *testing.B) { benchTokenUser(b, true) }

func benchTokenUser(b *testing.B, miss bool) {
	st := benchStore(b)
	ctx := context.Background()
	acct := &clinic.Account{Code: "bench", Name: "Bench", Domain: "bench.test", Features: []string{}}
	if err := st.Write().CreateAccount(ctx, acct, AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		b.Fatal(err)
	}
	u := &clinic.User{AccountID: acct.ID, Code: "pat", Username: "pat", FirstName: "Pat", LastName: "Bench",
		Type: clinic.UserMember, Status: clinic.StatusActive, Active: true, Extra: map[string]any{}}
	if err := st.Write().CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := st.Write().CreateToken(ctx, &Token{AccountID: acct.ID, UserID: u.ID, Kind: "access", Hash: "h", Family: "f", Expires: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if miss {
			st.c.users = newUserCache(userCacheMax)
		}
		if _, _, err := st.TokenUser(ctx, "h"); err != nil {
			b.Fatal(err)
		}
	}
}

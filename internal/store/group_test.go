package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

func groupStore(t *testing.T, code string) (*store.Store, int64) {
	t.Helper()
	st := testenv.OpenStore(t, testenv.DSN(t))
	return st, newAccount(t, st, code)
}

func newAccount(t *testing.T, st *store.Store, code string) int64 {
	t.Helper()
	acct := &clinic.Account{Code: code, Name: code, Domain: code + ".test", Features: []string{}}
	if err := st.Write().CreateAccount(context.Background(), acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	return acct.ID
}

// stored lists the object ids of the account's audit entries, sorted,
// once chained (the trail lists chained entries).
func stored(t *testing.T, st *store.Store, accountID int64) []string {
	t.Helper()
	if _, err := st.ChainPendingAudits(context.Background(), accountID); err != nil {
		t.Fatal(err)
	}
	es, _, err := st.Read().ListAudit(context.Background(), store.AuditFilter{AccountID: accountID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ObjectID)
	}
	slices.Sort(ids)
	return ids
}

func entry(accountID int64, id string) *clinic.AuditEntry {
	return &clinic.AuditEntry{AccountID: accountID, ActorKind: "admin_token", Action: "test.write", ObjectType: "test", ObjectID: id, Outcome: "ok", Created: 1}
}

// TestSQLite_CommitGroup writes one group whose members succeed, fail, fail in
// the database, panic, or were given up before their turn: only the
// successful members' writes are stored, and each member gets its own
// outcome.
func TestSQLite_CommitGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, acct := groupStore(t, "group")
	write := func(id string) func(q *store.Q) error {
		return func(q *store.Q) error { return q.AppendAudit(ctx, entry(acct, id)) }
	}
	errOwn := errors.New("member's own error")
	gone, cancel := context.WithCancel(ctx)
	cancel()
	ranGone := false
	fns := []func(q *store.Q) error{
		write("a"),
		func(q *store.Q) error { write("b")(q); return errOwn },
		func(q *store.Q) error { // a statement the engine refuses, after a write
			write("c")(q)
			return q.AppendAudit(ctx, &clinic.AuditEntry{AccountID: acct + 1000, ActorKind: "admin_token", Action: "x", ObjectType: "x", ObjectID: "x", Outcome: "ok"})
		},
		func(q *store.Q) error { ranGone = true; return write("gone")(q) },
		write("d"),
		func(q *store.Q) error { write("p")(q); panic("member bug") },
		write("e"),
	}
	ctxs := []context.Context{ctx, ctx, ctx, gone, ctx, ctx, ctx}
	errs := store.CommitGroup(st, ctxs, fns)
	for _, i := range []int{0, 4, 6} {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i, errs[i])
		}
	}
	if !errors.Is(errs[1], errOwn) {
		t.Fatalf("member 1: %v", errs[1])
	}
	if !errors.Is(errs[2], store.ErrForeignKey) {
		t.Fatalf("member 2: %v", errs[2])
	}
	if !errors.Is(errs[3], context.Canceled) || ranGone {
		t.Fatalf("member 3: %v, ran %v", errs[3], ranGone)
	}
	if errs[5] == nil || !strings.Contains(errs[5].Error(), "member bug") {
		t.Fatalf("member 5: %v", errs[5])
	}
	if got := stored(t, st, acct); !slices.Equal(got, []string{"a", "d", "e"}) {
		t.Fatalf("stored %v", got)
	}
	// A member alone is a plain transaction; its panic is still an error.
	errs = store.CommitGroup(st, []context.Context{ctx}, []func(q *store.Q) error{func(q *store.Q) error { write("q")(q); panic("lone bug") }})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "lone bug") {
		t.Fatalf("lone member: %v", errs[0])
	}
	if got := stored(t, st, acct); !slices.Equal(got, []string{"a", "d", "e"}) {
		t.Fatalf("stored %v after the lone panic", got)
	}
}

// TestSQLite_Grouped: concurrent callers each write and some fail afterwards;
// what is stored is exactly what was reported committed. After Close,
// Grouped answers an error rather than waiting.
func TestSQLite_Grouped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, acct := groupStore(t, "grouped")
	const callers = 48
	errOwn := errors.New("member's own error")
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			errs[i] = st.Grouped(ctx, func(q *store.Q) error {
				if err := q.AppendAudit(ctx, entry(acct, fmt.Sprintf("%02d", i))); err != nil {
					return err
				}
				if i%4 == 3 {
					return errOwn
				}
				return nil
			})
		})
	}
	wg.Wait()
	var want []string
	for i, err := range errs {
		switch {
		case err == nil:
			want = append(want, fmt.Sprintf("%02d", i))
		case i%4 != 3 || !errors.Is(err, errOwn):
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if len(want) != callers*3/4 {
		t.Fatalf("%d committed", len(want))
	}
	if got := stored(t, st, acct); !slices.Equal(got, want) {
		t.Fatalf("stored %v\nwant %v", got, want)
	}
	st.Close()
	if err := st.Grouped(ctx, func(q *store.Q) error { return nil }); err == nil {
		t.Fatal("Grouped after Close: no error")
	}
}

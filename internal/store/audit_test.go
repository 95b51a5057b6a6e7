package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// TestAudit_AppendGroups writes a group larger than one chunk (256 + 32 + 8 + 4)
// and reads every entry back in order with its fields once chained, the
// total being the chain's length and the entries from before the chain.
func TestAudit_AppendGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.OpenStore(t, testenv.DSN(t))
	acct := &clinic.Account{Code: "audits", Name: "Audits", Domain: "audits.test", Features: []string{}}
	if err := st.Write().CreateAccount(ctx, acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	es := make([]*clinic.AuditEntry, n)
	for i := range es {
		es[i] = &clinic.AuditEntry{AccountID: acct.ID, ActorKind: "admin_token", Action: "user.read", ObjectType: "user",
			ObjectID: fmt.Sprint(i), Outcome: "ok", RequestID: fmt.Sprintf("req-%d", i), Created: int64(1000 + i)}
	}
	if err := st.Tx(ctx, func(q *store.Q) error { return q.AppendAudits(ctx, es) }); err != nil {
		t.Fatal(err)
	}
	// The trail lists chained entries; these are pending until settled.
	list := func() ([]clinic.AuditEntry, int) {
		got, total, err := st.Read().ListAudit(ctx, store.AuditFilter{AccountID: acct.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return got, total
	}
	if got, total := list(); total != 0 || len(got) != 0 {
		t.Fatalf("pending entries listed: total %d, %d listed", total, len(got))
	}
	if refused, err := st.SettleAudits(ctx, acct.ID); err != nil || refused != 0 {
		t.Fatal(refused, err)
	}
	// Two entries from before the chain (seq 0) are listed and counted
	// beside the chain's length; a refused one (seq -2) is neither.
	if _, err := st.DB().Exec(st.Rebind(`INSERT INTO audit (account_id, actor_kind, action, object_type, object_id, outcome, request_id, created, seq)
		VALUES (?, 'admin_token', 'user.read', 'user', 'old', 'ok', 'old', 10, 0), (?, 'admin_token', 'user.read', 'user', 'old', 'ok', 'old', 11, 0),
		(?, 'admin_token', 'user.read', 'user', 'forged', 'ok', 'forged', 12, -2)`), acct.ID, acct.ID, acct.ID); err != nil {
		t.Fatal(err)
	}
	if got, total := list(); total != n+2 || len(got) != n+2 || got[n].ObjectID != "old" {
		t.Fatalf("with the entries from before the chain: total %d, %d listed", total, len(got))
	}
	if _, err := st.DB().Exec(st.Rebind("DELETE FROM audit WHERE account_id = ? AND seq <= 0"), acct.ID); err != nil {
		t.Fatal(err)
	}
	// A filter counts what it matches.
	if got, total, err := st.Read().ListAudit(ctx, store.AuditFilter{AccountID: acct.ID, ObjectID: "7", Limit: 10}); err != nil || total != 1 || len(got) != 1 {
		t.Fatalf("by object: total %d, %d listed, %v", total, len(got), err)
	}
	got, total := list()
	if total != n || len(got) != n {
		t.Fatalf("total %d, listed %d, want %d", total, len(got), n)
	}
	for i, e := range got { // newest first
		want := n - 1 - i
		if e.ObjectID != fmt.Sprint(want) || e.RequestID != fmt.Sprintf("req-%d", want) || e.Created != int64(1000+want) || e.ActorUserID != 0 {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
}

// TestAudit_ChainPending chains more pending entries (seq -1, as every
// entry is written) than one statement takes, some inserted as a
// PostgreSQL message post writes them (their MAC without the object id),
// and finds the chain whole, in the order stored, and nothing left pending.
func TestAudit_ChainPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.OpenStore(t, testenv.DSN(t))
	acct := &clinic.Account{Code: "pending", Name: "Pending", Domain: "pending.test", Features: []string{}}
	if err := st.Write().CreateAccount(ctx, acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	entry := func(i int) *clinic.AuditEntry {
		return &clinic.AuditEntry{AccountID: acct.ID, ActorKind: "user_token", Action: "visit.message.create", ObjectType: "visit",
			ObjectID: fmt.Sprint(i), Outcome: "ok", RequestID: fmt.Sprintf("req-%d", i), Created: int64(1000 + i)}
	}
	if err := st.Tx(ctx, func(q *store.Q) error { return q.AppendAudits(ctx, []*clinic.AuditEntry{entry(0)}) }); err != nil {
		t.Fatal(err)
	}
	const pending = 300 // 256 + 32 + 8 + 4
	for i := 1; i <= pending; i++ {
		e := entry(i)
		store.SealAudit(nil, e, i%2 == 0) // the store was opened without a key
		if _, err := st.DB().Exec(st.Rebind(`INSERT INTO audit (account_id, actor_kind, action, object_type, object_id, outcome, request_id, created, seq, hash, mac)
			VALUES (?, 'user_token', 'visit.message.create', 'visit', ?, 'ok', ?, ?, -1, '', ?)`), acct.ID, fmt.Sprint(i), fmt.Sprintf("req-%d", i), 1000+i, e.MAC); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := st.Read().PendingAuditClinics(ctx, 10)
	if err != nil || len(ids) != 1 || ids[0] != acct.ID {
		t.Fatalf("pending clinics %v, %v", ids, err)
	}
	if refused, err := st.ChainPendingAudits(ctx, acct.ID); err != nil || refused != 0 {
		t.Fatal(refused, err)
	}
	// The next append goes after them.
	if err := st.Tx(ctx, func(q *store.Q) error { return q.AppendAudits(ctx, []*clinic.AuditEntry{entry(pending + 1)}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ChainPendingAudits(ctx, acct.ID); err != nil {
		t.Fatal(err)
	}
	v, err := st.VerifyAuditChain(ctx, acct.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Broken || v.Entries != pending+2 {
		t.Fatalf("chain: %+v", v)
	}
	if ids, _ := st.Read().PendingAuditClinics(ctx, 10); len(ids) != 0 {
		t.Fatalf("still pending: %v", ids)
	}
	// In the order they were stored.
	page, err := st.Read().AuditChainPage(ctx, acct.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range page {
		if e.Seq != int64(i+1) || e.ObjectID != fmt.Sprint(i) {
			t.Fatalf("place %d: %+v", i+1, e)
		}
	}
}

// TestAudit_WrongKey: a store opened with a key other than the one that
// wrote the trail is refused at CheckAuditKey, and its chainer refuses
// nothing: the honest pending entry stays pending for the right key,
// which then chains it.
func TestAudit_WrongKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DSN(t)
	right := testenv.OpenStore(t, dsn, store.Options{AuditKey: []byte("the trail's key, 32 bytes long..")})
	acct := &clinic.Account{Code: "keys", Name: "Keys", Domain: "keys.test", Features: []string{}}
	if err := right.Write().CreateAccount(ctx, acct, store.AccountSecrets{AdminTokenHash: "a", APIKeyHash: "k", APISecretHash: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := right.CheckAuditKey(ctx); err != nil {
		t.Fatalf("an empty trail: %v", err)
	}
	appendOne := func(st *store.Store, i int) {
		t.Helper()
		e := &clinic.AuditEntry{AccountID: acct.ID, ActorKind: "admin_token", Action: "user.read", ObjectType: "user", ObjectID: fmt.Sprint(i), Outcome: "ok", RequestID: "r", Created: 1000}
		if err := st.Tx(ctx, func(q *store.Q) error { return q.AppendAudits(ctx, []*clinic.AuditEntry{e}) }); err != nil {
			t.Fatal(err)
		}
	}
	appendOne(right, 1)
	if _, err := right.ChainPendingAudits(ctx, acct.ID); err != nil {
		t.Fatal(err)
	}
	appendOne(right, 2) // pending

	wrong := testenv.OpenStore(t, dsn, store.Options{AuditKey: []byte("another key, also 32 bytes long.")})
	if err := wrong.CheckAuditKey(ctx); !errors.Is(err, store.ErrAuditKey) {
		t.Fatalf("CheckAuditKey with another key: %v", err)
	}
	if _, err := wrong.ChainPendingAudits(ctx, acct.ID); !errors.Is(err, store.ErrAuditKey) {
		t.Fatalf("chaining with another key: %v", err)
	}
	if err := right.CheckAuditKey(ctx); err != nil {
		t.Fatal(err)
	}
	if refused, err := right.ChainPendingAudits(ctx, acct.ID); err != nil || refused != 0 {
		t.Fatalf("the right key: refused %d, %v", refused, err)
	}
	v, err := right.VerifyAuditChain(ctx, acct.ID, nil)
	if err != nil || v.Broken || v.Entries != 2 {
		t.Fatalf("%+v %v", v, err)
	}
}

package store_test

import (
	"context"
	"fmt"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// TestAudit_AppendGroups writes a group larger than one chunk (256 + 32 + 8 + 4)
// and reads every entry back in order with its fields.
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
	got, total, err := st.Read().ListAudit(ctx, store.AuditFilter{AccountID: acct.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
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

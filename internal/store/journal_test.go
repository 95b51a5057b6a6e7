package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// TestAudit_ReadAuditJournal: the audit entries of reads reach the audit table exactly
// once, whether the journal is flushed, closed, or left behind by a process
// that ended (SQLite), or committed at once (PostgreSQL).
func TestAudit_ReadAuditJournal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DSN(t)
	st := testenv.OpenStore(t, dsn)
	acct := newAccount(t, st, "journal")
	appendIDs := func(st *store.Store, ids ...string) {
		t.Helper()
		es := make([]*clinic.AuditEntry, len(ids))
		for i, id := range ids {
			es[i] = entry(acct, id)
		}
		if err := st.AppendReadAudits(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	flushed := func(st *store.Store) []string {
		t.Helper()
		if err := st.FlushAudits(ctx); err != nil {
			t.Fatal(err)
		}
		return stored(t, st, acct)
	}
	want := func(ids ...string) []string { slices.Sort(ids); return ids }

	appendIDs(st, "r1")
	appendIDs(st, "r2", "r3")
	if got := flushed(st); !slices.Equal(got, want("r1", "r2", "r3")) {
		t.Fatalf("after flush: %v", got)
	}
	if st.Engine() != "sqlite" {
		return // no journal: each group was committed
	}

	// A process ends with entries in its journal, a torn last write, and
	// an earlier segment whose file it had not yet deleted.
	appendIDs(st, "r4")
	appendIDs(st, "r5", "r6")
	dir, name := store.AbandonJournal(st)
	segs, _ := filepath.Glob(filepath.Join(dir, name+".*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"account_id":` + strconv.FormatInt(acct, 10) + `,"actor_kind":"admin_token","action":"test.write","object_type":"test","object_id":"torn"`)
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, name+".1.log"), []byte(`{"account_id":`+strconv.FormatInt(acct, 10)+`,"actor_kind":"admin_token","action":"test.write","object_type":"test","object_id":"r1","outcome":"ok","request_id":"","created":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendReadAudits(ctx, []*clinic.AuditEntry{entry(acct, "late")}); err == nil {
		t.Fatal("append to an ended journal succeeded")
	}

	// The next store to open replays it: the flushed segment is skipped,
	// the torn write dropped, the rest inserted once, the files removed.
	st2 := testenv.OpenStore(t, dsn)
	if got := stored(t, st2, acct); !slices.Equal(got, want("r1", "r2", "r3", "r4", "r5", "r6")) {
		t.Fatalf("after replay: %v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, name+".*")); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
	var rows int
	if err := st2.DB().QueryRow("SELECT COUNT(*) FROM audit_journal WHERE journal = ?", name).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("journal row left: %d %v", rows, err)
	}

	// A flush the database refuses keeps the entries in the journal, is
	// counted, and is done again once the database takes it.
	if _, err := st2.DB().Exec("ALTER TABLE audit_journal RENAME TO audit_journal_off"); err != nil {
		t.Fatal(err)
	}
	appendIDs(st2, "r6b")
	if err := st2.FlushAudits(ctx); err == nil {
		t.Fatal("a flush into a missing table succeeded")
	}
	if waiting, failed := st2.AuditJournalStats(); waiting != 1 || failed == 0 {
		t.Fatalf("after a refused flush: %d waiting, %d failed", waiting, failed)
	}
	if _, err := st2.DB().Exec("ALTER TABLE audit_journal_off RENAME TO audit_journal"); err != nil {
		t.Fatal(err)
	}
	if got := flushed(st2); !slices.Equal(got, want("r1", "r2", "r3", "r4", "r5", "r6", "r6b")) {
		t.Fatalf("after the database came back: %v", got)
	}
	if waiting, _ := st2.AuditJournalStats(); waiting != 0 {
		t.Fatalf("%d waiting after a flush", waiting)
	}

	// A store that opens while another runs leaves the live journal alone,
	// and many writers racing flushes lose and repeat nothing.
	appendIDs(st2, "r7")
	st3 := testenv.OpenStore(t, dsn)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				if err := st2.FlushAudits(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	var all []string
	for g := range 8 {
		for i := range 40 {
			all = append(all, fmt.Sprintf("c%d-%02d", g, i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				s := st2
				if i%2 == 1 {
					s = st3
				}
				if err := s.AppendReadAudits(ctx, []*clinic.AuditEntry{entry(acct, fmt.Sprintf("c%d-%02d", g, i))}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := st3.FlushAudits(ctx); err != nil {
		t.Fatal(err)
	}
	all = append(all, "r1", "r2", "r3", "r4", "r5", "r6", "r6b", "r7")
	if got := flushed(st2); !slices.Equal(got, want(all...)) {
		t.Fatalf("after concurrent appends: %d entries, want %d", len(got), len(all))
	}

	// Close flushes: nothing is left for a replay.
	appendIDs(st3, "r8")
	if err := st3.Close(); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, st2, acct); !slices.Contains(got, "r8") || len(got) != len(all)+1 {
		t.Fatalf("after close: %d entries, r8 in: %v", len(got), slices.Contains(got, "r8"))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 { // st2's lock
		t.Fatalf("files left: %v", left)
	}
}

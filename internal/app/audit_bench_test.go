package app

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

func benchApp(b *testing.B) (*App, *clinic.Principal) {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	a, err := New(st, Config{ServerKey: make([]byte, 32), UserTokenIdle: time.Hour, UserTokenMax: time.Hour}, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.CreateAccount(ctx, NewAccount{Code: "bench", Name: "Bench", Domain: "bench.example.com"}); err != nil {
		b.Fatal(err)
	}
	acct, err := a.AccountByCode(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return a, &clinic.Principal{Account: acct, Kind: clinic.CredAdminToken}
}

// BenchmarkAudit_Grouped is the audit of a read as the server writes it:
// concurrent entries share a transaction. BenchmarkAudit_OnePerCommit
// writes each in its own, as before.
func BenchmarkAudit_Grouped(b *testing.B) {
	a, p := benchApp(b)
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := a.audit(ctx, p, "bench.read", "user", "1", outcomeOK); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAudit_OnePerCommit(b *testing.B) {
	a, p := benchApp(b)
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := a.auditIn(ctx, a.store.Write(), p, "bench.read", "user", "1", outcomeOK); err != nil {
				b.Fatal(err)
			}
		}
	})
}

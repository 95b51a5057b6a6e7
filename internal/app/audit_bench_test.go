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
			if err := a.Audit(ctx, p, "bench.read", "user", "1", OutcomeOK); err != nil {
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
			if err := a.AuditIn(ctx, a.store.Write(), p, "bench.read", "user", "1", OutcomeOK); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAudit_Journal is the audit of a read on SQLite today: the group
// is appended to the audit journal and moved into the table in bulk
// (store/journal.go). Compare BenchmarkAudit_Grouped, a commit per group.
func BenchmarkAudit_Journal(b *testing.B) {
	a, p := benchApp(b)
	if err := a.store.StartReadAudits(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := a.Audit(ctx, p, "bench.read", "user", "1", OutcomeOK); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// threadKey names a bench thread.
type threadKey struct{ accountID, visitID, created int64 }

// benchThread makes a visit whose thread holds 30 messages.
func benchThread(b *testing.B, a *App, p *clinic.Principal) threadKey {
	b.Helper()
	ctx := context.Background()
	u, err := a.store.Read().AdminUser(ctx, p.Account.ID)
	if err != nil {
		b.Fatal(err)
	}
	v := &clinic.Visit{AccountID: p.Account.ID, Code: "v1", Kind: clinic.KindEconsult, MemberID: u.ID, Status: 1, Type: 1, Created: 1, Modified: 1}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateVisit(ctx, v); err != nil {
			return err
		}
		for i := range 30 {
			seq, err := q.NextMessageSeq(ctx, p.Account.ID, v.ID, nil, nil)
			if err != nil {
				return err
			}
			m := &clinic.Message{AccountID: p.Account.ID, VisitID: v.ID, Seq: seq, AuthorID: u.ID, ActorType: 1, Type: "text",
				Content: "A message of a usual length, a sentence or two about how the patient feels.", CreatedUS: int64(i)}
			if err := q.AddMessage(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return threadKey{p.Account.ID, v.ID, v.Created}
}

// BenchmarkThreadPage_Cached is a 25-message page with its authors' names
// as GET /api/visits/{id}/messages gets it now (store/threads.go);
// BenchmarkThreadPage_Read reads the same from the database each time.
func BenchmarkThreadPage_Cached(b *testing.B) {
	a, p := benchApp(b)
	k := benchThread(b, a, p)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ms, err := a.store.ThreadPage(ctx, k.accountID, k.visitID, k.created, 6, 30)
			if err != nil || len(ms) != 25 {
				b.Fatal(len(ms), err)
			}
			if _, err := a.store.UserNames(ctx, k.accountID, []int64{ms[0].AuthorID}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkThreadPage_Read(b *testing.B) {
	a, p := benchApp(b)
	k := benchThread(b, a, p)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ms, err := a.store.Read().ThreadMessages(ctx, k.accountID, k.visitID, 6, 30)
			if err != nil || len(ms) != 25 {
				b.Fatal(len(ms), err)
			}
			if _, err := a.store.Read().UserNames(ctx, k.accountID, []int64{ms[0].AuthorID}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchToken is a patient of the bench clinic and a session of theirs.
func benchToken(b *testing.B, a *App, p *clinic.Principal) string {
	b.Helper()
	ctx := context.Background()
	u := &clinic.User{AccountID: p.Account.ID, Code: "bench-pat", Username: "bench-pat", FirstName: "Pat", LastName: "Bench",
		Type: clinic.UserMember, Status: clinic.StatusActive, Active: true, Extra: map[string]any{"race": ""}}
	if err := a.store.Write().CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	s, err := a.issueSession(ctx, a.store.Write(), u, "")
	if err != nil {
		b.Fatal(err)
	}
	return s.Token
}

// BenchmarkAuthenticate_UserCached is a request's authentication with a
// user token as the server does it: the token and the user's version in
// one narrow query, the user from the store's cache (a miss costs what
// store.BenchmarkTokenUser_Read measures).
func BenchmarkAuthenticate_UserCached(b *testing.B) {
	benchAuthenticate(b)
}

// BenchmarkAuthenticate_RequestContext is the cached case on a context that
// can be cancelled, as every request's is.
func BenchmarkAuthenticate_RequestContext(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchAuthenticateCtx(b, ctx)
}

func benchAuthenticate(b *testing.B) {
	benchAuthenticateCtx(b, context.Background())
}

func benchAuthenticateCtx(b *testing.B, ctx context.Context) {
	a, p := benchApp(b)
	c := Credentials{AccountCode: p.Account.Code, APIToken: benchToken(b, a, p)}
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, c, NeedUser); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThreadVisit_Narrow is the visit read of a thread request as the
// server does it: store.ThreadVisit on a request's context (one that can
// be cancelled). BenchmarkThreadVisit_Full reads the whole row the same
// way, as thread requests did before.
func BenchmarkThreadVisit_Narrow(b *testing.B) {
	benchThreadVisit(b, func(ctx context.Context, a *App, k threadKey) (int, error) {
		v, err := a.store.Read().ThreadVisit(ctx, k.accountID, k.visitID)
		if err != nil {
			return 0, err
		}
		return v.MessageCount, nil
	})
}

func BenchmarkThreadVisit_Full(b *testing.B) {
	benchThreadVisit(b, func(ctx context.Context, a *App, k threadKey) (int, error) {
		v, err := a.store.Read().VisitByID(ctx, k.accountID, k.visitID)
		if err != nil {
			return 0, err
		}
		return v.MessageCount, nil
	})
}

// read returns the thread's length as the visit read gives it.
func benchThreadVisit(b *testing.B, read func(context.Context, *App, threadKey) (int, error)) {
	a, p := benchApp(b)
	k := benchThread(b, a, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		n, err := read(ctx, a, k)
		if err != nil || n != 30 {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkPostMessage is a post as the server makes it: the visit read,
// who may write and who is told decided, and the post written with its
// webhook delivery, notifications and audit entry.
func BenchmarkPostMessage(b *testing.B) {
	a, p := benchApp(b)
	ctx := context.Background()
	u := &clinic.User{AccountID: p.Account.ID, Code: "bench-pat", Username: "bench-pat", FirstName: "Pat", LastName: "Bench",
		Type: clinic.UserMember, Status: clinic.StatusActive, Active: true, Extra: map[string]any{"race": ""}}
	if err := a.store.Write().CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	v := &clinic.Visit{AccountID: p.Account.ID, Code: "v1", Kind: clinic.KindEconsult, MemberID: u.ID, Status: clinic.VisitPending, Type: 1, Created: 1, Modified: 1}
	if err := a.store.Write().CreateVisit(ctx, v); err != nil {
		b.Fatal(err)
	}
	pu := &clinic.Principal{Account: p.Account, Kind: clinic.CredUserToken, User: u}
	content := "A message of a usual length, a sentence or two about how the patient feels."
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.PostMessage(ctx, pu, v.ID, NewMessage{Content: &content}); err != nil {
			b.Fatal(err)
		}
	}
}

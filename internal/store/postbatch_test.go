package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// postFixture is a clinic with a patient and visits to post to.
type postFixture struct {
	st     *store.Store
	acct   int64
	member int64
}

const closedStatus = 99 // the status the fixture's posts treat as closed

func newPostFixture(t *testing.T, code string) *postFixture {
	t.Helper()
	st := testenv.OpenStore(t, testenv.DSN(t))
	f := &postFixture{st: st, acct: newAccount(t, st, code)}
	u := &clinic.User{AccountID: f.acct, Code: code + "-pat", Username: code + "-pat", Type: 1, Status: 20, Active: true}
	if err := st.Write().CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	f.member = u.ID
	return f
}

func (f *postFixture) visit(t *testing.T, status int) int64 {
	t.Helper()
	v := &clinic.Visit{AccountID: f.acct, Code: fmt.Sprintf("v%d", status), Kind: "econsult", MemberID: f.member, Status: status}
	if err := f.st.Write().CreateVisit(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

func (f *postFixture) post(visit, author int64, content string) *store.MessagePost {
	return &store.MessagePost{
		Message: &clinic.Message{AccountID: f.acct, VisitID: visit, AuthorID: author, ActorType: 1, Type: "patient_message", Content: content, CreatedUS: 1},
		Closed:  []int{closedStatus},
		Webhook: store.OutboxItem{AccountID: f.acct, Topic: "webhook", Created: 1, Due: 1}, WebhookPayload: store.Template{`{"id":`, `}`},
		Notification: clinic.Notification{AccountID: f.acct, Type: "visit_message", Title: "New message", VisitID: visit, Created: 1, MtimeMS: 1000},
		NotifyUsers:  []int64{f.member}, PushTypes: []int{1}, PushTopic: "push", PushPayload: store.Template{"", "", ""},
		Audit: clinic.AuditEntry{AccountID: f.acct, ActorKind: "user_token", ActorUserID: author, Action: "visit.message.create", ObjectType: "visit_message", Outcome: "ok", Created: 1},
	}
}

// thread is the contents of a visit's thread in order, and its count.
func (f *postFixture) thread(t *testing.T, visit int64) ([]string, int) {
	t.Helper()
	v, err := f.st.Read().VisitByID(context.Background(), f.acct, visit)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := f.st.Read().ThreadMessages(context.Background(), f.acct, visit, 1, v.MessageCount)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, m := range ms {
		if m.Seq != i+1 {
			t.Fatalf("visit %d: place %d holds seq %d", visit, i+1, m.Seq)
		}
		out = append(out, m.Content)
	}
	return out, v.MessageCount
}

// TestPostgres_PostBatch writes one PostgreSQL batch whose members succeed, post to
// a closed visit, fail in the database, or were given up before their
// turn: only the successful posts are stored, with their side effects, in
// consecutive places, and each member gets its own outcome.
func TestPostgres_PostBatch(t *testing.T) {
	t.Parallel()
	if testenv.Engine() != "postgres" {
		t.Skip("the post batch is PostgreSQL's; SQLite's posts are Grouped (TestCommitGroup)")
	}
	ctx := context.Background()
	f := newPostFixture(t, "postbatch")
	a, b, closed := f.visit(t, 20), f.visit(t, 20), f.visit(t, closedStatus)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	mps := []*store.MessagePost{
		f.post(b, f.member, "b1"),
		f.post(a, f.member, "a1"),
		f.post(closed, f.member, "closed"),
		f.post(a, f.member+1000, "no such author"),
		f.post(a, f.member, "gone"),
		f.post(a, f.member, "a2"),
	}
	errs := store.WritePosts(f.st, []context.Context{ctx, ctx, ctx, ctx, gone, ctx}, mps)
	for _, i := range []int{0, 1, 5} {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i, errs[i])
		}
		if mps[i].Message.ID == 0 || mps[i].Audit.ObjectID == "" {
			t.Fatalf("member %d: no id: %+v", i, mps[i].Message)
		}
	}
	if !errors.Is(errs[2], store.ErrNotFound) {
		t.Fatalf("closed visit: %v", errs[2])
	}
	if !errors.Is(errs[3], store.ErrForeignKey) {
		t.Fatalf("unknown author: %v", errs[3])
	}
	if !errors.Is(errs[4], context.Canceled) {
		t.Fatalf("gone: %v", errs[4])
	}
	if got, n := f.thread(t, a); !slices.Equal(got, []string{"a1", "a2"}) || n != 2 {
		t.Fatalf("visit a: %v (count %d)", got, n)
	}
	if got, n := f.thread(t, b); !slices.Equal(got, []string{"b1"}) || n != 1 {
		t.Fatalf("visit b: %v (count %d)", got, n)
	}
	if _, n := f.thread(t, closed); n != 0 {
		t.Fatalf("closed visit holds %d messages", n)
	}
	want := []string{fmt.Sprint(mps[0].Message.ID), fmt.Sprint(mps[1].Message.ID), fmt.Sprint(mps[5].Message.ID)}
	slices.Sort(want)
	if got := stored(t, f.st, f.acct); !slices.Equal(got, want) {
		t.Fatalf("audit entries %v, want %v", got, want)
	}
	ns, err := f.st.Read().UserNotifications(ctx, f.acct, f.member, 1<<62, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 3 {
		t.Fatalf("%d notifications, want 3", len(ns))
	}
}

// TestPostMessage_Concurrent: posters race on a few threads, on either
// engine's path (PostgreSQL's batches, SQLite's groups). Every post that
// was acknowledged is stored once, each thread's places are consecutive
// from 1, and a thread's count is what was acknowledged.
func TestPostMessage_Concurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newPostFixture(t, "postrace")
	visits := []int64{f.visit(t, 20), f.visit(t, 20), f.visit(t, 20)}
	const posters, each = 12, 10
	var mu sync.Mutex
	acked := map[int64][]string{}
	var wg sync.WaitGroup
	for p := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v := visits[(p+i)%len(visits)]
				content := fmt.Sprintf("p%d-%d", p, i)
				if err := f.st.PostMessage(ctx, f.post(v, f.member, content)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[v] = append(acked[v], content)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, v := range visits {
		got, n := f.thread(t, v)
		want := acked[v]
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || n != len(want) {
			t.Fatalf("visit %d: stored %d (count %d), acknowledged %d", v, len(got), n, len(want))
		}
		total += n
	}
	if total != posters*each {
		t.Fatalf("%d stored, want %d", total, posters*each)
	}
}

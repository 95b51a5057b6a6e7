package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

func contents(ms []client.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Content)
	}
	return strings.Join(out, ",")
}

func TestMessages_PostAndRead(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)

	// A patient posts; 201 with the message of the spec.
	t.Run("OKPatientPosts", func(t *testing.T) {
		res := postMsg(e, s.pat.Token, visit, "Hello, the rash is spreading.")
		d := created[client.Message](t, res)
		if d.Type != "patient_message" || d.Content != "Hello, the rash is spreading." || d.VisitId != visit ||
			d.Actor.Id != s.pat.UserID || d.Actor.Type != 200 || d.Actor.DisplayName != "Pat One" {
			t.Fatalf("%s", res.Raw)
		}
		// created is UNIX seconds with a fractional part, even on a whole second.
		if !regexp.MustCompile(`"created":1772442000\.\d{6}[,}]`).Match(res.Raw) {
			t.Fatalf("created without its fraction: %s", res.Raw)
		}
	})
	// A host provider replies as a provider.
	t.Run("OKHostReplies", func(t *testing.T) {
		d := mustPost(t, e, s.doc.Token, visit, "Please send a photo.")
		if d.Type != "provider_message" || d.Actor.Type != 400 || d.Actor.DisplayName != "Dana Doc" {
			t.Fatalf("%+v", d)
		}
	})
	// Errors: 400 (no token, as the spec's status table has it), 401 (a
	// token that is not valid), 400, 403, 404 in the code shape.
	t.Run("ErrShapes", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: msgPath(visit), JSON: newMessage{Content: "x"}}), 400, 400)
		wantErr(t, postMsg(e, "not-a-token", visit, "x"), 401, 401)
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit)}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit) + "/events"}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat.Token}, JSON: js(`{}`)}), 400, 400)
		wantErr(t, postMsg(e, s.pat.Token, visit, "   \n"), 400, 400)
		wantErr(t, postMsg(e, s.pat.Token, visit, strings.Repeat("é", 10001)), 400, 400)
		wantErr(t, postMsg(e, s.pat2.Token, visit, "x"), 403, 403)
		wantErr(t, postMsg(e, s.other.Token, visit, "x"), 403, 403) // a provider not of this room
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat2.Token}}), 403, 403)
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit), Header: adminHeaders(s.c)}), 403, 403)
		wantErr(t, postMsg(e, s.pat.Token, "999999", "x"), 404, 404)
		wantErr(t, postMsg(e, s.pat.Token, "abc", "x"), 404, 404)
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat.Token}, Query: q("limit", "0")}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat.Token}, Query: q("sort", "content")}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat.Token}, Query: q("order", "sideways")}), 400, 400)
		// Form and multipart bodies work too, and the .json suffix.
		created[client.Message](t, e.Do(testenv.Req{Method: "POST", Path: msgPath(visit) + ".json", Header: userHeaders(s.c, s.pat.Token), Form: q("content", "form body")}))
	})
	// Reading: order, paging, sort, and the polling rule.
	t.Run("OKReadPagingAndPolling", func(t *testing.T) {
		ms, total := readMsgs(t, e, s.pat.Token, visit)
		if total != 3 || contents(ms) != "Hello, the rash is spreading.,Please send a photo.,form body" {
			t.Fatalf("%d %s", total, contents(ms))
		}
		if ms, _ := readMsgs(t, e, s.doc.Token, visit, "sort", "created:desc", "limit", "2"); contents(ms) != "form body,Please send a photo." {
			t.Fatalf("desc: %s", contents(ms))
		}
		if ms, _ := readMsgs(t, e, s.doc.Token, visit, "sort", "created", "order", "desc", "skip", "2"); contents(ms) != "Hello, the rash is spreading." {
			t.Fatalf("order wins: %s", contents(ms))
		}
		if ms, _ := readMsgs(t, e, s.pat.Token, visit, "limit", "2", "page", "2"); contents(ms) != "form body" {
			t.Fatalf("page 2: %s", contents(ms))
		}
		// Polling: skip = the count held gives nothing until a new message, then only it.
		if ms, total := readMsgs(t, e, s.pat.Token, visit, "skip", "3"); len(ms) != 0 || total != 3 {
			t.Fatalf("caught up: %d %d", len(ms), total)
		}
		mustPost(t, e, s.doc.Token, visit, "Any fever?")
		if ms, total := readMsgs(t, e, s.pat.Token, visit, "skip", "3"); contents(ms) != "Any fever?" || total != 4 {
			t.Fatalf("new only: %s %d", contents(ms), total)
		}
		if ms, _ := readMsgs(t, e, s.pat.Token, visit, "limit", "1000"); len(ms) != 4 {
			t.Fatal("a limit above 200 is served as 200")
		}
	})
	// Attachments must be files the sender may see.
	t.Run("ErrAttachmentNotVisible", func(t *testing.T) {
		var pid, p2 int64
		fmt.Sscan(s.pat.UserID, &pid)
		fmt.Sscan(s.pat2.UserID, &p2)
		mine, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, pid, "patient_shared", "user", pid, "photo.jpg", 1)
		theirs, _ := e.Store.Write().CreateFileRecord(context.Background(), 1, p2, "patient_shared", "user", p2, "x.jpg", 1)
		sent := created[client.Message](t, e.Do(testenv.Req{Method: "POST", Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat.Token},
			JSON: newMessage{Content: "Photo attached.", AttachmentIDs: []string{fmt.Sprint(mine)}}}))
		if diff := cmp.Diff([]string{fmt.Sprint(mine)}, sent.AttachmentIds); diff != "" {
			t.Fatalf("attachments (-want +got):\n%s", diff)
		}
		// Read back, each message carries its attachments and its author's name.
		ms, _ := readMsgs(t, e, s.pat.Token, visit, "sort", "created:desc", "limit", "2")
		if len(ms) != 2 || !slices.Equal(ms[0].AttachmentIds, []string{fmt.Sprint(mine)}) || ms[0].Actor.DisplayName != "Pat One" ||
			ms[1].AttachmentIds == nil || len(ms[1].AttachmentIds) != 0 {
			t.Fatalf("%+v", ms)
		}
		for _, bad := range []string{fmt.Sprint(theirs), "nope", "987654"} {
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.pat.Token},
				JSON: newMessage{Content: "x", AttachmentIDs: []string{bad}}}), 400, 400)
		}
	})
	// A completed visit is closed for new messages; its history stays readable.
	t.Run("ErrVisitClosed", func(t *testing.T) {
		before, _ := readMsgs(t, e, s.pat.Token, visit)
		for _, step := range []string{"accept", "inprogress", "close"} {
			if res := s.post(s.doc.Token, "/api_v3/visits/"+step, "id", visit); res.Status != 200 {
				t.Fatalf("%s: %s", step, res.Raw)
			}
		}
		res := postMsg(e, s.pat.Token, visit, "One more thing")
		wantErr(t, res, 409, 409)
		if !strings.Contains(messageOf(res), "completed") {
			t.Fatalf("%s", res.Raw)
		}
		wantErr(t, postMsg(e, s.doc.Token, visit, "x"), 409, 409)
		after, total := readMsgs(t, e, s.pat.Token, visit)
		if len(after) != len(before) || total != len(before) {
			t.Fatal("the history changed")
		}
		// Now assigned, the visit's thread is its provider's: another host of the room is not a participant.
		if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.other.UserID + "/rooms", Header: adminHeaders(s.c), Form: q("code", "main")}); res.Status != 200 {
			t.Fatal(res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": s.other.Token}}), 403, 403)
	})
	// Every read and post is audited without content.
	t.Run("OKAuditedWithoutContent", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(s.c), Query: q("limit", "500")})
		seen := map[string]int{}
		for _, a := range dataOf[[]client.AuditEntry](t, res) {
			seen[a.Action+"/"+string(a.Outcome)]++
		}
		if seen["visit.message.create/ok"] < 5 || seen["visit.messages.read/ok"] < 5 || seen["visit.message.create/denied"] < 1 {
			t.Fatalf("%v", seen)
		}
		if strings.Contains(string(res.Raw), "rash is spreading") {
			t.Fatal("the audit holds message content")
		}
	})
}

// TestMessages_ThreadCache: pages served while the thread grows, read by
// many at once, always show the places the count covers in their order,
// and an author's new name shows at once.
func TestMessages_ThreadCache(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	mustPost(t, e, s.pat.Token, visit, "m-first")

	// A new name shows on old messages at once.
	t.Run("OKNewNameShows", func(t *testing.T) {
		if ms, _ := readMsgs(t, e, s.doc.Token, visit); ms[0].Actor.DisplayName == "" {
			t.Fatalf("no name: %+v", ms[0])
		}
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token), Form: q("first_name", "Renamed", "last_name", "Person")})
		if res.Status != 200 {
			t.Fatalf("rename: %d %s", res.Status, res.Raw)
		}
		if ms, _ := readMsgs(t, e, s.doc.Token, visit); ms[0].Actor.DisplayName != "Renamed Person" {
			t.Fatalf("old name shown: %+v", ms[0].Actor)
		}
	})

	// Concurrent readers and posters see consistent pages.
	t.Run("OKConcurrentConsistentPages", func(t *testing.T) {
		type seen struct {
			skip, total int
			desc        bool
			ids         []string
		}
		var (
			mu    sync.Mutex
			pages []seen
			wg    sync.WaitGroup
		)
		for w := range 3 {
			token := []string{s.pat.Token, s.doc.Token, s.pat.Token}[w]
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range 12 {
					if r := postMsg(e, token, visit, fmt.Sprintf("w%d-%d", w, i)); r.Status != 201 {
						t.Errorf("post: %d %s", r.Status, r.Raw)
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				for i := range 30 {
					skip, desc := (i*7+w)%20, i%3 == 0
					kv := []string{"skip", fmt.Sprint(skip), "limit", "5"}
					if desc {
						kv = append(kv, "order", "desc")
					}
					res := e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": token}, Query: q(kv...)})
					var page threadPage
					if err := json.Unmarshal(res.Raw, &page); res.Status != 200 || err != nil {
						t.Errorf("read: %d %s (%v)", res.Status, res.Raw, err)
						return
					}
					p := seen{skip: skip, total: page.TotalCount, desc: desc}
					for _, m := range page.Data {
						p.ids = append(p.ids, m.Id)
					}
					mu.Lock()
					pages = append(pages, p)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		all, total := readMsgs(t, e, s.doc.Token, visit, "limit", "200")
		if total != 37 || len(all) != 37 {
			t.Fatalf("thread: %d of %d", len(all), total)
		}
		var order []string
		for _, m := range all {
			order = append(order, m.Id)
		}
		for _, p := range pages {
			// The page is the places the count it came with covers.
			want := order[min(p.skip, p.total):min(p.skip+5, p.total)]
			if p.desc {
				want = nil
				for i := p.total - 1 - p.skip; i >= 0 && i > p.total-1-p.skip-5; i-- {
					want = append(want, order[i])
				}
			}
			if strings.Join(p.ids, ",") != strings.Join(want, ",") {
				t.Fatalf("skip %d desc %v of %d: %v, want %v", p.skip, p.desc, p.total, p.ids, want)
			}
		}
	})
}

// TestMessages_VisitChangedElsewhere changes a visit in SQL, as another
// process would, between posts: a post decided on the visit as an earlier
// post saw it (App.postVisit) must not be written on that stale view.
func TestMessages_VisitChangedElsewhere(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	db := e.Store.DB()
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := db.Exec(e.Store.Rebind(query), args...); err != nil {
			t.Fatal(err)
		}
	}
	notified := func(who *session) int {
		t.Helper()
		var n int
		if err := db.QueryRow(e.Store.Rebind("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND visit_id = ?"), who.UserID, visit).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := func() int {
		t.Helper()
		_, total := readMsgs(t, e, s.pat.Token, visit)
		return total
	}

	// doc hosts the unassigned e-consult as a provider of its room.
	mustPost(t, e, s.doc.Token, visit, "host")
	mustPost(t, e, s.pat.Token, visit, "to the hosts")
	if notified(s.doc) != 1 || notified(s.other) != 0 {
		t.Fatalf("before: doc %d, other %d notifications", notified(s.doc), notified(s.other))
	}

	// A provider assigned elsewhere is the one told.
	t.Run("OKReassignedProviderTold", func(t *testing.T) {
		exec("UPDATE visits SET provider_id = ? WHERE id = ?", s.other.UserID, visit)
		mustPost(t, e, s.pat.Token, visit, "to the assigned provider")
		if notified(s.doc) != 1 || notified(s.other) != 1 {
			t.Fatalf("doc %d, other %d notifications; want 1 and 1", notified(s.doc), notified(s.other))
		}
	})

	// A host who lost the visit elsewhere may not post.
	t.Run("ErrHostLostVisit", func(t *testing.T) {
		exec("UPDATE visits SET provider_id = 0 WHERE id = ?", visit)
		mustPost(t, e, s.doc.Token, visit, "host again") // seen with doc hosting it
		exec("UPDATE visits SET provider_id = ? WHERE id = ?", s.other.UserID, visit)
		before := count()
		if res := postMsg(e, s.doc.Token, visit, "stale host"); res.Status != 403 {
			t.Fatalf("stale host: %d %s", res.Status, res.Raw)
		}
		if after := count(); after != before {
			t.Fatalf("thread %d -> %d after a refused post", before, after)
		}
	})

	// A visit closed elsewhere takes no post.
	t.Run("ErrClosedElsewhere", func(t *testing.T) {
		mustPost(t, e, s.pat.Token, visit, "last open") // seen open
		exec("UPDATE visits SET status = ? WHERE id = ?", clinic.VisitCompleted, visit)
		before := count()
		res := postMsg(e, s.pat.Token, visit, "after close")
		if res.Status != 409 {
			t.Fatalf("closed: %d %s", res.Status, res.Raw)
		}
		if after := count(); after != before {
			t.Fatalf("thread %d -> %d after a refused post", before, after)
		}
	})
}

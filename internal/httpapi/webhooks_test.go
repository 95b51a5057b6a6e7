package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

func TestWebhook_DeliveryRetriesAndSignature(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Workers: true})
	s := newClinicSetup(t, e, "alpha")
	// The receiver fails the first two attempts.
	rc := newReceiver(t, func(n int) int {
		if n <= 2 {
			return 500
		}
		return 204
	})
	set := setWebhook(t, e, s.c, "webhook_url", rc.URL+"/hooks/teleclinic", "generate_webhook_secret", "1")
	secret := deref(set.WebhookSecret)
	if !strings.HasPrefix(secret, "whsec_") || !set.WebhookSecretSet {
		t.Fatalf("%+v", set)
	}
	visit := s.econsult(t, s.pat)
	msg := mustPost(t, e, s.pat.Token, visit, "The rash is spreading.")

	var got []delivery
	for attempt := 1; attempt <= 3; attempt++ {
		got = append(got, rc.next(t))
		if attempt < 3 {
			// Wait until the failed attempt is recorded, then let the retry interval pass.
			waitFor(t, "the retry to be scheduled", func() bool {
				ds := deliveries(t, e, s.c)
				return len(ds) == 1 && ds[0].Outcome == "retrying" && ds[0].Attempts == attempt
			})
			d := deliveries(t, e, s.c)[0]
			if deref(d.LastStatusCode) != 500 || d.NextAttempt == nil || int64(*d.NextAttempt) != e.Clock.Now().Unix()+60 {
				t.Fatalf("%+v", d)
			}
			if rc.count() != attempt {
				t.Fatal("retried before the interval")
			}
			e.Clock.Advance(60 * time.Second)
		}
	}
	ids := map[string]bool{}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range got {
		ev := d.Event
		ids[ev.ID] = true
		if ev.Type != "visit.message.created" || ev.AccountCode != "alpha" || ev.Version != "1.0" || ev.Data.VisitID != visit ||
			ev.Data.MessageID != msg.Id || ev.Data.ActorType != "patient" || ev.Data.TS != 1772442000 || ev.Created < ev.Data.TS {
			t.Fatalf("payload %s", d.Body)
		}
		slices.Sort(d.Keys)
		if strings.Join(d.Keys, ",") != "account_code,created,data,data.actor_type,data.message_id,data.ts,data.visit_id,id,type,version" {
			t.Fatalf("payload fields %v: no content, no health data", d.Keys)
		}
		if strings.Contains(string(d.Body), "rash") {
			t.Fatal("the payload carries message content")
		}
		// Signed per Standard Webhooks; the test clock is in the past, so the
		// library checks the signature but not the freshness here.
		if err := wh.VerifyIgnoringTimestamp(d.Body, d.Header); err != nil {
			t.Fatalf("signature: %v", err)
		}
		if d.Header.Get("webhook-id") != ev.ID || d.Header.Get("webhook-timestamp") != strconv.FormatInt(ev.Created, 10) {
			t.Fatalf("headers %v", d.Header)
		}
	}
	if len(ids) != 3 {
		t.Fatal("every attempt carries a new id")
	}
	waitFor(t, "the delivery to be recorded", func() bool { return deliveries(t, e, s.c)[0].Outcome == "delivered" })
	d := deliveries(t, e, s.c)[0]
	if d.Attempts != 3 || deref(d.LastStatusCode) != 204 || d.MessageId != msg.Id || d.Event != "visit.message.created" || d.NextAttempt != nil {
		t.Fatalf("%+v", d)
	}

	// A provider's message fires the event with actor_type provider.
	t.Run("OKProviderMessage", func(t *testing.T) {
		m := mustPost(t, e, s.doc.Token, visit, "Please send a photo.")
		ev := rc.next(t).Event
		if ev.Data.ActorType != "provider" || ev.Data.MessageID != m.Id {
			t.Fatalf("%+v", ev)
		}
	})
	// A message that was not committed sends nothing.
	t.Run("ErrNotCommitted", func(t *testing.T) {
		before := len(deliveries(t, e, s.c))
		wantErr(t, postMsg(e, s.pat2.Token, visit, "x"), 403, 403)
		wantErr(t, postMsg(e, s.pat.Token, visit, ""), 400, 400)
		if len(deliveries(t, e, s.c)) != before {
			t.Fatal("a delivery for a refused message")
		}
	})
}

func TestWebhook_GivesUpAfterFiveAndRedelivers(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Workers: true})
	s := newClinicSetup(t, e, "alpha")
	var mu sync.Mutex
	down := true
	rc := newReceiver(t, func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return 503
		}
		return 200
	})
	setWebhook(t, e, s.c, "webhook_url", rc.URL)
	visit := s.econsult(t, s.pat)
	msg := mustPost(t, e, s.pat.Token, visit, "hello")
	for attempt := 1; attempt <= 5; attempt++ {
		d := rc.next(t)
		if d.Header.Get("webhook-signature") != "" {
			t.Fatal("signed without a secret")
		}
		if attempt < 5 {
			waitFor(t, "retry", func() bool {
				d := deliveries(t, e, s.c)[0]
				return d.Attempts == attempt && d.Outcome == "retrying"
			})
			e.Clock.Advance(60 * time.Second)
		}
	}
	waitFor(t, "failure", func() bool { return deliveries(t, e, s.c)[0].Outcome == "failed" })
	e.Clock.Advance(10 * time.Minute)
	time.Sleep(100 * time.Millisecond)
	if rc.count() != 5 {
		t.Fatalf("%d attempts, want 5 in all", rc.count())
	}
	d := deliveries(t, e, s.c)[0]
	if deref(d.LastStatusCode) != 503 || d.Finished == nil || !strings.Contains(deref(d.LastError), "503") {
		t.Fatalf("%+v", d)
	}

	// The admin redelivers once the receiver is back.
	mu.Lock()
	down = false
	mu.Unlock()
	if again := dataOf[client.Delivery](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/deliveries/" + d.Id + "/redeliver", Header: adminHeaders(s.c)})); again.Attempts != 0 {
		t.Fatalf("%+v", again)
	}
	if ev := rc.next(t).Event; ev.Data.MessageID != msg.Id {
		t.Fatalf("%+v", ev)
	}
	waitFor(t, "delivered", func() bool { return deliveries(t, e, s.c)[0].Outcome == "delivered" })
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/deliveries/424242/redeliver", Header: adminHeaders(s.c)}), 404, 404)
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/webhooks/deliveries", Header: userHeaders(s.c, s.pat.Token)}), 401, 401)
	// Another clinic sees none of it.
	other := e.NewClinic("beta", true)
	if len(deliveries(t, e, other)) != 0 {
		t.Fatal("deliveries leak across clinics")
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/deliveries/" + d.Id + "/redeliver", Header: adminHeaders(other)}), 404, 404)
}

func TestWebhook_Settings(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Config: func(c *app.Config) { c.Webhooks.AllowPrivate = false }})
	c := e.NewClinic("alpha", true)
	get := func() webhookSettings {
		return decode[client.AccountSettings](t, e.Do(testenv.Req{Path: "/api_v3/account/settings", Header: adminHeaders(c)})).Data
	}
	if d := get(); d.WebhookUrl != "" || d.WebhookSecretSet || d.AccountCode != "alpha" {
		t.Fatalf("%+v", d)
	}
	d := setWebhook(t, e, c, "webhook_url", "https://hooks.example.com/teleclinic")
	if d.WebhookUrl != "https://hooks.example.com/teleclinic" || d.WebhookSecret != nil {
		t.Fatalf("%+v", d)
	}
	secret := "whsec_" + strings.Repeat("QUJD", 8)
	d = decode[client.AccountSettings](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: adminHeaders(c), JSON: js(`{"webhook_secret": "` + secret + `"}`)})).Data
	if deref(d.WebhookSecret) != secret || d.WebhookUrl != "https://hooks.example.com/teleclinic" {
		t.Fatalf("%+v", d)
	}
	if d := get(); !d.WebhookSecretSet || d.WebhookSecret != nil {
		t.Fatalf("the secret is shown once only: %+v", d)
	}
	var sealed string
	_ = e.Store.DB().QueryRow("SELECT webhook_secret FROM accounts WHERE code = 'alpha'").Scan(&sealed)
	if sealed == "" || strings.Contains(sealed, "QUJD") {
		t.Fatal("the secret is not sealed at rest")
	}
	for _, bad := range [][]string{
		{"webhook_url", "ftp://x"}, {"webhook_url", "not a url"}, {"webhook_url", "http://user:pw@hooks.example.com/"},
		{"webhook_url", "http://127.0.0.1:9000/"}, {"webhook_url", "http://10.0.0.1/"}, {"webhook_url", "http://169.254.169.254/"}, {"webhook_url", "http://[::1]/"},
		{"webhook_secret", "plain"}, {"webhook_secret", "whsec_AAAA"}, {"webhook_secret", secret, "generate_webhook_secret", "1"},
	} {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: adminHeaders(c), Form: q(bad...)}), 400, 400)
	}
	// Clearing.
	if d := setWebhook(t, e, c, "webhook_secret", ""); d.WebhookSecretSet || d.WebhookUrl == "" {
		t.Fatalf("%+v", d)
	}
	if d := setWebhook(t, e, c, "webhook_url", ""); d.WebhookUrl != "" {
		t.Fatalf("%+v", d)
	}
	pat := mustSSO(t, e, c, "200", "p1", "Pat", "One")
	wantErr(t, e.Do(testenv.Req{Path: "/api_v3/account/settings", Header: userHeaders(c, pat.Token)}), 401, 401)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: userHeaders(c, pat.Token), Form: q("webhook_url", "https://x.example.com/")}), 401, 401)
}

// TestWebhook_RefusedAtDial: a receiver name that resolves to this host
// passes the settings check (it is a name, not an address) but every
// delivery is refused when it connects; no request reaches it.
func TestWebhook_RefusedAtDial(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Workers: true, Config: func(c *app.Config) { c.Webhooks.AllowPrivate = false }})
	s := newClinicSetup(t, e, "alpha")
	rc := newReceiver(t, nil)
	port := rc.URL[strings.LastIndex(rc.URL, ":")+1:]
	setWebhook(t, e, s.c, "webhook_url", "http://localhost:"+port+"/hook")
	visit := s.econsult(t, s.pat)
	mustPost(t, e, s.pat.Token, visit, "hello")
	waitFor(t, "the refused attempt", func() bool {
		ds := deliveries(t, e, s.c)
		return len(ds) == 1 && ds[0].Attempts == 1 && ds[0].Outcome == "retrying"
	})
	d := deliveries(t, e, s.c)[0]
	if !strings.Contains(deref(d.LastError), "refused") || d.LastStatusCode != nil {
		t.Fatalf("%+v", d)
	}
	if rc.count() != 0 {
		t.Fatal("the private receiver was reached")
	}
}

func TestWebhook_NoURLNoDeliveries(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	mustPost(t, e, s.pat.Token, visit, "hello")
	if len(deliveries(t, e, s.c)) != 0 {
		t.Fatal("a delivery without a webhook URL")
	}
}

// TestMessages_ConcurrentPosts: 50 posts at once from the patient and the
// provider make 50 messages in one order that every reader sees, and 50
// deliveries, each once, made by two servers sharing the database (as two
// processes would).
func TestMessages_ConcurrentPosts(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{Workers: true})
	e2 := testenv.New(t, testenv.Options{Workers: true, DSN: e.DSN, ServerKey: e.Key, Clock: e.Clock})
	s := newClinicSetup(t, e, "alpha")
	rc := newReceiver(t, nil)
	setWebhook(t, e, s.c, "webhook_url", rc.URL)
	visit := s.econsult(t, s.pat)

	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tok, base := s.pat.Token, e.URL
			if i%2 == 1 {
				tok, base = s.doc.Token, e2.URL
			}
			res := testenv.Do(t, base, testenv.Req{Method: "POST", Path: msgPath(visit), Header: map[string]string{"X-ApiToken": tok}, Form: q("content", fmt.Sprintf("m%02d", i))})
			mu.Lock()
			statuses[res.Status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if statuses[201] != 50 {
		t.Fatalf("%v", statuses)
	}
	order := func(tok, base string) string {
		page := decode[threadPage](t, testenv.Do(t, base, testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": tok}, Query: q("limit", "200")}))
		if page.TotalCount != 50 {
			t.Fatalf("%d messages", page.TotalCount)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.Id)
		}
		return strings.Join(ids, ",")
	}
	one := order(s.pat.Token, e.URL)
	if order(s.doc.Token, e2.URL) != one || len(strings.Split(one, ",")) != 50 {
		t.Fatal("readers disagree on the order")
	}
	// Paging through with skip sees each message once, in that order.
	var paged []string
	for skip := 0; skip < 50; skip += 7 {
		ms, _ := readMsgs(t, e, s.pat.Token, visit, "skip", strconv.Itoa(skip), "limit", "7")
		for _, m := range ms {
			paged = append(paged, m.Id)
		}
	}
	if strings.Join(paged, ",") != one {
		t.Fatal("paging disagrees with the order")
	}
	waitFor(t, "50 deliveries", func() bool { return rc.count() >= 50 })
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
	seen := map[string]int{}
	rc.mu.Lock()
	for _, d := range rc.got {
		seen[d.Event.Data.MessageID]++
	}
	rc.mu.Unlock()
	if len(seen) != 50 || rc.count() != 50 {
		t.Fatalf("%d deliveries of %d messages", rc.count(), len(seen))
	}
	for _, id := range strings.Split(one, ",") {
		if seen[id] != 1 {
			t.Fatalf("message %s delivered %d times", id, seen[id])
		}
	}
}

// GET /webhooks/deliveries pages by delivery (before, limit, Link
// rel=next): every delivery once, newest first; a page that ends the
// list, exactly full or not, names no next one.
func TestWebhook_DeliveriesPages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	rc := newReceiver(t, func(int) int { return 200 })
	setWebhook(t, e, s.c, "webhook_url", rc.URL)
	visit := s.econsult(t, s.pat)
	for i := range 5 {
		mustPost(t, e, s.pat.Token, visit, fmt.Sprintf("Message %d.", i))
	}
	all := e.Do(testenv.Req{Path: "/api_v3/webhooks/deliveries", Header: adminHeaders(s.c)})
	want := idsOf(dataOf[[]json.RawMessage](t, all), "id")
	if len(want) != 5 || all.Header.Get("Link") != "" {
		t.Fatalf("%d deliveries, Link %q", len(want), all.Header.Get("Link"))
	}
	for _, limit := range []int{1, 2, 5} {
		got, _ := pageWalk{path: "/api_v3/webhooks/deliveries", query: q("limit", fmt.Sprint(limit)), header: adminHeaders(s.c), cursor: "before", idKey: "id", limit: limit}.walk(t, e)
		if diff := cmp.Diff(want, idsOf(got, "id")); diff != "" {
			t.Fatalf("%d a page (-want +got):\n%s", limit, diff)
		}
	}
}

package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/clinic"
	"teleclinic/internal/mail"
	"teleclinic/internal/testenv"
)

// session is a user logged in through SSO.
type session struct {
	UserID, Token, Refresh string
	Profile                ssoProfile
}

// ssoProfile is POST /users/sso's answer: the user's profile with its
// login, and with fields=vsee its video identity.
type ssoProfile struct {
	client.UserProfile
	Token client.TokenObject `json:"token"`
	Vsee  *struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	} `json:"vsee"`
}

func ssoHeaders(c *testenv.Clinic) map[string]string {
	return map[string]string{"X-AccountCode": c.Code, "X-ApiKey": c.APIKey, "X-ApiSecret": c.APISecret}
}

func userHeaders(c *testenv.Clinic, token string) map[string]string {
	return map[string]string{"X-AccountCode": c.Code, "X-ApiToken": token}
}

func adminHeaders(c *testenv.Clinic) map[string]string {
	return map[string]string{"X-AccountCode": c.Code, "X-ApiToken": c.AdminToken}
}

func acctHeaders(c *testenv.Clinic) map[string]string {
	return map[string]string{"X-AccountCode": c.Code}
}

// mustSSO signs a user in through SSO and fails the test unless it works.
func mustSSO(t testing.TB, e *testenv.Env, c *testenv.Clinic, typ, code, first, last string) *session {
	t.Helper()
	res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: ssoHeaders(c),
		Multipart: map[string]string{"first_name": first, "last_name": last, "type": typ, "code": code}})
	d := dataOf[ssoProfile](t, res)
	return &session{UserID: d.Id, Token: d.Token.Token, Refresh: d.Token.RefreshToken.Token, Profile: d}
}

// errorBody is an error answer in any of the API's shapes: code and
// message always; error in the object shape; detail in the users family's.
type errorBody struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
	Detail  string          `json:"detail"`
}

// errorIn is res's error body, empty when it is none; it fails nothing,
// so any goroutine may call it.
func errorIn(res *testenv.Resp) errorBody {
	var b errorBody
	_ = json.Unmarshal(res.Raw, &b)
	return b
}

// messageOf is the message of an error answer, "" when it has none.
func messageOf(res *testenv.Resp) string { return errorIn(res).Message }

// errorOf is res's error body; an answer that is not one fails t.
func errorOf(t testing.TB, res *testenv.Resp) errorBody {
	t.Helper()
	var b errorBody
	if err := json.Unmarshal(res.Raw, &b); err != nil {
		t.Fatalf("status %d, an error body that is not JSON: %s", res.Status, res.Raw)
	}
	return b
}

// wantErr checks a code-shape error: status and body code.
func wantErr(t *testing.T, res *testenv.Resp, status, code int) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %d, want %d; body %s", res.Status, status, res.Raw)
	}
	b := errorOf(t, res)
	if b.Code != code {
		t.Fatalf("body code %d, want %d; body %s", b.Code, code, res.Raw)
	}
	if b.Message == "" {
		t.Fatalf("error without message: %s", res.Raw)
	}
}

// wantUsersErr checks the users family's 400/401 quirk: body code 404, generic
// message, and the real reason in detail.
func wantUsersErr(t *testing.T, res *testenv.Resp, status int) string {
	t.Helper()
	wantErr(t, res, status, 404)
	b := errorOf(t, res)
	if b.Message != "Page not available." {
		t.Fatalf("message %q, want the generic one", b.Message)
	}
	if b.Detail == "" {
		t.Fatalf("no detail in %s", res.Raw)
	}
	return b.Detail
}

func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// raceStatuses sends req n times to each base URL, all at once from as many
// goroutines, and counts the answers by status.
func raceStatuses(t *testing.T, bases []string, n int, req testenv.Req) map[int]int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	start := make(chan struct{})
	for _, base := range bases {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				st := testenv.Do(t, base, req).Status
				mu.Lock()
				got[st]++
				mu.Unlock()
			}()
		}
	}
	close(start)
	wg.Wait()
	return got
}

// wantObjErr checks the error-object shape of the intake and visit family.
func wantObjErr(t *testing.T, res *testenv.Resp, status int, contains string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %d, want %d; body %s", res.Status, status, res.Raw)
	}
	if b := errorOf(t, res); len(b.Error) == 0 || string(b.Error) == "null" || b.Code != status || !strings.Contains(b.Message, contains) {
		t.Fatalf("error body %s, want message with %q", res.Raw, contains)
	}
}

// clinicSetup is a clinic with a room, two providers (one linked to the
// room) and two patients.
type clinicSetup struct {
	e                *testenv.Env
	c                *testenv.Clinic
	doc, other       *session
	pat, pat2        *session
	roomCode, domain string
}

func newClinicSetup(t testing.TB, e *testenv.Env, code string) *clinicSetup {
	t.Helper()
	c := e.NewClinic(code, true)
	s := &clinicSetup{e: e, c: c, roomCode: "main", domain: code + ".clinic.test"}
	mustRoom(t, e, c, js(`{"domain": "`+s.domain+`", "name": "Main", "code": "main"}`))
	s.doc = mustSSO(t, e, c, "400", "doc", "Dana", "Doc")
	s.other = mustSSO(t, e, c, "400", "other", "Oscar", "Other")
	s.pat = mustSSO(t, e, c, "200", "pat", "Pat", "One")
	s.pat2 = mustSSO(t, e, c, "200", "pat2", "Pia", "Two")
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.doc.UserID + "/rooms", Header: adminHeaders(c), Form: q("code", "main")}); res.Status != 200 {
		t.Fatalf("link: %s", res.Raw)
	}
	return s
}

func (s *clinicSetup) intake(t testing.TB, who *session, kv ...string) string {
	t.Helper()
	return dataOf[client.Intake](t, s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes.json", Header: userHeaders(s.c, who.Token), Query: q("room_code", s.roomCode), Form: q(kv...)})).Id
}

func (s *clinicSetup) post(who string, path string, kv ...string) *testenv.Resp {
	return s.e.Do(testenv.Req{Method: "POST", Path: path, Header: userHeaders(s.c, who), Form: q(kv...)})
}

// mustVisit records a visit between a patient and a provider directly in the
// store, without a room or intake: the user access rules depend only on it.
func mustVisit(t *testing.T, e *testenv.Env, member, provider string) {
	t.Helper()
	var m, p int64
	fmt.Sscan(member, &m)
	fmt.Sscan(provider, &p)
	u, err := e.Store.Read().UserByID(context.Background(), accountOf(t, e, m), m)
	if err != nil {
		t.Fatal(err)
	}
	now := e.Clock.Now().Unix()
	v := &clinic.Visit{AccountID: u.AccountID, Kind: clinic.KindAppointment, MemberID: m, ProviderID: p, Status: clinic.VisitConfirmed,
		Type: clinic.VisitVideo, Created: now, Modified: now}
	if err := e.Store.Write().CreateVisit(context.Background(), v); err != nil {
		t.Fatal(err)
	}
}

// publish publishes body's slots as the holder of token who.
func (s *clinicSetup) publish(t *testing.T, who string, body slotGroup) []client.Slot {
	t.Helper()
	return dataOf[[]client.Slot](t, s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: userHeaders(s.c, who), JSON: body}))
}

func (s *clinicSetup) enableAppointments(t *testing.T) {
	t.Helper()
	mustOK(t, s.e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(`{"visits": {"appointment": {"enabled": true}}}`)}))
}

func refresh(e *testenv.Env, c *testenv.Clinic, rt string) *testenv.Resp {
	return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/tokens/refresh", Header: acctHeaders(c), Form: q("refresh_token", rt)})
}

// outbox is a mail.Sender that keeps what it is given.
type outbox struct {
	mu   sync.Mutex
	msgs []mail.Message
}

func (o *outbox) Send(_ context.Context, m mail.Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.msgs = append(o.msgs, m)
	return nil
}

func (o *outbox) lastToken(t *testing.T) string {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.msgs) == 0 {
		t.Fatal("no mail sent")
	}
	m := linkToken.FindStringSubmatch(o.msgs[len(o.msgs)-1].Body)
	if m == nil {
		t.Fatalf("no link in %q", o.msgs[len(o.msgs)-1].Body)
	}
	tok, _ := url.QueryUnescape(m[1])
	return tok
}

func mustRoom(t testing.TB, e *testenv.Env, c *testenv.Clinic, body any) client.RoomDetail {
	t.Helper()
	return dataOf[client.RoomDetail](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: adminHeaders(c), JSON: body}))
}

// mustOK fails t with the answer unless it is a 200: a setup request
// that fails says why where it fails, not in an assertion after it.
func mustOK(t testing.TB, res *testenv.Resp) *testenv.Resp {
	t.Helper()
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Raw)
	}
	return res
}

// dataOf is a 200 answer's data member as T (a type of the generated
// client, or the test's own), and fails t with the answer otherwise: a
// setup request that fails says why, and an answer whose shape changed
// fails here rather than in a chain of assertions.
func dataOf[T any](t testing.TB, res *testenv.Resp) T {
	t.Helper()
	var env struct {
		Data T `json:"data"`
	}
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Raw)
	}
	if err := json.Unmarshal(res.Raw, &env); err != nil {
		t.Fatalf("%v: %s", err, res.Raw)
	}
	return env.Data
}

// answer200 decodes a 200 answer into dst, the JSON200 member of the
// generated client's response type for the operation (whose body type has
// no name of its own), and returns it; another status fails t:
//
//	var r client.GetAuditVerifyResponse
//	v := answer200(t, res, &r.JSON200).Data
func answer200[T any](t testing.TB, res *testenv.Resp, dst **T) *T {
	t.Helper()
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Raw)
	}
	if err := json.Unmarshal(res.Raw, dst); err != nil || *dst == nil {
		t.Fatalf("%v: %s", err, res.Raw)
	}
	return *dst
}

// withVisit gives the setup's doc a visit with pat (an accepted e-consult).
func (s *clinicSetup) withVisit(t *testing.T) string {
	t.Helper()
	visit := s.econsult(t, s.pat)
	if res := s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit); res.Status != 200 {
		t.Fatalf("accept: %s", res.Raw)
	}
	return visit
}

// econsult opens an e-consult for who in the main room and returns its id.
func (s *clinicSetup) econsult(t testing.TB, who *session) string {
	t.Helper()
	it := s.intake(t, who, "reason_for_visit", "Rash")
	return dataOf[client.Visit](t, s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, who.Token), Form: q("intake_id", it, "room_code", "main")})).Id
}

func msgPath(visit string) string { return "/api/visits/" + visit + "/messages" }

// postMsg posts content as the holder of token; the user token alone, as the
// spec's visit message calls send it.
func postMsg(e *testenv.Env, token, visit, content string) *testenv.Resp {
	return e.Do(testenv.Req{Method: "POST", Path: msgPath(visit), Header: map[string]string{"X-ApiToken": token}, JSON: newMessage{Content: content}})
}

// newMessage is a message's body as a client sends it.
type newMessage struct {
	Content       string   `json:"content"`
	AttachmentIDs []string `json:"attachment_ids,omitempty"`
}

func mustPost(t *testing.T, e *testenv.Env, token, visit, content string) client.Message {
	t.Helper()
	res := postMsg(e, token, visit, content)
	if res.Status != 201 {
		t.Fatalf("post: %d %s", res.Status, res.Raw)
	}
	return created[client.Message](t, res)
}

// decode reads an answer into the generated client's type of it.
func decode[T any](t testing.TB, res *testenv.Resp) T {
	t.Helper()
	var v T
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Raw)
	}
	if err := json.Unmarshal(res.Raw, &v); err != nil {
		t.Fatalf("%v: %s", err, res.Raw)
	}
	return v
}

// created is a 201 answer's data as T.
func created[T any](t testing.TB, res *testenv.Resp) T {
	t.Helper()
	if res.Status != 201 {
		t.Fatalf("status %d: %s", res.Status, res.Raw)
	}
	var env struct {
		Data T `json:"data"`
	}
	if err := json.Unmarshal(res.Raw, &env); err != nil {
		t.Fatalf("%v: %s", err, res.Raw)
	}
	return env.Data
}

// threadPage is a page of a visit's thread, with the thread's length.
type threadPage struct {
	Data       []client.Message `json:"data"`
	TotalCount int              `json:"total_count"`
}

func readMsgs(t *testing.T, e *testenv.Env, token, visit string, kv ...string) ([]client.Message, int) {
	t.Helper()
	page := decode[threadPage](t, e.Do(testenv.Req{Path: msgPath(visit), Header: map[string]string{"X-ApiToken": token}, Query: q(kv...)}))
	return page.Data, page.TotalCount
}

// receiver is a webhook endpoint for tests: it records every delivery and
// answers with what fail says for the n-th request (1-based).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []delivery
	fail func(n int) int
	ch   chan delivery
}

type delivery struct {
	Header http.Header
	Body   []byte
	Event  struct {
		ID          string `json:"id"`
		Type        string `json:"type"`
		Created     int64  `json:"created"`
		AccountCode string `json:"account_code"`
		Version     string `json:"version"`
		Data        struct {
			VisitID   string `json:"visit_id"`
			MessageID string `json:"message_id"`
			ActorType string `json:"actor_type"`
			TS        int64  `json:"ts"`
		} `json:"data"`
	}
	Keys []string // the payload's top-level and data keys
}

func newReceiver(t *testing.T, fail func(n int) int) *receiver {
	rc := &receiver{fail: fail, ch: make(chan delivery, 1000)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{Header: r.Header.Clone(), Body: body}
		if err := json.Unmarshal(body, &d.Event); err != nil {
			t.Errorf("delivery is not JSON: %s", body)
		}
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(body, &raw)
		var data map[string]json.RawMessage
		_ = json.Unmarshal(raw["data"], &data)
		for k := range raw {
			d.Keys = append(d.Keys, k)
		}
		for k := range data {
			d.Keys = append(d.Keys, "data."+k)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, d)
		n := len(rc.got)
		rc.mu.Unlock()
		status := 200
		if rc.fail != nil {
			status = rc.fail(n)
		}
		w.WriteHeader(status)
		rc.ch <- d
	}))
	t.Cleanup(rc.Close)
	return rc
}

// next waits for the next delivery.
func (rc *receiver) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-rc.ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery within 10 s")
	}
	return delivery{}
}

func (rc *receiver) count() int { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.got) }

// webhookSettings are the clinic's webhook settings as the API answers.
type webhookSettings = struct {
	AccountCode      string  `json:"account_code"`
	WebhookSecret    *string `json:"webhook_secret,omitempty"`
	WebhookSecretSet bool    `json:"webhook_secret_set"`
	WebhookUrl       string  `json:"webhook_url"`
}

// setWebhook posts kv to the clinic's settings as its admin.
func setWebhook(t *testing.T, e *testenv.Env, c *testenv.Clinic, kv ...string) webhookSettings {
	t.Helper()
	return decode[client.AccountSettings](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: adminHeaders(c), Form: q(kv...)})).Data
}

// deliveries is the first page of the clinic's webhook deliveries.
func deliveries(t *testing.T, e *testenv.Env, c *testenv.Clinic) []client.Delivery {
	t.Helper()
	return dataOf[[]client.Delivery](t, e.Do(testenv.Req{Path: "/api_v3/webhooks/deliveries", Header: adminHeaders(c)}))
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func upload(e *testenv.Env, c *testenv.Clinic, token, name string, body []byte, kv ...string) *testenv.Resp {
	fields := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		fields[kv[i]] = kv[i+1]
	}
	h := userHeaders(c, token)
	if token == "" {
		h = adminHeaders(c)
	}
	return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files", Header: h, Multipart: fields,
		Files: map[string][]byte{"file": body}, FileNames: map[string]string{"file": name}})
}

// view fetches a view link (path and query of fullpath) with no headers.
func view(t *testing.T, e *testenv.Env, link string, extra ...string) *testenv.Resp {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	qv := u.Query()
	for i := 0; i+1 < len(extra); i += 2 {
		qv.Set(extra[i], extra[i+1])
	}
	return e.Do(testenv.Req{Path: u.Path, Query: qv})
}

// addCard saves a card of token for who in the main room's scope (kv
// adds to the scope).
func (s *clinicSetup) addCard(t *testing.T, who *session, token string, kv ...string) client.PaymentSource {
	t.Helper()
	return dataOf[client.PaymentSource](t, s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/sources", Header: userHeaders(s.c, who.Token),
		Query: q(append([]string{"room_code", "main"}, kv...)...), Form: q("type", "card", "token", token)}))
}

func (s *clinicSetup) process(who string, kv ...string) *testenv.Resp {
	return s.e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process", Header: userHeaders(s.c, who), Form: q(kv...)})
}

func count(t *testing.T, e *testenv.Env, query string, args ...any) int {
	t.Helper()
	var n int
	e.FlushAudits() // the query may count audit entries
	if err := e.Store.DB().QueryRow(e.Store.Rebind(query), args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// pageWalk is a client paging through a list by its Link rel="next".
type pageWalk struct {
	path   string
	query  url.Values
	header map[string]string
	cursor string // the parameter a next link sets
	// idKey is the item field whose value a next link's cursor is: the
	// page's last item's ("" when the cursor is not a shown item's).
	idKey string
	// limit is the page size: a shorter page names no next one (0: a page
	// may be short and still go on).
	limit int
	// filtered: the server filters a page after reading it (GET /slots's
	// type), so a page may be empty, the last one too.
	filtered bool
}

// walk follows the links from the first page until one names none. It
// fails t on an answer other than 200, a link to another path or that
// drops a parameter of the first request, a cursor that is not the last
// item's and a short page with a next; it returns the pages' items in
// order and how many pages there were. A link to an empty page (after an
// exactly full last one) fails t too: the list reads one more row than a
// page to know whether another follows (clinic.Page).
func (pw pageWalk) walk(t *testing.T, e *testenv.Env) (items []json.RawMessage, pages int) {
	t.Helper()
	query := pw.query
	for pages = 1; ; pages++ {
		if pages > 300 {
			t.Fatalf("%s: the links do not end", pw.path)
		}
		res := e.Do(testenv.Req{Path: pw.path, Query: query, Header: pw.header})
		if res.Status != 200 {
			t.Fatalf("%s, page %d: %d %s", pw.path, pages, res.Status, res.Raw)
		}
		list := dataOf[[]json.RawMessage](t, res)
		if pages > 1 && len(list) == 0 && !pw.filtered {
			t.Fatalf("%s, page %d: a next link led to an empty page (the page before was the last)", pw.path, pages)
		}
		items = append(items, list...)
		link := res.Header.Get("Link")
		if link == "" {
			return items, pages
		}
		if len(list) < pw.limit {
			t.Fatalf("%s, page %d: a short page names a next one: %s", pw.path, pages, link)
		}
		u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		if err != nil || u.Path != pw.path || u.Query().Get(pw.cursor) == "" {
			t.Fatalf("%s, page %d: Link %q", pw.path, pages, link)
		}
		for k := range pw.query {
			if k != pw.cursor && k != "start" && u.Query().Get(k) != pw.query.Get(k) {
				t.Fatalf("%s, page %d: Link %q lost %s", pw.path, pages, link, k)
			}
		}
		if pw.idKey != "" && (len(list) == 0 || u.Query().Get(pw.cursor) != idsOf(list[len(list)-1:], pw.idKey)[0]) {
			t.Fatalf("%s, page %d: Link %q does not go on from the page's last item", pw.path, pages, link)
		}
		query = u.Query()
	}
}

// walkAs is pw's walk with the items as T.
func walkAs[T any](t *testing.T, e *testenv.Env, pw pageWalk) (items []T, pages int) {
	t.Helper()
	raw, pages := pw.walk(t, e)
	for _, r := range raw {
		items = append(items, decodeRaw[T](t, r))
	}
	return items, pages
}

// idsOf are the values of items' member key, in order: a string's text,
// a number's digits.
func idsOf(items []json.RawMessage, key string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		var members map[string]json.RawMessage
		_ = json.Unmarshal(it, &members)
		out[i] = strings.Trim(string(members[key]), `"`)
	}
	return out
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/blob"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
	"teleclinic/internal/reference"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// TestMove_SQLiteToPostgres: a clinic in which every table holds rows,
// made through the API on SQLite, moved with teleclinic move into an
// empty PostgreSQL database and its files into a bucket; then the same
// reads with the same (pre-move) tokens give the same answers on
// PostgreSQL, new rows get new ids, the audit trail verifies, and a
// second move, or a move of a database a server has open, is refused.
func TestMove_SQLiteToPostgres(t *testing.T) {
	if testenv.Engine() != "postgres" {
		t.Skip("the move's target is PostgreSQL: this test runs when " + testenv.EnvDatabaseURL + " is set")
	}
	ctx := context.Background()
	dataDir := t.TempDir()
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(dataDir, "server.key"), []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := testenv.NewClock()
	sandbox := payments.NewSandbox(clock.Now)
	var fx *moveFixture
	target := testenv.DSN(t)
	bucket := testenv.NewS3(t)

	ok := t.Run("Fixture", func(t *testing.T) {
		e := testenv.New(t, testenv.Options{DSN: filepath.Join(dataDir, "teleclinic.db"), ServerKey: key, BlobDir: filepath.Join(dataDir, "blobs"),
			Clock: clock, Config: func(c *app.Config) { c.Sandbox = sandbox }})
		fx = buildMoveFixture(t, e)
		if empty := emptyTables(t, e); len(empty) > 0 {
			t.Fatalf("the fixture leaves tables empty (add what fills them): %v", empty)
		}
		// Twice: the first pass's side effects (threads read, tokens used)
		// settle, so the second is what the same reads answer next time.
		fx.read(t, e)
		fx.answers = fx.read(t, e)

		_, _, err := runCmd(t, "move", "--data-dir", dataDir, "--to", target)
		if err == nil || !strings.Contains(err.Error(), "stop it first") {
			t.Fatalf("a move of a database a server has open: %v", err)
		}
	})
	if !ok {
		t.FailNow()
	}

	t.Run("ErrWrongServerKey", func(t *testing.T) {
		// Refused before anything is read or written, by the move as by
		// every command that opens the database.
		wrong := strings.Repeat("ab", 32)
		_, _, err := runCmd(t, "move", "--data-dir", dataDir, "--to", target, "--server-key", wrong)
		if err == nil || !strings.Contains(err.Error(), "server key does not match") {
			t.Fatalf("a move with another server key: %v", err)
		}
		_, _, err = runCmd(t, "audit", "verify", "--code", "alpha", "--data-dir", dataDir, "--server-key", wrong)
		if err == nil || !strings.Contains(err.Error(), "server key does not match") {
			t.Fatalf("audit verify with another server key: %v", err)
		}
		if n := countRows(t, target, "information_schema.tables WHERE table_schema = current_schema()"); n != 0 {
			t.Fatalf("the target was touched: %d tables", n)
		}
	})
	t.Run("ErrFailedMidwayLeavesNothing", func(t *testing.T) {
		// A value SQLite took and PostgreSQL refuses, in a table copied
		// late: the move fails, names it, and the target stays empty.
		src, err := sql.Open("sqlite", filepath.Join(dataDir, "teleclinic.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if _, err := src.Exec("UPDATE thread_reads SET seen = 'lots'"); err != nil {
			t.Fatal(err)
		}
		_, _, err = runCmd(t, "move", "--data-dir", dataDir, "--to", target, "--blob-url", bucket)
		if err == nil || !strings.Contains(err.Error(), "thread_reads") || !strings.Contains(err.Error(), "not a number") {
			t.Fatalf("a move that fails midway: %v", err)
		}
		for _, table := range []string{"accounts", "users", "visits", "visit_messages", "audit"} {
			if n := countRows(t, target, table); n != 0 {
				t.Errorf("%s holds %d rows after a failed move", table, n)
			}
		}
		if _, err := src.Exec("UPDATE thread_reads SET seen = 2"); err != nil {
			t.Fatal(err)
		}
	})

	// Run again after the failure, it moves everything.
	out, _, err := runCmd(t, "move", "--data-dir", dataDir, "--to", target, "--blob-url", bucket)
	if err != nil {
		t.Fatalf("move: %v\n%s", err, out)
	}
	for _, want := range []string{"every table's count matches", "the same bytes on both sides", "audit trail of alpha: intact", "visit_messages"} {
		if !strings.Contains(out, want) {
			t.Errorf("the move's report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "read back 3 sampled files") {
		t.Errorf("want the two files and the recording read back:\n%s", out)
	}

	bucketStore, err := blob.Open(ctx, bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ErrTargetNotEmpty", func(t *testing.T) {
		// Refused before anything is written: the source's trail gains no
		// entry, and the target's audit checkpoints stay its own (the
		// source's, a chain the target does not have, made the target's
		// audit verify report a rewritten chain).
		checkpoints, err := filepath.Glob(filepath.Join(dataDir, "blobs", "audit-checkpoints", "*.json"))
		if err != nil || len(checkpoints) == 0 {
			t.Fatalf("the source's checkpoints: %v %v", checkpoints, err)
		}
		read := func() (string, int) {
			var b strings.Builder
			for _, f := range checkpoints {
				r, _, err := bucketStore.Open(ctx, "audit-checkpoints/"+filepath.Base(f))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(&b, r)
				r.Close()
			}
			src, err := sql.Open("sqlite", filepath.Join(dataDir, "teleclinic.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			var n int
			if err := src.QueryRow("SELECT count(*) FROM audit").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return b.String(), n
		}
		before, entries := read()
		_, _, err = runCmd(t, "move", "--data-dir", dataDir, "--to", target, "--blob-url", bucket)
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("a second move: %v", err)
		}
		if after, n := read(); after != before || n != entries {
			t.Fatalf("a refused move changed the target's checkpoints (%s → %s) or the source's trail (%d → %d entries)", before, after, entries, n)
		}
	})
	t.Run("ErrUsage", func(t *testing.T) {
		for _, args := range [][]string{
			{"move", "--data-dir", dataDir},
			{"move", "--data-dir", dataDir, "--to", filepath.Join(dataDir, "other.db")},
			{"move", "--data-dir", dataDir, "--database", target, "--to", target},
		} {
			var ue usageError
			if _, _, err := runCmd(t, args...); !errorsAs(err, &ue) {
				t.Errorf("%v: %v, want a usage error", args, err)
			}
		}
		if _, _, err := runCmd(t, "move", "--data-dir", t.TempDir(), "--to", target); err == nil || !strings.Contains(err.Error(), "server.key") {
			t.Errorf("a data dir without a server key: %v", err)
		}
	})

	e := testenv.New(t, testenv.Options{DSN: target, ServerKey: key, BlobStore: bucketStore,
		Clock: testenv.ClockAt(clock.Now()), Config: func(c *app.Config) { c.Sandbox = sandbox }})
	if e.Store.Engine() != "postgres" {
		t.Fatal("the target is not PostgreSQL")
	}
	t.Run("SameAnswers", func(t *testing.T) {
		got := fx.read(t, e)
		for i, r := range fx.reads {
			if got[i] != fx.answers[i] {
				t.Errorf("%s %s: before the move\n%s\nafter\n%s", r.who, r.path, fx.answers[i], got[i])
			}
		}
	})
	t.Run("TokensStillWork", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/tokens/refresh", Header: map[string]string{"X-AccountCode": "alpha"}, Form: url.Values{"refresh_token": {fx.patRefresh}}})
		if res.Status != 200 {
			t.Fatalf("a refresh token issued before the move: %d %s", res.Status, res.Raw)
		}
		res = e.Do(testenv.Req{Path: "/api_v3/me", Header: map[string]string{"X-AccountCode": "alpha", "X-ApiToken": fx.adminToken}})
		if res.Status != 200 {
			t.Fatalf("the admin token: %d %s", res.Status, res.Raw)
		}
	})
	t.Run("NewRowsGetNewIDs", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api/visits/" + fx.visit + "/messages", Header: map[string]string{"X-ApiToken": fx.patToken}, JSON: json.RawMessage(`{"content": "After the move."}`)})
		if res.Status != 201 || idNum(t, answerID(t, res.Raw)) <= fx.lastMessage {
			t.Fatalf("a message after the move: %d %s (last before: %d)", res.Status, res.Raw, fx.lastMessage)
		}
		// The last file was deleted before the move: its id is not given again.
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files", Header: map[string]string{"X-AccountCode": "alpha", "X-ApiToken": fx.patToken},
			Multipart: map[string]string{"category_type": "user_document"}, Files: map[string][]byte{"file": []byte("%PDF-1.4 new")}, FileNames: map[string]string{"file": "new.pdf"}})
		if res.Status != 200 || idNum(t, answerID(t, res.Raw)) <= fx.deletedFile {
			t.Fatalf("a file after the move: %d %s (deleted before: %d)", res.Status, res.Raw, fx.deletedFile)
		}
	})
	t.Run("Analysed", func(t *testing.T) {
		// The planner has the moved tables' statistics from the start.
		db, err := sql.Open("pgx", target)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// The statistics views show another session's ANALYZE once it has
		// flushed its counters (at most a second later on a busy server).
		var analysed bool
		for deadline := time.Now().Add(10 * time.Second); err == nil && !analysed && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			err = db.QueryRow("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'visits'").Scan(&analysed)
		}
		if err != nil || !analysed {
			t.Fatalf("visits analysed after the move: %v %v", analysed, err)
		}
	})
	t.Run("AuditVerifies", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/audit/verify", Header: map[string]string{"X-AccountCode": "alpha", "X-ApiToken": fx.adminToken}})
		var v client.GetAuditVerifyResponse
		if err := json.Unmarshal(res.Raw, &v.JSON200); err != nil || res.Status != 200 || !v.JSON200.Data.Intact || v.JSON200.Data.Checkpoint == nil {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
}

func errorsAs(err error, ue *usageError) bool {
	if err == nil {
		return false
	}
	u, ok := err.(usageError)
	*ue = u
	return ok
}

// answerID is the id in an answer's data: a string id's text, a number
// id's digits (recordings have numbers, as the spec shows them).
func answerID(t *testing.T, raw []byte) string {
	t.Helper()
	var env struct {
		Data struct {
			ID json.RawMessage `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || len(env.Data.ID) == 0 {
		t.Fatalf("no id in %s", raw)
	}
	return strings.Trim(string(env.Data.ID), `"`)
}

func idNum(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("id %q", s)
	}
	return n
}

// emptyTables is the tables of e's database that hold no row.
func emptyTables(t *testing.T, e *testenv.Env) []string {
	t.Helper()
	e.FlushAudits()
	rows, err := e.Store.DB().Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version'")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	var empty []string
	for _, n := range names {
		var held bool
		if err := e.Store.DB().QueryRow("SELECT EXISTS (SELECT 1 FROM " + n + ")").Scan(&held); err != nil {
			t.Fatal(err)
		}
		if !held {
			empty = append(empty, n)
		}
	}
	sort.Strings(empty)
	return empty
}

// moveFixture is the clinic the move test builds, and the reads it
// compares before and after.
type moveFixture struct {
	visit, patToken, patRefresh, adminToken string
	lastMessage, deletedFile                int64
	reads                                   []fixtureRead
	answers                                 []string
}

type fixtureRead struct {
	who, path string
	header    map[string]string
	query     url.Values
}

// read makes every read and returns each answer as status and body.
func (fx *moveFixture) read(t *testing.T, e *testenv.Env) []string {
	t.Helper()
	out := make([]string, len(fx.reads))
	for i, r := range fx.reads {
		res := e.Do(testenv.Req{Path: r.path, Header: r.header, Query: r.query})
		out[i] = strconv.Itoa(res.Status) + " " + string(res.Raw)
		if res.Status != 200 {
			t.Errorf("%s %s: %s", r.who, r.path, out[i])
		}
	}
	return out
}

// buildMoveFixture fills every table through the API (the calls' rows
// through the app, as the portal's call page does).
func buildMoveFixture(t *testing.T, e *testenv.Env) *moveFixture {
	t.Helper()
	ctx := context.Background()
	c := e.NewClinic("alpha", true)
	admin := map[string]string{"X-AccountCode": c.Code, "X-ApiToken": c.AdminToken}
	acct := map[string]string{"X-AccountCode": c.Code}
	user := func(token string) map[string]string {
		return map[string]string{"X-AccountCode": c.Code, "X-ApiToken": token}
	}
	// must fails t unless res succeeded, and returns its raw body.
	must := func(what string, res *testenv.Resp) []byte {
		t.Helper()
		if res.Status != 200 && res.Status != 201 {
			t.Fatalf("%s: %d %s", what, res.Status, res.Raw)
		}
		return res.Raw
	}
	sso := func(typ, code, first, last string) (id, token, refresh string) {
		t.Helper()
		var r client.PostUsersSsoResponse
		if err := json.Unmarshal(must("sso "+code, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/sso", Header: map[string]string{"X-AccountCode": c.Code, "X-ApiKey": c.APIKey, "X-ApiSecret": c.APISecret},
			Multipart: map[string]string{"first_name": first, "last_name": last, "type": typ, "code": code, "email": code + "@alpha.example"}})), &r.JSON200); err != nil {
			t.Fatal(err)
		}
		d := r.JSON200.Data
		return d.Id, d.Token.Token, d.Token.RefreshToken.Token
	}
	must("room", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: admin, JSON: json.RawMessage(`{"domain": "alpha.clinic.test", "name": "Main", "code": "main"}`)}))
	docID, doc, _ := sso("400", "doc", "Dana", "Doc")
	patID, pat, patRefresh := sso("200", "pat", "Pat", "One")
	must("room link", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + docID + "/rooms", Header: admin, Form: url.Values{"code": {"main"}}}))
	must("room settings", e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: admin, JSON: json.RawMessage(`{
		"payment": {"currency": "usd", "consultations": [{"id": "1", "description": "15-min Consultation", "duration": 15, "amount": 25, "charge": true}]},
		"visits": {"appointment": {"enabled": true}},
		"intake_questions": [{"id": "fever", "label": "Do you have a fever?", "kind": "yesno", "required": true}],
		"consent": {"version": "v1", "text": "I agree to a video visit."}}`)}))
	must("webhook", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/account/settings", Header: admin, Form: url.Values{"webhook_url": {"https://hooks.example.com/x"}, "generate_webhook_secret": {"1"}}}))
	// An endpoint of the lifecycle events: the intake and visits below
	// write its deliveries.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/webhooks/endpoints", Header: admin, JSON: json.RawMessage(`{"url": "https://hooks.example.com/events", "events": ["intake.submitted", "visit.created"]}`)}); res.Status != 201 {
		t.Fatalf("webhook endpoint: %d %s", res.Status, res.Raw)
	}

	intake := answerID(t, must("intake", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: user(pat), Form: url.Values{"room_code": {"main"}, "reason_for_visit": {"Rash"},
		"answers": {`{"fever":"no"}`}, "consent_name": {"Pat One"}, "consent_version": {"v1"}}})))
	visit := answerID(t, must("e-consult", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: user(pat), Form: url.Values{"intake_id": {intake}, "room_code": {"main"}}})))
	must("accept", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/accept", Header: user(doc), Form: url.Values{"id": {visit}}}))
	msgs := "/api/visits/" + visit + "/messages"
	must("message", e.Do(testenv.Req{Method: "POST", Path: msgs, Header: map[string]string{"X-ApiToken": pat, "Idempotency-Key": "first-message"}, JSON: json.RawMessage(`{"content": "The rash spread to my arm."}`)}))
	last := answerID(t, must("reply", e.Do(testenv.Req{Method: "POST", Path: msgs, Header: map[string]string{"X-ApiToken": doc}, JSON: json.RawMessage(`{"content": "Please send a photo."}`)})))

	users := "/api_v3/users/" + patID
	must("device", e.Do(testenv.Req{Method: "POST", Path: users + "/devices", Header: user(pat), JSON: client.DeviceBody{DeviceId: "BP-1", DeviceName: "Cuff", Type: "vendorD_bp_bp100"}}))
	must("reading", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: user(pat), JSON: json.RawMessage(fmt.Sprintf(`{"type": "vendorD_bp_bp100", "date": "2026-03-02",
		"time": %d, "device_id": "BP-1", "data_type": "bp", "data_class": "body", "hp": 128, "lp": 82, "bp_unit": "mmHg"}`, e.Clock.Now().Unix()-60))}))
	must("insurance", e.Do(testenv.Req{Method: "POST", Path: users + "/insurances/primary", Header: user(pat), Form: url.Values{"insurer_code": {"aetna"}, "subscriber_number": {"W100"}, "group_number": {"G-7"}}}))
	must("eligibility", e.Do(testenv.Req{Method: "POST", Path: users + "/insurances/primary/eligibility/check", Header: user(pat)}))
	must("pharmacy", e.Do(testenv.Req{Method: "POST", Path: users + "/erx/pharmacies", Header: user(pat), Form: url.Values{"name": {"Corner Pharmacy"}, "code": {"1234567"}, "city": {"Springfield"}, "is_default": {"1"}}}))
	must("prescription", e.Do(testenv.Req{Method: "POST", Path: users + "/erx/prescriptions", Header: user(doc), JSON: json.RawMessage(`{"drug": "Amoxicillin 500 mg capsule",
		"directions": "1 capsule 3 times a day", "qty": 30, "ndc": "0093-3109-01", "visit_id": "` + visit + `"}`)}))
	must("record", e.Do(testenv.Req{Method: "POST", Path: users + "/emr/allergies", Header: user(pat), JSON: json.RawMessage(`{"data_not_reported": false, "data": [{"substance": "Penicillin"}]}`)}))
	upload := func(name string, body []byte) string {
		t.Helper()
		return answerID(t, must("upload "+name, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files", Header: user(pat), Multipart: map[string]string{"category_type": "user_document"},
			Files: map[string][]byte{"file": body}, FileNames: map[string]string{"file": name}})))
	}
	file := upload("referral.pdf", []byte("%PDF-1.4 referral"))
	upload("labs.pdf", []byte("%PDF-1.4 labs"))
	gone := upload("mistake.pdf", []byte("%PDF-1.4 mistake"))
	must("delete file", e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/files/" + gone, Header: user(pat)}))
	recording := append([]byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01}, bytes.Repeat([]byte("recording-bytes "), 512)...)
	rec := answerID(t, must("recording", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/recordings", Header: admin,
		Multipart: map[string]string{"start": "1772442000", "end": "1772442600"}, Files: map[string][]byte{"file": recording}})))

	must("note", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/note", Header: user(doc), JSON: json.RawMessage(`{"subjective": "Rash for 3 days.",
		"assessment": "Contact dermatitis.", "plan": "Hydrocortisone 1%.", "diagnoses": ["L25.9"], "patient_summary": "Use the cream twice a day."}`)}))
	must("sign", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/note/sign", Header: user(doc)}))
	must("addendum", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/note/addenda", Header: user(doc), Form: url.Values{"text": {"Photo received: improving."}}}))

	must("slots", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/slots", Header: user(doc), JSON: json.RawMessage(`{"room_code": "main", "date_start": "2026-03-03",
		"time_start": "09:00", "time_end": "10:00", "timezone": "America/New_York", "duration": 30}`)}))
	must("endpoint", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/endpoints", Header: user(pat), Form: url.Values{"type": {"10"}, "key": {"pat@alpha.example"}}}))
	must("card", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/sources", Header: user(pat), Query: url.Values{"room_code": {"main"}}, Form: url.Values{"type": {"card"}, "token": {"tok_visa"}}}))
	must("coupon", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/coupons", Header: admin, Form: url.Values{"code": {"SAVE10"}, "percent_off": {"10"}}}))
	intake2 := answerID(t, must("intake 2", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: user(pat), Form: url.Values{"room_code": {"main"}, "reason_for_visit": {"Follow-up"},
		"answers": {`{"fever":"no"}`}, "consent_name": {"Pat One"}, "consent_version": {"v1"}, "consultation_id": {"1"}}})))
	must("invoice", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/invoices/process.json", Header: user(pat), JSON: json.RawMessage(`{"intake_id": "` + intake2 + `", "promo_code": "SAVE10", "create_invoice": 1}`)}))
	must("processor", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/billing/processor", Header: admin, Form: url.Values{"processor": {"sandbox"}}}))
	// A one-time secret (an invited provider's activation link, in the
	// outbox) and a refused sign-in.
	must("invite", e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/invite", Header: admin, Form: url.Values{"first_name": {"Maya"}, "last_name": {"Medic"},
		"email": {"maya@alpha.example"}, "rooms[]": {"main"}}}))
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/login", Header: acct, Form: url.Values{"username": {"nobody"}, "password": {"wrong horse"}}}); res.Status != 401 && res.Status != 400 {
		t.Fatalf("a refused login: %d %s", res.Status, res.Raw)
	}

	// The call: the provider joins and signals, invites a guest who joins;
	// the provider has read the thread.
	principal := func(token string) *clinic.Principal {
		t.Helper()
		p, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: c.Code, APIToken: token}, app.NeedUser)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	vid, _ := strconv.ParseInt(visit, 10, 64)
	dp := principal(doc)
	join, err := calls.New(e.App.Core()).Join(ctx, dp, vid, false)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if _, err := calls.New(e.App.Core()).Send(ctx, dp, vid, calls.SignalInput{Peer: join.Peer, Kind: "state", Body: json.RawMessage(`{"muted":false}`)}); err != nil {
		t.Fatalf("signal: %v", err)
	}
	inv, err := calls.New(e.App.Core()).InviteGuest(ctx, dp, vid)
	if err != nil {
		t.Fatalf("invite: %v", err)
	}
	ap, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: c.Code}, app.NeedAccountCode)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := calls.New(e.App.Core()).AcceptInvite(ctx, ap, path.Base(inv.URL), "Gina", "Guest"); err != nil {
		t.Fatalf("guest: %v", err)
	}
	if err := e.App.MarkThreadRead(ctx, dp, vid, 2); err != nil {
		t.Fatalf("read: %v", err)
	}
	must("audit verify", e.Do(testenv.Req{Path: "/api_v3/audit/verify", Header: admin}))
	// A release of diagnosis codes, stored as an import leaves it (a few
	// codes: the move copies rows whatever their number), and in use: the
	// moved server takes it from the database as it starts.
	dx := []reference.Code{{Code: "A00", Short: "Cholera", Long: "Cholera"},
		{Code: "A00.0", Billable: true, Short: "Cholera due to Vibrio cholerae 01, biovar cholerae", Long: "Cholera due to Vibrio cholerae 01, biovar cholerae"}}
	if err := e.Store.Tx(ctx, func(q *store.Q) error {
		return q.ImportDxRelease(ctx, store.DxRelease{Year: "2026", Codes: 2, Billable: 1, SHA256: "fixture", Loaded: e.Clock.Now().Unix(), LoadedBy: "operator"}, dx)
	}); err != nil {
		t.Fatalf("codes: %v", err)
	}
	e.App.RefreshDiagnoses(ctx)

	fx := &moveFixture{visit: visit, patToken: pat, patRefresh: patRefresh, adminToken: c.AdminToken,
		lastMessage: idNum(t, last), deletedFile: idNum(t, gone)}
	add := func(who string, h map[string]string, p string, kv ...string) {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Add(kv[i], kv[i+1])
		}
		fx.reads = append(fx.reads, fixtureRead{who: who, path: p, header: h, query: q})
	}
	add("patient", user(pat), "/api_v3/me")
	add("provider", user(doc), "/api_v3/insurances/list/dxs", "q", "cholera")
	add("admin", admin, "/api_v3/users", "limit", "200")
	add("provider", user(doc), users)
	add("account", acct, "/api_v3/rooms/main")
	add("admin", admin, "/api_v3/visits")
	add("patient", user(pat), "/api_v3/visits/"+visit)
	add("patient", map[string]string{"X-ApiToken": pat}, msgs)
	add("provider", user(doc), "/api_v3/visits/"+visit+"/note")
	add("patient", user(pat), "/fhir/R4/Patient/"+patID+"/$everything")
	add("patient", user(pat), users+"/emr")
	add("patient", user(pat), users+"/devices")
	add("patient", user(pat), users+"/health")
	add("patient", user(pat), users+"/insurances")
	add("patient", user(pat), users+"/insurances/primary/eligibility")
	add("provider", user(doc), users+"/erx/prescriptions")
	add("patient", user(pat), users+"/erx/pharmacies")
	add("patient", user(pat), "/api_v3/files")
	add("patient", user(pat), "/api_v3/files/"+file)
	add("admin", admin, "/api_v3/visits/"+visit+"/recordings/"+rec)
	// The bytes, through the signed links the reads give (from the bucket
	// after the move).
	for _, link := range []string{
		fileLink(t, must("file", e.Do(testenv.Req{Path: "/api_v3/files/" + file, Header: user(pat)}))),
		recordingLink(t, must("recording link", e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/recordings/" + rec, Header: admin}))),
	} {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		add("link", nil, u.Path, flatten(u.Query())...)
	}
	add("provider", user(doc), "/api_v3/slots", "start", "1772496000", "end", "1772668800")
	add("patient", user(pat), "/api_v3/endpoints")
	add("patient", user(pat), "/api_v3/notifications")
	add("admin", admin, "/api_v3/billing/invoices")
	add("admin", admin, "/api_v3/billing/coupons")
	add("admin", admin, "/api_v3/webhooks/deliveries")
	add("admin", admin, "/api_v3/account/settings")
	// A SMART app, a sign-in in flight, a token it holds, the signing key
	// and a backend service's used assertion id: the authorization
	// server's rows move with the clinic (the apps' tokens keep working).
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/clients", Header: admin,
		JSON: json.RawMessage(`{"name": "Diary", "kind": "public", "redirect_uris": ["https://diary.example.com/app"]}`)}); res.Status != 201 {
		t.Fatalf("smart client: %s", res.Raw)
	}
	ctx = context.Background()
	var clientID string
	if err := e.Store.DB().QueryRow("SELECT client_id FROM oauth_clients").Scan(&clientID); err != nil {
		t.Fatal(err)
	}
	if err := e.App.StartOAuthRequest(ctx, &clinic.OAuthRequest{ClientID: clientID, Params: []byte(`{"scopes": ["openid"]}`)}); err != nil {
		t.Fatal(err)
	}
	var acctID int64
	if err := e.Store.DB().QueryRow("SELECT account_id FROM oauth_clients").Scan(&acctID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.IssueOAuthToken(ctx, &clinic.OAuthToken{AccountID: acctID, ClientID: clientID, UserID: idNum(t, patID), Scopes: []string{"patient/*.rs"}}, true, app.TokenFrom{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.App.OAuthSigningKey(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Write().UseOAuthAssertion(ctx, clientID+" jti-1", e.Clock.Now().Unix()+300, e.Clock.Now().Unix()); err != nil {
		t.Fatal(err)
	}
	add("admin", admin, "/api_v3/smart/clients")
	// A bulk export, run: its job and its files move.
	kick := e.Do(testenv.Req{Path: "/fhir/R4/Patient/$export", Header: map[string]string{"X-AccountCode": admin["X-AccountCode"], "X-ApiToken": admin["X-ApiToken"], "Prefer": "respond-async"}})
	if kick.Status != 202 {
		t.Fatalf("export: %s", kick.Raw)
	}
	e.App.DeliverExports(ctx)
	status, err := url.Parse(kick.Header.Get("Content-Location"))
	if err != nil {
		t.Fatal(err)
	}
	add("admin", admin, status.Path)
	// An EHR connected, a user linked, a launch in flight and the visit an
	// appointment became.
	conn := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/ehrs", Header: admin,
		JSON: map[string]string{"iss": "https://ehr.example.com/fhir", "client_id": "teleclinic", "client_secret": "s", "room_code": "main"}})
	if conn.Status != 201 {
		t.Fatalf("ehr: %s", conn.Raw)
	}
	ehrID := answerID(t, conn.Raw)
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/smart/ehrs/" + ehrID + "/links", Header: admin,
		JSON: map[string]string{"fhir_user": "Practitioner/9", "provider_id": docID}}); res.Status != 200 {
		t.Fatalf("ehr link: %s", res.Raw)
	}
	if err := e.Store.Write().CreateEHRLaunch(ctx, &clinic.EHRLaunch{State: "st-1", AccountID: acctID, ConnectionID: idNum(t, ehrID),
		Verifier: "sealed", Issuer: "https://ehr.example.com", TokenURL: "https://ehr.example.com/token", Expires: e.Clock.Now().Unix() + 600}); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Write().AddEHRVisit(ctx, acctID, idNum(t, ehrID), "Appointment/5", idNum(t, visit)); err != nil {
		t.Fatal(err)
	}
	add("admin", admin, "/api_v3/smart/ehrs")
	// Texts: the sender (its token sealed), the patient's yes, a number's
	// STOP and an entry of the delivery log.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/settings", Header: admin,
		JSON: map[string]string{"provider": "twilio", "account_sid": "AC0123456789abcdef0123456789abcdef", "auth_token": "tok", "from": "+14155550100"}}); res.Status != 200 {
		t.Fatalf("sms settings: %s", res.Raw)
	}
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/sms/consent", Header: user(pat), JSON: map[string]string{"phone": "+14155550134", "consent": "1"}}); res.Status != 200 {
		t.Fatalf("sms consent: %s", res.Raw)
	}
	if err := e.Store.Write().SetSMSOptOut(ctx, acctID, "+14155550177", true, e.Clock.Now().Unix()); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Write().AddSMSLog(ctx, &clinic.SMSLogEntry{AccountID: acctID, UserID: idNum(t, patID), Phone: "••••0134", Kind: "booked",
		SID: "SM1", Status: "delivered", Created: e.Clock.Now().Unix(), Updated: e.Clock.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	add("admin", admin, "/api_v3/sms/settings")
	add("admin", admin, "/api_v3/sms/log")
	add("patient", user(pat), "/api_v3/sms/consent")
	// An interpreter the clinic keeps.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/interpreters", Header: admin,
		JSON: map[string]string{"name": "Ana Ruiz", "language": "es", "email": "ana@example.com", "phone": "+14155550188"}}); res.Status != 200 {
		t.Fatalf("interpreter: %s", res.Raw)
	}
	add("admin", admin, "/api_v3/interpreters")
	return fx
}

func flatten(v url.Values) []string {
	var out []string
	for k, vs := range v {
		for _, x := range vs {
			out = append(out, k, x)
		}
	}
	return out
}

// countRows is the rows of table in the PostgreSQL database at dsn.
func countRows(t *testing.T, dsn, table string) int {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fileLink is a file's signed link in GET /files/{id}'s answer.
func fileLink(t *testing.T, raw []byte) string {
	t.Helper()
	var r client.GetFilesByIdResponse
	if err := json.Unmarshal(raw, &r.JSON200); err != nil || r.JSON200 == nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return r.JSON200.Data.Fullpath
}

// recordingLink is a recording's signed link in its unwrapped answer.
func recordingLink(t *testing.T, raw []byte) string {
	t.Helper()
	var rec client.Recording
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Path == nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return rec.Path.Url
}

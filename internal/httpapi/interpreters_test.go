package httpapi_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/testenv"
)

type interpreterRow struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Language     string `json:"language"`
	LanguageName string `json:"language_name"`
	Email        string `json:"email"`
	Phone        string `json:"phone"`
	Agency       bool   `json:"agency"`
}

type interpreterFacts struct {
	Participants []struct {
		Role     string `json:"role"`
		Name     string `json:"name"`
		Language string `json:"language"`
	} `json:"participants"`
	Interpreter *struct {
		Name     string `json:"name"`
		Language string `json:"language"`
	} `json:"interpreter"`
}

// TestInterpreters_BringOneIn: the admin keeps the clinic's interpreters
// per language; the intake asks the patient's preferred language; in the
// call, the visit's provider sends an interpreter a one-time link by email
// or by text; the interpreter joins as one, named with their language, and
// the visit's facts, the claims report and the superbill say so. Refusals:
// bad interpreters, another's visit, a way the interpreter cannot be
// reached, texts off, a removed interpreter.
func TestInterpreters_BringOneIn(t *testing.T) {
	t.Parallel()
	e, s, tw, _ := smsClinic(t)
	ctx := context.Background()
	admin := func(method, path string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: method, Path: path, Header: adminHeaders(s.c), Form: q(kv...)})
	}

	// The admin's list: each with a language and a way to reach them.
	wantMsg(t, admin("POST", "/api_v3/interpreters", "name", "Ana Ruiz", "language", "not a language", "email", "ana@example.com"), 400, "language")
	wantMsg(t, admin("POST", "/api_v3/interpreters", "name", "Ana Ruiz", "language", "es"), 400, "email, a mobile number")
	wantMsg(t, admin("POST", "/api_v3/interpreters", "name", "Ana Ruiz", "language", "es", "phone", "12"), 400, "phone")
	wantMsg(t, admin("POST", "/api_v3/interpreters", "language", "es", "email", "ana@example.com"), 400, "name")
	ana := dataOf[interpreterRow](t, admin("POST", "/api_v3/interpreters", "name", "Ana Ruiz", "language", "ES", "email", "ana@example.com", "phone", "(415) 555-0177"))
	if ana.Language != "es" || ana.LanguageName != "Spanish" || ana.Phone != "+14155550177" || ana.Agency {
		t.Fatalf("the interpreter: %+v", ana)
	}
	agency := dataOf[interpreterRow](t, admin("POST", "/api_v3/interpreters", "name", "Lotus Language Line", "language", "vi", "email", "desk@lotus.example.com", "agency", "1"))
	if agency.LanguageName != "Vietnamese" || !agency.Agency {
		t.Fatalf("the agency: %+v", agency)
	}
	list := func(who *session, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/interpreters", Header: userHeaders(s.c, who.Token), Query: q(kv...)})
	}
	if got := dataOf[[]interpreterRow](t, list(s.doc)); len(got) != 2 || got[0].ID != ana.ID {
		t.Fatalf("the provider's list: %+v", got)
	}
	if got := dataOf[[]interpreterRow](t, list(s.doc, "language", "vi")); len(got) != 1 || got[0].ID != agency.ID {
		t.Fatalf("the Vietnamese ones: %+v", got)
	}
	wantErr(t, list(s.pat), 403, 403)

	// The intake asks the patient's language.
	wantMsg(t, s.post(s.pat.Token, "/api_v3/intakes", "room_code", "main", "preferred_language", "!!"), 400, "preferred_language")
	it := s.intake(t, s.pat, "reason_for_visit", "Cough", "preferred_language", "es-MX")
	got := dataOf[struct {
		PreferredLanguage string            `json:"preferred_language"`
		Custom            map[string]string `json:"custom"`
	}](t, e.Do(testenv.Req{Path: "/api_v3/intakes/" + it, Header: userHeaders(s.c, s.pat.Token)}))
	if got.PreferredLanguage != "es-MX" || got.Custom["preferred_language"] != "es-MX" {
		t.Fatalf("the intake's language: %+v", got)
	}
	visit := dataOf[struct {
		ID string `json:"id"`
	}](t, s.post(s.pat.Token, "/api_v3/visits/add_econsult", "intake_id", it, "room_code", "main")).ID
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit))
	vid := mustID(t, visit)
	principal := func(token string) *clinic.Principal {
		p, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: s.c.Code, APIToken: token}, app.NeedUser)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lang, err := e.App.Core().VisitLanguage(ctx, principal(s.doc.Token).Account.ID, vid)
	if err != nil || lang != "es-MX" {
		t.Fatalf("the visit's language: %q %v", lang, err)
	}

	// The call: the provider and the patient are in it.
	c := calls.New(e.App.Core())
	for _, who := range []*session{s.doc, s.pat} {
		if _, err := c.Join(ctx, principal(who.Token), vid, false); err != nil {
			t.Fatal(err)
		}
	}

	// Only the visit's provider brings one in, an interpreter of the
	// clinic, by a way they can be reached.
	bring := func(who *session, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + visit + "/interpreter", Header: userHeaders(s.c, who.Token), Form: q(kv...)})
	}
	wantErr(t, bring(s.pat, "interpreter_id", ana.ID, "via", "email"), 403, 403)
	wantErr(t, bring(s.other, "interpreter_id", ana.ID, "via", "email"), 403, 403)
	wantMsg(t, bring(s.doc, "interpreter_id", ana.ID, "via", "fax"), 400, "email or text")
	wantMsg(t, bring(s.doc, "interpreter_id", "99999", "via", "email"), 404, "Interpreter")
	wantMsg(t, bring(s.doc, "interpreter_id", agency.ID, "via", "text"), 400, "no mobile number")

	// By email: the link, in the answer and in the mail.
	box := &outbox{}
	e.App.DeliverMail(ctx, box)
	box.msgs = nil
	sent := dataOf[struct {
		Interpreter interpreterRow `json:"interpreter"`
		Via         string         `json:"via"`
		URL         string         `json:"url"`
		Expires     int64          `json:"expires"`
	}](t, bring(s.doc, "interpreter_id", ana.ID, "via", "email"))
	if sent.Via != "email" || sent.Interpreter.ID != ana.ID || sent.Expires != e.Clock.Now().Unix()+2*3600 {
		t.Fatalf("the invitation: %+v", sent)
	}
	if n := e.App.DeliverMail(ctx, box); n != 1 || box.msgs[0].To != "ana@example.com" || !strings.Contains(box.msgs[0].Body, sent.URL) ||
		!strings.Contains(box.msgs[0].Subject, "Spanish") {
		t.Fatalf("the interpreter's mail: %d %+v", n, box.msgs)
	}
	// By text: to the interpreter's number, logged without a user.
	bring(s.doc, "interpreter_id", ana.ID, "via", "text")
	e.App.DeliverTexts(ctx)
	texts := tw.take()
	linkRE := regexp.MustCompile(`https://portal\.teleclinic\.test/invite/[^ ]+`)
	if len(texts) != 1 || texts[0].Get("To") != "+14155550177" || !linkRE.MatchString(texts[0].Get("Body")) || linkRE.FindString(texts[0].Get("Body")) == sent.URL {
		t.Fatalf("the interpreter's text: %v", texts)
	}
	if log := smsLog(t, e, s); len(log) != 1 || log[0].Kind != "interpreter" || log[0].UserID != "0" || log[0].Phone != "••••••••0177" {
		t.Fatalf("the text's log: %+v", log)
	}

	// The interpreter opens the mailed link and joins, named with their
	// language in itself.
	acct, err := e.App.Authenticate(ctx, app.Credentials{AccountCode: s.c.Code}, app.NeedAccountCode)
	if err != nil {
		t.Fatal(err)
	}
	token := sent.URL[strings.LastIndex(sent.URL, "/")+1:]
	sess, inVisit, err := c.AcceptInvite(ctx, acct, token, "Ana", "Ruiz")
	if err != nil || inVisit != vid {
		t.Fatalf("accept: %v %d", err, inVisit)
	}
	j, err := c.Join(ctx, principal(sess.Token), vid, false)
	if err != nil {
		t.Fatal(err)
	}
	if j.Role != calls.RoleInterpreter || j.Name != "Ana Ruiz · español" || len(j.Peers) != 2 {
		t.Fatalf("the interpreter's join: %+v", j)
	}
	if _, _, err := c.AcceptInvite(ctx, acct, token, "Someone", "Else"); clinic.ErrorCode(err) != clinic.ENotFound {
		t.Fatalf("the link used again: %v", err)
	}

	// The visit's record and claim say so.
	e.Clock.Advance(10 * time.Minute)
	mustOK(t, s.post(s.doc.Token, "/api_v3/visits/close", "id", visit))
	facts := dataOf[interpreterFacts](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/facts", Header: userHeaders(s.c, s.doc.Token)}))
	if len(facts.Participants) != 3 || facts.Participants[2].Role != "interpreter" || facts.Participants[2].Language != "es" ||
		facts.Interpreter == nil || facts.Interpreter.Name != "Ana Ruiz" || facts.Interpreter.Language != "es" {
		t.Fatalf("the facts: %+v", facts)
	}
	day := e.Clock.Now().UTC().Format("2006-01-02")
	claims := dataOf[[]struct {
		VisitID    string           `json:"visit_id"`
		Telehealth interpreterFacts `json:"telehealth"`
	}](t, e.Do(testenv.Req{Path: "/api_v3/reports/claims", Header: adminHeaders(s.c), Query: q("from_date", day, "to_date", day)}))
	if len(claims) != 1 || claims[0].VisitID != visit || claims[0].Telehealth.Interpreter == nil || claims[0].Telehealth.Interpreter.Language != "es" {
		t.Fatalf("the claim: %+v", claims)
	}
	if n := count(t, e, "SELECT COUNT(*) FROM audit WHERE action = 'visit.call.interpreter' AND outcome = 'ok'"); n != 2 {
		t.Fatalf("audited invitations: %d", n)
	}

	// Texts off: no text link; a removed interpreter is not offered, and
	// the visit still names them.
	mustOK(t, admin("POST", "/api_v3/sms/settings", "provider", "off"))
	other := s.withVisit(t)
	if _, err := c.Join(ctx, principal(s.doc.Token), mustID(t, other), false); err != nil {
		t.Fatal(err)
	}
	wantMsg(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + other + "/interpreter", Header: userHeaders(s.c, s.doc.Token),
		Form: q("interpreter_id", ana.ID, "via", "text")}), 409, "no texts")
	mustOK(t, admin("DELETE", "/api_v3/interpreters/"+ana.ID))
	wantErr(t, admin("DELETE", "/api_v3/interpreters/"+ana.ID), 404, 404)
	if got := dataOf[[]interpreterRow](t, list(s.doc)); len(got) != 1 {
		t.Fatalf("after the removal: %+v", got)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + other + "/interpreter", Header: userHeaders(s.c, s.doc.Token),
		Form: q("interpreter_id", ana.ID, "via", "email")}), 404, 404)
	facts = dataOf[interpreterFacts](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + visit + "/facts", Header: userHeaders(s.c, s.doc.Token)}))
	if facts.Interpreter == nil || facts.Interpreter.Name != "Ana Ruiz" {
		t.Fatalf("the record after the removal: %+v", facts)
	}
}

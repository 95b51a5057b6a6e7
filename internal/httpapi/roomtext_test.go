package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"teleclinic/internal/testenv"
)

// TestRoomTexts_EachLanguage: a room's words in the clinic's other
// language (Spanish): the admin gives them (a language the clinic does not
// write in, a question the room does not ask, a choice list of another
// length are refused whole); a consent signed in Spanish keeps the Spanish
// text, a choice answered is kept as the room's own; once the room's
// consent has a new version, its old translation is no longer signed; the
// booking's mail carries the room's note in each patient's language.
func TestRoomTexts_EachLanguage(t *testing.T) {
	t.Parallel()
	e, s := noShowClinic(t)
	ctx := context.Background()
	put := func(body string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(s.c), JSON: js(body)})
	}
	mustOK(t, put(`{"intake_questions": [{"id": "smoker", "label": "Do you smoke?", "kind": "choice", "choices": ["Never", "Former", "Current"], "required": true}],
		"consent": {"version": "v1", "text": "I agree to be seen by video."}, "email_note": "Have your insurance card at hand."}`))
	es := `"es": {"name": "Sala principal", "email_note": "Tenga a mano su tarjeta del seguro.",
		"questions": {"smoker": {"label": "¿Fuma?", "choices": ["Nunca", "Antes", "Ahora"]}}, "consent": "Acepto que me atiendan por video."}`
	wantMsg(t, put(`{"translations": {"fr": {"name": "Salle"}}}`), 400, `"fr" is not a language`)
	wantMsg(t, put(`{"translations": {"es": {"questions": {"allergies": {"label": "¿Alergias?"}}}}}`), 400, "not one of the room's intake questions")
	wantMsg(t, put(`{"translations": {"es": {"questions": {"smoker": {"label": "¿Fuma?", "choices": ["Nunca", "Sí"]}}}}}`), 400, "each of the question's 3 choices")
	room := dataOf[struct {
		EmailNote    string `json:"email_note"`
		Translations map[string]struct {
			Name           string `json:"name"`
			ConsentVersion string `json:"consent_version"`
		} `json:"translations"`
	}](t, put(`{"translations": {`+es+`}}`))
	if room.EmailNote != "Have your insurance card at hand." || room.Translations["es"].Name != "Sala principal" || room.Translations["es"].ConsentVersion != "v1" {
		t.Fatalf("the room: %+v", room)
	}

	// The consent signed in Spanish keeps the Spanish text; the answer is
	// the room's own choice.
	intake := func(who *session, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/intakes", Header: userHeaders(s.c, who.Token),
			Form: q(append([]string{"room_code", "main", "reason_for_visit", "Tos", "consent_name", "Pat One"}, kv...)...)})
	}
	former := `{"smoker": "Former"}`
	wantMsg(t, intake(s.pat, "answers", former, "consent_version", "v1", "consent_language", "fr"), 400, "consent_language")
	wantMsg(t, intake(s.pat, "answers", `{"smoker": "Antes"}`, "consent_version", "v1"), 400, "must be one of")
	mustOK(t, intake(s.pat, "answers", former, "consent_version", "v1", "consent_language", "es"))
	mustOK(t, intake(s.pat2, "answers", former, "consent_version", "v1"))
	signed := func() []string {
		rows, err := e.Store.DB().QueryContext(ctx, "SELECT body FROM consents ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	if got := signed(); len(got) != 2 || got[0] != "Acepto que me atiendan por video." || got[1] != "I agree to be seen by video." {
		t.Fatalf("the texts signed: %q", got)
	}
	// A new version: the Spanish one of v1 is not signed for it.
	mustOK(t, put(`{"consent": {"version": "v2", "text": "I agree to be seen by video or phone."}}`))
	mustOK(t, intake(s.pat, "answers", former, "consent_version", "v2", "consent_language", "es"))
	if got := signed(); got[2] != "I agree to be seen by video or phone." {
		t.Fatalf("a stale translation signed: %q", got)
	}

	// The booking's mail: the note in each patient's language.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat.Token), Form: q("language", "es")}))
	box := &outbox{}
	e.App.DeliverMail(ctx, box)
	box.msgs = nil
	for i, who := range []*session{s.pat, s.pat2} {
		mustOK(t, s.post(who.Token, "/api_v3/visits", "slot_start", fmt.Sprint(tue0900NY+int64(i)*1800), "slot_end", fmt.Sprint(tue0900NY+int64(i+1)*1800),
			"room_code", "main", "type", "2", "intake_id", dataOf[struct {
				ID string `json:"id"`
			}](t, intake(who, "answers", former, "type", "2", "consent_version", "v2")).ID))
	}
	e.App.DeliverMail(ctx, box)
	notes := map[string]string{}
	for _, m := range box.msgs {
		switch m.To {
		case "mpat@example.com":
			notes["es"] = m.Body
			if !strings.Contains(m.Calendar, "Sala principal") {
				t.Errorf("the Spanish calendar's room: %s", m.Calendar)
			}
		case "mpat2@example.com":
			notes["en"] = m.Body
		}
	}
	if !strings.Contains(notes["es"], "Tenga a mano su tarjeta del seguro.") || strings.Contains(notes["es"], "insurance card") ||
		!strings.Contains(notes["en"], "Have your insurance card at hand.") {
		t.Fatalf("the notes: %q", notes)
	}
}

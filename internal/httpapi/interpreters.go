package httpapi

import (
	"net/http"

	"golang.org/x/text/language"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// The clinic's interpreters and bringing one into a call (extension;
// app/interpreters.go).

type interpreterOut struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Language     string `json:"language"`
	LanguageName string `json:"language_name"`
	Email        string `json:"email"`
	Phone        string `json:"phone"`
	Agency       bool   `json:"agency"`
	Created      int64  `json:"created"`
}

func toInterpreter(it *clinic.Interpreter) interpreterOut {
	return interpreterOut{ID: id(it.ID), Name: it.Name, Language: it.Language, LanguageName: app.LanguageName(it.Language, language.English),
		Email: it.Email, Phone: it.Phone, Agency: it.Agency, Created: it.Created}
}

// listInterpreters is GET /interpreters (language: one language's).
func (s *Server) listInterpreters(w http.ResponseWriter, r *http.Request, c *call) error {
	list, err := s.app.Interpreters(r.Context(), c.p, c.params.Str("language"))
	if err != nil {
		return err
	}
	out := make([]interpreterOut, len(list))
	for i, it := range list {
		out[i] = toInterpreter(it)
	}
	return ok(w, out)
}

// addInterpreter is POST /interpreters: name, language, email, phone,
// agency.
func (s *Server) addInterpreter(w http.ResponseWriter, r *http.Request, c *call) error {
	agency, err := c.params.Flag("agency")
	if err != nil {
		return err
	}
	q := c.params
	it, err := s.app.AddInterpreter(r.Context(), c.p, app.InterpreterInput{Name: q.Str("name"), Language: q.Str("language"),
		Email: q.Str("email"), Phone: q.Str("phone"), Agency: agency})
	if err != nil {
		return err
	}
	return ok(w, toInterpreter(it))
}

// removeInterpreter is DELETE /interpreters/{id}.
func (s *Server) removeInterpreter(w http.ResponseWriter, r *http.Request, c *call) error {
	iid, err := pathID(c, "id", "Interpreter")
	if err != nil {
		return err
	}
	if err := s.app.RemoveInterpreter(r.Context(), c.p, iid); err != nil {
		return err
	}
	return ok(w, true)
}

type interpreterInviteOut struct {
	Interpreter interpreterOut `json:"interpreter"`
	Via         string         `json:"via"`
	URL         string         `json:"url"`
	Expires     int64          `json:"expires"`
}

// inviteInterpreter is POST /visits/{id}/interpreter: interpreter_id and
// via (email or text). The link is in the answer too, for the provider
// who reads it out on the phone.
func (s *Server) inviteInterpreter(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	iid, err := refID(c, "interpreter_id")
	if err != nil {
		return err
	}
	inv, it, err := s.calls.InviteInterpreter(r.Context(), c.p, vid, iid, c.params.Str("via"))
	if err != nil {
		return err
	}
	return ok(w, interpreterInviteOut{Interpreter: toInterpreter(it), Via: c.params.Str("via"), URL: inv.URL, Expires: inv.Expires})
}

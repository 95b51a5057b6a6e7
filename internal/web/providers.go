package web

import (
	"net/http"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

type dashVisit struct {
	ID                    int64
	Room, Patient, Reason string
	Status                string
	Created               int64
	Actions               []dashAction
}

type dashAction struct{ Name, Label string }

type dashboardPage struct {
	Waiting, Mine []dashVisit
	Error         string
}

// moveLabels are the buttons' words for the visit moves.
var moveLabels = map[string]string{app.ActAccept: "Accept", app.ActInProgress: "Start", app.ActClose: "Complete", app.ActCancel: "Cancel"}

// dashboard is /providers/dashboard (app.ProviderDashboard): the
// e-consults of the provider's rooms that wait for a provider, and the
// provider's own open visits, each with the moves its state allows.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) error {
	return s.showDashboard(w, r, http.StatusOK, "")
}

func (s *Server) showDashboard(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	db, err := s.app.ProviderDashboard(r.Context(), p)
	if err != nil {
		return err
	}
	page := dashboardPage{Waiting: dashVisits(db.Waiting), Mine: dashVisits(db.Mine), Error: msg}
	s.render(w, r, status, "dashboard", page)
	return nil
}

func dashVisits(vs []app.DashboardVisit) []dashVisit {
	out := make([]dashVisit, 0, len(vs))
	for _, d := range vs {
		v := dashVisit{ID: d.Visit.ID, Status: statusWord(d.Visit.Status), Created: d.Visit.Created}
		if d.Room != nil {
			v.Room = d.Room.Name
		}
		if d.Member != nil {
			v.Patient = d.Member.FullName()
		}
		if d.Intake != nil {
			v.Reason = d.Intake.ReasonForVisit
		}
		for _, m := range d.Moves {
			v.Actions = append(v.Actions, dashAction{m, moveLabels[m]})
		}
		out = append(out, v)
	}
	return out
}

// moveVisit makes one lifecycle move (app.MoveVisit, the rules and the
// 409s of POST /visits/{action}) and shows the dashboard again; a refusal
// is shown on it, in words.
func (s *Server) moveVisit(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	action := r.PathValue("action")
	if moveLabels[action] == "" {
		return clinic.Errorf(clinic.ENotFound, "There is no such step for a visit.")
	}
	if _, err := s.app.MoveVisit(r.Context(), p, id, action, app.MoveInput{}); err != nil {
		switch code := clinic.ErrorCode(err); code {
		case clinic.EConflict, clinic.EInvalid:
			return s.showDashboard(w, r, map[string]int{clinic.EConflict: 409, clinic.EInvalid: 400}[code], clinic.ErrorMessage(err))
		}
		return err
	}
	http.Redirect(w, r, "/providers/dashboard#visit-"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

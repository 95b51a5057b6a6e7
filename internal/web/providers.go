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
	// Actions are the lifecycle moves the page offers for the visit's
	// state; app decides whether the caller may make them.
	Actions []dashAction
}

type dashAction struct{ Name, Label string }

type dashboardPage struct {
	Waiting, Mine []dashVisit
	Error         string
}

// dashboard is /providers/dashboard: the e-consults of the provider's
// rooms that wait for a provider, and the provider's own open visits, with
// the moves of the visit state machine (POST /visits/accept and its kin).
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) error {
	return s.showDashboard(w, r, http.StatusOK, "")
}

func (s *Server) showDashboard(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if p.User.Type != clinic.UserProvider {
		return clinic.Errorf(clinic.EForbidden, "The dashboard is for the clinic's providers. Your visits are on the Visits page.")
	}
	ds, err := s.app.ListVisits(r.Context(), p, app.VisitQuery{Statuses: []string{"10", "20", "25"}})
	if err != nil {
		return err
	}
	page := dashboardPage{Error: msg}
	for _, d := range ds {
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
		if d.Visit.ProviderID == 0 {
			v.Actions = []dashAction{{app.ActAccept, "Accept"}}
			page.Waiting = append(page.Waiting, v)
			continue
		}
		switch d.Visit.Status {
		case clinic.VisitPending, clinic.VisitConfirmed:
			v.Actions = []dashAction{{app.ActInProgress, "Start"}, {app.ActCancel, "Cancel"}}
		case clinic.VisitInProgress:
			v.Actions = []dashAction{{app.ActClose, "Complete"}, {app.ActCancel, "Cancel"}}
		}
		page.Mine = append(page.Mine, v)
	}
	s.render(w, r, status, "dashboard", page)
	return nil
}

// dashboardMoves are the moves the dashboard's buttons post.
var dashboardMoves = map[string]bool{app.ActAccept: true, app.ActInProgress: true, app.ActClose: true, app.ActCancel: true}

// moveVisit makes one lifecycle move (app.MoveVisit, the rules and the
// 409s of POST /visits/{action}) and shows the dashboard again; a refusal
// is shown on it, in words.
func (s *Server) moveVisit(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	id, err := visitID(r)
	if err != nil {
		return err
	}
	action := r.PathValue("action")
	if !dashboardMoves[action] {
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

package web

import (
	"net/http"
	"slices"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

type visitItem struct {
	ID           int64
	Room, Status string
	With         string
	Created      int64
}

type visitsPage struct{ Visits []visitItem }

// visits is /visits: the caller's visits as GET /visits gives them (a
// patient's own; a provider's and their rooms' waiting e-consults).
func (s *Server) visits(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	ds, err := s.app.ListVisits(r.Context(), p, app.VisitQuery{})
	if err != nil {
		return err
	}
	page := visitsPage{}
	for _, d := range ds {
		it := visitItem{ID: d.Visit.ID, Status: statusWord(d.Visit.Status), Created: d.Visit.Created}
		if d.Room != nil {
			it.Room = d.Room.Name
		}
		switch {
		case d.Member != nil && d.Member.ID != p.UserID():
			it.With = d.Member.FullName()
		case d.Provider != nil:
			it.With = d.Provider.FullName()
		}
		page.Visits = append(page.Visits, it)
	}
	s.render(w, r, http.StatusOK, "visits", page)
	return nil
}

type messageItem struct {
	Author, Type, Content string
	CreatedUS             int64
}

type visitPage struct {
	ID                              int64
	Room, Status, Patient, Provider string
	Reason                          string
	Open                            bool
	Messages                        []messageItem
	// Live is set when the caller may follow the thread (the page's event
	// stream); Seen is the thread's length as drawn.
	Live bool
	Seen int
	// Waiting is set on a patient's walk-in that waits: the page is the
	// waiting room, with the queue as GET /rooms/{code}/queue gives it.
	Waiting               bool
	BeforeMe, WaitMinutes int
	// Call is set for the participants of an open visit's call.
	Call *callView
}

// callView is the call part of the visit page (static/call.js).
type callView struct {
	Base   string // the call's routes: {Base}/join, /events, /signal, /leave, /end
	Mode   string // p2p or livekit
	Role   string
	CanEnd bool // the provider ends the visit from the call
}

// visitRequest is the signed-in caller and the visit the path names; a
// path id that is not one names no visit.
func (s *Server) visitRequest(r *http.Request) (*clinic.Principal, int64, error) {
	p, err := s.principal(r)
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		return nil, 0, clinic.Errorf(clinic.ENotFound, "Visit not found.")
	}
	return p, n, nil
}

// visit is /visits/start/{id}: the visit for each of its participants,
// with its thread. Who may see it is decided by app, as for
// GET /visits/{id} and GET /api/visits/{id}/messages.
func (s *Server) visit(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	d, err := s.app.GetVisit(r.Context(), p, id, false)
	if err != nil {
		return err
	}
	// The latest page of the thread, oldest first; the clinic's admin sees
	// the visit but not its thread, as in the API.
	ms, total, err := s.app.ListMessages(r.Context(), p, id, app.MessageQuery{Limit: new(app.MessagePageMax), Order: "desc"})
	if err != nil && clinic.ErrorCode(err) != clinic.EForbidden {
		return err
	}
	slices.Reverse(ms)
	page := visitPage{ID: id, Status: statusWord(d.Visit.Status), Open: d.Visit.Status != clinic.VisitCompleted && d.Visit.Status != clinic.VisitCancelled,
		Live: err == nil, Seen: total}
	if d.Room != nil {
		page.Room = d.Room.Name
	}
	if d.Member != nil {
		page.Patient = d.Member.FullName()
	}
	if d.Provider != nil {
		page.Provider = d.Provider.FullName()
	}
	if d.Intake != nil {
		page.Reason = d.Intake.ReasonForVisit
	}
	if d.Visit.Kind == clinic.KindWalkin && d.Visit.Status == clinic.VisitPending && d.Visit.MemberID == p.UserID() && d.Room != nil {
		q, err := s.app.RoomQueue(r.Context(), p, d.Room.Code)
		if err != nil {
			return err
		}
		page.Waiting, page.BeforeMe = true, q.BeforeMe
		// The estimate is the room's average visit time for each patient
		// ahead (spec: average_visit_time × before_me), in whole minutes.
		page.WaitMinutes = (q.AverageVisitTime*q.BeforeMe + 59) / 60
	}
	// The call's own rule is app's (JoinCall); the page offers it to
	// those it would let in.
	if role, err := s.app.CallRole(r.Context(), p, id); err == nil {
		page.Call = s.callView(w, id, role)
	}
	for _, m := range ms {
		page.Messages = append(page.Messages, messageItem{Author: m.Actor.DisplayName, Type: m.Type, Content: m.Content, CreatedUS: m.CreatedUS})
	}
	s.render(w, r, http.StatusOK, "visit", page)
	return nil
}

// postMessage sends the form's message to the visit's thread, as
// POST /api/visits/{id}/messages does, and shows the thread again.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	content := r.PostFormValue("content")
	if _, err := s.app.PostMessage(r.Context(), p, id, app.NewMessage{Content: &content}); err != nil {
		return err
	}
	http.Redirect(w, r, "/visits/start/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

// statusWord names a visit status for people.
func statusWord(st int) string {
	switch st {
	case clinic.VisitPending:
		return "waiting"
	case clinic.VisitConfirmed:
		return "confirmed"
	case clinic.VisitInProgress:
		return "in progress"
	case clinic.VisitCompleted:
		return "completed"
	case clinic.VisitCancelled:
		return "cancelled"
	}
	return "unknown"
}

package web

import (
	"net/http"
	"strconv"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

type dashVisit struct {
	ID                    int64
	Room, Patient, Reason string
	Status, Kind          string
	Created               int64
	// When is an appointment's start in the provider's time zone.
	When      string
	Actions   []dashAction
	PatientID int64
	// Latest is the thread's latest message, by whom; Unread how many of
	// its messages the provider has not seen.
	Latest, LatestBy string
	Unread           int
	// Waiting is set on a walk-in that waits for a provider, Waited how
	// long it has so far, in seconds.
	Waiting bool
	Waited  int64
	// Start is offered to take a walk-in, or open a booked visit, and join
	// its call in one step.
	Start bool
	// Gone, for a walk-in whose patient left the waiting room, is how
	// long ago, in seconds: the card offers a no-show and a removal.
	Gone   int64
	NoShow string
	// CanCancel offers Cancel, which asks a reason (the patient is told).
	CanCancel bool
	// NotArrived, for a booked visit past its start whose patient has not
	// come, offers to mark the no-show (the room may do it on its own).
	NotArrived bool
}

type dashAction struct{ Name, Label string }

type dashboardPage struct {
	Queue, Inbox, Today, Mine, Left []dashVisit
	Missed                          []dashVisit // today's no-shows and late cancellations
	// LeftAfter is app.LeftAfter, in seconds.
	LeftAfter int64
	// Waiting is how many patients wait for a provider (the queue and
	// the e-consults), Unread the messages not yet seen: the page's title
	// count and its alerts (static/dashboard.js).
	Waiting, Unread int
	// Later is how many more of the provider's open visits start after
	// those shown (app.DashboardOwnMax).
	Later int
	// LaterFrom is where /visits goes on with them ("start.id").
	LaterFrom string
	// MoreWaiting is where /visits goes on with the waiting visits when
	// there are more than the dashboard shows.
	MoreWaiting   int64
	Zone          string
	Error, Notice string
	// Rooms are the provider's rooms, where they publish slots.
	Rooms []roomItem
}

// kindWord names a visit's kind for people.
var kindWord = map[string]string{clinic.KindWalkin: "walk-in", clinic.KindEconsult: "e-consult", clinic.KindAppointment: "appointment"}

// moveLabels are the buttons' words for the visit moves.
var moveLabels = map[string]string{app.ActAccept: "Accept", app.ActInProgress: "Start", app.ActClose: "Complete", app.ActCancel: "Cancel"}

// dashboard is /providers/dashboard (app.ProviderDashboard): the
// e-consults of the provider's rooms that wait for a provider, and the
// provider's own open visits, each with the moves its state allows.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) error {
	return s.showDashboard(w, r, http.StatusOK, "")
}

func (s *Server) showDashboard(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	var notice string
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	zone, _ := viewerZone(r, p.User)
	db, err := s.app.ProviderDashboard(r.Context(), p, zone)
	if err != nil {
		return err
	}
	links, err := s.app.GetUser(r.Context(), p, p.UserID(), "")
	if err != nil {
		return err
	}
	var rooms []roomItem
	for _, l := range links.Rooms {
		rooms = append(rooms, roomItem{Name: l.Room.Name, Code: l.Room.Code})
	}
	if msg == "" && r.URL.Query().Get("done") == "slots" {
		notice = "Your slots are published."
	}
	now := s.app.Now().Unix()
	page := dashboardPage{Rooms: rooms, Notice: notice, Queue: dashVisits(db.Queue, db.Zone, now), Inbox: dashVisits(db.Inbox, db.Zone, now),
		Today: dashVisits(db.Today, db.Zone, now), Mine: dashVisits(db.Mine, db.Zone, now), Left: dashVisits(db.Left, db.Zone, now),
		Missed: dashVisits(db.Missed, db.Zone, now), LeftAfter: int64(app.LeftAfter / time.Second), Later: db.Later, Zone: db.Zone.String(), Error: msg}
	page.MoreWaiting, page.LaterFrom = db.MoreWaiting, visitPlaceParam(db.LaterFrom)
	page.Waiting = len(page.Queue) + len(page.Inbox)
	for _, list := range [][]dashVisit{page.Queue, page.Inbox, page.Today, page.Mine, page.Left} {
		for _, v := range list {
			page.Unread += v.Unread
		}
	}
	s.render(w, r, status, "dashboard", page)
	return nil
}

func dashVisits(vs []app.DashboardVisit, zone *time.Location, now int64) []dashVisit {
	out := make([]dashVisit, 0, len(vs))
	for _, d := range vs {
		v := dashVisit{ID: d.Visit.ID, Status: visitStatusWord(d.Visit), Kind: kindWord[d.Visit.Kind], Created: d.Visit.Created, Unread: d.Unread,
			Start: d.Visit.Kind != clinic.KindEconsult && d.Visit.Status != clinic.VisitInProgress}
		if d.Visit.Kind == clinic.KindWalkin && d.Visit.ProviderID == 0 {
			v.Waiting, v.Waited = true, max(now-d.Visit.Created, 0)
		}
		if app.Left(d.Visit, now) {
			v.Waiting, v.Start, v.Waited = false, false, max(d.Visit.SeenAt-d.Visit.Created, 0)
			v.Gone, v.NoShow, v.Status = max(now-d.Visit.SeenAt, 1), app.ReasonNoShow, "left"
		}
		if d.Visit.Start != 0 {
			v.When = time.Unix(d.Visit.Start, 0).In(zone).Format("Mon 2 Jan, 15:04")
		}
		open := d.Visit.Status == clinic.VisitPending || d.Visit.Status == clinic.VisitConfirmed
		if d.Visit.Kind == clinic.KindAppointment && open && now > d.Visit.Start && !app.Arrived(d.Visit) {
			v.NotArrived, v.NoShow = true, app.ReasonNoShow
		}
		if d.Room != nil {
			v.Room = d.Room.Name
		}
		if d.Member != nil {
			v.Patient, v.PatientID = d.Member.FullName(), d.Member.ID
		}
		if d.Intake != nil {
			v.Reason = d.Intake.ReasonForVisit
		}
		if d.Latest != nil {
			v.Latest, v.LatestBy = d.Latest.Content, d.Latest.Actor.DisplayName
		}
		for _, m := range d.Moves {
			if (m == app.ActAccept || m == app.ActInProgress) && v.Start {
				continue // Start visit accepts, opens and joins (which starts it)
			}
			if m == app.ActCancel {
				v.CanCancel = v.Gone == 0 // asks a reason first
				continue
			}
			v.Actions = append(v.Actions, dashAction{m, moveLabels[m]})
		}
		out = append(out, v)
	}
	return out
}

// moveVisit makes one lifecycle move (app.MoveVisit, the rules and the
// 409s of POST /visits/{action}; a cancellation with its refund,
// billing.CancelVisit) and shows the dashboard again; a refusal is shown
// on it, in words.
func (s *Server) moveVisit(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	action := r.PathValue("action")
	if moveLabels[action] == "" {
		return clinic.Errorf(clinic.ENotFound, "There is no such step for a visit.")
	}
	in := app.MoveInput{Reason: r.PostFormValue("reason")}
	if action == app.ActCancel {
		// The clinic cancels: what the patient paid goes back in full.
		_, err = s.billing.CancelVisit(r.Context(), p, id, in)
	} else {
		_, err = s.app.MoveVisit(r.Context(), p, id, action, in)
	}
	if err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
			return s.showDashboard(w, r, status, msg)
		}
		return err
	}
	http.Redirect(w, r, "/providers/dashboard#visit-"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

// publishSlots publishes the provider's slots from the dashboard's form
// (POST /slots): one day or a range of days, a daily time span cut into
// slots of the given length, in the provider's time zone.
func (s *Server) publishSlots(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	f := r.PostForm
	minutes, err := strconv.Atoi(f.Get("duration"))
	if err != nil {
		return s.showDashboard(w, r, http.StatusBadRequest, "The slot length must be a number of minutes.")
	}
	// The zone the dashboard said the times are in (its hidden field), else
	// the viewer's as the page would say it; app keeps it on a profile that
	// names none (KeepZone).
	zone, _ := viewerZone(r, p.User)
	if z, err := time.LoadLocation(f.Get("timezone")); err == nil && f.Get("timezone") != "" && f.Get("timezone") != "Local" {
		zone = z
	}
	end := f.Get("date_end")
	if end == "" {
		end = f.Get("date_start")
	}
	_, _, err = s.app.CreateSlots(r.Context(), p, app.SlotGroupInput{RoomCode: f.Get("room_code"), DateStart: f.Get("date_start"), DateEnd: end,
		TimeStart: f.Get("time_start"), TimeEnd: f.Get("time_end"), Timezone: zone.String(), Duration: minutes, KeepZone: true})
	if err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.EConflict, clinic.ENotFound); ok {
			return s.showDashboard(w, r, status, msg)
		}
		return err
	}
	http.Redirect(w, r, "/providers/dashboard?done=slots#slots", http.StatusSeeOther)
	return nil
}

// startVisit is POST /providers/visits/{id}/start: the one step from the
// dashboard into a visit's call (app.TakeVisit); the visit page opens and
// joins the call at once (the join starts the visit).
func (s *Server) startVisit(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if _, err := s.app.TakeVisit(r.Context(), p, id); err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
			return s.showDashboard(w, r, status, msg)
		}
		return err
	}
	http.Redirect(w, r, "/visits/start/"+strconv.FormatInt(id, 10)+"?join=1", http.StatusSeeOther)
	return nil
}

// closeEconsult is POST /providers/visits/{id}/done: the provider closes
// an e-consult they have answered (app.CloseEconsult); the patient's page
// then shows the visit as over.
func (s *Server) closeEconsult(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if _, err := s.app.CloseEconsult(r.Context(), p, id); err != nil {
		return err
	}
	afterChange(w, r, id, "econsult-closed")
	return nil
}

package web

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
)

type visitItem struct {
	ID           int64
	Room, Status string
	With         string
	// Reason and Answers are the intake's, on the chart.
	Reason  string
	Answers []kv
	Kind    string // "appointment", "walk-in" or "e-consult"
	// Start and End are an appointment's times; Created is when any
	// other visit was asked for.
	Start, End, Created int64
}

// visitsPage is the caller's visits: Coming (booked visits ahead, soonest
// first, then open walk-ins and e-consults; a provider's own open visits
// soonest first), Waiting (a provider's rooms' e-consults and walk-ins no
// provider has taken, oldest first) and Past (the rest, newest first).
type visitsPage struct {
	// lang is the reader's language: the rooms are named in it.
	lang                  string
	Coming, Waiting, Past []visitItem
	Provider              bool
	// Paging names the list this page goes on with ("" the first page,
	// which shows all three); each list that can be long has its pager.
	Paging                              string
	LaterPager, WaitingPager, PastPager pager
	// Rooms are the clinic's public rooms, where a visit starts: shown
	// to a patient with nothing coming up; MoreRooms where the clinic's
	// home goes on from these (0: they are all).
	Rooms     []roomItem
	MoreRooms int
	Clinic    string
}

// pastVisitsPage is how many closed visits /visits shows at a time, and
// how many of a provider's rooms' waiting ones.
const pastVisitsPage = 50

// visitsQuery is /visits' address: which list this page goes on with
// (Paging, "" for the first page, which shows the start of each), and
// where: Later a provider's own open visits, Waiting their rooms' waiting
// ones, After the past ones.
type visitsQuery struct {
	Paging         string
	Later          *app.VisitPlace
	Waiting, After int64
}

func readVisitsQuery(r *http.Request, provider bool) (visitsQuery, *fields) {
	f := queryFields(r)
	q := visitsQuery{Waiting: f.place("waiting"), After: f.place("after")}
	if later := f.str("later"); later != "" {
		if q.Later = parseVisitPlace(later); q.Later == nil {
			f.refuse("later", "later must be a place in your open visits.")
		}
	}
	switch {
	case q.Later != nil && provider:
		q.Paging = "later"
	case q.Waiting > 0 && provider:
		q.Paging = "waiting"
	case q.After > 0:
		q.Paging = "past"
	}
	return q, f
}

// shows says whether this page shows the list named list.
func (q visitsQuery) shows(list string) bool { return q.Paging == "" || q.Paging == list }

// visits is /visits: the caller's visits as GET /visits gives them (a
// patient's own; a provider's and their rooms' waiting e-consults). The
// first page shows the start of each list, ?later=, ?waiting= and ?after=
// go on with one of them, by keyset (the last one shown).
func (s *Server) visits(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	provider := app.IsProvider(p)
	q, f := readVisitsQuery(r, provider)
	if err := f.Err(); err != nil {
		return err
	}
	page := visitsPage{Provider: provider, Paging: q.Paging, lang: s.localeOf(r).Tag.String()}
	var ds []*app.VisitDetail
	for _, list := range []struct {
		shown bool
		read  func(context.Context, *clinic.Principal, visitsQuery, *visitsPage) ([]*app.VisitDetail, error)
	}{
		{provider && q.shows("later"), s.ownOpenVisits},
		{provider && q.shows("waiting"), s.waitingVisits},
		{!provider && q.Paging == "", s.patientOpenVisits},
		{q.shows("past"), s.pastVisits},
	} {
		if !list.shown {
			continue
		}
		more, err := list.read(r.Context(), p, q, &page)
		if err != nil {
			return err
		}
		ds = append(ds, more...)
	}
	page.place(p, ds, s.app.Now().Unix())
	if len(page.Coming) == 0 && app.IsPatient(p) {
		if err := s.visitsRooms(r.Context(), p, &page); err != nil {
			return err
		}
	}
	s.render(w, r, http.StatusOK, "visits", page)
	return nil
}

// ownOpenVisits is a page of a provider's own open visits, soonest first
// (they can be many: booked months ahead).
func (s *Server) ownOpenVisits(ctx context.Context, p *clinic.Principal, q visitsQuery, page *visitsPage) ([]*app.VisitDetail, error) {
	own, next, err := s.app.OwnOpenVisits(ctx, p, q.Later)
	if err != nil {
		return nil, err
	}
	page.LaterPager = pager{Label: tr("Your open visits"), BackText: tr("Soonest visits"), NextText: tr("Later visits")}
	if q.Paging == "later" {
		page.LaterPager.Back = "/visits"
	}
	if next != nil {
		page.LaterPager.Next = "/visits?later=" + visitPlaceParam(next)
	}
	return own, nil
}

// waitingVisits is a page of the e-consults and walk-ins of a provider's
// rooms that no provider has taken, longest waiting first; they are
// listed on their own, not among the visits returned.
func (s *Server) waitingVisits(ctx context.Context, p *clinic.Principal, q visitsQuery, page *visitsPage) ([]*app.VisitDetail, error) {
	waiting, err := s.app.ListVisits(ctx, p, app.VisitQuery{Statuses: app.OpenStatuses, Waiting: true, Limit: pastVisitsPage, After: q.Waiting})
	if err != nil {
		return nil, err
	}
	for _, d := range waiting.Items {
		page.Waiting = append(page.Waiting, visitItemOf(p, d, page.lang))
	}
	page.WaitingPager = pager{Label: tr("Waiting in your rooms"), BackText: tr("Longest waiting"), NextText: tr("More waiting")}.
		on("/visits", "", "waiting", q.Paging == "waiting", waiting.Next, nil)
	return nil, nil
}

// patientOpenVisits is all of a patient's open visits: they are few.
func (s *Server) patientOpenVisits(ctx context.Context, p *clinic.Principal, _ visitsQuery, _ *visitsPage) ([]*app.VisitDetail, error) {
	mine, err := s.app.ListVisits(ctx, p, app.VisitQuery{Statuses: app.OpenStatuses})
	return mine.Items, err
}

// pastVisits is a page of the caller's visits that are over, newest
// first.
func (s *Server) pastVisits(ctx context.Context, p *clinic.Principal, q visitsQuery, page *visitsPage) ([]*app.VisitDetail, error) {
	closed, err := s.app.ListVisits(ctx, p, app.VisitQuery{Statuses: app.ClosedStatuses, Limit: pastVisitsPage, After: q.After})
	if err != nil {
		return nil, err
	}
	page.PastPager = pager{Label: tr("Past visits"), BackText: tr("Latest visits"), NextText: tr("Older visits")}.
		on("/visits", "", "after", q.Paging == "past", closed.Next, nil)
	return closed.Items, nil
}

// place sorts ds into the page's lists by app.ComingUp: Coming (a
// patient's booked visits by their time, soonest first, before the
// others, newest first; a provider's in their pages' order, overdue ones
// first) and Past (newest first).
func (page *visitsPage) place(p *clinic.Principal, ds []*app.VisitDetail, now int64) {
	for _, d := range ds {
		if it := visitItemOf(p, d, page.lang); app.ComingUp(d.Visit, now, page.Provider) {
			page.Coming = append(page.Coming, it)
		} else {
			page.Past = append(page.Past, it)
		}
	}
	if !page.Provider {
		slices.SortStableFunc(page.Coming, func(a, b visitItem) int {
			switch {
			case a.Start != 0 && b.Start != 0:
				return cmp.Compare(a.Start, b.Start)
			case a.Start != 0:
				return -1
			case b.Start != 0:
				return 1
			}
			return cmp.Compare(b.Created, a.Created)
		})
	}
	slices.SortStableFunc(page.Past, func(a, b visitItem) int {
		return cmp.Compare(max(b.Start, b.Created), max(a.Start, a.Created))
	})
}

// visitsRooms offers a patient with nothing coming up the clinic's public
// rooms, where a visit starts.
func (s *Server) visitsRooms(ctx context.Context, p *clinic.Principal, page *visitsPage) error {
	rooms, next, err := s.app.PublicRooms(ctx, p, 0, clinicRoomsPage)
	if err != nil {
		return err
	}
	for _, rm := range rooms {
		words := rm.WordsIn(page.lang)
		page.Rooms = append(page.Rooms, roomItem{Name: words.Name, Subtitle: words.Subtitle, Address: roomBase(p.Account.Code, rm.Code)})
	}
	page.MoreRooms, page.Clinic = next, p.Account.Code
	return nil
}

// visitItemOf is d as a card of /visits for p, who reads language lang.
func visitItemOf(p *clinic.Principal, d *app.VisitDetail, lang string) visitItem {
	v := d.Visit
	it := visitItem{ID: v.ID, Status: visitStatusWord(v), Kind: kindWord[v.Kind], Created: v.Created}
	if v.Kind == clinic.KindAppointment {
		it.Start, it.End = v.Start, v.End
	}
	if d.Room != nil {
		it.Room = d.Room.WordsIn(lang).Name
	}
	switch {
	case d.Member != nil && d.Member.ID != p.UserID():
		it.With = d.Member.FullName()
	case d.Provider != nil:
		it.With = d.Provider.FullName()
	}
	return it
}

// visitPlaceParam is place as ?later= says it, "start.id" ("" for none).
func visitPlaceParam(place *app.VisitPlace) string {
	if place == nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", place.Start, place.ID)
}

// parseVisitPlace is a ?later= place, "start.id"; nil if it is none.
func parseVisitPlace(s string) *app.VisitPlace {
	start, id, ok := strings.Cut(s, ".")
	if !ok {
		return nil
	}
	st, err1 := strconv.ParseInt(start, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil || st < 0 || n <= 0 {
		return nil
	}
	return &app.VisitPlace{Start: st, ID: n}
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
	// Older is how many of the newest messages this page leaves out (an
	// earlier page of a long thread; 0 for the latest); Earlier is how
	// many come before those shown, and EarlierSkip the next page's older.
	Older, Earlier, EarlierSkip int
	// Waiting is set on a patient's walk-in that waits: the page is the
	// waiting room, with the queue as GET /rooms/{code}/queue gives it.
	Waiting               bool
	BeforeMe, WaitMinutes int
	// Call is set for the participants of an open visit's call.
	Call *callView
	// Booked is set on an appointment.
	Booked *bookedView
	// Note is the visit's note as the viewer may see it (notes.go).
	Note *noteView
	// Notice says what the last change did (?notice=).
	Notice string
	// CanCloseEconsult offers the provider of an open e-consult to close
	// it once answered.
	CanCloseEconsult bool
	// After is set for the patient of a visit that is over: what comes
	// next, and where to start another.
	After     bool
	RoomLink  string
	Completed bool
	Missed    bool // a no-show
	// CheckIn asks the patient of an open video visit where they are
	// (nil for others).
	CheckIn *checkInView
	// State is the visit's status as static/call.js reads it (statusWord,
	// untranslated): the page joins or rings the patient as it becomes
	// "in progress" and puts the call away as it ends. ProviderIn says so
	// to the patient of a call their provider has joined.
	State      string
	ProviderIn bool
	// Contact is the room's phone and email for patients (nil: none).
	Contact *clinic.RoomContact
}

// bookedView is an appointment's part of its page.
type bookedView struct {
	Start, End int64
	// Mine: the viewer is the patient, who may cancel, move and set
	// reminders until ChangeCloses (CanChange).
	Mine, CanChange bool
	// GuestEmail, for a guest on the session they booked with, is where
	// the booking and the link back to it went (masked).
	GuestEmail    string
	ChangeCloses  int64
	CancelHours   int
	RemindersOn   bool
	RefundPercent int
	// Payment is what was paid and refunded, in words ("" when nothing),
	// and Fee the fee of a missed or late-cancelled visit.
	Payment, Fee string
	// LateFee, for the patient past ChangeCloses where the room charges a
	// late-cancel fee, is that fee in words: they may still cancel, and
	// are told what it costs first.
	LateFee string
	// CanText: the viewer is the visit's provider, the visit is ahead and
	// the clinic texts; the page offers to text the patient their link.
	CanText bool
}

// notices are the words of ?notice= after a change on the visit page.
var notices = map[string]string{
	"cancelled":       "Your appointment is cancelled.",
	"checked-in":      "Thank you: the clinic knows where you are for this visit.",
	"moved":           "Your appointment has its new time.",
	"remind-on":       "Reminder emails are on for this visit.",
	"texted":          "The patient's link is on its way by text.",
	"remind-off":      "Reminder emails are off for this visit.",
	"note-saved":      "The note is saved as a draft.",
	"note-signed":     "The note is signed. Changes from now on are addenda.",
	"note-amended":    "The addendum is added to the note.",
	"econsult-closed": "The e-consult is closed. The patient can read its messages and your summary.",
}

// callView is the call part of the visit page (static/call.js).
type callView struct {
	Base   string // the call's routes: {Base}/join, /events, /signal, /leave, /end
	Mode   string // p2p or livekit
	Seats  int    // how many people the call takes: the mesh's, or LiveKit's room's
	Role   string
	CanEnd bool // the provider ends the visit from the call
	// OpensIn is how many seconds until an appointment's call opens for
	// this viewer (0: open).
	OpensIn int64
	Opens   int64
	// AutoJoin joins the call as the page opens (the dashboard's Start
	// visit).
	AutoJoin bool
	// STUN are the STUN servers' URLs (JSON), for the device check's test
	// of the network.
	STUN string
	// The provider's: the patient's preferred language (its name) and the
	// clinic's interpreters.
	PatientLanguage string
	Interpreters    []interpreterView
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
// GET /visits/{id} and GET /api/visits/{id}/messages; each part of the
// page is read by its own loader.
func (s *Server) visit(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.visitDetail(r)
	if err != nil {
		return err
	}
	// ?older=N is the page before the newest N messages (Earlier
	// messages); ?join=1 joins the call as the page opens.
	f := queryFields(r)
	older, join := min(f.count("older", 0, 0), app.MaxSkip), f.str("join") == "1"
	if err := f.Err(); err != nil {
		return err
	}
	page := visitPage{ID: d.Visit.ID, Status: visitStatusWord(d.Visit), State: statusWord(d.Visit.Status), Open: !app.VisitOver(d.Visit), Older: older,
		Notice: notices[f.str("notice")]}
	page.people(p, d, s.localeOf(r).Tag.String())
	if d.Room != nil {
		page.Contact = d.Room.Settings.Contact
	}
	for _, part := range []func(*http.Request, *clinic.Principal, *app.VisitDetail, *visitPage) error{
		s.visitThread, s.visitWaiting, s.visitBooked, s.visitNote,
	} {
		if err := part(r, p, d, &page); err != nil {
			return err
		}
	}
	s.visitCall(w, r, p, d, &page) // its media server's CSP is the answer's header
	if page.Call != nil && join {
		page.Call.AutoJoin = true
	}
	page.ProviderIn = page.Call != nil && d.Visit.MemberID == p.UserID() && d.Visit.Status == clinic.VisitInProgress
	if d.Visit.MemberID == p.UserID() && page.Open && d.Visit.Kind != clinic.KindEconsult {
		f, _, err := s.app.VisitFacts(r.Context(), p, d.Visit.ID)
		if err != nil {
			return err
		}
		page.CheckIn = &checkInView{States: app.USStates(), State: f.PatientState, Home: f.PatientHome}
	}
	if page.Live && page.Seen > 0 { // drawn: the dashboard no longer counts these as new
		if err := s.app.MarkThreadRead(r.Context(), p, d.Visit.ID, page.Seen); err != nil {
			return err
		}
	}
	s.render(w, r, http.StatusOK, "visit", page)
	return nil
}

// people are the visit's room, patient, provider and reason, and what the
// page offers the viewer by who they are: the provider of an open
// e-consult closes it; the patient of a visit that is over is told what
// comes next.
func (page *visitPage) people(p *clinic.Principal, d *app.VisitDetail, lang string) {
	v := d.Visit
	if d.Room != nil {
		page.Room = d.Room.WordsIn(lang).Name
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
	page.CanCloseEconsult = v.Kind == clinic.KindEconsult && page.Open && v.ProviderID != 0 && v.ProviderID == p.UserID()
	if v.MemberID == p.UserID() && !page.Open {
		page.After, page.Completed, page.Missed = true, v.Status == clinic.VisitCompleted, v.Outcome == clinic.OutcomeNoShow
		if d.Room != nil {
			page.RoomLink = roomBase(p.Account.Code, d.Room.Code)
		}
	}
}

// visitThread is the latest page of the thread, oldest first, or the page
// before the newest page.Older. The clinic's admin sees the visit but not
// its thread, as in the API.
func (s *Server) visitThread(r *http.Request, p *clinic.Principal, d *app.VisitDetail, page *visitPage) error {
	older := page.Older
	ms, total, err := s.app.ListMessages(r.Context(), p, d.Visit.ID, app.MessageQuery{Limit: new(app.MessagePageMax), Skip: &older, Order: "desc"})
	if err != nil && clinic.ErrorCode(err) != clinic.EForbidden {
		return err
	}
	page.Live, page.Seen = err == nil, total
	if shown := older + len(ms); shown < total && older+app.MessagePageMax <= app.MaxSkip {
		page.Earlier, page.EarlierSkip = total-shown, shown
	}
	slices.Reverse(ms)
	for _, m := range ms {
		page.Messages = append(page.Messages, messageItem{Author: m.Actor.DisplayName, Type: m.Type, Content: m.Content, CreatedUS: m.CreatedUS})
	}
	return nil
}

// visitWaiting is the waiting room of a patient whose walk-in waits: the
// queue as GET /rooms/{code}/queue gives it, and the estimate, the room's
// average visit time for each patient ahead (the spec's average_visit_time
// × before_me), in whole minutes.
func (s *Server) visitWaiting(r *http.Request, p *clinic.Principal, d *app.VisitDetail, page *visitPage) error {
	v := d.Visit
	if v.Kind != clinic.KindWalkin || v.Status != clinic.VisitPending || v.MemberID != p.UserID() || d.Room == nil {
		return nil
	}
	q, err := s.app.RoomQueue(r.Context(), p, d.Room.Code)
	if err != nil {
		return err
	}
	page.Waiting, page.BeforeMe = true, q.BeforeMe
	page.WaitMinutes = (q.AverageVisitTime*q.BeforeMe + 59) / 60
	return nil
}

// visitCall is the call, offered to those calls.Join would let in
// (anyone else, not a participant, has no call on the page); a patient's
// opens at the room's join window.
func (s *Server) visitCall(w http.ResponseWriter, r *http.Request, p *clinic.Principal, d *app.VisitDetail, page *visitPage) {
	role, err := s.calls.Role(r.Context(), p, d.Visit.ID)
	if err != nil {
		return
	}
	page.Call = s.callView(w, r, p, d.Visit.ID, role)
	if d.Room != nil && role != calls.RoleProvider {
		page.Call.Opens = app.JoinOpens(d.Visit.Thread(), d.Room)
		page.Call.OpensIn = max(page.Call.Opens-s.app.Now().Unix(), 0)
	}
}

// visitBooked is an appointment's part.
func (s *Server) visitBooked(r *http.Request, p *clinic.Principal, d *app.VisitDetail, page *visitPage) error {
	if d.Visit.Kind == clinic.KindAppointment && d.Room != nil {
		page.Booked = s.booked(r, p, d)
	}
	return nil
}

// visitNote is the visit's note as the viewer may see it (notes.go).
func (s *Server) visitNote(r *http.Request, p *clinic.Principal, d *app.VisitDetail, page *visitPage) (err error) {
	page.Note, err = s.noteFor(r, p, d, "")
	return err
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

// visitStatusWord is statusWord, with a booked visit that waits for its
// time called "booked".
func visitStatusWord(v *clinic.Visit) string {
	switch {
	case v.Kind == clinic.KindAppointment && v.Status == clinic.VisitPending:
		return "booked"
	case v.Outcome == clinic.OutcomeNoShow:
		return "missed"
	case v.Outcome == clinic.OutcomeLateCancel:
		return "cancelled late"
	}
	return statusWord(v.Status)
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

// booked is an appointment's part of its page.
func (s *Server) booked(r *http.Request, p *clinic.Principal, d *app.VisitDetail) *bookedView {
	v, rules := d.Visit, d.Room.Settings.AppointmentRules()
	b := &bookedView{Start: v.Start, End: v.End, Mine: v.MemberID == p.UserID(), ChangeCloses: app.ChangeCloses(v, d.Room),
		CancelHours: rules.CancelHours, RemindersOn: !v.RemindersOff, RefundPercent: rules.RefundPercent}
	if b.Mine && p.User.Type == clinic.UserGuest && p.VisitScope == 0 {
		b.GuestEmail = app.MaskEmail(p.User.Email)
	}
	open := v.Status == clinic.VisitPending || v.Status == clinic.VisitConfirmed
	b.CanChange = b.Mine && open && s.app.Now().Unix() <= b.ChangeCloses
	if fee, currency := s.app.LateCancelFee(v, d.Room); b.Mine && open && fee > 0 {
		b.LateFee = money(fee, currency)
	}
	b.CanText = open && v.ProviderID == p.UserID() && s.app.SendsTexts(r.Context(), p.Account.ID)
	if b.Mine && v.IntakeID != 0 {
		invs, err := s.billing.Invoices(r.Context(), p, billing.InvoiceQuery{IntakeID: v.IntakeID, Limit: 5})
		if err == nil {
			loc := s.localeOf(r)
			for _, inv := range invs.Items {
				switch {
				case inv.Kind != clinic.InvoiceVisit:
					b.Fee = feeWords(loc, inv)
				case inv.Refunded > 0:
					b.Payment = loc.T("Paid %s, refunded %s to your card.", money(inv.AmountDue, inv.Currency), money(inv.Refunded, inv.Currency))
				case inv.Status == billing.InvoicePaid:
					b.Payment = loc.T("Paid %s.", money(inv.AmountDue, inv.Currency))
				}
			}
		}
	}
	return b
}

// feeWords says what became of fee invoice inv.
func feeWords(loc *locale.Locale, inv *clinic.Invoice) string {
	late := inv.Kind == clinic.InvoiceLateCancelFee
	switch {
	case inv.Status == billing.InvoicePaid && late:
		return loc.T("A late cancellation fee of %s was charged to your card.", money(inv.AmountDue, inv.Currency))
	case inv.Status == billing.InvoicePaid:
		return loc.T("A no-show fee of %s was charged to your card.", money(inv.AmountDue, inv.Currency))
	case inv.Status == billing.InvoiceFailed && late:
		return loc.T("A late cancellation fee of %s is due; your card could not be charged, so the clinic will contact you.", money(inv.AmountDue, inv.Currency))
	case inv.Status == billing.InvoiceFailed:
		return loc.T("A no-show fee of %s is due; your card could not be charged, so the clinic will contact you.", money(inv.AmountDue, inv.Currency))
	}
	return ""
}

// visitDetail is the signed-in caller and the visit the path names, as
// they may see it.
func (s *Server) visitDetail(r *http.Request) (*clinic.Principal, *app.VisitDetail, error) {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return nil, nil, err
	}
	d, err := s.app.GetVisit(r.Context(), p, id, false)
	return p, d, err
}

// afterChange sends the browser back to the visit page with a notice.
func afterChange(w http.ResponseWriter, r *http.Request, id int64, notice string) {
	http.Redirect(w, r, "/visits/start/"+strconv.FormatInt(id, 10)+"?notice="+notice, http.StatusSeeOther)
}

// cancelVisit is POST /visits/start/{id}/cancel: the patient cancels
// their appointment, with the refund the clinic's policy gives
// (billing.CancelVisit, as PUT /visits/delete).
func (s *Server) cancelVisit(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if _, err := s.billing.CancelVisit(r.Context(), p, id, app.MoveInput{Reason: r.PostFormValue("reason")}); err != nil {
		return err
	}
	afterChange(w, r, id, "cancelled")
	return nil
}

// rescheduleForm is GET /visits/start/{id}/reschedule: the room's open
// times, as when booking, each moving the visit there.
func (s *Server) rescheduleForm(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.visitDetail(r)
	if err != nil {
		return err
	}
	return s.showTimes(w, r, http.StatusOK, p, d.Visit.IntakeID, d.Room, "/visits/start/"+strconv.FormatInt(d.Visit.ID, 10)+"/reschedule", "")
}

// reschedule is POST /visits/start/{id}/reschedule (app.Reschedule).
func (s *Server) reschedule(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.visitDetail(r)
	if err != nil {
		return err
	}
	t := slotFields(r)
	err = t.err
	if err == nil {
		_, err = s.app.Reschedule(r.Context(), p, d.Visit.ID, app.RescheduleInput{SlotStart: t.start, SlotEnd: t.end, ProviderID: t.provider})
	}
	if err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
			return s.showTimes(w, r, status, p, d.Visit.IntakeID, d.Room, r.URL.Path, msg)
		}
		return err
	}
	afterChange(w, r, d.Visit.ID, "moved")
	return nil
}

// reminders is POST /visits/start/{id}/reminders: on=1 or on=0.
func (s *Server) reminders(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	on := r.PostFormValue("on") == "1"
	if err := s.app.SetReminders(r.Context(), p, id, on); err != nil {
		return err
	}
	afterChange(w, r, id, map[bool]string{true: "remind-on", false: "remind-off"}[on])
	return nil
}

// checkIn is POST /visits/start/{id}/location: the patient says where
// they are for the visit (app.CheckIn), for its claim.
func (s *Server) checkIn(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	var home *bool
	switch r.PostFormValue("at_home") {
	case "1":
		home = new(true)
	case "0":
		home = new(false)
	}
	if _, err := s.app.CheckIn(r.Context(), p, id, app.CheckInInput{State: r.PostFormValue("state"), AtHome: home}); err != nil {
		return err
	}
	afterChange(w, r, id, "checked-in")
	return nil
}

// checkInView is the visit page's question of where the patient is.
type checkInView struct {
	States      []string
	State, Home string // as said ("" until then)
}

// textLink is POST /visits/start/{id}/text-link: the visit's provider
// texts the patient a new link to it (app.TextVisitLink).
func (s *Server) textLink(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if err := s.app.TextVisitLink(r.Context(), p, id); err != nil {
		return err
	}
	afterChange(w, r, id, "texted")
	return nil
}

// calendar is GET /visits/start/{id}/calendar.ics: the appointment as an
// iCalendar event (RFC 5545) at its instant in UTC, with the way to the
// visit (app.VisitLinkFor), for any calendar app.
func (s *Server) calendar(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.visitDetail(r)
	if err != nil {
		return err
	}
	v := d.Visit
	if v.Kind != clinic.KindAppointment || v.Start == 0 {
		return clinic.Errorf(clinic.ENotFound, "Only a booked visit has a calendar entry.")
	}
	// The patient's entry holds a link that signs them into the visit
	// from any device (once; it offers a new one after); others', the page.
	page, err := s.app.VisitLinkFor(r.Context(), p, v.ID)
	if err != nil {
		return err
	}
	roomName := ""
	if d.Room != nil {
		roomName = d.Room.WordsIn(s.localeOf(r).Tag.String()).Name
	}
	w.Header().Set("Content-Type", "text/calendar; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="visit-`+strconv.FormatInt(v.ID, 10)+`.ics"`)
	_, err = io.WriteString(w, app.VisitCalendar(s.localeOf(r), d.Account, v, roomName, page, s.app.Now()))
	return err
}

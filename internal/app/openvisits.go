package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// DashboardVisit is an open visit on a provider's dashboard with the moves
// its state allows (the state machine's; MoveVisit still decides each one).
type DashboardVisit struct {
	*VisitDetail
	Moves []string
	// Latest is the thread's latest message (nil when none), read as
	// ListMessages reads it, audit entry included.
	Latest *Message
	// Unread is how many of the thread's messages the provider has not
	// been shown (MarkThreadRead).
	Unread int
}

// Dashboard is what a provider works from. Queue are the walk-ins of
// their rooms that wait for a provider, in arrival order, and Inbox the
// e-consults (both to accept); Today their appointments that start today
// in their time zone, and Mine their other open visits (to start,
// complete or cancel). It is for providers only.
type Dashboard struct {
	Queue, Inbox, Today, Mine []DashboardVisit
	// Missed are today's appointments of the provider that were missed
	// or cancelled late (noshows.go).
	Missed []DashboardVisit
	// Left are the walk-ins whose patient has left the waiting room
	// (presence.go): apart from the queue, to mark a no-show or remove.
	Left []DashboardVisit
	// Later is how many more of the provider's open visits there are,
	// starting after those in Mine (DashboardOwnMax).
	Later int
	// MoreWaiting, when the rooms' waiting visits are more than a
	// dashboard shows (MaxVisitList), is the last one shown: the portal's
	// /visits goes on from there (VisitQuery.Waiting).
	MoreWaiting int64
	// LaterFrom, with Later, is the last of the soonest visits shown:
	// OwnOpenVisits goes on from there.
	LaterFrom *VisitPlace
	// Zone is the provider's time zone, in which Today is today.
	Zone *time.Location
}

// DashboardOwnMax bounds the provider's own open visits a dashboard
// shows, the soonest first: a provider booked months ahead has hundreds,
// and the dashboard is read again at every change.
const DashboardOwnMax = 100

// ProviderDashboard is the provider's dashboard, from the open visits
// GET /visits gives a provider, each list read in its index's order.
// Today is today in zone:
// the viewer's (the portal passes the browser's when the profile names
// none); nil is the profile's, or UTC.
func (a *App) ProviderDashboard(ctx context.Context, p *clinic.Principal, zone *time.Location) (*Dashboard, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out := &Dashboard{Zone: time.UTC}
	if z, err := time.LoadLocation(p.User.Timezone); err == nil && p.User.Timezone != "" {
		out.Zone = z
	}
	if zone != nil {
		out.Zone = zone
	}
	now := a.now().In(out.Zone)
	dayStart := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, out.Zone).Unix()
	dayEnd := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, out.Zone).Unix()
	own, laterFrom, err := a.ownOpenVisits(ctx, p, dayStart, dayEnd)
	if err != nil {
		return nil, err
	}
	// The rooms' unassigned e-consults and walk-ins, oldest first (first
	// come, first served), in the order of their partial index.
	rd := a.store.Read()
	read, err := rd.ListVisits(ctx, store.VisitFilter{AccountID: p.Account.ID, ProviderID: p.UserID(), ProviderRooms: true, Unassigned: true,
		Oldest: true, Statuses: []int{clinic.VisitPending, clinic.VisitConfirmed, clinic.VisitInProgress}, Limit: MaxVisitList + 1})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	waiting := clinic.PageOf(read, MaxVisitList, func(v *clinic.Visit) int64 { return v.ID })
	out.MoreWaiting = waiting.Next
	total, err := rd.CountProviderOpenVisits(ctx, p.Account.ID, p.UserID())
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if out.Later = total - len(own); out.Later > 0 {
		out.LaterFrom = laterFrom
	}
	ds, err := a.visitDetails(ctx, p, append(waiting.Items, own...))
	if err != nil {
		return nil, err
	}
	out.place(ds, dayStart, dayEnd, a.Unix())
	missed, err := rd.ProviderOutcomes(ctx, p.Account.ID, p.UserID(), dayStart, dayEnd, MaxVisitList)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	mds, err := a.visitDetails(ctx, p, missed)
	if err != nil {
		return nil, err
	}
	for _, d := range mds {
		out.Missed = append(out.Missed, DashboardVisit{VisitDetail: d})
	}
	if err := a.dashboardThreads(ctx, p, out, ds); err != nil {
		return nil, err
	}
	return out, nil
}

// place puts each visit in its list: a walk-in no provider has taken in
// the queue, such an e-consult in the inbox, today's appointments, and the
// provider's other visits; each with the moves it offers. The queue and
// the inbox stay oldest first (first come, first served), the provider's
// own visits soonest first.
func (out *Dashboard) place(ds []*VisitDetail, dayStart, dayEnd, now int64) {
	for _, d := range ds {
		v := d.Visit
		switch {
		case Left(v, now):
			out.Left = append(out.Left, DashboardVisit{VisitDetail: d, Moves: []string{ActCancel}})
		case v.ProviderID == 0 && v.Kind == clinic.KindWalkin:
			out.Queue = append(out.Queue, DashboardVisit{VisitDetail: d, Moves: []string{ActAccept}})
		case v.ProviderID == 0:
			out.Inbox = append(out.Inbox, DashboardVisit{VisitDetail: d, Moves: []string{ActAccept}})
		case v.Kind == clinic.KindAppointment && v.Start >= dayStart && v.Start < dayEnd:
			out.Today = append(out.Today, DashboardVisit{VisitDetail: d, Moves: movesFrom(v.Status)})
		default:
			out.Mine = append(out.Mine, DashboardVisit{VisitDetail: d, Moves: movesFrom(v.Status)})
		}
	}
}

// dashboardThreads is what each thread holds that the provider has not
// seen, and the latest message of an e-consult or of a thread with
// something new: the waiting room's chat shows here (read only where it
// is shown).
func (a *App) dashboardThreads(ctx context.Context, p *clinic.Principal, out *Dashboard, ds []*VisitDetail) error {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.Visit.ID
	}
	reads, err := a.store.Read().ThreadReads(ctx, p.Account.ID, p.UserID(), ids)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	for _, list := range [][]DashboardVisit{out.Queue, out.Inbox, out.Today, out.Mine, out.Left} {
		for i := range list {
			d := &list[i]
			d.Unread = max(d.Visit.MessageCount-reads[d.Visit.ID], 0)
			if d.Visit.MessageCount == 0 || (d.Unread == 0 && d.Visit.Kind != clinic.KindEconsult) {
				continue
			}
			ms, _, err := a.ListMessages(ctx, p, d.Visit.ID, MessageQuery{Limit: new(1), Order: "desc"})
			if err != nil {
				return err
			}
			if len(ms) > 0 {
				d.Latest = ms[0]
			}
		}
	}
	return nil
}

// ownOpenVisits are the provider's own open visits a dashboard shows:
// those that start in [dayStart, dayEnd) and the soonest DashboardOwnMax
// of the others, each once, read through visits_provider_open so the read
// costs what it shows. The dashboard was cut from the provider's 500
// newest visits of GET /visits, so an e-consult or a booking older than
// those was left off. The dashboard and its watch are for providers only.
// The place returned is the last of the soonest, where OwnOpenVisits goes
// on.
func (a *App) ownOpenVisits(ctx context.Context, p *clinic.Principal, dayStart, dayEnd int64) ([]*clinic.Visit, *VisitPlace, error) {
	if !IsProvider(p) {
		return nil, nil, clinic.Errorf(clinic.EForbidden, "The dashboard is for the clinic's providers. Your visits are on the Visits page.")
	}
	rd, acct, uid := a.store.Read(), p.Account.ID, p.UserID()
	today, err := rd.ProviderOpenVisits(ctx, acct, uid, store.OpenVisitQuery{From: dayStart, To: dayEnd, Limit: MaxVisitList})
	if err != nil {
		return nil, nil, fmt.Errorf("dashboard: %w", err)
	}
	soonest, err := rd.ProviderOpenVisits(ctx, acct, uid, store.OpenVisitQuery{Limit: DashboardOwnMax})
	if err != nil {
		return nil, nil, fmt.Errorf("dashboard: %w", err)
	}
	var last *VisitPlace
	if len(soonest) > 0 {
		v := soonest[len(soonest)-1]
		last = &VisitPlace{Start: v.Start, ID: v.ID}
	}
	// The day's are often among the soonest: each visit once.
	var out []*clinic.Visit
	shown := map[int64]bool{}
	for _, v := range append(today, soonest...) {
		if !shown[v.ID] {
			shown[v.ID] = true
			out = append(out, v)
		}
	}
	return out, last, nil
}

// VisitPlace is a place in a provider's open visits, soonest first: the
// start and id of the last visit of a page.
type VisitPlace struct{ Start, ID int64 }

// OwnOpenVisitsPage bounds a page of OwnOpenVisits.
const OwnOpenVisitsPage = 50

// OwnOpenVisits is a page of the provider's own open visits, soonest
// first (those with no start, e-consults and walk-ins taken, first of
// all), after place after when it is set, and where the next page starts
// (nil at the end). The portal's /visits pages them with it, from the
// soonest or from where the dashboard's soonest DashboardOwnMax stop,
// so that none of a provider booked far ahead is out of reach.
func (a *App) OwnOpenVisits(ctx context.Context, p *clinic.Principal, after *VisitPlace) ([]*VisitDetail, *VisitPlace, error) {
	if err := RequireUser(p); err != nil {
		return nil, nil, err
	}
	if !IsProvider(p) {
		return nil, nil, clinic.Errorf(clinic.EForbidden, "Only providers have visits of their own to take. Your visits are on the Visits page.")
	}
	oq := store.OpenVisitQuery{Limit: OwnOpenVisitsPage + 1}
	if after != nil {
		oq.After = &store.OpenVisitKey{Start: after.Start, ID: after.ID}
	}
	vs, err := a.store.Read().ProviderOpenVisits(ctx, p.Account.ID, p.UserID(), oq)
	if err != nil {
		return nil, nil, fmt.Errorf("open visits: %w", err)
	}
	var next *VisitPlace
	if len(vs) > OwnOpenVisitsPage {
		vs = vs[:OwnOpenVisitsPage]
		last := vs[len(vs)-1]
		next = &VisitPlace{Start: last.Start, ID: last.ID}
	}
	ds, err := a.visitDetails(ctx, p, vs)
	if err != nil {
		return nil, nil, err
	}
	// A list of visits with their patients, audited as GET /visits is.
	if err := a.Audit(ctx, p, "visit.list", "visit", "", OutcomeOK); err != nil {
		return nil, nil, err
	}
	return ds, next, nil
}

// movesFrom are the moves of the assigned provider that the state machine
// allows from status, in the order a visit goes through them.
func movesFrom(status int) []string {
	var out []string
	for _, act := range []string{ActInProgress, ActClose, ActCancel} {
		if slices.Contains(transitions[act].from, status) {
			out = append(out, act)
		}
	}
	return out
}

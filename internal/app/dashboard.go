package app

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"teleclinic/internal/clinic"
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
	// Zone is the provider's time zone, in which Today is today.
	Zone *time.Location
}

// ProviderDashboard is the provider's dashboard, from the visits
// GET /visits gives a provider, open ones only. Today is today in zone:
// the viewer's (the portal passes the browser's when the profile names
// none); nil is the profile's, or UTC.
func (a *App) ProviderDashboard(ctx context.Context, p *clinic.Principal, zone *time.Location) (*Dashboard, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	ds, err := a.openVisits(ctx, p)
	if err != nil {
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
	for _, d := range ds {
		switch {
		case d.Visit.ProviderID == 0 && d.Visit.Kind == clinic.KindWalkin:
			out.Queue = append(out.Queue, DashboardVisit{VisitDetail: d, Moves: []string{ActAccept}})
		case d.Visit.ProviderID == 0:
			out.Inbox = append(out.Inbox, DashboardVisit{VisitDetail: d, Moves: []string{ActAccept}})
		case d.Visit.Kind == clinic.KindAppointment && d.Visit.Start >= dayStart && d.Visit.Start < dayEnd:
			out.Today = append(out.Today, DashboardVisit{VisitDetail: d, Moves: movesFrom(d.Visit.Status)})
		default:
			out.Mine = append(out.Mine, DashboardVisit{VisitDetail: d, Moves: movesFrom(d.Visit.Status)})
		}
	}
	// GET /visits is newest first; a queue is served first come, first
	// served, and a day in the order of its appointments.
	slices.Reverse(out.Queue)
	slices.Reverse(out.Inbox)
	slices.SortFunc(out.Today, func(x, y DashboardVisit) int { return cmp.Compare(x.Visit.Start, y.Visit.Start) })
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.Visit.ID
	}
	reads, err := a.store.Read().ThreadReads(ctx, p.Account.ID, p.UserID(), ids)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	// What each thread holds that the provider has not seen, and the
	// latest message of an e-consult or of a thread with something new:
	// the waiting room's chat shows here (read only where it is shown).
	for _, list := range [][]DashboardVisit{out.Queue, out.Inbox, out.Today, out.Mine} {
		for i := range list {
			d := &list[i]
			d.Unread = max(d.Visit.MessageCount-reads[d.Visit.ID], 0)
			if d.Visit.MessageCount > 0 && (d.Unread > 0 || d.Visit.Kind == clinic.KindEconsult) {
				ms, _, err := a.ListMessages(ctx, p, d.Visit.ID, MessageQuery{Limit: new(1), Order: "desc"})
				if err != nil {
					return nil, err
				}
				if len(ms) > 0 {
					d.Latest = ms[0]
				}
			}
		}
	}
	return out, nil
}

// openVisits are the provider's open visits as GET /visits gives them to
// a provider (theirs, and their rooms' unassigned e-consults and
// walk-ins); the dashboard and its watch are for providers only.
func (a *App) openVisits(ctx context.Context, p *clinic.Principal) ([]*VisitDetail, error) {
	if !IsProvider(p) {
		return nil, clinic.Errorf(clinic.EForbidden, "The dashboard is for the clinic's providers. Your visits are on the Visits page.")
	}
	return a.ListVisits(ctx, p, VisitQuery{Statuses: []string{"10", "20", "25"}})
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

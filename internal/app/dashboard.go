package app

import (
	"context"
	"slices"

	"teleclinic/internal/clinic"
)

// DashboardVisit is an open visit on a provider's dashboard with the moves
// its state allows (the state machine's; MoveVisit still decides each one).
type DashboardVisit struct {
	*VisitDetail
	Moves []string
}

// Dashboard is what a provider works from: the e-consults of their rooms
// that wait for a provider (Waiting, to accept) and their own open visits
// (Mine, to start, complete or cancel). It is for providers only.
type Dashboard struct {
	Waiting, Mine []DashboardVisit
}

// ProviderDashboard is the provider's dashboard, from the visits
// GET /visits gives a provider, open ones only.
func (a *App) ProviderDashboard(ctx context.Context, p *clinic.Principal) (*Dashboard, error) {
	if err := requireUser(p); err != nil {
		return nil, err
	}
	if !isProvider(p) {
		return nil, clinic.Errorf(clinic.EForbidden, "The dashboard is for the clinic's providers. Your visits are on the Visits page.")
	}
	ds, err := a.ListVisits(ctx, p, VisitQuery{Statuses: []string{"10", "20", "25"}})
	if err != nil {
		return nil, err
	}
	out := &Dashboard{}
	for _, d := range ds {
		if d.Visit.ProviderID == 0 {
			out.Waiting = append(out.Waiting, DashboardVisit{d, []string{ActAccept}})
			continue
		}
		out.Mine = append(out.Mine, DashboardVisit{d, movesFrom(d.Visit.Status)})
	}
	return out, nil
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

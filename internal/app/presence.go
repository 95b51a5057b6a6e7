package app

import (
	"context"
	"fmt"
	"time"

	"teleclinic/internal/clinic"
)

// Who is still in a waiting room. A walk-in's patient is present while
// a page follows their visit: the portal's visit page, or a client's
// GET /api/visits/{id}/messages/events, whose stream marks the visit seen
// as it opens and at its keep-alives. A patient whose page has been gone
// for LeftAfter has left: they count in no one's before_me, take no place
// in the queue's capacity, and bring no wait alert; the provider's
// dashboard shows them apart, to mark a no-show or remove. They come back
// at their place in the line as soon as a page follows the visit again.
// A visit no stream has ever followed (an integration that waits without
// one) is never taken for left: its client decides when it is gone.

// ReasonNoShow is the cancel reason of a visit whose patient did not come
// (or left before a provider took them).
const ReasonNoShow = "no-show"

// LeftAfter is how long a waiting patient's page may be gone before they
// count as left: long enough for a reload, a phone's locked screen or a
// train's tunnel (a stream reconnects within seconds), short enough that
// the next patient is not told to wait for someone who has gone.
const LeftAfter = 2 * time.Minute

// seeEvery bounds the presence writes: a stream's keep-alives (every 20
// s) write the visit's row at most this often, in seconds.
const seeEvery = 30

// Left says whether the patient of waiting walk-in v has left at now.
func Left(v *clinic.Visit, now int64) bool {
	return v.Kind == clinic.KindWalkin && v.Status == clinic.VisitPending && v.ProviderID == 0 &&
		v.SeenAt != 0 && now-v.SeenAt >= int64(LeftAfter/time.Second)
}

// leftBefore is the last-seen time before which a waiting patient has
// left.
func (a *App) leftBefore() int64 { return a.Unix() - int64(LeftAfter/time.Second) }

// seeWalkin marks that p, the patient of waiting walk-in v (or of booked
// visit v), has its page open. A patient who had left is back: their
// room is told, so queues and dashboards count them again.
func (a *App) seeWalkin(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit) error {
	if v.Kind == clinic.KindAppointment && v.MemberID == p.UserID() && (v.Status == clinic.VisitPending || v.Status == clinic.VisitConfirmed) {
		// The patient of a booked visit has arrived (noshows.go).
		if err := a.store.Write().SeeAppointment(ctx, p.Account.ID, v.ID, v.MemberID, a.Unix(), seeEvery); err != nil {
			return fmt.Errorf("see appointment: %w", err)
		}
		return nil
	}
	if v.Kind != clinic.KindWalkin || v.Status != clinic.VisitPending || v.ProviderID != 0 || v.MemberID != p.UserID() {
		return nil
	}
	now := a.Unix()
	prev, ok, err := a.store.Write().SeeWalkin(ctx, p.Account.ID, v.ID, v.MemberID, now, seeEvery)
	if err != nil {
		return fmt.Errorf("see walk-in: %w", err)
	}
	if ok && prev != 0 && now-prev >= int64(LeftAfter/time.Second) {
		a.publishVisit(&clinic.Visit{ID: v.ID, AccountID: v.AccountID, RoomID: v.RoomID})
	}
	return nil
}

// leftSweep is the loop pass that tells the rooms of the patients who have
// just left (their last sight crossed LeftAfter since the last pass), so
// open queues and dashboards count them out without waiting for another
// change. Each process sweeps; a room told twice only reads itself twice.
func (a *App) leftSweep() func(context.Context) int {
	var last int64
	return func(ctx context.Context) int {
		to := a.leftBefore()
		if last == 0 {
			last = to - seeEvery - 1
		}
		vs, err := a.store.Read().WalkinsLastSeen(ctx, last, to)
		if err != nil {
			a.log.Warn("left sweep", "err", err)
			return 0
		}
		last = to
		for _, v := range vs {
			a.publishVisit(&clinic.Visit{ID: v.ID, AccountID: v.AccountID, RoomID: v.RoomID})
		}
		return 0
	}
}

package app

import (
	"context"
	"fmt"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/store"
)

// The change events (package live) that app publishes once a change has
// committed: a visit created or moved publishes on its room's topic and
// its own; a message on its visit's topic and its room's. A watch below
// turns them into what its caller may see, read again through the same
// operation as the matching API read.

// publishVisit announces that visit v was created or changed state.
func (a *App) publishVisit(v *clinic.Visit) {
	bus := a.store.Live()
	if v.RoomID != 0 {
		bus.Publish(live.Event{Topic: live.RoomTopic(v.AccountID, v.RoomID), Kind: live.KindVisit, ID: v.ID})
	}
	bus.Publish(live.Event{Topic: live.VisitTopic(v.AccountID, v.ID), Kind: live.KindVisit, ID: v.ID})
}

// publishMessage announces message m on visit v's thread.
func (a *App) publishMessage(v *clinic.ThreadVisit, m *clinic.Message) {
	bus := a.store.Live()
	bus.Publish(live.Event{Topic: live.VisitTopic(v.AccountID, v.ID), Kind: live.KindMessage, ID: m.ID})
	if v.RoomID != 0 {
		bus.Publish(live.Event{Topic: live.RoomTopic(v.AccountID, v.RoomID), Kind: live.KindMessage, ID: m.ID})
	}
}

// wait returns the next event of sub, or ok false when d passes with
// none (the stream's time to send a keep-alive and check its caller) or
// ctx ends. Keep-alives run on real time, not the app's clock: they pace
// a connection, and tests hold the app's clock still.
func wait(ctx context.Context, sub *live.Sub, d time.Duration) (live.Event, bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return live.Event{}, false, ctx.Err()
	case <-t.C:
		return live.Event{}, false, nil
	case e := <-sub.C:
		return e, true, nil
	}
}

// drain takes the events that wait behind the one being handled: one read
// answers them all.
func drain(sub *live.Sub) (kinds map[string]bool) {
	kinds = map[string]bool{}
	for {
		select {
		case e := <-sub.C:
			kinds[e.Kind] = true
		default:
			return kinds
		}
	}
}

// QueueWatch follows a room's queue for one caller: GET
// /rooms/{code}/queue/events.
type QueueWatch struct {
	a    *App
	p    *clinic.Principal
	code string
	sub  *live.Sub
	last *Queue
}

// WatchQueue starts following room code's queue. The spec's one read of
// the queue takes the clinic's code alone; a stream, which holds a
// connection for as long as its client likes, takes a credential that
// has a part in the queue: the clinic admin, a provider linked to the
// room, or a patient or guest with a visit waiting in it (whose before_me
// is their own).
func (a *App) WatchQueue(ctx context.Context, p *clinic.Principal, code string) (*QueueWatch, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	if !p.IsAdmin() {
		var in bool
		if p.User.Type == clinic.UserProvider {
			in, err = a.store.Read().UserInRoom(ctx, p.Account.ID, p.UserID(), r.ID)
		} else {
			var mine []*clinic.Visit
			mine, err = a.store.Read().ListVisits(ctx, store.VisitFilter{AccountID: p.Account.ID, MemberID: p.UserID(), RoomID: r.ID,
				Statuses: []int{clinic.VisitPending, clinic.VisitConfirmed}, Limit: 1})
			in = len(mine) > 0
		}
		if err != nil {
			return nil, fmt.Errorf("queue watch: %w", err)
		}
		if !in {
			return nil, clinic.Errorf(clinic.EForbidden, "Only the clinic admin, the room's providers and the patients waiting in room '%s' follow its queue.", r.Code)
		}
	}
	// Subscribed before the first read, so no change falls in between.
	return &QueueWatch{a: a, p: p, code: r.Code, sub: a.store.Live().Subscribe(live.RoomTopic(p.Account.ID, r.ID))}, nil
}

// Next returns the queue: at once the first time, then when it has changed.
// It returns nil after d with no change, and ctx's error when ctx ends.
func (w *QueueWatch) Next(ctx context.Context, d time.Duration) (*Queue, error) {
	if w.last == nil {
		q, err := w.a.RoomQueue(ctx, w.p, w.code)
		w.last = q
		return q, err
	}
	deadline := time.Now().Add(d)
	for {
		e, ok, err := wait(ctx, w.sub, time.Until(deadline))
		if err != nil || !ok {
			return nil, err
		}
		kinds := drain(w.sub)
		kinds[e.Kind] = true
		if len(kinds) == 1 && kinds[live.KindMessage] {
			continue // a thread's message does not move the queue
		}
		q, err := w.a.RoomQueue(ctx, w.p, w.code)
		if err != nil {
			return nil, err
		}
		if *q != *w.last {
			w.last = q
			return q, nil
		}
	}
}

// Close ends the watch.
func (w *QueueWatch) Close() { w.sub.Close() }

// VisitEvent is what changed on a watched visit: new messages of its
// thread (with their places in it, from 1), or the visit itself.
type VisitEvent struct {
	Messages []*Message
	// First is the place of Messages[0] in the thread.
	First int
	// Visit is set when the visit changed state.
	Visit *clinic.ThreadVisit
}

// VisitWatch follows a visit and its thread for one caller: GET
// /api/visits/{id}/messages/events.
type VisitWatch struct {
	a      *App
	p      *clinic.Principal
	id     int64
	sub    *live.Sub
	seen   int // messages already sent
	status int
}

// WatchVisit starts following visit id and its thread after the first
// seen messages. Who may is who may read the thread (ListMessages).
func (a *App) WatchVisit(ctx context.Context, p *clinic.Principal, id int64, seen int) (*VisitWatch, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if seen < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "Last-Event-ID must be the place of a message in the thread (0 or more).")
	}
	sub := a.store.Live().Subscribe(live.VisitTopic(p.Account.ID, id))
	v, err := a.messageVisit(ctx, p, id)
	if err != nil {
		sub.Close()
		return nil, a.AuditOutcome(ctx, p, "visit.messages.read", "visit", i64s(id), err)
	}
	return &VisitWatch{a: a, p: p, id: v.ID, sub: sub, seen: min(seen, v.MessageCount), status: v.Status}, nil
}

// Next returns the messages after those seen, at once if there are any,
// and otherwise the next change. It returns nil after d with no change,
// and ctx's error when ctx ends. The caller's right to the thread is
// checked again for each change: a visit that is no longer theirs ends
// the watch with the error the API would answer.
func (w *VisitWatch) Next(ctx context.Context, d time.Duration) (*VisitEvent, error) {
	deadline := time.Now().Add(d)
	for first := true; ; first = false {
		if !first {
			_, ok, err := wait(ctx, w.sub, time.Until(deadline))
			if err != nil || !ok {
				return nil, err
			}
			drain(w.sub)
		}
		v, err := w.a.messageVisit(ctx, w.p, w.id)
		if err != nil {
			return nil, err
		}
		ev := &VisitEvent{First: w.seen + 1}
		if v.Status != w.status {
			w.status, ev.Visit = v.Status, v
		}
		if v.MessageCount > w.seen {
			skip := w.seen
			ms, _, err := w.a.ListMessages(ctx, w.p, w.id, MessageQuery{Skip: &skip, Limit: new(MessagePageMax)})
			if err != nil {
				return nil, err
			}
			ev.Messages, w.seen = ms, w.seen+len(ms)
		}
		if ev.Visit != nil || len(ev.Messages) > 0 {
			return ev, nil
		}
	}
}

// Close ends the watch.
func (w *VisitWatch) Close() { w.sub.Close() }

// ChangeWatch tells a page that something it shows may have changed; the
// page reads itself again through its own operations.
type ChangeWatch struct{ sub *live.Sub }

// WatchDashboard follows what a provider's dashboard shows: the visits of
// the rooms they are linked to (their queues, e-consults and threads) and
// their own open visits. It is for providers only, as the dashboard is.
func (a *App) WatchDashboard(ctx context.Context, p *clinic.Principal) (*ChangeWatch, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	// The visits only, not the dashboard: its threads' latest messages
	// would be read (and audited) for a stream that shows none of them.
	open, err := a.openVisits(ctx, p)
	if err != nil {
		return nil, err
	}
	links, err := a.store.Read().UserRooms(ctx, p.Account.ID, p.UserID())
	if err != nil {
		return nil, fmt.Errorf("watch dashboard: %w", err)
	}
	var topics []string
	for _, l := range links {
		topics = append(topics, live.RoomTopic(p.Account.ID, l.Room.ID))
	}
	for _, d := range open {
		if d.Visit.ProviderID == p.UserID() {
			topics = append(topics, live.VisitTopic(p.Account.ID, d.Visit.ID))
		}
	}
	return &ChangeWatch{sub: a.store.Live().Subscribe(topics...)}, nil
}

// Next reports true when something changed, false after d with no change;
// it returns ctx's error when ctx ends.
func (w *ChangeWatch) Next(ctx context.Context, d time.Duration) (bool, error) {
	_, ok, err := wait(ctx, w.sub, d)
	if ok {
		drain(w.sub)
	}
	return ok, err
}

// Close ends the watch.
func (w *ChangeWatch) Close() { w.sub.Close() }

// Seen is how many of the thread's messages the watch has handed out.
func (w *VisitWatch) Seen() int { return w.seen }

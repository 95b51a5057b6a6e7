package app

import (
	"context"
	"errors"
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

// publishNote announces that visit v's note was signed or amended.
func (a *App) publishNote(v *clinic.Visit) {
	a.store.Live().Publish(live.Event{Topic: live.VisitTopic(v.AccountID, v.ID), Kind: live.KindNote, ID: v.ID})
}

// CredentialEpoch moves whenever a credential may have ended, here or in
// another process (live.Bus.CredentialEpoch): an event stream checks its
// caller again before its next event then.
func (a *App) CredentialEpoch() uint64 { return a.store.Live().CredentialEpoch() }

// QueueWatch follows a room's queue for one caller: GET
// /rooms/{code}/queue/events.
type QueueWatch struct {
	a    *App
	p    *clinic.Principal
	room int64
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
	return &QueueWatch{a: a, p: p, room: r.ID, sub: a.store.Live().Subscribe(live.RoomTopic(p.Account.ID, r.ID))}, nil
}

// roomQueue is a room and its queue, as every watcher of the room shares
// one read of them per change.
type roomQueue struct {
	room  *clinic.Room
	stats *store.QueueStats
}

// queue is the room's queue as w's caller sees it, from a read that
// started at or after since (shared.go).
func (w *QueueWatch) queue(ctx context.Context, since time.Time) (*Queue, error) {
	acct := w.p.Account.ID
	rq, err := shared(ctx, &w.a.reads, live.RoomTopic(acct, w.room), since, func(ctx context.Context) (roomQueue, error) {
		r, err := w.a.store.Read().RoomByID(ctx, acct, w.room)
		if err != nil {
			return roomQueue{}, err
		}
		st, err := w.a.store.Read().RoomQueue(ctx, acct, w.room, w.a.leftBefore(), 0) // shared by the watchers, whose streams keep them seen
		return roomQueue{r, st}, err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, clinic.Errorf(clinic.ENotFound, "Room not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return queueFor(w.p, rq.room, rq.stats), nil
}

// Poll returns the queue, without waiting: the first time as it is, then
// when ch's changes moved it (ok false when they did not).
func (w *QueueWatch) Poll(ctx context.Context, ch live.Changes) (q *Queue, ok bool, err error) {
	if w.last == nil {
		q, err := w.queue(ctx, time.Now())
		w.last = q
		return q, err == nil, err
	}
	if ch.Kinds == nil || len(ch.Kinds) == 1 && ch.Kinds[live.KindMessage] {
		return nil, false, nil // a thread's message does not move the queue
	}
	if q, err = w.queue(ctx, ch.Since); err != nil {
		return nil, false, err
	}
	if *q == *w.last {
		return nil, false, nil
	}
	w.last = q
	return q, true, nil
}

// Ahead says whether Poll has something without a change: the queue as it
// is, at the start.
func (w *QueueWatch) Ahead() bool { return w.last == nil }

// Sub is what the watch listens to: a parked stream polls on its events.
func (w *QueueWatch) Sub() *live.Sub { return w.sub }

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
	// Note is set when the visit's note was signed or amended.
	Note bool
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
	// ahead is set when the thread may hold messages not yet handed out
	// (at the start, and after a full page): the next call reads at once
	// instead of waiting for a change; after is the time that read's
	// data must be from (shared.go).
	ahead bool
	after time.Time
	// waits: the caller is the patient of this walk-in, whose stream
	// marks them present (Tick); began is the visit as the watch began.
	waits bool
	began *clinic.ThreadVisit
}

// WatchVisit starts following visit id and its thread after the first
// seen messages. Who may is who may read the thread (ListMessages). The
// stream's access is audited once, here, as visit.messages.read: the
// messages it then delivers are part of that read (an entry per delivery
// and watcher made a message's cost grow with its watchers).
func (a *App) WatchVisit(ctx context.Context, p *clinic.Principal, id int64, seen int) (*VisitWatch, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if seen < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "Last-Event-ID must be the place of a message in the thread (0 or more).")
	}
	sub := a.store.Live().Subscribe(live.VisitTopic(p.Account.ID, id))
	v, err := a.messageVisit(ctx, p, id)
	if err := a.AuditOutcome(ctx, p, "visit.messages.read", "visit", i64s(id), err); err != nil {
		sub.Close()
		return nil, err
	}
	if err := a.seeWalkin(ctx, p, v); err != nil {
		sub.Close()
		return nil, err
	}
	return &VisitWatch{a: a, p: p, id: v.ID, sub: sub, seen: min(seen, v.MessageCount), status: v.Status, ahead: true, after: time.Now(),
		waits: (v.Kind == clinic.KindWalkin || v.Kind == clinic.KindAppointment) && v.MemberID == p.UserID(), began: v}, nil
}

// Tick is the stream's keep-alive: the patient of a waiting walk-in is
// still there (presence.go).
func (w *VisitWatch) Tick(ctx context.Context) error {
	if !w.waits || (w.status != clinic.VisitPending && w.status != clinic.VisitConfirmed) {
		return nil
	}
	return w.a.seeWalkin(ctx, w.p, w.began)
}

// Poll returns the messages after those seen and the visit's change of
// state, without waiting: at the start and after a full page (Ahead)
// whatever there is, otherwise what ch's changes brought (ok false when
// nothing). The caller's right to the thread is checked again at each
// poll: a visit that is no longer theirs ends the watch with the error
// the API would answer. The visit's row is read once per change for all
// its watchers (shared.go), and the messages come from the thread cache,
// which they share too.
func (w *VisitWatch) Poll(ctx context.Context, ch live.Changes) (*VisitEvent, bool, error) {
	since := w.after
	if !w.ahead {
		if ch.Kinds == nil {
			return nil, false, nil
		}
		since = ch.Since
	}
	v, err := w.visit(ctx, since)
	if err != nil {
		return nil, false, err
	}
	ev := &VisitEvent{First: w.seen + 1, Note: ch.Kinds[live.KindNote]}
	if v.Status != w.status {
		w.status, ev.Visit = v.Status, v
	}
	if v.MessageCount > w.seen {
		// The watchers of one thread mostly want the same new
		// messages: one read of them (the thread cache alone let
		// each of them miss it at once).
		from, to := w.seen+1, min(v.MessageCount, w.seen+MessagePageMax)
		key := fmt.Sprintf("%s:%d-%d", live.VisitTopic(w.p.Account.ID, w.id), from, to)
		ms, err := shared(ctx, &w.a.reads, key, since, func(ctx context.Context) ([]*Message, error) {
			return w.a.threadMessages(ctx, w.p.Account.ID, v, from, to)
		})
		if err != nil {
			return nil, false, err
		}
		ev.Messages, w.seen = ms, w.seen+len(ms)
	}
	w.ahead, w.after = v.MessageCount > w.seen, since
	if ev.Visit != nil || len(ev.Messages) > 0 || ev.Note {
		return ev, true, nil
	}
	return nil, false, nil
}

// Ahead says whether Poll has something without a change: at the start,
// and while the thread holds more than a page past what was handed out.
func (w *VisitWatch) Ahead() bool { return w.ahead }

// Sub is what the watch listens to: a parked stream polls on its events.
func (w *VisitWatch) Sub() *live.Sub { return w.sub }

// visit is the watched visit's thread row from a read that started at or
// after since, if the caller still takes part in it (messageVisit's rule).
func (w *VisitWatch) visit(ctx context.Context, since time.Time) (*clinic.ThreadVisit, error) {
	acct := w.p.Account.ID
	v, err := shared(ctx, &w.a.reads, live.VisitTopic(acct, w.id), since, func(ctx context.Context) (*clinic.ThreadVisit, error) {
		return w.a.store.Read().ThreadVisit(ctx, acct, w.id)
	})
	return w.a.participantVisit(ctx, w.p, v, err)
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
	// Today in any time zone: the day before and after UTC's.
	now := a.now().Unix()
	own, _, err := a.ownOpenVisits(ctx, p, now-86400, now+86400)
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
	for _, v := range own {
		topics = append(topics, live.VisitTopic(p.Account.ID, v.ID))
	}
	return &ChangeWatch{sub: a.store.Live().Subscribe(topics...)}, nil
}

// Sub is what the watch listens to: any event of it is a change.
func (w *ChangeWatch) Sub() *live.Sub { return w.sub }

// Close ends the watch.
func (w *ChangeWatch) Close() { w.sub.Close() }

// Seen is how many of the thread's messages the watch has handed out.
func (w *VisitWatch) Seen() int { return w.seen }

// Package live carries change events from the process that made a change
// to the processes that hold open event streams (the API's and the
// portal's server-sent events). An event only says what changed — a
// room's queue, a visit, a visit's thread — never the data: a stream that
// receives one reads the data again through app, as its caller, so what a
// stream shows is exactly what the matching API read would show.
//
// Events are hints, not a log. They are published after the change
// commits, so one can be lost if a process dies in between or while a
// PostgreSQL listener reconnects; a stream that resumes re-reads from
// where it was (Last-Event-ID), and a listener that reconnects sends
// every subscriber a Resync.
package live

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one change.
type Event struct {
	// Topic is what changed: RoomTopic or VisitTopic.
	Topic string
	// Kind is how: KindQueue, KindVisit, KindMessage or KindResync.
	Kind string
	// ID is the row the change is about (a visit, a message), 0 if none.
	ID int64
	// At is when this process's hub delivered the event, after the change
	// committed: a read that starts at At or later sees the change, so
	// the streams it wakes can share one (app/shared.go).
	At time.Time
}

// The kinds of event.
const (
	// KindVisit: a visit was created or changed state.
	KindVisit = "visit"
	// KindMessage: a message was posted to a visit's thread.
	KindMessage = "message"
	// KindNote: a visit's note was signed or amended (its patient's page
	// shows the summary as it comes).
	KindNote = "note"
	// KindResync: events may have been lost; read everything again.
	KindResync = "resync"
	// KindCredentials: a credential may have ended (a token revoked or
	// logged out, a user disabled, a password or admin token changed).
	// Its topic is CredentialsTopic; the hub counts them
	// (CredentialEpoch), so a stream rechecks its caller before its next
	// event.
	KindCredentials = "credentials"
)

// CredentialsTopic carries KindCredentials events, of every clinic.
const CredentialsTopic = "credentials"

// RoomTopic is the topic of a room's visits (its queue, its e-consults).
func RoomTopic(accountID, roomID int64) string {
	return "room:" + strconv.FormatInt(accountID, 10) + ":" + strconv.FormatInt(roomID, 10)
}

// VisitTopic is the topic of one visit and its thread.
func VisitTopic(accountID, visitID int64) string {
	return "visit:" + strconv.FormatInt(accountID, 10) + ":" + strconv.FormatInt(visitID, 10)
}

// Bus publishes events to every process's subscribers.
type Bus interface {
	// Publish sends e without waiting for it to be delivered.
	Publish(e Event)
	// Subscribe receives the events of topics until the Sub is closed.
	Subscribe(topics ...string) *Sub
	// Close stops the bus; its subscribers receive nothing more.
	Close() error
	// CredentialEpoch counts the KindCredentials events delivered here:
	// when it has not moved, no credential has ended since (as far as
	// events tell, which is also why a stream rechecks at keep-alives).
	CredentialEpoch() uint64
}

// Sub is a subscription. What it has not yet taken is one pending set,
// the kinds of the events that came and when the last came, not a queue:
// a stream reads the current state once for any number of events, so it
// needs no more, and a subscription holds a few words instead of a
// buffer of events (a buffer of 64 was 4–5 KB of every open stream,
// docs/performance.md).
type Sub struct {
	h      *Hub
	topics []string
	once   sync.Once

	mu    sync.Mutex
	kinds []string
	since time.Time
	// notify, when set, is called at each event: the stream's wake-up
	// (Parker, or a goroutine's Polled.blocking).
	notify func()
}

// Close ends the subscription: nothing more is added to it.
func (s *Sub) Close() { s.once.Do(func() { s.h.remove(s) }) }

// add notes e as pending.
func (s *Sub) add(e Event) {
	s.mu.Lock()
	if !slices.Contains(s.kinds, e.Kind) {
		s.kinds = append(s.kinds, e.Kind)
	}
	if e.At.After(s.since) {
		s.since = e.At
	}
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify()
	}
}

// Take returns what is pending and clears it: the kinds of the events
// that came (nil when none), and when the last came, so that a read
// started then or later sees every change they announce.
func (s *Sub) Take() (kinds map[string]bool, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.kinds) == 0 {
		return nil, time.Time{}
	}
	kinds = make(map[string]bool, len(s.kinds))
	for _, k := range s.kinds {
		kinds[k] = true
	}
	s.kinds = s.kinds[:0]
	return kinds, s.since
}

// OnEvent makes f called for each event delivered to s, from the
// delivering goroutine (so f must not block); f is called at once if
// something is already pending. What came waits in s until Take.
func (s *Sub) OnEvent(f func()) {
	s.mu.Lock()
	s.notify = f
	pending := len(s.kinds) > 0
	s.mu.Unlock()
	if pending {
		f()
	}
}

// Hub fans events out to the subscribers of this process.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*Sub]struct{}
	// creds counts the KindCredentials events delivered.
	creds atomic.Uint64
}

// CredentialEpoch is Bus.CredentialEpoch.
func (h *Hub) CredentialEpoch() uint64 { return h.creds.Load() }

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]map[*Sub]struct{}{}} }

// Subscribe receives the events of topics.
func (h *Hub) Subscribe(topics ...string) *Sub {
	s := &Sub{h: h, topics: topics}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range topics {
		if h.subs[t] == nil {
			h.subs[t] = map[*Sub]struct{}{}
		}
		h.subs[t][s] = struct{}{}
	}
	return s
}

func (h *Hub) remove(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range s.topics {
		delete(h.subs[t], s)
		if len(h.subs[t]) == 0 {
			delete(h.subs, t)
		}
	}
}

// Deliver hands e to the subscribers of its topic, or to all of them for a
// Resync. It never blocks: each subscriber notes e as pending.
func (h *Hub) Deliver(e Event) {
	e.At = time.Now()
	if e.Kind == KindCredentials || e.Kind == KindResync {
		// Before the events that follow are delivered: a stream that
		// handles one of them sees the epoch moved. (A resync may hide a
		// lost credential event.)
		h.creds.Add(1)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	send := func(s *Sub) { s.add(e) }
	if e.Kind == KindResync {
		seen := map[*Sub]bool{}
		for _, subs := range h.subs {
			for s := range subs {
				if !seen[s] {
					seen[s] = true
					send(s)
				}
			}
		}
		return
	}
	for s := range h.subs[e.Topic] {
		send(s)
	}
}

// Subscribers counts the open subscriptions of topic.
func (h *Hub) Subscribers(topic string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[topic])
}

// Local is the bus of a single process (SQLite): publishing is delivering.
type Local struct{ *Hub }

// NewLocal returns a bus for one process.
func NewLocal() *Local { return &Local{NewHub()} }

// Publish delivers e to this process's subscribers.
func (l *Local) Publish(e Event) { l.Deliver(e) }

// Close does nothing: there is nothing to stop.
func (l *Local) Close() error { return nil }

// Changes is what a subscription took (Sub.Take): the kinds of the events
// that came, nil for none, and when the last came.
type Changes struct {
	Kinds map[string]bool
	Since time.Time
}

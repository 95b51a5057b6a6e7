package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/media"
	"teleclinic/internal/store"
)

// Joined is what a page needs to take part in a visit's call.
type Joined struct {
	// Status is the visit's, after the join (a provider's starts it).
	Status int
	Role   string
	// Name is how the others see the caller (an interpreter's with their
	// language).
	Name string
	// Peer-to-peer mode: the page's peer id, the others already in the
	// call (who will send it offers), the ICE servers with the caller's
	// TURN credential, and the signal number its stream starts after.
	Peer       string
	Peers      []clinic.CallPeer
	ICEServers []media.ICEServer
	ICEPolicy  string // RTCConfiguration.iceTransportPolicy
	After      int64
	// LiveKit mode: the SFU's address, and a token of the visit's room.
	LiveKitURL, LiveKitToken string
}

// Join lets a participant into visit id's call: admitted (callAdmit),
// given the call's media (callMedia), then seated (callSeat). The
// provider joining starts the visit (in progress, actual_start now), as
// PUT /visits/in_progress does. A full call answers 409.
//
// audioOnly says the page joins without a camera: the visit's facts keep
// the patient's modality for its claim (app/visitfacts.go).
func (s *Service) Join(ctx context.Context, p *clinic.Principal, id int64, audioOnly bool) (*Joined, error) {
	v, role, err := s.callAdmit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	out := &Joined{Status: v.Status, Role: role}
	// The others see who joins: an interpreter with their language, in
	// itself ("Ana Ruiz · español"), which the patient reads whatever the
	// page's language.
	name, lang := p.User.FullName(), ""
	if role == RoleInterpreter {
		if lang, err = s.interpreterLanguage(ctx, p, v.ID); err != nil {
			return nil, err
		}
		name += " · " + app.Autonym(lang)
	}
	out.Name = name
	seats, err := s.callMedia(ctx, p, v, name, out)
	if err != nil {
		return nil, err
	}
	if err := s.callSeat(ctx, p, v, name, seats, out); err != nil {
		return nil, err
	}
	// The join stands without its facts: a call is not refused for a
	// record of it, which the log then says is missing.
	if err := s.core.CallJoined(ctx, p, v.ID, role, lang, audioOnly); err != nil {
		s.log.Warn("call: visit facts not recorded", "account", p.Account.Code, "visit", v.ID, "err", err)
	}
	return out, nil
}

// interpreterLanguage is the language of the interpreter guest p came
// as into visit visitID's call.
func (s *Service) interpreterLanguage(ctx context.Context, p *clinic.Principal, visitID int64) (string, error) {
	_, id, err := s.core.Read().CallGuest(ctx, p.Account.ID, visitID, p.UserID())
	if err != nil {
		return "", fmt.Errorf("call interpreter: %w", err)
	}
	it, err := s.core.Read().InterpreterByID(ctx, p.Account.ID, id)
	if err != nil {
		return "", fmt.Errorf("call interpreter: %w", err)
	}
	return it.Language, nil
}

// callAdmit is the visit p may join and p's role in its call, the visit
// started when its provider joins.
func (s *Service) callAdmit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.ThreadVisit, string, error) {
	v, role, err := s.callVisit(ctx, p, id)
	if err != nil {
		return nil, "", s.core.AuditOutcome(ctx, p, "visit.call.join", "visit", i64s(id), err)
	}
	if err := s.callOpen(ctx, v, role); err != nil {
		return nil, "", err
	}
	if err := s.relayAllowed(ctx, p, v, role); err != nil {
		return nil, "", err
	}
	if role == RoleProvider && v.Status != clinic.VisitInProgress {
		d, err := s.core.MoveVisit(ctx, p, v.ID, app.ActInProgress, app.MoveInput{})
		switch {
		case err == nil:
			v = d.Visit.Thread()
		case clinic.ErrorCode(err) != clinic.EConflict: // another page of theirs started it
			return nil, "", err
		}
	}
	return v, role, nil
}

// relayAllowed decides whether p, in role, may be handed a relay
// credential for v's call. A call, and the TURN relay its join hands out,
// is for a visit a provider has taken (accepted, booked with them, or
// in): a waiting walk-in, an anonymous guest's above all, gets neither.
// Each credential handed out is counted per visit and per client address
// in the throttle's window.
func (s *Service) relayAllowed(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, role string) error {
	if role != RoleProvider && v.ProviderID == 0 {
		return clinic.Errorf(clinic.EConflict, "%s", ErrNoProviderYet)
	}
	if !s.cfg.ICE.HasTURN() || s.cfg.LiveKit.Enabled() {
		return nil
	}
	keys := []app.ThrottleKey{{AccountID: p.Account.ID, Bucket: "turn:visit:" + i64s(v.ID), Limit: maxJoinsPerVisit}}
	if p.ClientAddr != "" {
		keys = append(keys, app.ThrottleKey{Bucket: "turn:addr:" + app.AddressBlock(p.ClientAddr), Limit: maxJoinsPerAddress})
	}
	return s.core.CountAttempt(ctx, keys...)
}

// RelayCheck is the device check's test of the clinic's TURN relay: the
// ICE servers a join of visit id would hand p, with a relay credential,
// under the join's rules (the visit taken by a provider; counted as a
// join is), but at any time before the call opens, and without joining.
// No relay (none configured, or LiveKit's own) is an empty list.
func (s *Service) RelayCheck(ctx context.Context, p *clinic.Principal, id int64) ([]media.ICEServer, error) {
	v, role, err := s.callVisit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if err := s.relayAllowed(ctx, p, v, role); err != nil {
		return nil, err
	}
	if !s.cfg.ICE.HasTURN() || s.cfg.LiveKit.Enabled() {
		return []media.ICEServer{}, nil
	}
	return s.cfg.ICE.Servers(p.User.VideoID(), s.core.Now()), nil
}

// callOpen refuses a patient's or guest's join before the appointment's
// call opens.
func (s *Service) callOpen(ctx context.Context, v *clinic.ThreadVisit, role string) error {
	if role == RoleProvider || v.Kind != clinic.KindAppointment || v.RoomID == 0 {
		return nil
	}
	r, err := s.core.Read().RoomByID(ctx, v.AccountID, v.RoomID)
	if err != nil {
		return fmt.Errorf("call room: %w", err)
	}
	if opens := app.JoinOpens(v, r); s.core.Unix() < opens {
		return clinic.Errorf(clinic.EConflict, "The call of this appointment opens at %s, %d minutes before it starts.",
			time.Unix(opens, 0).UTC().Format("2006-01-02 15:04 UTC"), r.Settings.AppointmentRules().JoinBeforeMinutes)
	}
	return nil
}

// callMedia gives out what the page's media need and says how many seats
// the call has. Through LiveKit the SFU carries the media and their
// signalling (a token of the visit's room; LiveKit hands out its own ICE
// servers); the page still takes its seat here, as a peer, and follows
// the call's signals for what the server decides: the recording notice
// and every participant's consent (KeepRecording). Browser to browser,
// the mesh's seats and the ICE servers with the caller's TURN credential.
func (s *Service) callMedia(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, name string, out *Joined) (seats int, err error) {
	out.ICEServers = []media.ICEServer{}
	if lk := s.cfg.LiveKit; lk.Enabled() {
		if err := s.openLiveKitRoom(ctx, p.Account, v.ID); err != nil {
			return 0, err
		}
		out.LiveKitURL = lk.URL
		out.LiveKitToken, err = lk.RoomToken(s.LiveKitRoom(p.Account, v.ID), p.User.VideoID(), name, media.LiveKitTokenTTL)
		return LiveKitMaxParticipants, err
	}
	if servers := s.cfg.ICE.Servers(p.User.VideoID(), s.core.Now()); servers != nil {
		out.ICEServers = servers
	}
	out.ICEPolicy = s.cfg.ICE.Policy()
	return MaxPeers, nil
}

// callSeat seats p's new peer in v's call, if one of seats is free: under
// the call's lock, so no other join counts the seats meanwhile. One
// person is one peer: a join from another tab or device, or from a page
// that reloads before its leave arrived, takes the place of the caller's
// earlier peer; the others see that peer leave, and the earlier page is
// told it was replaced, and stops.
func (s *Service) callSeat(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, name string, seats int, out *Joined) error {
	now := s.core.Unix()
	peer := clinic.CallPeer{AccountID: p.Account.ID, VisitID: v.ID, Peer: app.RandomHex(12), UserID: p.UserID(),
		Name: name, Role: out.Role, Joined: now, Seen: now}
	body, _ := json.Marshal(map[string]string{"name": name, "role": out.Role})
	err := s.core.Tx(ctx, func(q *store.Q) error {
		seq, err := q.LockCall(ctx, p.Account.ID, v.ID)
		if err != nil {
			return err
		}
		in, err := q.CallPeers(ctx, p.Account.ID, v.ID, now-int64(PeerTimeout/time.Second))
		if err != nil {
			return err
		}
		for _, c := range in {
			if c.UserID != p.UserID() {
				out.Peers = append(out.Peers, c)
				continue
			}
			if err := s.replacePeer(ctx, q, v, c.Peer, peer.Peer, now); err != nil {
				return err
			}
		}
		if len(out.Peers) >= seats {
			return clinic.Errorf(clinic.EConflict, "The call of visit %d is full (%d people); try again when someone leaves.", v.ID, seats)
		}
		if err := q.PruneCallSignals(ctx, p.Account.ID, v.ID, now-int64(app.CallSignalTTL/time.Second)); err != nil {
			return err
		}
		if err := q.AddCallPeer(ctx, &peer); err != nil {
			return err
		}
		if len(out.Peers) < len(in) { // a peer was replaced: the join comes after its signals
			if seq, err = q.LockCall(ctx, p.Account.ID, v.ID); err != nil {
				return err
			}
		}
		if err := q.AddCallSignal(ctx, &clinic.CallSignal{AccountID: p.Account.ID, VisitID: v.ID, Seq: seq, From: peer.Peer, Kind: "join", Body: string(body), Created: now}); err != nil {
			return err
		}
		q.AfterCommit(func() { s.publishSignal(v, seq) })
		out.After = seq
		return s.core.AuditIn(ctx, q, p, "visit.call.join", "visit", i64s(v.ID), app.OutcomeOK)
	})
	var ce *clinic.Error
	switch {
	case err == nil:
		out.Peer = peer.Peer
		return nil
	case errors.As(err, &ce):
		return err
	}
	return fmt.Errorf("join call: %w", err)
}

// replacePeer takes old out of v's call for the caller's new peer: a
// "leave" from old to everyone, and a "replaced" to old itself.
func (s *Service) replacePeer(ctx context.Context, q *store.Q, v *clinic.ThreadVisit, old, by string, now int64) error {
	if _, err := q.LeaveCallPeer(ctx, v.AccountID, v.ID, old, now); err != nil {
		return err
	}
	for _, s := range []clinic.CallSignal{{From: old, Kind: "leave"}, {From: by, To: old, Kind: "replaced"}} {
		seq, err := q.LockCall(ctx, v.AccountID, v.ID)
		if err != nil {
			return err
		}
		s.AccountID, s.VisitID, s.Seq, s.Body, s.Created = v.AccountID, v.ID, seq, "{}", now
		if err := q.AddCallSignal(ctx, &s); err != nil {
			return err
		}
	}
	return nil
}

// STUNServers are the STUN servers' URLs calls are handed (public: they
// carry no credential), for the page's test of the network before a call.
func (s *Service) STUNServers() []string {
	if s.cfg.ICE.STUN == nil {
		return []string{}
	}
	return s.cfg.ICE.STUN
}

// LiveKitURL is the LiveKit server calls go through, "" in peer-to-peer
// mode.
func (s *Service) LiveKitURL() string { return s.cfg.LiveKit.URL }

// LiveKitRoom is the name of visit id's LiveKit room: the clinic's code
// and the visit's id, so no two visits of any clinic share one.
func (s *Service) LiveKitRoom(acct *clinic.Account, id int64) string {
	return acct.Code + "-visit-" + i64s(id)
}

func (s *Service) publishSignal(v *clinic.ThreadVisit, seq int64) {
	s.core.Live().Publish(live.Event{Topic: callTopic(v.AccountID, v.ID), Kind: KindSignal, ID: seq})
}

// ownPeer is peer of visit v's call for its own user: another's peer
// is 403, a peer that has left 409.
func (s *Service) ownPeer(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, peer string) (*clinic.CallPeer, error) {
	c, err := s.core.Read().CallPeer(ctx, p.Account.ID, v.ID, peer)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.UserID != p.UserID()) {
		return nil, clinic.Errorf(clinic.EForbidden, "peer is not one of yours in this call; join it first.")
	}
	if err != nil {
		return nil, fmt.Errorf("call peer: %w", err)
	}
	if c.Left != 0 {
		return nil, clinic.Errorf(clinic.EConflict, "Peer %s has left the call; join it again.", peer)
	}
	return c, nil
}

// Send's "record" (the provider's recording notice, to all) and
// "consent" (a participant's answer to it, to the provider's peer, with
// {"agree": true|false}) are the recording's consent: KeepRecording
// keeps a recording only when everyone in the call agreed.

// SignalInput is one signal a page sends.
type SignalInput struct {
	Peer string // the sender: the caller's own peer
	To   string // the peer it is for; "" for state, which goes to all
	Kind string
	Body json.RawMessage
}

// Send passes a signal from the caller's peer to another peer of
// the call (or, for "state" and "record", to all of them), and returns its
// number.
func (s *Service) Send(ctx context.Context, p *clinic.Principal, id int64, in SignalInput) (int64, error) {
	v, _, err := s.callVisit(ctx, p, id)
	if err != nil {
		return 0, err
	}
	switch {
	case !slices.Contains(signalKinds, in.Kind):
		return 0, clinic.Errorf(clinic.EInvalid, "type must be one of offer, answer, candidate, state, record and consent.")
	case len(in.Body) > MaxSignal:
		return 0, clinic.Errorf(clinic.EInvalid, "data must be at most %d bytes.", MaxSignal)
	case !json.Valid(in.Body):
		return 0, clinic.Errorf(clinic.EInvalid, "data must be JSON.")
	case in.Kind != "state" && in.Kind != "record" && in.To == "":
		return 0, clinic.Errorf(clinic.EInvalid, "to (the peer the signal is for) is required.")
	case in.Kind == "state" || in.Kind == "record":
		in.To = ""
	}
	if _, err := s.ownPeer(ctx, p, v, in.Peer); err != nil {
		return 0, err
	}
	now := s.core.Unix()
	var seq int64
	err = s.core.Tx(ctx, func(q *store.Q) error {
		var err error
		if seq, err = q.LockCall(ctx, p.Account.ID, v.ID); err != nil {
			return err
		}
		// Under the call's lock: the peer it is for is in the call, and
		// its queue (or the sender's, to all) has room.
		if in.To != "" {
			to, err := q.CallPeer(ctx, p.Account.ID, v.ID, in.To)
			if errors.Is(err, store.ErrNotFound) || err == nil && to.Left != 0 {
				return clinic.Errorf(clinic.EConflict, "Peer %s is not in this call.", in.To)
			}
			if err != nil {
				return err
			}
		}
		queued, err := q.QueuedCallSignals(ctx, p.Account.ID, v.ID, in.Peer, in.To)
		if err != nil {
			return err
		}
		if queued >= MaxQueuedSignals {
			return &clinic.Error{Code: clinic.ETooMany, Message: fmt.Sprintf("This call holds %d signals for that peer already; wait until they are read.", queued), RetryAfter: 5}
		}
		q.AfterCommit(func() { s.publishSignal(v, seq) })
		return q.AddCallSignal(ctx, &clinic.CallSignal{AccountID: p.Account.ID, VisitID: v.ID, Seq: seq, From: in.Peer, To: in.To, Kind: in.Kind, Body: string(in.Body), Created: now})
	})
	if err != nil {
		return 0, app.StoreErr("call signal", err, "")
	}
	return seq, nil
}

// Leave takes the caller's peer out of the call; the others are told.
// Leaving twice is not an error. Who may is who may join, so a visit that
// has closed has no call to leave (its peers went with it).
func (s *Service) Leave(ctx context.Context, p *clinic.Principal, id int64, peer string) error {
	v, _, err := s.callVisit(ctx, p, id)
	if err != nil {
		return err
	}
	c, err := s.ownPeer(ctx, p, v, peer)
	if clinic.ErrorCode(err) == clinic.EConflict {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.core.Unix()
	err = s.core.Tx(ctx, func(q *store.Q) error {
		seq, err := q.LockCall(ctx, p.Account.ID, v.ID)
		if err != nil {
			return err
		}
		if left, err := q.LeaveCallPeer(ctx, p.Account.ID, v.ID, c.Peer, now); err != nil || !left {
			return err
		}
		if role := c.Role; role == RolePatient || role == RoleProvider {
			if err := s.core.CallLeft(ctx, q, p.Account.ID, v.ID); err != nil {
				return err
			}
		}
		if err := q.AddCallSignal(ctx, &clinic.CallSignal{AccountID: p.Account.ID, VisitID: v.ID, Seq: seq, From: c.Peer, Kind: "leave", Body: "{}", Created: now}); err != nil {
			return err
		}
		q.AfterCommit(func() { s.publishSignal(v, seq) })
		return s.core.AuditIn(ctx, q, p, "visit.call.leave", "visit", i64s(v.ID), app.OutcomeOK)
	})
	if err != nil {
		return fmt.Errorf("leave call: %w", err)
	}
	return nil
}

// Event is what a watched call has for its peer: signals, or the end
// of the visit (Ended, with the visit as it now is).
type Event struct {
	Signals []clinic.CallSignal
	Ended   *clinic.Visit
}

// Watcher follows a visit's call for one of its peers.
type Watcher struct {
	s     *Service
	p     *clinic.Principal
	v     *clinic.ThreadVisit
	peer  string
	after int64
	sub   *live.Sub
	// started is set once the signals already there have been read.
	started bool
	// replaced is set once the peer has been handed its "replaced".
	replaced bool
}

// Watch follows the signals for the caller's peer after number after,
// and the end of the visit.
func (s *Service) Watch(ctx context.Context, p *clinic.Principal, id int64, peer string, after int64) (*Watcher, error) {
	v, _, err := s.callVisit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "after must be a signal number (0 or more).")
	}
	// Subscribed before the peer is checked and the first read, so no
	// signal falls in between.
	sub := s.core.Live().Subscribe(callTopic(p.Account.ID, v.ID), live.VisitTopic(p.Account.ID, v.ID))
	if _, err := s.ownPeer(ctx, p, v, peer); err != nil {
		sub.Close()
		return nil, err
	}
	return &Watcher{s: s, p: p, v: v, peer: peer, after: after, sub: sub}, nil
}

// Poll returns the signals not yet handed out and the end of the visit,
// without waiting: at the start what is there already, then what ch's
// changes brought (ok false when nothing).
func (w *Watcher) Poll(ctx context.Context, ch live.Changes) (*Event, bool, error) {
	if w.replaced {
		return nil, false, clinic.Errorf(clinic.EConflict, "Peer %s was replaced by a newer page of its person; join again to take the call back.", w.peer)
	}
	kinds := ch.Kinds
	if !w.started { // what is there already
		kinds, w.started = map[string]bool{KindSignal: true, live.KindVisit: true}, true
	}
	if kinds[live.KindVisit] || kinds[live.KindResync] {
		if ended, err := w.ended(ctx); ended != nil || err != nil {
			return &Event{Ended: ended}, ended != nil, err
		}
	}
	if !kinds[KindSignal] && !kinds[live.KindResync] {
		return nil, false, nil
	}
	ss, err := w.s.core.Read().CallSignals(ctx, w.p.Account.ID, w.v.ID, w.peer, w.after, 100)
	if err != nil {
		return nil, false, fmt.Errorf("call signals: %w", err)
	}
	// A peer replaced by its person's newer page hears nothing after
	// being told: the next poll ends it.
	for i, sg := range ss {
		if sg.Kind == "replaced" {
			ss, w.replaced = ss[:i+1], true
			break
		}
	}
	if len(ss) == 0 {
		return nil, false, nil
	}
	w.after = ss[len(ss)-1].Seq
	return &Event{Signals: ss}, true, nil
}

// Ahead says whether Poll has something without a change: what is there
// at the start, and the end of a replaced peer's stream.
func (w *Watcher) Ahead() bool { return !w.started || w.replaced }

// Sub is what the watch listens to: a parked stream polls on its events.
func (w *Watcher) Sub() *live.Sub { return w.sub }

// ended is the visit once it has closed, nil while it is open; an error
// when the caller may no longer take part in it.
//
// The visit's end is read before the caller's part in the call: a guest's
// part ends with the call, and a guest in it is told the visit ended
// (not that they may no longer join).
func (w *Watcher) ended(ctx context.Context) (*clinic.Visit, error) {
	v, err := w.s.core.Read().ThreadVisit(ctx, w.p.Account.ID, w.v.ID)
	if err == nil && app.StatusOver(v.Status) {
		return &clinic.Visit{ID: v.ID, AccountID: v.AccountID, Kind: v.Kind, MemberID: v.MemberID, ProviderID: v.ProviderID,
			RoomID: v.RoomID, Status: v.Status}, nil
	}
	_, _, err = w.s.callVisit(ctx, w.p, w.v.ID)
	return nil, err
}

// Alive runs at each keep-alive of the peer's stream: the peer is seen,
// and the caller's right to the call checked again. A visit that closed
// since is returned, as Next returns it (the keep-alive may find it
// first); a peer that has left (from another page, or timed out) gets 409.
func (w *Watcher) Alive(ctx context.Context) (*clinic.Visit, error) {
	if w.replaced {
		// Next has just handed out the "replaced" (the pump sends it
		// after this tick) and ends the stream at its next call.
		return nil, nil
	}
	if ended, err := w.ended(ctx); ended != nil || err != nil {
		return ended, err
	}
	seen, err := w.s.core.Write().SeeCallPeer(ctx, w.p.Account.ID, w.v.ID, w.peer, w.s.core.Unix())
	if err != nil {
		return nil, fmt.Errorf("call peer seen: %w", err)
	}
	if !seen {
		// The visit may have closed (which ends its peers) between the
		// look above and this write: that is the answer, if so.
		if ended, err := w.ended(ctx); ended != nil || err != nil {
			return ended, err
		}
		// A peer replaced by a newer page is first handed what is still
		// queued for it, its "replaced" last: Next ends the stream after
		// that, with the reason, where this tick would end it without one.
		ss, err := w.s.core.Read().CallSignals(ctx, w.p.Account.ID, w.v.ID, w.peer, w.after, 1)
		if err != nil {
			return nil, fmt.Errorf("call signals: %w", err)
		}
		if len(ss) > 0 {
			return nil, nil
		}
		return nil, clinic.Errorf(clinic.EConflict, "Peer %s has left the call; join it again.", w.peer)
	}
	return nil, nil
}

// After is the number of the last signal handed out.
func (w *Watcher) After() int64 { return w.after }

// Close ends the watch.
func (w *Watcher) Close() { w.sub.Close() }

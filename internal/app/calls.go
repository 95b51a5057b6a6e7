package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/media"
	"teleclinic/internal/store"
)

// A visit's call. In the default, peer-to-peer mode, browsers connect to
// each other and Teleclinic carries only the signalling: a page joins
// (JoinCall) and becomes a peer, sends its offers, answers and ICE
// candidates to the others (SendCallSignal), follows what is sent to it
// (WatchCall) and leaves (LeaveCall). Signals are rows, numbered per visit
// under the call's lock, so a page resumes after a dropped stream without
// missing one and any process can serve any peer: the live bus carries
// only "signal n is there". With LiveKit configured, JoinCall also hands
// out a token of the visit's LiveKit room, and the SFU carries the media;
// the seats and signals here then carry the recording's notice and the
// consents only.

const (
	// MaxCallPeers is the size of a mesh: each page sends its camera to
	// every other, so a phone uploads its camera once per peer: up to four
	// (docs/design-notes.md, "The video visit").
	MaxCallPeers = 4
	// CallPeerTimeout is how long a peer stays in the call without being
	// seen (its stream's keep-alives see it): a page that died without
	// leaving gives its seat back after it.
	CallPeerTimeout = 75 * time.Second
	// MaxCallSignal bounds a signal's body: an SDP offer with audio, video
	// and a screen is under 10 KB, a candidate under 1 KB.
	MaxCallSignal = 16 << 10
	// maxJoinsPerVisit and maxJoinsPerAddress bound the joins, each with
	// a TURN credential, in the throttle's window (15 minutes by
	// default): a visit's participants join a few times each, reloads
	// and dropped networks included; one address serves a family or a
	// clinic's front desk.
	maxJoinsPerVisit   = 40
	maxJoinsPerAddress = 100
	// MaxQueuedCallSignals bounds what a call stores for one peer (and
	// what one peer sends to all): a call's negotiation is an offer, an
	// answer and some dozens of candidates, and signals live callSignalTTL.
	MaxQueuedCallSignals = 500
	// callSignalTTL is how long signals are kept: they matter for seconds;
	// a page that reconnects reads what it missed within minutes.
	callSignalTTL = 10 * time.Minute
)

// Call roles.
const (
	CallPatient  = "patient"
	CallProvider = "provider"
	CallGuest    = "guest"
)

// callKinds are the signals a page may send. "leave" and "join" are the
// server's.
var callKinds = []string{"offer", "answer", "candidate", "state", "record", "consent"}

// ErrNoProviderYet is a patient's or guest's join of a call before a
// provider has taken the visit (exported: the portal translates it).
const ErrNoProviderYet = "No provider has taken this visit yet: its call opens when one does. Keep this page open."

// KindSignal is the live event of a new call signal; its ID is the
// signal's number.
const KindSignal = "signal"

func callTopic(accountID, visitID int64) string {
	return "call:" + i64s(accountID) + ":" + i64s(visitID)
}

// callVisit is visit id for a participant of its call, with their role:
// the patient, the assigned provider and the guests the provider invited,
// while the visit is open. Others who may see the visit get 403 (the
// clinic admin, a provider of the room before one has accepted it);
// anyone else the 404 or 403 of its thread.
func (a *App) callVisit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.ThreadVisit, string, error) {
	if err := RequireUser(p); err != nil {
		return nil, "", err
	}
	v, err := a.store.Read().ThreadVisit(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", errVisitNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("call visit: %w", err)
	}
	var role string
	switch uid := p.UserID(); {
	case v.MemberID == uid:
		role = CallPatient
	case v.ProviderID != 0 && v.ProviderID == uid:
		role = CallProvider
	default:
		guest, err := a.store.Read().IsCallGuest(ctx, p.Account.ID, v.ID, uid)
		if err != nil {
			return nil, "", fmt.Errorf("call guest: %w", err)
		}
		if !guest {
			return nil, "", clinic.Errorf(clinic.EForbidden, "Only the visit's patient, its provider and the guests they invite take part in its call; a provider accepts the visit first.")
		}
		role = CallGuest
	}
	if slices.Contains(closedForMessages, v.Status) {
		return nil, "", clinic.Errorf(clinic.EConflict, "Visit %d is %s; its call has ended.", v.ID, StatusName(v.Status))
	}
	return v, role, nil
}

// CallRole is the caller's part in visit id's call: patient, provider or
// guest. A guest's page shows the call and nothing else of the visit.
//
// An e-consult no provider has taken is a written question: the page
// offers no call for it (409) until a provider takes it, and may then
// talk by video.
func (a *App) CallRole(ctx context.Context, p *clinic.Principal, id int64) (string, error) {
	v, role, err := a.callVisit(ctx, p, id)
	if err == nil && v.Kind == clinic.KindEconsult && v.ProviderID == 0 {
		return "", clinic.Errorf(clinic.EConflict, "Visit %d is an e-consult no provider has taken yet: it is answered in writing.", v.ID)
	}
	return role, err
}

// TakeVisit is the dashboard's Start visit: the provider takes a walk-in
// or e-consult that waits for one (as POST /visits/accept), or finds the
// visit already theirs; the page then opens it and joins its call.
func (a *App) TakeVisit(ctx context.Context, p *clinic.Principal, id int64) (*VisitDetail, error) {
	if !IsProvider(p) {
		return nil, clinic.Errorf(clinic.EForbidden, "Only a provider starts a visit from the dashboard.")
	}
	d, err := a.GetVisit(ctx, p, id, false)
	if err != nil || d.Visit.ProviderID != 0 {
		return d, err
	}
	return a.MoveVisit(ctx, p, id, ActAccept, MoveInput{})
}

// CloseEconsult closes an e-consult its provider has answered, in one
// step: in progress, then completed (as POST /visits/inprogress and
// /visits/close, with their rules).
func (a *App) CloseEconsult(ctx context.Context, p *clinic.Principal, id int64) (*VisitDetail, error) {
	d, err := a.GetVisit(ctx, p, id, false)
	if err != nil {
		return nil, err
	}
	if d.Visit.Kind != clinic.KindEconsult {
		return nil, clinic.Errorf(clinic.EConflict, "Only an e-consult is closed this way; end a video visit from its call.")
	}
	if d.Visit.Status != clinic.VisitInProgress {
		if _, err := a.MoveVisit(ctx, p, id, ActInProgress, MoveInput{}); err != nil {
			return nil, err
		}
	}
	return a.MoveVisit(ctx, p, id, ActClose, MoveInput{})
}

// CallInviteTTL is how long a guest's invitation link works.
const CallInviteTTL = 2 * time.Hour

// CallInvite is an invitation: its link (which holds its secret, shown
// this once) and when it lapses.
type CallInvite struct {
	URL     string
	Expires int64
}

// InviteCallGuest makes a one-time invitation into visit id's call. Only
// the visit's provider invites; the token is shown once and kept hashed.
func (a *App) InviteCallGuest(ctx context.Context, p *clinic.Principal, id int64) (*CallInvite, error) {
	v, role, err := a.callVisit(ctx, p, id)
	if err == nil && role != CallProvider {
		err = clinic.Errorf(clinic.EForbidden, "Only the visit's provider invites guests to its call.")
	}
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.call.invite", "visit", i64s(id), err)
	}
	token := randomHex(24)
	inv := &CallInvite{Expires: a.Unix() + int64(CallInviteTTL/time.Second)}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.AddCallInvite(ctx, p.Account.ID, v.ID, p.UserID(), HashSecret(token), a.Unix(), inv.Expires); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "visit.call.invite", "visit", i64s(v.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("invite guest: %w", err)
	}
	inv.URL = a.portalBase() + "/invite/" + url.PathEscape(p.Account.Code) + "/" + token
	return inv, nil
}

var errInviteUsed = clinic.Errorf(clinic.ENotFound, "This invitation has been used or has expired. Ask the provider for a new link.")

// CallInviteOpen checks an invitation link of the caller's clinic before
// its page asks the guest's name.
func (a *App) CallInviteOpen(ctx context.Context, p *clinic.Principal, token string) error {
	if err := requireAccount(p); err != nil {
		return err
	}
	open, err := a.store.Read().CallInviteOpen(ctx, p.Account.ID, HashSecret(token), a.Unix())
	if err != nil {
		return fmt.Errorf("call invite: %w", err)
	}
	if !open {
		return errInviteUsed
	}
	return nil
}

// AcceptCallInvite signs a guest in with an invitation: a new guest user,
// a guest of the visit's call, with a login; the invitation is used up in
// the same transaction, so of two people with one link only one gets in.
// It returns the login and the visit.
func (a *App) AcceptCallInvite(ctx context.Context, p *clinic.Principal, token, firstName, lastName string) (*Session, int64, error) {
	if err := requireAccount(p); err != nil {
		return nil, 0, err
	}
	in := SSOInput{FirstName: strings.TrimSpace(firstName), LastName: strings.TrimSpace(lastName), Type: clinic.UserGuest}
	if in.FirstName == "" || in.LastName == "" {
		return nil, 0, clinic.Errorf(clinic.EInvalid, "Give your first and last name, so the others in the call know who joins.")
	}
	var visitID int64
	res, err := a.signInUser(ctx, p, in, "visit.call.guest_join", func(q *store.Q, u *clinic.User) error {
		var by int64
		var err error
		visitID, by, err = q.UseCallInvite(ctx, p.Account.ID, HashSecret(token), a.Unix())
		if errors.Is(err, store.ErrNotFound) {
			return errInviteUsed
		}
		if err != nil {
			return err
		}
		return q.AddCallGuest(ctx, p.Account.ID, visitID, u.ID, by, a.Unix())
	})
	if err != nil {
		return nil, 0, err
	}
	return res.Session, visitID, nil
}

// CallJoin is what a page needs to take part in a visit's call.
type CallJoin struct {
	// Status is the visit's, after the join (a provider's starts it).
	Status int
	Role   string
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

// JoinCall lets a participant into visit id's call: admitted (callAdmit),
// given the call's media (callMedia), then seated (callSeat). The
// provider joining starts the visit (in progress, actual_start now), as
// PUT /visits/in_progress does. A full call answers 409.
func (a *App) JoinCall(ctx context.Context, p *clinic.Principal, id int64) (*CallJoin, error) {
	v, role, err := a.callAdmit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	out := &CallJoin{Status: v.Status, Role: role}
	seats, err := a.callMedia(ctx, p, v, out)
	if err != nil {
		return nil, err
	}
	if err := a.callSeat(ctx, p, v, seats, out); err != nil {
		return nil, err
	}
	return out, nil
}

// callAdmit is the visit p may join and p's role in its call, the visit
// started when its provider joins.
func (a *App) callAdmit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.ThreadVisit, string, error) {
	v, role, err := a.callVisit(ctx, p, id)
	if err != nil {
		return nil, "", a.AuditOutcome(ctx, p, "visit.call.join", "visit", i64s(id), err)
	}
	if err := a.callOpen(ctx, v, role); err != nil {
		return nil, "", err
	}
	// A call, and the TURN relay its join hands out, is for a visit a
	// provider has taken (accepted, booked with them, or in): a waiting
	// walk-in, an anonymous guest's above all, gets neither.
	if role != CallProvider && v.ProviderID == 0 {
		return nil, "", clinic.Errorf(clinic.EConflict, "%s", ErrNoProviderYet)
	}
	if a.cfg.ICE.HasTURN() && !a.cfg.LiveKit.Enabled() {
		// Each join hands out a relay credential: joins are counted per
		// visit and per client address in the throttle's window.
		keys := []throttleKey{{p.Account.ID, "turn:visit:" + i64s(v.ID), maxJoinsPerVisit}}
		if p.ClientAddr != "" {
			keys = append(keys, throttleKey{0, "turn:addr:" + p.ClientAddr, maxJoinsPerAddress})
		}
		if _, err := a.countAttempt(ctx, keys); err != nil {
			return nil, "", err
		}
	}
	if role == CallProvider && v.Status != clinic.VisitInProgress {
		d, err := a.MoveVisit(ctx, p, v.ID, ActInProgress, MoveInput{})
		switch {
		case err == nil:
			v = d.Visit.Thread()
		case clinic.ErrorCode(err) != clinic.EConflict: // another page of theirs started it
			return nil, "", err
		}
	}
	return v, role, nil
}

// callMedia gives out what the page's media need and says how many seats
// the call has. Through LiveKit the SFU carries the media and their
// signalling (a token of the visit's room; LiveKit hands out its own ICE
// servers); the page still takes its seat here, as a peer, and follows
// the call's signals for what the server decides: the recording notice
// and every participant's consent (AddCallRecording). Browser to browser,
// the mesh's seats and the ICE servers with the caller's TURN credential.
func (a *App) callMedia(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, out *CallJoin) (seats int, err error) {
	out.ICEServers = []media.ICEServer{}
	if lk := a.cfg.LiveKit; lk.Enabled() {
		if err := a.openLiveKitRoom(ctx, p.Account, v.ID); err != nil {
			return 0, err
		}
		out.LiveKitURL = lk.URL
		out.LiveKitToken, err = lk.RoomToken(a.LiveKitRoom(p.Account, v.ID), videoIdentity(p.User), p.User.FullName(), media.LiveKitTokenTTL)
		return LiveKitMaxParticipants, err
	}
	if servers := a.cfg.ICE.Servers(videoIdentity(p.User), a.now()); servers != nil {
		out.ICEServers = servers
	}
	out.ICEPolicy = a.cfg.ICE.Policy()
	return MaxCallPeers, nil
}

// callSeat seats p's new peer in v's call, if one of seats is free: under
// the call's lock, so no other join counts the seats meanwhile. One
// person is one peer: a join from another tab or device, or from a page
// that reloads before its leave arrived, takes the place of the caller's
// earlier peer; the others see that peer leave, and the earlier page is
// told it was replaced, and stops.
func (a *App) callSeat(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, seats int, out *CallJoin) error {
	now := a.Unix()
	name := p.User.FullName()
	peer := clinic.CallPeer{AccountID: p.Account.ID, VisitID: v.ID, Peer: randomHex(12), UserID: p.UserID(),
		Name: name, Role: out.Role, Joined: now, Seen: now}
	body, _ := json.Marshal(map[string]string{"name": name, "role": out.Role})
	err := a.store.Tx(ctx, func(q *store.Q) error {
		seq, err := q.LockCall(ctx, p.Account.ID, v.ID)
		if err != nil {
			return err
		}
		in, err := q.CallPeers(ctx, p.Account.ID, v.ID, now-int64(CallPeerTimeout/time.Second))
		if err != nil {
			return err
		}
		for _, c := range in {
			if c.UserID != p.UserID() {
				out.Peers = append(out.Peers, c)
				continue
			}
			if err := a.replacePeer(ctx, q, v, c.Peer, peer.Peer, now); err != nil {
				return err
			}
		}
		if len(out.Peers) >= seats {
			return clinic.Errorf(clinic.EConflict, "The call of visit %d is full (%d people); try again when someone leaves.", v.ID, seats)
		}
		if err := q.PruneCallSignals(ctx, p.Account.ID, v.ID, now-int64(callSignalTTL/time.Second)); err != nil {
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
		q.AfterCommit(func() { a.publishSignal(v, seq) })
		out.After = seq
		return a.AuditIn(ctx, q, p, "visit.call.join", "visit", i64s(v.ID), OutcomeOK)
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
func (a *App) replacePeer(ctx context.Context, q *store.Q, v *clinic.ThreadVisit, old, by string, now int64) error {
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
func (a *App) STUNServers() []string {
	if a.cfg.ICE.STUN == nil {
		return []string{}
	}
	return a.cfg.ICE.STUN
}

// LiveKitURL is the LiveKit server calls go through, "" in peer-to-peer
// mode.
func (a *App) LiveKitURL() string { return a.cfg.LiveKit.URL }

// LiveKitRoom is the name of visit id's LiveKit room: the clinic's code
// and the visit's id, so no two visits of any clinic share one.
func (a *App) LiveKitRoom(acct *clinic.Account, id int64) string {
	return acct.Code + "-visit-" + i64s(id)
}

// videoIdentity names a user to TURN servers and LiveKit: their svcid, or
// their id for a user created before svcids.
func videoIdentity(u *clinic.User) string {
	if u.SvcID != "" {
		return u.SvcID
	}
	return i64s(u.ID)
}

func (a *App) publishSignal(v *clinic.ThreadVisit, seq int64) {
	a.store.Live().Publish(live.Event{Topic: callTopic(v.AccountID, v.ID), Kind: KindSignal, ID: seq})
}

// ownPeer is peer of visit v's call for its own user: another's peer
// is 403, a peer that has left 409.
func (a *App) ownPeer(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, peer string) (*clinic.CallPeer, error) {
	c, err := a.store.Read().CallPeer(ctx, p.Account.ID, v.ID, peer)
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

// SendCallSignal's "record" (the provider's recording notice, to all) and
// "consent" (a participant's answer to it, to the provider's peer, with
// {"agree": true|false}) are the recording's consent: AddCallRecording
// keeps a recording only when everyone in the call agreed.

// CallSignalInput is one signal a page sends.
type CallSignalInput struct {
	Peer string // the sender: the caller's own peer
	To   string // the peer it is for; "" for state, which goes to all
	Kind string
	Body json.RawMessage
}

// SendCallSignal passes a signal from the caller's peer to another peer of
// the call (or, for "state" and "record", to all of them), and returns its
// number.
func (a *App) SendCallSignal(ctx context.Context, p *clinic.Principal, id int64, in CallSignalInput) (int64, error) {
	v, _, err := a.callVisit(ctx, p, id)
	if err != nil {
		return 0, err
	}
	switch {
	case !slices.Contains(callKinds, in.Kind):
		return 0, clinic.Errorf(clinic.EInvalid, "type must be one of offer, answer, candidate, state, record and consent.")
	case len(in.Body) > MaxCallSignal:
		return 0, clinic.Errorf(clinic.EInvalid, "data must be at most %d bytes.", MaxCallSignal)
	case !json.Valid(in.Body):
		return 0, clinic.Errorf(clinic.EInvalid, "data must be JSON.")
	case in.Kind != "state" && in.Kind != "record" && in.To == "":
		return 0, clinic.Errorf(clinic.EInvalid, "to (the peer the signal is for) is required.")
	case in.Kind == "state" || in.Kind == "record":
		in.To = ""
	}
	if _, err := a.ownPeer(ctx, p, v, in.Peer); err != nil {
		return 0, err
	}
	now := a.Unix()
	var seq int64
	err = a.store.Tx(ctx, func(q *store.Q) error {
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
		if queued >= MaxQueuedCallSignals {
			return &clinic.Error{Code: clinic.ETooMany, Message: fmt.Sprintf("This call holds %d signals for that peer already; wait until they are read.", queued), RetryAfter: 5}
		}
		q.AfterCommit(func() { a.publishSignal(v, seq) })
		return q.AddCallSignal(ctx, &clinic.CallSignal{AccountID: p.Account.ID, VisitID: v.ID, Seq: seq, From: in.Peer, To: in.To, Kind: in.Kind, Body: string(in.Body), Created: now})
	})
	if err != nil {
		return 0, StoreErr("call signal", err, "")
	}
	return seq, nil
}

// SweepCallSignals deletes the signals older than callSignalTTL of every
// clinic, at most once a minute (the outbox loop calls it each poll).
func (a *App) SweepCallSignals(ctx context.Context) int {
	now := a.Unix()
	if last := a.lastSignalSweep.Load(); now-last < 60 || !a.lastSignalSweep.CompareAndSwap(last, now) {
		return 0
	}
	if _, err := a.store.Write().SweepCallSignals(ctx, now-int64(callSignalTTL/time.Second)); err != nil && ctx.Err() == nil {
		a.log.Error("call signals: sweep", "err", err)
	}
	return 0 // never a full batch: the loop waits for its next poll
}

// LeaveCall takes the caller's peer out of the call; the others are told.
// Leaving twice is not an error. Who may is who may join, so a visit that
// has closed has no call to leave (its peers went with it).
func (a *App) LeaveCall(ctx context.Context, p *clinic.Principal, id int64, peer string) error {
	v, _, err := a.callVisit(ctx, p, id)
	if err != nil {
		return err
	}
	c, err := a.ownPeer(ctx, p, v, peer)
	if clinic.ErrorCode(err) == clinic.EConflict {
		return nil
	}
	if err != nil {
		return err
	}
	now := a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		seq, err := q.LockCall(ctx, p.Account.ID, v.ID)
		if err != nil {
			return err
		}
		if left, err := q.LeaveCallPeer(ctx, p.Account.ID, v.ID, c.Peer, now); err != nil || !left {
			return err
		}
		if err := q.AddCallSignal(ctx, &clinic.CallSignal{AccountID: p.Account.ID, VisitID: v.ID, Seq: seq, From: c.Peer, Kind: "leave", Body: "{}", Created: now}); err != nil {
			return err
		}
		q.AfterCommit(func() { a.publishSignal(v, seq) })
		return a.AuditIn(ctx, q, p, "visit.call.leave", "visit", i64s(v.ID), OutcomeOK)
	})
	if err != nil {
		return fmt.Errorf("leave call: %w", err)
	}
	return nil
}

// CallEvent is what a watched call has for its peer: signals, or the end
// of the visit (Ended, with the visit as it now is).
type CallEvent struct {
	Signals []clinic.CallSignal
	Ended   *clinic.Visit
}

// CallWatch follows a visit's call for one of its peers.
type CallWatch struct {
	a     *App
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

// WatchCall follows the signals for the caller's peer after number after,
// and the end of the visit.
func (a *App) WatchCall(ctx context.Context, p *clinic.Principal, id int64, peer string, after int64) (*CallWatch, error) {
	v, _, err := a.callVisit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "after must be a signal number (0 or more).")
	}
	// Subscribed before the peer is checked and the first read, so no
	// signal falls in between.
	sub := a.store.Live().Subscribe(callTopic(p.Account.ID, v.ID), live.VisitTopic(p.Account.ID, v.ID))
	if _, err := a.ownPeer(ctx, p, v, peer); err != nil {
		sub.Close()
		return nil, err
	}
	return &CallWatch{a: a, p: p, v: v, peer: peer, after: after, sub: sub}, nil
}

// Poll returns the signals not yet handed out and the end of the visit,
// without waiting: at the start what is there already, then what ch's
// changes brought (ok false when nothing).
func (w *CallWatch) Poll(ctx context.Context, ch live.Changes) (*CallEvent, bool, error) {
	if w.replaced {
		return nil, false, clinic.Errorf(clinic.EConflict, "Peer %s was replaced by a newer page of its person; join again to take the call back.", w.peer)
	}
	kinds := ch.Kinds
	if !w.started { // what is there already
		kinds, w.started = map[string]bool{KindSignal: true, live.KindVisit: true}, true
	}
	if kinds[live.KindVisit] || kinds[live.KindResync] {
		if ended, err := w.ended(ctx); ended != nil || err != nil {
			return &CallEvent{Ended: ended}, ended != nil, err
		}
	}
	if !kinds[KindSignal] && !kinds[live.KindResync] {
		return nil, false, nil
	}
	ss, err := w.a.store.Read().CallSignals(ctx, w.p.Account.ID, w.v.ID, w.peer, w.after, 100)
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
	return &CallEvent{Signals: ss}, true, nil
}

// Ahead says whether Poll has something without a change: what is there
// at the start, and the end of a replaced peer's stream.
func (w *CallWatch) Ahead() bool { return !w.started || w.replaced }

// Sub is what the watch listens to: a parked stream polls on its events.
func (w *CallWatch) Sub() *live.Sub { return w.sub }

// ended is the visit once it has closed, nil while it is open; an error
// when the caller may no longer take part in it.
func (w *CallWatch) ended(ctx context.Context) (*clinic.Visit, error) {
	_, _, err := w.a.callVisit(ctx, w.p, w.v.ID)
	if clinic.ErrorCode(err) != clinic.EConflict {
		return nil, err
	}
	d, err := w.a.GetVisit(ctx, w.p, w.v.ID, false)
	if err != nil {
		return nil, err
	}
	return d.Visit, nil
}

// Alive runs at each keep-alive of the peer's stream: the peer is seen,
// and the caller's right to the call checked again. A visit that closed
// since is returned, as Next returns it (the keep-alive may find it
// first); a peer that has left (from another page, or timed out) gets 409.
func (w *CallWatch) Alive(ctx context.Context) (*clinic.Visit, error) {
	if w.replaced {
		// Next has just handed out the "replaced" (the pump sends it
		// after this tick) and ends the stream at its next call.
		return nil, nil
	}
	if ended, err := w.ended(ctx); ended != nil || err != nil {
		return ended, err
	}
	seen, err := w.a.store.Write().SeeCallPeer(ctx, w.p.Account.ID, w.v.ID, w.peer, w.a.Unix())
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
		ss, err := w.a.store.Read().CallSignals(ctx, w.p.Account.ID, w.v.ID, w.peer, w.after, 1)
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
func (w *CallWatch) After() int64 { return w.after }

// Close ends the watch.
func (w *CallWatch) Close() { w.sub.Close() }

// CallRecordingInput is a recording the provider's page made of the call:
// the page's peer and the number of the "record" signal that asked
// everyone's consent.
type CallRecordingInput struct {
	RecordingInput
	Peer    string
	Request int64
}

// AddCallRecording keeps a recording of visit id's call, made in the
// provider's browser, with the visit's recordings (the same storage and
// links as POST /visits/{id}/recordings). Only the visit's provider
// records, and only with consent: every peer in the call now, other than
// the provider's own pages, must have answered the recording's notice
// (request) with agree. Who was asked and agreed is audited with it.
func (a *App) AddCallRecording(ctx context.Context, p *clinic.Principal, id int64, in CallRecordingInput) (*clinic.Recording, error) {
	v, role, err := a.callVisit(ctx, p, id)
	if err == nil && role != CallProvider {
		err = clinic.Errorf(clinic.EForbidden, "Only the visit's provider records its call.")
	}
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "recording.create", "visit", i64s(id), err)
	}
	r := a.store.Read()
	own, err := r.CallPeer(ctx, p.Account.ID, v.ID, in.Peer)
	if errors.Is(err, store.ErrNotFound) || (err == nil && own.UserID != p.UserID()) {
		return nil, clinic.Errorf(clinic.EForbidden, "peer is not one of yours in this call.")
	}
	if err != nil {
		return nil, fmt.Errorf("call recording: %w", err)
	}
	req, err := r.CallSignalBySeq(ctx, p.Account.ID, v.ID, in.Request)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (req.Kind != "record" || req.From != in.Peer)) {
		return nil, clinic.Errorf(clinic.EInvalid, "request must be the number of the recording's notice this page sent.")
	}
	if err != nil {
		return nil, fmt.Errorf("call recording: %w", err)
	}
	answers, err := r.CallSignalsOfKind(ctx, p.Account.ID, v.ID, "consent", in.Peer, in.Request)
	if err != nil {
		return nil, fmt.Errorf("call recording: %w", err)
	}
	agreed := map[string]bool{}
	for _, s := range answers { // the latest answer of each peer counts
		var body struct {
			Agree bool `json:"agree"`
		}
		_ = json.Unmarshal([]byte(s.Body), &body)
		agreed[s.From] = body.Agree
	}
	peers, err := r.CallPeers(ctx, p.Account.ID, v.ID, a.Unix()-int64(CallPeerTimeout/time.Second))
	if err != nil {
		return nil, fmt.Errorf("call recording: %w", err)
	}
	in.Participants = []clinic.Participant{{FirstName: p.User.FirstName, LastName: p.User.LastName, SvcID: p.User.SvcID}}
	for _, c := range peers {
		if c.UserID == p.UserID() {
			continue
		}
		if !agreed[c.Peer] {
			err := clinic.Errorf(clinic.EConflict, "%s has not agreed to the recording; it was not kept.", c.Name)
			return nil, a.AuditOutcome(ctx, p, "recording.create", "visit", i64s(v.ID), err)
		}
		u, err := r.UserByID(ctx, p.Account.ID, c.UserID)
		if err != nil {
			return nil, fmt.Errorf("call recording: %w", err)
		}
		in.Participants = append(in.Participants, clinic.Participant{FirstName: u.FirstName, LastName: u.LastName, SvcID: u.SvcID})
	}
	return a.saveRecording(ctx, p, v.ID, in.RecordingInput)
}

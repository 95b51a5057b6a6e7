// Package calls is a visit's call. In the default, peer-to-peer mode,
// browsers connect to each other and Teleclinic carries only the
// signalling: a page joins (Join) and becomes a peer, sends its offers,
// answers and ICE candidates to the others (Send), follows what is sent to
// it (Watch) and leaves (Leave). Signals are rows, numbered per visit
// under the call's lock, so a page resumes after a dropped stream without
// missing one and any process can serve any peer: the live bus carries
// only "signal n is there". With LiveKit configured, Join also hands out
// a token of the visit's LiveKit room, and the SFU carries the media
// (livekit.go); the seats and signals here then carry the recording's
// notice and the consents only. The provider invites guests
// (invites.go) and records the call with everyone's consent
// (recordings.go).
//
// It is a family built on app's core (app.Core), as app/billing is: every
// operation checks its caller with app's checks, moves visits and signs
// guests in through the core, and reads and writes through its store.
// Nothing in app calls back into it; the sweep of old signals is app's
// (App.SweepCallSignals, in the loop table).
package calls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Service is the calls family's operations over app's core.
type Service struct {
	core app.Core
	cfg  app.Config
	log  *slog.Logger
}

// New is the calls family over core.
func New(core app.Core) *Service { return &Service{core: core, cfg: core.Config(), log: core.Log()} }

const (
	// MaxPeers is the size of a mesh: each page sends its camera to
	// every other, so a phone uploads its camera once per peer: up to four
	// (docs/design-notes.md, "The video visit").
	MaxPeers = 4
	// PeerTimeout is how long a peer stays in the call without being
	// seen (its stream's keep-alives see it): a page that died without
	// leaving gives its seat back after it.
	PeerTimeout = 75 * time.Second
	// MaxSignal bounds a signal's body: an SDP offer with audio, video
	// and a screen is under 10 KB, a candidate under 1 KB.
	MaxSignal = 16 << 10
	// maxJoinsPerVisit and maxJoinsPerAddress bound the joins, each with
	// a TURN credential, in the throttle's window (15 minutes by
	// default): a visit's participants join a few times each, reloads
	// and dropped networks included; one address serves a family or a
	// clinic's front desk.
	maxJoinsPerVisit   = 40
	maxJoinsPerAddress = 100
	// MaxQueuedSignals bounds what a call stores for one peer (and what
	// one peer sends to all): a call's negotiation is an offer, an answer
	// and some dozens of candidates, and signals live app.CallSignalTTL.
	MaxQueuedSignals = 500
)

// The roles in a call.
const (
	RolePatient  = "patient"
	RoleProvider = "provider"
	RoleGuest    = "guest"
	// RoleInterpreter is a guest who came as one of the clinic's
	// interpreters (InviteInterpreter).
	RoleInterpreter = "interpreter"
)

// signalKinds are the signals a page may send. "leave" and "join" are the
// server's.
var signalKinds = []string{"offer", "answer", "candidate", "state", "record", "consent"}

// ErrNoProviderYet is a patient's or guest's join of a call before a
// provider has taken the visit (exported: the portal translates it).
const ErrNoProviderYet = "No provider has taken this visit yet: its call opens when one does. Keep this page open."

// KindSignal is the live event of a new call signal; its ID is the
// signal's number.
const KindSignal = "signal"

func callTopic(accountID, visitID int64) string {
	return "call:" + i64s(accountID) + ":" + i64s(visitID)
}

// i64s is an id as audit entries and messages write it.
func i64s(n int64) string { return strconv.FormatInt(n, 10) }

// callVisit is visit id for a participant of its call, with their role:
// the patient, the assigned provider and the guests the provider invited,
// while the visit is open. Others who may see the visit get 403 (the
// clinic admin, a provider of the room before one has accepted it);
// anyone else the 404 or 403 of its thread.
func (s *Service) callVisit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.ThreadVisit, string, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, "", err
	}
	v, err := s.core.Read().ThreadVisit(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", app.ErrVisitNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("call visit: %w", err)
	}
	var role string
	switch uid := p.UserID(); {
	case v.MemberID == uid:
		role = RolePatient
	case v.ProviderID != 0 && v.ProviderID == uid:
		role = RoleProvider
	default:
		guest, interpreter, err := s.core.Read().CallGuest(ctx, p.Account.ID, v.ID, uid)
		if err != nil {
			return nil, "", fmt.Errorf("call guest: %w", err)
		}
		if !guest {
			return nil, "", clinic.Errorf(clinic.EForbidden, "Only the visit's patient, its provider and the guests they invite take part in its call; a provider accepts the visit first.")
		}
		role = RoleGuest
		if interpreter != 0 {
			role = RoleInterpreter
		}
	}
	if app.StatusOver(v.Status) {
		return nil, "", clinic.Errorf(clinic.EConflict, "Visit %d is %s; its call has ended.", v.ID, app.StatusName(v.Status))
	}
	return v, role, nil
}

// Role is the caller's part in visit id's call: patient, provider or
// guest. A guest's page shows the call and nothing else of the visit.
//
// An e-consult no provider has taken is a written question: the page
// offers no call for it (409) until a provider takes it, and may then
// talk by video.
func (s *Service) Role(ctx context.Context, p *clinic.Principal, id int64) (string, error) {
	v, role, err := s.callVisit(ctx, p, id)
	if err == nil && v.Kind == clinic.KindEconsult && v.ProviderID == 0 {
		return "", clinic.Errorf(clinic.EConflict, "Visit %d is an e-consult no provider has taken yet: it is answered in writing.", v.ID)
	}
	return role, err
}

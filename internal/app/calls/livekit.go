package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/media"
	"teleclinic/internal/store"
)

// With --livekit-url, a LiveKit server carries the calls: the server makes
// each visit's room through LiveKit's server API when someone joins
// (Join), hands out room tokens, and hears from LiveKit what happened
// in the room (its webhook), which moves the visit as the peer-to-peer
// call's signals do: the visit's provider in the room starts the visit,
// the room closing ends it.

// LiveKitRoomEmpty is how long a visit's LiveKit room waits for its first
// participant before LiveKit closes it (and reports room_finished, which
// ends a visit in progress).
const LiveKitRoomEmpty = 5 * time.Minute

// LiveKitDeparture is how long a visit's room stays after its last
// participant left: long enough for a page reload or a dropped
// connection, short enough that a visit whose people have gone ends.
const LiveKitDeparture = 2 * time.Minute

// LiveKitMaxParticipants bounds a visit's LiveKit room: a group visit
// (the patient, providers, an interpreter, family) fits.
const LiveKitMaxParticipants = 12

// liveKitHTTPTimeout bounds a call of the LiveKit server's API. The
// operator configured its address, so the webhook client's guard against
// private addresses does not apply.
const liveKitHTTPTimeout = 10 * time.Second

// openLiveKitRoom makes visit visitID's room on the LiveKit server, or
// finds it.
func (s *Service) openLiveKitRoom(ctx context.Context, acct *clinic.Account, visitID int64) error {
	hc := &http.Client{Timeout: liveKitHTTPTimeout}
	lk := s.cfg.LiveKit
	departure := lk.Departure
	if departure == 0 {
		departure = LiveKitDeparture
	}
	r := media.Room{Name: s.LiveKitRoom(acct, visitID), EmptyTimeout: LiveKitRoomEmpty, DepartureTimeout: departure, MaxParticipants: LiveKitMaxParticipants}
	if err := lk.CreateRoom(ctx, hc, r); err != nil {
		s.log.Error("livekit: the visit's room", "account_id", acct.ID, "visit_id", visitID, "err", err)
		return clinic.Errorf(clinic.EUnavailable, "The video service is not answering. Try joining again in a moment.")
	}
	return nil
}

// liveKitEvent is the part of LiveKit's webhook event the visits use (the
// protojson form LiveKit sends: camelCase names).
type liveKitEvent struct {
	Event string `json:"event"`
	ID    string `json:"id"`
	Room  struct {
		Name string `json:"name"`
	} `json:"room"`
	Participant struct {
		Identity string `json:"identity"`
	} `json:"participant"`
}

// LiveKitWebhook is POST /api_v3/livekit/webhook: LiveKit reports what
// happened in a room. The request's credential is its signature
// (media.LiveKit.VerifyWebhook): made with the API secret, over the body.
// participant_joined by the visit's provider starts the visit (as their
// join does); room_finished ends a visit in progress. Other events, rooms
// that are not a visit's, and moves a visit has already made are
// acknowledged and change nothing, so LiveKit does not retry them.
func (s *Service) LiveKitWebhook(ctx context.Context, authorization string, body []byte, requestID string) error {
	lk := s.cfg.LiveKit
	if !lk.Enabled() {
		return clinic.Errorf(clinic.ENotFound, "This server does not use LiveKit.")
	}
	if err := lk.VerifyWebhook(authorization, body); err != nil {
		return clinic.Errorf(clinic.EUnauthenticated, "The webhook is not signed with the configured LiveKit API key and secret.")
	}
	var ev liveKitEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return clinic.Errorf(clinic.EInvalid, "The webhook's body is not a LiveKit event.")
	}
	var action string
	switch ev.Event {
	case "participant_joined":
		action = app.ActInProgress
	case "room_finished":
		action = app.ActClose
	default:
		return nil
	}
	code, id, ok := parseLiveKitRoom(ev.Room.Name)
	if !ok {
		return nil
	}
	acct, err := s.core.Read().AccountByCode(ctx, code)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // a room of another server on the same LiveKit
	case err != nil: // LiveKit retries what is not answered 200
		return fmt.Errorf("livekit webhook: %w", err)
	}
	admin, err := s.core.Read().AdminUser(ctx, acct.ID)
	if err != nil {
		return fmt.Errorf("livekit webhook: %w", err)
	}
	// The clinic acts on LiveKit's report: the audit names it as the
	// system, with the request that carried the report.
	p := &clinic.Principal{Account: acct, User: admin, Kind: clinic.CredSystem, RequestID: requestID}
	v, err := s.core.Read().VisitByID(ctx, acct.ID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // deleted since
	case err != nil:
		return fmt.Errorf("livekit webhook: %w", err)
	}
	if action == app.ActInProgress {
		if v.ProviderID == 0 || v.Status == clinic.VisitInProgress {
			return nil
		}
		u, err := s.core.Read().UserByID(ctx, acct.ID, v.ProviderID)
		if err != nil {
			return fmt.Errorf("livekit webhook: %w", err)
		}
		if u.VideoID() != ev.Participant.Identity {
			return nil // the patient or a guest: waiting for the provider
		}
	}
	if _, err := s.core.MoveVisit(ctx, p, id, action, app.MoveInput{}); err != nil && clinic.ErrorCode(err) != clinic.EConflict {
		return err
	}
	return nil
}

// parseLiveKitRoom reads LiveKitRoom's name back: the clinic's code (which
// may hold '-') and the visit id.
func parseLiveKitRoom(name string) (code string, id int64, ok bool) {
	i := strings.LastIndex(name, "-visit-")
	if i <= 0 {
		return "", 0, false
	}
	id, err := strconv.ParseInt(name[i+len("-visit-"):], 10, 64)
	if err != nil || id <= 0 {
		return "", 0, false
	}
	return name[:i], id, true
}

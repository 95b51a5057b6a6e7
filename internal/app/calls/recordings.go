package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// RecordingInput is a recording the provider's page made of the call:
// the page's peer and the number of the "record" signal that asked
// everyone's consent.
type RecordingInput struct {
	app.RecordingInput
	Peer    string
	Request int64
}

// KeepRecording keeps a recording of visit id's call, made in the
// provider's browser, with the visit's recordings (the same storage and
// links as POST /visits/{id}/recordings). Only the visit's provider
// records, and only with consent: every peer in the call now, other than
// the provider's own pages, must have answered the recording's notice
// (request) with agree. Who was asked and agreed is audited with it.
func (s *Service) KeepRecording(ctx context.Context, p *clinic.Principal, id int64, in RecordingInput) (*clinic.Recording, error) {
	v, role, err := s.callVisit(ctx, p, id)
	if err == nil && role != RoleProvider {
		err = clinic.Errorf(clinic.EForbidden, "Only the visit's provider records its call.")
	}
	if err != nil {
		return nil, s.core.AuditOutcome(ctx, p, "recording.create", "visit", i64s(id), err)
	}
	r := s.core.Read()
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
	peers, err := r.CallPeers(ctx, p.Account.ID, v.ID, s.core.Unix()-int64(PeerTimeout/time.Second))
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
			return nil, s.core.AuditOutcome(ctx, p, "recording.create", "visit", i64s(v.ID), err)
		}
		u, err := r.UserByID(ctx, p.Account.ID, c.UserID)
		if err != nil {
			return nil, fmt.Errorf("call recording: %w", err)
		}
		in.Participants = append(in.Participants, clinic.Participant{FirstName: u.FirstName, LastName: u.LastName, SvcID: u.SvcID})
	}
	return s.core.SaveRecording(ctx, p, v.ID, in.RecordingInput)
}

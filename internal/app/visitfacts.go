package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"teleclinic/internal/claimrules"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Visit facts: what a payer asks of a telehealth claim, recorded as the
// visit happens rather than typed afterwards. The call records how the
// patient took part (video, or audio only when their page joined without
// a camera), the provider's state, who took part, when the patient and a
// provider had both joined and when one of them last left (or the visit
// closed); the patient's check-in records where they are (state, at home
// or not). The claims report derives the place of service and modifiers
// from them (claimrules).

// usStates are the two-letter codes a patient's location may take: the
// states, the District of Columbia and the territories.
var usStates = strings.Fields(`AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND
	OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY AS GU MP PR VI`)

// USStates are the codes CheckIn takes, in order.
func USStates() []string { return slices.Clone(usStates) }

// CheckInInput is where the patient is for the visit.
type CheckInInput struct {
	State  string
	AtHome *bool
}

// CheckIn is POST /visits/{id}/location (extension): the visit's patient
// (or, for them on the phone, its provider or the admin) says where the
// patient is for it: the state, and whether at home. It may be said again
// until the visit is over.
func (a *App) CheckIn(ctx context.Context, p *clinic.Principal, id int64, in CheckInInput) (*clinic.VisitFacts, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.checkIn(ctx, p, id, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.location", "visit", i64s(id), err)
	}
	return out, nil
}

func (a *App) checkIn(ctx context.Context, p *clinic.Principal, id int64, in CheckInInput) (*clinic.VisitFacts, error) {
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if v.MemberID != p.UserID() && !p.IsAdmin() && (v.ProviderID == 0 || v.ProviderID != p.UserID()) {
		return nil, clinic.Errorf(clinic.EForbidden, "Only the visit's patient, its provider or the clinic admin says where the patient is.")
	}
	state := strings.ToUpper(strings.TrimSpace(in.State))
	if !slices.Contains(usStates, state) {
		return nil, clinic.Errorf(clinic.EInvalid, "state must be a two-letter US state or territory (NY, CA, DC, PR…).")
	}
	if in.AtHome == nil {
		return nil, clinic.Errorf(clinic.EInvalid, "at_home (1 at home, 0 elsewhere) is required.")
	}
	if VisitOver(v) {
		return nil, clinic.Errorf(clinic.EConflict, "Visit %d is %s; where the patient was is said before it ends.", v.ID, StatusName(v.Status))
	}
	home := "no"
	if *in.AtHome {
		home = "yes"
	}
	var out *clinic.VisitFacts
	err = a.store.Tx(ctx, func(q *store.Q) error {
		f, err := q.VisitFacts(ctx, p.Account.ID, v.ID)
		if err != nil {
			return err
		}
		f.PatientState, f.PatientHome, f.Updated = state, home, a.Unix()
		if err := q.PutVisitFacts(ctx, p.Account.ID, f); err != nil {
			return err
		}
		out = f
		return a.AuditIn(ctx, q, p, "visit.location", "visit", i64s(v.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("check in: %w", err)
	}
	return out, nil
}

// VisitFacts is GET /visits/{id}/facts (extension): whoever sees the
// visit reads its facts and what the rules make of them.
func (a *App) VisitFacts(ctx context.Context, p *clinic.Principal, id int64) (*clinic.VisitFacts, claimrules.Result, error) {
	var none claimrules.Result
	if err := RequireUser(p); err != nil {
		return nil, none, err
	}
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return nil, none, err
	}
	f, err := a.store.Read().VisitFacts(ctx, p.Account.ID, v.ID)
	if err != nil {
		return nil, none, fmt.Errorf("visit facts: %w", err)
	}
	if err := a.Audit(ctx, p, "visit.facts.read", "visit", i64s(v.ID), OutcomeOK); err != nil {
		return nil, none, err
	}
	return f, DeriveClaim(f), nil
}

// DeriveClaim is what the rule set makes of facts f.
func DeriveClaim(f *clinic.VisitFacts) claimrules.Result {
	return claimrules.Derive(claimrules.Facts{Modality: f.Modality, PatientHome: f.PatientHome, PatientState: f.PatientState, ProviderState: f.ProviderState})
}

// callJoined records that p joined visit v's call as role: the
// participant, the provider's state, the patient's modality, and the
// call's start once a patient and a provider have both joined (a
// rejoin after one left resumes it).
func (a *App) callJoined(ctx context.Context, p *clinic.Principal, visitID int64, role, language string, audioOnly bool) error {
	return a.store.Tx(ctx, func(q *store.Q) error {
		f, err := q.VisitFacts(ctx, p.Account.ID, visitID)
		if err != nil {
			return err
		}
		now := a.Unix()
		if slices.ContainsFunc(f.Participants, func(c clinic.CallParticipant) bool { return c.UserID == p.UserID() && c.Role == role }) {
			f.Rejoins++
		} else {
			f.Participants = append(f.Participants, clinic.CallParticipant{UserID: p.UserID(), Role: role, Name: p.User.FullName(), Language: language})
		}
		switch role {
		case "patient":
			f.Modality = clinic.ModalityVideo
			if audioOnly {
				f.Modality = clinic.ModalityAudio
			}
		case "provider":
			f.ProviderState = strings.ToUpper(strings.TrimSpace(p.User.State))
		}
		has := func(r string) bool {
			return slices.ContainsFunc(f.Participants, func(c clinic.CallParticipant) bool { return c.Role == r })
		}
		if has("patient") && has("provider") {
			if f.CallStart == 0 {
				f.CallStart = now
			}
			f.CallEnd = 0
		}
		f.Updated = now
		return q.PutVisitFacts(ctx, p.Account.ID, f)
	})
}

// callLeft records that a patient or provider left visit visitID's call,
// or (closing) that the visit ended: the call's end, unless it never had
// both, or (closing) one of them had left already.
func (a *App) callLeft(ctx context.Context, q *store.Q, accountID, visitID int64, closing bool) error {
	f, err := q.VisitFacts(ctx, accountID, visitID)
	if err != nil || f.CallStart == 0 || (closing && f.CallEnd != 0) {
		return err
	}
	f.CallEnd, f.Updated = a.Unix(), a.Unix()
	return q.PutVisitFacts(ctx, accountID, f)
}

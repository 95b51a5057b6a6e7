package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/claimrules"
	"teleclinic/internal/clinic"
	"teleclinic/internal/reference"
	"teleclinic/internal/store"
)

// ClaimCodes are the diagnoses and procedures a provider attaches to a
// visit for its claim.
type ClaimCodes = clinic.ClaimCodes

// ClaimProcedure is a procedure code with its modifiers.
type ClaimProcedure = clinic.ClaimProcedure

const (
	maxClaimProcedures = clinic.MaxClaimProcedures // and six service lines
	maxModifiers       = 4
)

// SetClaimCodes is POST /visits/{id}/codes (extension): the visit's
// provider (or the admin) sets its diagnosis and procedure codes, each
// checked against the reference lists. The codes are replaced whole.
func (s *Service) SetClaimCodes(ctx context.Context, p *clinic.Principal, visitID int64, in ClaimCodes) (*ClaimCodes, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	out, err := s.setClaimCodes(ctx, p, visitID, in)
	if err != nil {
		return nil, s.core.AuditOutcome(ctx, p, "visit.codes", "visit", i64s(visitID), err)
	}
	return out, nil
}

func (s *Service) setClaimCodes(ctx context.Context, p *clinic.Principal, visitID int64, in ClaimCodes) (*ClaimCodes, error) {
	v, err := s.core.VisitFor(ctx, p, visitID)
	if err != nil {
		return nil, err
	}
	if !p.IsAdmin() && (v.ProviderID == 0 || v.ProviderID != p.UserID()) {
		return nil, clinic.Errorf(clinic.EForbidden, "Only the visit's provider or the clinic admin may code it.")
	}
	ref := s.cfg.Reference
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	if in.Diagnoses == nil && in.Procedures == nil {
		return nil, bad("diagnoses and/or procedures are required.")
	}
	if len(in.Diagnoses) > clinic.MaxClaimDiagnoses || len(in.Procedures) > maxClaimProcedures {
		return nil, bad("A visit holds at most %d diagnoses and %d procedures.", clinic.MaxClaimDiagnoses, maxClaimProcedures)
	}
	out := ClaimCodes{Diagnoses: []string{}, Procedures: []ClaimProcedure{}}
	for i, d := range in.Diagnoses {
		if !ref.IsDiagnosis(d) {
			return nil, bad("diagnoses[%d]: %q is not an ICD-10-CM code of the list (GET /insurances/list/dxs).", i, d)
		}
		out.Diagnoses = append(out.Diagnoses, reference.DotCode(d))
	}
	for i, pr := range in.Procedures {
		if !ref.IsProcedure(pr.Code) {
			return nil, bad("procedures[%d].code: %q is not a procedure code of the list (GET /insurances/list/procedures).", i, pr.Code)
		}
		if len(pr.Modifiers) > maxModifiers {
			return nil, bad("procedures[%d] holds at most %d modifiers.", i, maxModifiers)
		}
		cp := ClaimProcedure{Code: reference.NormCode(pr.Code), Modifiers: []string{}}
		for j, m := range pr.Modifiers {
			if !ref.IsModifier(m) {
				return nil, bad("procedures[%d].modifiers[%d]: %q is not a billing modifier of the list.", i, j, m)
			}
			cp.Modifiers = append(cp.Modifiers, reference.NormCode(m))
		}
		out.Procedures = append(out.Procedures, cp)
	}
	raw, _ := json.Marshal(out)
	err = s.core.Tx(ctx, func(q *store.Q) error {
		if err := q.SetVisitClaimCodes(ctx, p.Account.ID, v.ID, string(raw), s.core.Unix()); err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "visit.codes", "visit", i64s(v.ID), app.OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("claim codes: %w", err)
	}
	return &out, nil
}

// ClaimCodesOf is GET /visits/{id}/codes (extension): whoever sees the
// visit reads its codes.
func (s *Service) ClaimCodesOf(ctx context.Context, p *clinic.Principal, visitID int64) (*ClaimCodes, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	v, err := s.core.VisitFor(ctx, p, visitID)
	if err != nil {
		return nil, err
	}
	raw, err := s.core.Read().VisitClaimCodes(ctx, p.Account.ID, v.ID)
	if err != nil {
		return nil, fmt.Errorf("claim codes: %w", err)
	}
	return parseClaimCodes(raw), nil
}

func parseClaimCodes(raw string) *ClaimCodes {
	c := &ClaimCodes{Diagnoses: []string{}, Procedures: []ClaimProcedure{}}
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), c)
	}
	return c
}

// Claim is one visit of the claims report with what a claim needs.
type Claim struct {
	Visit     *clinic.Visit
	Date      string // the day it took place, UTC
	Patient   *clinic.User
	Provider  *clinic.User // nil while unassigned
	Codes     *ClaimCodes
	Insurance []*app.Card
	// Facts are what the visit recorded of itself (never nil), Derived
	// the place of service and modifiers the rule set makes of them.
	Facts   *clinic.VisitFacts
	Derived claimrules.Result
}

// maxClaimDays bounds one report's range.
const maxClaimDays = 366

// MaxClaims is a page of the claims report unless its limit asks fewer.
const MaxClaims = 5000

// ClaimsQuery is GET /reports/claims: a date range of UTC days, both
// inclusive, and a page of it: Limit visits (MaxClaims unless fewer)
// after the visit After (0: from the first).
type ClaimsQuery struct {
	FromDate, ToDate string
	After            int64
	Limit            int
}

// ClaimsReport is GET /reports/claims: the visits that took place from
// from_date to to_date (inclusive, UTC days) with their claim data. The
// admin sees every visit; a provider their own; patients none.
func (s *Service) ClaimsReport(ctx context.Context, p *clinic.Principal, in ClaimsQuery) (clinic.Page[*Claim], error) {
	if err := app.RequireUser(p); err != nil {
		return clinic.Page[*Claim]{}, err
	}
	out, err := s.claimsReport(ctx, p, in)
	return out, s.core.AuditOutcome(ctx, p, "report.claims", "report", in.FromDate+".."+in.ToDate, err)
}

// claimsPage is how many claims a page asked for limit holds.
func claimsPage(limit int) int { return app.PageSize(limit, MaxClaims, MaxClaims) }

func (s *Service) claimsReport(ctx context.Context, p *clinic.Principal, in ClaimsQuery) (clinic.Page[*Claim], error) {
	var none clinic.Page[*Claim]
	var provider int64
	switch {
	case p.IsAdmin():
	case p.User != nil && p.User.Type == clinic.UserProvider:
		provider = p.User.ID
	default:
		return none, clinic.Errorf(clinic.EForbidden, "Only the clinic admin and providers may read the claims report.")
	}
	from, err1 := time.Parse("2006-01-02", strings.TrimSpace(in.FromDate))
	to, err2 := time.Parse("2006-01-02", strings.TrimSpace(in.ToDate))
	if err1 != nil || err2 != nil {
		return none, clinic.Errorf(clinic.EInvalid, "from_date and to_date are required as YYYY-MM-DD.")
	}
	if to.Before(from) || to.Sub(from) > maxClaimDays*24*time.Hour {
		return none, clinic.Errorf(clinic.EInvalid, "to_date must be on or after from_date, at most %d days later.", maxClaimDays)
	}
	q := s.core.Read()
	cq := store.ClaimQuery{AccountID: p.Account.ID, ProviderID: provider, From: from.Unix(), To: to.AddDate(0, 0, 1).Unix(), Limit: claimsPage(in.Limit) + 1}
	if in.After != 0 {
		// Any visit of the clinic is a place in the order; the page
		// holds only what the caller sees.
		pl, err := q.ClaimPlaceOf(ctx, p.Account.ID, in.After)
		if errors.Is(err, store.ErrNotFound) || in.After < 0 {
			return none, clinic.Errorf(clinic.EInvalid, "after is the id of one of the clinic's visits.")
		}
		if err != nil {
			return none, fmt.Errorf("claims: %w", err)
		}
		cq.After = pl
	}
	read, err := q.ClaimVisits(ctx, cq)
	if err != nil {
		return none, fmt.Errorf("claims: %w", err)
	}
	pg := clinic.PageOf(read, cq.Limit-1, func(cv store.ClaimVisit) int64 { return cv.ID })
	visits := pg.Items
	// The patients, providers and cards of the page in one read each,
	// however many visits it holds.
	var ids, patients []int64
	for _, cv := range visits {
		ids, patients = append(ids, cv.MemberID, cv.ProviderID), append(patients, cv.MemberID)
	}
	users, err := q.UsersByIDs(ctx, p.Account.ID, ids)
	if err != nil {
		return none, fmt.Errorf("claims: %w", err)
	}
	cards, err := q.InsuranceCardsOf(ctx, p.Account.ID, patients)
	if err != nil {
		return none, fmt.Errorf("claims: %w", err)
	}
	vids := make([]int64, len(visits))
	for i, cv := range visits {
		vids[i] = cv.ID
	}
	facts, err := q.VisitFactsOf(ctx, p.Account.ID, vids)
	if err != nil {
		return none, fmt.Errorf("claims: %w", err)
	}
	out := make([]*Claim, 0, len(visits))
	for _, cv := range visits {
		v := cv.Visit
		c := &Claim{Visit: v, Codes: parseClaimCodes(cv.Codes), Date: time.Unix(claimTime(v), 0).UTC().Format("2006-01-02"),
			Patient: users[v.MemberID], Provider: users[v.ProviderID], Insurance: []*app.Card{}}
		for _, r := range cards[v.MemberID] {
			c.Insurance = append(c.Insurance, app.ToCard(r))
		}
		c.Facts = facts[v.ID]
		if c.Facts == nil {
			c.Facts = &clinic.VisitFacts{VisitID: v.ID, Participants: []clinic.CallParticipant{}}
		}
		c.Derived = app.DeriveClaim(c.Facts)
		out = append(out, c)
	}
	return clinic.Page[*Claim]{Items: out, Next: pg.Next}, nil
}

func claimTime(v *clinic.Visit) int64 {
	switch {
	case v.ActualStart > 0:
		return v.ActualStart
	case v.Start > 0:
		return v.Start
	}
	return v.Created
}

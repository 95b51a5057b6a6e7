package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/eligibility"
	"teleclinic/internal/store"
)

// InsuranceVersion is the format version insurance responses carry (spec).
const InsuranceVersion = "2.0"

// TopicEligibility is the outbox topic of eligibility checks.
const TopicEligibility = "eligibility"

// Card field kinds (spec: Insurance card).
var cardStrings = []string{"insurer_code", "subscriber_number", "group_number", "responsible_party",
	"guarantor_first_name", "guarantor_middle_name", "guarantor_last_name", "guarantor_dob",
	"guarantor_address", "guarantor_address_2", "guarantor_city", "guarantor_zip", "guarantor_state"}

// CardFieldNames are the card fields a request may carry, with the
// subscriber_num alias.
func CardFieldNames() []string {
	return append(append([]string{}, cardStrings...), "guarantor_gender", "consent", "subscriber_num")
}

func isCardType(t string) bool { return t == "primary" || t == "secondary" }

var errNoCard = func(t string) error { return clinic.Errorf(clinic.ENotFound, "There is no %s insurance card.", t) }

// cardFields checks a card's fields as sent and returns them typed. Only
// the fields present are returned, so an update can merge them.
func cardFields(in map[string]any) (map[string]any, error) {
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	out := map[string]any{}
	if v, ok := in["subscriber_num"]; ok {
		if _, both := in["subscriber_number"]; !both {
			in["subscriber_number"] = v
		}
	}
	for _, name := range cardStrings {
		v, ok := in[name]
		if !ok {
			continue
		}
		s, ok := textValue(v)
		if !ok {
			return nil, bad("%s must be text.", name)
		}
		if len(s) > 200 {
			return nil, bad("%s is longer than 200 characters.", name)
		}
		if name == "guarantor_dob" && s != "" {
			if _, err := time.Parse("2006-01-02", s); err != nil {
				return nil, bad("guarantor_dob must be YYYY-MM-DD.")
			}
		}
		out[name] = s
	}
	if v, ok := in["guarantor_gender"]; ok {
		switch strings.ToLower(fmt.Sprint(normNumber(v))) {
		case "", "0", "<nil>":
			out["guarantor_gender"] = 0
		case "1", "male":
			out["guarantor_gender"] = 1
		case "2", "female":
			out["guarantor_gender"] = 2
		default:
			return nil, bad("guarantor_gender must be 0, 1 (male) or 2 (female).")
		}
	}
	if v, ok := in["consent"]; ok {
		switch strings.ToLower(fmt.Sprint(normNumber(v))) {
		case "1", "true":
			out["consent"] = true
		case "0", "false", "":
			out["consent"] = false
		default:
			return nil, bad("consent must be a boolean.")
		}
	}
	return out, nil
}

// Card is an insurance card as the API shows it: every field, defaults
// for the unset.
type Card struct {
	CardType string
	Fields   map[string]any
	Modified int64
}

// ToCard is an insurance card as the API shows it.
func ToCard(c *clinic.InsuranceCard) *Card {
	f := map[string]any{"guarantor_gender": 0, "consent": false}
	for _, n := range cardStrings {
		f[n] = ""
	}
	for k, v := range c.Fields {
		f[k] = v
	}
	return &Card{CardType: c.CardType, Fields: f, Modified: c.Modified}
}

// InsuranceCards is GET /users/{user_id}/insurances.
func (a *App) InsuranceCards(ctx context.Context, p *clinic.Principal, userID int64) ([]*Card, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.insuranceCards(ctx, p, userID)
	return out, a.AuditOutcome(ctx, p, "insurance.read", "user", i64s(userID), err)
}

func (a *App) insuranceCards(ctx context.Context, p *clinic.Principal, userID int64) ([]*Card, error) {
	u, err := a.recordOwner(ctx, p, userID, patientRecords, false)
	if err != nil {
		return nil, err
	}
	cards, err := a.store.Read().InsuranceCards(ctx, p.Account.ID, u.ID)
	if err != nil {
		return nil, fmt.Errorf("insurance: %w", err)
	}
	out := make([]*Card, len(cards))
	for i, c := range cards {
		out[i] = ToCard(c)
	}
	return out, nil
}

// InsuranceCard is GET /users/{user_id}/insurances/{card_type}.
func (a *App) InsuranceCard(ctx context.Context, p *clinic.Principal, userID int64, cardType string) (*Card, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.insuranceCard(ctx, p, userID, cardType)
	return out, a.AuditOutcome(ctx, p, "insurance.read", "user", i64s(userID), err)
}

func (a *App) insuranceCard(ctx context.Context, p *clinic.Principal, userID int64, cardType string) (*Card, error) {
	if !isCardType(cardType) {
		return nil, clinic.Errorf(clinic.ENotFound, "card_type must be primary or secondary.")
	}
	u, err := a.recordOwner(ctx, p, userID, patientRecords, false)
	if err != nil {
		return nil, err
	}
	c, err := a.store.Read().InsuranceCard(ctx, p.Account.ID, u.ID, cardType)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoCard(cardType)
	}
	if err != nil {
		return nil, fmt.Errorf("insurance: %w", err)
	}
	return ToCard(c), nil
}

// SaveInsuranceCard is POST /users/{user_id}/insurances/{card_type}: the
// fields sent change the card (all optional); a missing card is created.
func (a *App) SaveInsuranceCard(ctx context.Context, p *clinic.Principal, userID int64, cardType string, in map[string]any) (*Card, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.saveInsuranceCard(ctx, p, userID, cardType, in)
	return out, a.AuditOutcome(ctx, p, "insurance.write", "user", i64s(userID), err)
}

func (a *App) saveInsuranceCard(ctx context.Context, p *clinic.Principal, userID int64, cardType string, in map[string]any) (*Card, error) {
	if !isCardType(cardType) {
		return nil, clinic.Errorf(clinic.ENotFound, "card_type must be primary or secondary.")
	}
	u, err := a.recordOwner(ctx, p, userID, patientRecords, true)
	if err != nil {
		return nil, err
	}
	fields, err := cardFields(in)
	if err != nil {
		return nil, err
	}
	var saved *clinic.InsuranceCard
	err = a.store.Tx(ctx, func(q *store.Q) error {
		c, err := q.InsuranceCard(ctx, p.Account.ID, u.ID, cardType)
		if errors.Is(err, store.ErrNotFound) {
			c, err = &clinic.InsuranceCard{UserID: u.ID, CardType: cardType, Fields: map[string]any{}}, nil
		}
		if err != nil {
			return err
		}
		for k, v := range fields {
			c.Fields[k] = v
		}
		c.Modified = a.Unix()
		saved = c
		return q.PutInsuranceCard(ctx, p.Account.ID, c)
	})
	if err != nil {
		return nil, fmt.Errorf("insurance: %w", err)
	}
	return ToCard(saved), nil
}

// ImportInsuranceCards is POST /users/{user_id}/insurances/import: up to
// two cards, one per type; each replaces the user's card of its type.
func (a *App) ImportInsuranceCards(ctx context.Context, p *clinic.Principal, userID int64, cards []map[string]any) ([]*Card, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.importInsuranceCards(ctx, p, userID, cards)
	return out, a.AuditOutcome(ctx, p, "insurance.import", "user", i64s(userID), err)
}

func (a *App) importInsuranceCards(ctx context.Context, p *clinic.Principal, userID int64, cards []map[string]any) ([]*Card, error) {
	u, err := a.recordOwner(ctx, p, userID, patientRecords, true)
	if err != nil {
		return nil, err
	}
	if len(cards) == 0 || len(cards) > 2 {
		return nil, clinic.Errorf(clinic.EInvalid, "insurances must hold one or two cards (one primary, one secondary).")
	}
	seen := map[string]bool{}
	rows := make([]*clinic.InsuranceCard, 0, len(cards))
	for i, in := range cards {
		t, _ := in["card_type"].(string)
		if !isCardType(t) {
			return nil, clinic.Errorf(clinic.EInvalid, "insurances[%d].card_type must be primary or secondary.", i)
		}
		if seen[t] {
			return nil, clinic.Errorf(clinic.EInvalid, "insurances holds two %s cards; a user has one of each type.", t)
		}
		seen[t] = true
		delete(in, "card_type")
		fields, err := cardFields(in)
		if err != nil {
			return nil, clinic.Errorf(clinic.EInvalid, "insurances[%d]: %s", i, clinic.ErrorMessage(err))
		}
		rows = append(rows, &clinic.InsuranceCard{UserID: u.ID, CardType: t, Fields: fields, Modified: a.Unix()})
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		for _, c := range rows {
			if err := q.PutInsuranceCard(ctx, p.Account.ID, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insurance: %w", err)
	}
	return a.insuranceCards(ctx, p, u.ID)
}

// DeleteInsuranceCard is DELETE /users/{user_id}/insurances/{card_type}.
func (a *App) DeleteInsuranceCard(ctx context.Context, p *clinic.Principal, userID int64, cardType string) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	err := a.deleteInsuranceCard(ctx, p, userID, cardType)
	return a.AuditOutcome(ctx, p, "insurance.delete", "user", i64s(userID), err)
}

func (a *App) deleteInsuranceCard(ctx context.Context, p *clinic.Principal, userID int64, cardType string) error {
	if !isCardType(cardType) {
		return clinic.Errorf(clinic.ENotFound, "card_type must be primary or secondary.")
	}
	u, err := a.recordOwner(ctx, p, userID, patientRecords, true)
	if err != nil {
		return err
	}
	err = a.store.Write().DeleteInsuranceCard(ctx, p.Account.ID, u.ID, cardType)
	if errors.Is(err, store.ErrNotFound) {
		return errNoCard(cardType)
	}
	return err
}

// EligibilityJob is a check as the API shows it.
type EligibilityJob = clinic.EligibilityJob

// CheckEligibility is POST …/insurances/primary/eligibility/check: it
// starts a job and answers at once with it pending; the outbox runs it. A
// second check of the card within the window after one started answers 429,
// whether or not that one has finished: the gate is a conditional UPDATE on
// the card, so it holds across concurrent requests and processes.
func (a *App) CheckEligibility(ctx context.Context, p *clinic.Principal, userID int64) (*EligibilityJob, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	job, err := a.checkEligibility(ctx, p, userID)
	return job, a.AuditOutcome(ctx, p, "eligibility.check", "user", i64s(userID), err)
}

func (a *App) checkEligibility(ctx context.Context, p *clinic.Principal, userID int64) (*EligibilityJob, error) {
	u, err := a.recordOwner(ctx, p, userID, patientRecords, true)
	if err != nil {
		return nil, err
	}
	window := int64(a.cfg.EligibilityWindow / time.Second)
	now := a.Unix()
	job := &clinic.EligibilityJob{UserID: u.ID, CardType: "primary", Status: eligibility.StatusPending, Started: now}
	var started int64
	err = a.store.Tx(ctx, func(q *store.Q) error {
		ok, err := q.StartEligibilityCheck(ctx, p.Account.ID, u.ID, "primary", now, now-window)
		if err != nil {
			return err
		}
		if !ok {
			c, err := q.InsuranceCard(ctx, p.Account.ID, u.ID, "primary")
			if errors.Is(err, store.ErrNotFound) {
				return errNoCard("primary")
			}
			if err != nil {
				return err
			}
			started = c.CheckStarted
			return nil
		}
		if err := q.CreateEligibilityJob(ctx, p.Account.ID, job); err != nil {
			return err
		}
		payload, _ := json.Marshal(eligibilityItem{JobID: job.ID})
		return q.Enqueue(ctx, &store.OutboxItem{AccountID: p.Account.ID, Topic: TopicEligibility, Payload: string(payload), Created: now, Due: now})
	})
	if err != nil {
		return nil, err
	}
	if started != 0 {
		wait := max(started+window-now, 1)
		e := clinic.Errorf(clinic.ETooMany, "An eligibility check of this card started at %s (%d seconds ago); another may start in %d seconds.",
			time.Unix(started, 0).UTC().Format(time.RFC3339), now-started, wait)
		e.RetryAfter = wait
		return nil, e
	}
	kick(a.eligibilityKick)
	return job, nil
}

type eligibilityItem struct {
	JobID int64 `json:"job_id"`
}

// Eligibility is GET …/insurances/primary/eligibility: the card's latest
// check.
func (a *App) Eligibility(ctx context.Context, p *clinic.Principal, userID int64) (*EligibilityJob, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	job, err := a.eligibilityJob(ctx, p, userID)
	return job, a.AuditOutcome(ctx, p, "eligibility.read", "user", i64s(userID), err)
}

func (a *App) eligibilityJob(ctx context.Context, p *clinic.Principal, userID int64) (*EligibilityJob, error) {
	u, err := a.recordOwner(ctx, p, userID, patientRecords, false)
	if err != nil {
		return nil, err
	}
	job, err := a.store.Read().LatestEligibilityJob(ctx, p.Account.ID, u.ID, "primary")
	if errors.Is(err, store.ErrNotFound) {
		return nil, clinic.Errorf(clinic.ENotFound, "No eligibility check of the primary card yet; start one with POST …/eligibility/check.")
	}
	return job, err
}

const (
	eligibilityLease       = 60
	eligibilityMaxAttempts = 3
)

// DeliverEligibility runs the pending checks: it builds each inquiry as an
// X12 270 and hands it to the configured checker, outside any transaction.
// A checker that fails is retried; after the last attempt the job ends in
// error. It returns how many items it claimed.
func (a *App) DeliverEligibility(ctx context.Context) int {
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicEligibility}, a.Unix(), eligibilityLease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("eligibility: claim", "err", err)
		}
		return 0
	}
	for _, it := range items {
		err := a.runEligibility(ctx, it)
		if err != nil && it.Attempts >= eligibilityMaxAttempts {
			var ji eligibilityItem
			_ = json.Unmarshal([]byte(it.Payload), &ji)
			_ = a.store.Write().FinishEligibilityJob(ctx, it.AccountID, ji.JobID, eligibility.StatusError,
				map[string]any{"checker": a.cfg.Eligibility.Name(), "message": "The eligibility service did not answer; try again later."}, a.Unix())
		}
		a.settle(ctx, "eligibility", it, 0, err, eligibilityMaxAttempts, 30)
	}
	return len(items)
}

func (a *App) runEligibility(ctx context.Context, it store.OutboxItem) error {
	var ji eligibilityItem
	if err := json.Unmarshal([]byte(it.Payload), &ji); err != nil {
		return errSkip("unreadable payload")
	}
	q := a.store.Read()
	job, err := q.EligibilityJobByID(ctx, it.AccountID, ji.JobID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && job.Finished != 0) {
		return errSkip("job gone or finished")
	}
	if err != nil {
		return err
	}
	acct, err := q.AccountByID(ctx, it.AccountID)
	if err != nil {
		return err
	}
	u, err := q.UserByID(ctx, it.AccountID, job.UserID)
	if err != nil {
		return err
	}
	card, err := q.InsuranceCard(ctx, it.AccountID, job.UserID, job.CardType)
	if errors.Is(err, store.ErrNotFound) {
		_ = a.store.Write().FinishEligibilityJob(ctx, it.AccountID, job.ID, eligibility.StatusError, map[string]any{"message": "The card was deleted before the check ran."}, a.Unix())
		return errSkip("card deleted")
	}
	if err != nil {
		return err
	}
	inquiry := eligibility.Build270(a.eligibilityRequest(acct, u, card, job))
	checkCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	res, err := a.cfg.Eligibility.Check(checkCtx, inquiry)
	cancel()
	if err != nil {
		return err
	}
	details := res.Details
	if details == nil {
		details = map[string]any{}
	}
	return a.store.Write().FinishEligibilityJob(ctx, it.AccountID, job.ID, res.Status, details, a.Unix())
}

// eligibilityRequest is the inquiry about a card: the subscriber is the
// card's guarantor where the card names one, else the patient.
func (a *App) eligibilityRequest(acct *clinic.Account, u *clinic.User, card *clinic.InsuranceCard, job *clinic.EligibilityJob) eligibility.Request {
	f := ToCard(card).Fields
	str := func(k string) string { s, _ := f[k].(string); return s }
	sub := eligibility.Subscriber{MemberID: str("subscriber_number"), Group: str("group_number"),
		FirstName: str("guarantor_first_name"), MiddleName: str("guarantor_middle_name"), LastName: str("guarantor_last_name"), DOB: str("guarantor_dob")}
	sub.Gender = anyInt(f["guarantor_gender"])
	if sub.FirstName == "" && sub.LastName == "" {
		sub.FirstName, sub.LastName, sub.DOB, sub.Gender = u.FirstName, u.LastName, u.DOB, u.Gender
	}
	payer := eligibility.Party{ID: str("insurer_code"), Name: str("insurer_code")}
	for _, py := range a.cfg.Reference.Payers {
		if strings.EqualFold(py.Code, payer.ID) || py.PayerID == payer.ID {
			payer = eligibility.Party{Name: py.Name, ID: py.PayerID}
		}
	}
	at := time.Unix(job.Started, 0)
	return eligibility.Request{ControlNumber: job.ID, Created: at, ServiceDate: at, Payer: payer,
		Provider: eligibility.Party{Name: acct.Name, ID: acct.Code}, Subscriber: sub}
}

// anyInt reads a small integer that may have been through JSON.
func anyInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	}
	return 0
}

// textValue reads a text field as sent: a string, a JSON number as written,
// or null as empty; anything else is not text.
func textValue(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := normNumber(v).(string)
	return strings.TrimSpace(s), ok
}

package app

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// A room's intake questions and consent (extension). The clinic defines
// its own questions (text, a choice, yes or no, a date; each required or
// not) and a consent text with a version; an intake in the room answers
// the required questions and, when the room has a consent, is signed with
// the patient's typed name and the version they were shown. The answers
// are the intake's custom fields (q_<id>); the signature is a record of
// its own, shown on the patient's chart.

// Limits of a room's intake form.
const (
	MaxIntakeQuestions = 20
	MaxAnswerChars     = 2000
	MaxConsentChars    = 20000
)

var questionIDRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// checkQuestions validates a room's questions.
func checkQuestions(qs []clinic.IntakeQuestion) error {
	if len(qs) > MaxIntakeQuestions {
		return clinic.Errorf(clinic.EInvalid, "intake_questions holds at most %d questions.", MaxIntakeQuestions)
	}
	seen := map[string]bool{}
	for i, q := range qs {
		switch {
		case !questionIDRE.MatchString(q.ID):
			return clinic.Errorf(clinic.EInvalid, "intake_questions[%d].id must be 1 to 32 of a-z, 0-9 and _.", i)
		case seen[q.ID]:
			return clinic.Errorf(clinic.EInvalid, "intake_questions[%d].id %q is used twice.", i, q.ID)
		case strings.TrimSpace(q.Label) == "" || len([]rune(q.Label)) > 200:
			return clinic.Errorf(clinic.EInvalid, "intake_questions[%d].label must be 1 to 200 characters.", i)
		case !slices.Contains([]string{clinic.QuestionText, clinic.QuestionChoice, clinic.QuestionYesNo, clinic.QuestionDate}, q.Kind):
			return clinic.Errorf(clinic.EInvalid, "intake_questions[%d].kind must be text, choice, yesno or date.", i)
		case q.Kind == clinic.QuestionChoice && (len(q.Choices) < 2 || len(q.Choices) > 20):
			return clinic.Errorf(clinic.EInvalid, "intake_questions[%d] is a choice: give it 2 to 20 choices.", i)
		}
		seen[q.ID] = true
	}
	return nil
}

// checkConsent validates a room's consent text.
func checkConsent(c *clinic.ConsentText) error {
	c.Version, c.Text = strings.TrimSpace(c.Version), strings.TrimSpace(c.Text)
	if c.Version == "" || len(c.Version) > 32 {
		return clinic.Errorf(clinic.EInvalid, "consent.version must be 1 to 32 characters (say which text a patient signed).")
	}
	return CheckFields(text("consent.text", c.Text, MaxConsentChars))
}

// answerQuestions checks answers against room r's questions and keeps
// them in the intake's custom fields.
func answerQuestions(r *clinic.Room, it *clinic.Intake, answers map[string]string) error {
	qs := r.Settings.IntakeQuestions
	for id := range answers {
		if !slices.ContainsFunc(qs, func(q clinic.IntakeQuestion) bool { return q.ID == id }) {
			return clinic.Errorf(clinic.EInvalid, "answers names %q, which is not a question of room '%s'.", id, r.Code)
		}
	}
	for _, q := range qs {
		v := strings.TrimSpace(answers[q.ID])
		if v == "" {
			if q.Required {
				return clinic.Errorf(clinic.EInvalid, "Answer the question %q.", q.Label)
			}
			continue
		}
		switch q.Kind {
		case clinic.QuestionChoice:
			if !slices.Contains(q.Choices, v) {
				return clinic.Errorf(clinic.EInvalid, "The answer to %q must be one of: %s.", q.Label, strings.Join(q.Choices, ", "))
			}
		case clinic.QuestionYesNo:
			if v != "yes" && v != "no" {
				return clinic.Errorf(clinic.EInvalid, "The answer to %q must be yes or no.", q.Label)
			}
		case clinic.QuestionDate:
			if _, err := time.Parse("2006-01-02", v); err != nil {
				return clinic.Errorf(clinic.EInvalid, "The answer to %q must be a date (YYYY-MM-DD).", q.Label)
			}
		default:
			if len([]rune(v)) > MaxAnswerChars {
				return clinic.Errorf(clinic.EInvalid, "The answer to %q must be at most %d characters.", q.Label, MaxAnswerChars)
			}
		}
		it.Custom[clinic.AnswerKey(q.ID)] = v
	}
	return nil
}

// consentFor is the signature an intake in room r needs, nil when the
// room has no consent; in names the signer, the version shown and the
// language it was shown in: the text signed is the room's in it.
func (a *App) consentFor(r *clinic.Room, member *clinic.User, in IntakeInput) (*clinic.Consent, error) {
	c := r.WordsIn(in.Language).Consent
	if c == nil {
		return nil, nil
	}
	name := ""
	if in.ConsentName != nil {
		name = strings.TrimSpace(*in.ConsentName)
	}
	if name == "" || len([]rune(name)) > 200 {
		return nil, clinic.Errorf(clinic.EInvalid, "Sign the consent: type your full name (consent_name).")
	}
	if in.ConsentVersion != c.Version {
		return nil, clinic.Errorf(clinic.EConflict, "The consent text is now version %s: read it and sign again (consent_version).", c.Version)
	}
	return &clinic.Consent{AccountID: r.AccountID, UserID: member.ID, RoomID: r.ID, Version: c.Version, Text: c.Text, SignedName: name, SignedAt: a.Unix()}, nil
}

// addConsent stores the intake's signature in its transaction.
func (a *App) addConsent(ctx context.Context, q *store.Q, p *clinic.Principal, c *clinic.Consent, intakeID int64) error {
	if c == nil {
		return nil
	}
	c.IntakeID = intakeID
	if err := q.AddConsent(ctx, c); err != nil {
		return err
	}
	return a.AuditIn(ctx, q, p, "consent.sign", "user", i64s(c.UserID), OutcomeOK)
}

// Consents are a patient's signed consents, newest first, for whoever may
// read their records (the patient, the admin, a provider with a visit
// with them).
func (a *App) Consents(ctx context.Context, p *clinic.Principal, userID int64) ([]*clinic.Consent, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	u, err := a.recordOwner(ctx, p, userID, readRecords, false)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "consent.read", "user", i64s(userID), err)
	}
	cs, err := a.store.Read().Consents(ctx, p.Account.ID, u.ID, 50)
	if err != nil {
		return nil, fmt.Errorf("consents: %w", err)
	}
	return cs, a.Audit(ctx, p, "consent.read", "user", i64s(u.ID), OutcomeOK)
}

package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// IntakeInput is POST /intakes and POST /intakes/{id}. Nil fields are absent.
type IntakeInput struct {
	RoomCode       string
	ProviderID     *int64 // 0: none
	ReasonForVisit *string
	Type           *string
	MemberRef      string // the patient's user id or code, when someone else files for them
	Location       *string
	Phone          *string
	Custom         map[string]string
	Attachments    *[]int64 // file ids
	Consultation   *string  // a room consultation id
	// Answers are the room's questions' answers, by question id.
	Answers map[string]string
	// PreferredLanguage is the language the patient prefers for the visit
	// (a BCP 47 tag; "" clears it): an interpreter's, when it is not the
	// provider's.
	PreferredLanguage *string
	// Language is the language the form was shown in (a tag the clinic
	// writes in; "" its first): the consent signed is its text in it.
	Language string
	// ConsentName signs the room's consent, of ConsentVersion.
	ConsentName    *string
	ConsentVersion string
}

const maxCustomFields = 100

// IsPatient reports whether the caller acts as a patient.
func IsPatient(p *clinic.Principal) bool {
	return p.User != nil && (p.User.Type == clinic.UserMember || p.User.Type == clinic.UserGuest) && !p.IsAdmin()
}

// IsProvider reports whether the caller acts as a provider.
func IsProvider(p *clinic.Principal) bool {
	return p.User != nil && p.User.Type == clinic.UserProvider && !p.IsAdmin()
}

// CreateIntake is POST /intakes. A patient files for themself; a provider or
// the admin files for the patient named by member_id (an id or a code).
func (a *App) CreateIntake(ctx context.Context, p *clinic.Principal, in IntakeInput) (*clinic.Intake, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	it, _, consent, err := a.newIntake(ctx, p, in)
	if err != nil {
		return nil, err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error { return a.insertIntake(ctx, q, p, it, consent) })
	return it, StoreErr("create intake", err, "")
}

// newIntake checks an intake and builds it, with its room and the consent
// it signs; insertIntake writes them.
func (a *App) newIntake(ctx context.Context, p *clinic.Principal, in IntakeInput) (*clinic.Intake, *clinic.Room, *clinic.Consent, error) {
	if in.RoomCode == "" {
		return nil, nil, nil, clinic.Errorf(clinic.EInvalid, "room_code is required.")
	}
	r, err := a.RoomByCode(ctx, p, in.RoomCode)
	if err != nil {
		return nil, nil, nil, err
	}
	if !r.Active {
		return nil, nil, nil, clinic.Errorf(clinic.EInvalid, "Room '%s' is not active.", r.Code)
	}
	member, err := a.intakeMember(ctx, p, in.MemberRef)
	if err != nil {
		return nil, nil, nil, err
	}
	now := a.Unix()
	it := &clinic.Intake{AccountID: p.Account.ID, RoomID: r.ID, MemberID: member.ID, CreatorUserID: p.UserID(), Type: clinic.IntakeWalkin,
		Custom: map[string]string{}, Created: now, Modified: now}
	if in.Type != nil && *in.Type != "" {
		switch *in.Type {
		case "1":
			it.Type = clinic.IntakeWalkin
		case "2":
			it.Type = clinic.IntakeSchedule
		default:
			return nil, nil, nil, clinic.Errorf(clinic.EInvalid, "type must be 1 (walk-in) or 2 (schedule).")
		}
	}
	if err := a.applyIntake(ctx, p, it, in); err != nil {
		return nil, nil, nil, err
	}
	if err := answerQuestions(r, it, in.Answers); err != nil {
		return nil, nil, nil, err
	}
	if in.Language != "" && !slices.Contains(a.LanguageTags(), in.Language) {
		return nil, nil, nil, clinic.Errorf(clinic.EInvalid, "consent_language must be one the clinic writes in: %s.", strings.Join(a.LanguageTags(), ", "))
	}
	consent, err := a.consentFor(r, member, in)
	if err != nil {
		return nil, nil, nil, err
	}
	return it, r, consent, nil
}

// insertIntake writes a new intake and its consent in q, announced and
// audited.
func (a *App) insertIntake(ctx context.Context, q *store.Q, p *clinic.Principal, it *clinic.Intake, consent *clinic.Consent) error {
	if err := q.CreateIntake(ctx, it); err != nil {
		return err
	}
	if err := a.addConsent(ctx, q, p, consent, it.ID); err != nil {
		return err
	}
	if err := a.Emit(ctx, q, p.Account.ID, EventIntakeSubmitted, IntakeHook{IntakeID: i64s(it.ID), PatientID: i64s(it.MemberID), RoomID: i64s(it.RoomID)}); err != nil {
		return err
	}
	return a.AuditIn(ctx, q, p, "intake.create", "intake", i64s(it.ID), OutcomeOK)
}

func (a *App) intakeMember(ctx context.Context, p *clinic.Principal, ref string) (*clinic.User, error) {
	if IsPatient(p) {
		if ref != "" && ref != i64s(p.User.ID) && ref != p.User.Code {
			return nil, clinic.Errorf(clinic.EForbidden, "A patient files intakes only for themself.")
		}
		return p.User, nil
	}
	if ref == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "member_id (the patient's id or code) is required when filing for a patient.")
	}
	u, err := a.store.Read().UserByCode(ctx, p.Account.ID, ref)
	if errors.Is(err, store.ErrNotFound) {
		if n, perr := strconv.ParseInt(ref, 10, 64); perr == nil {
			u, err = a.store.Read().UserByID(ctx, p.Account.ID, n)
		}
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Type != clinic.UserMember && u.Type != clinic.UserGuest) {
		return nil, clinic.Errorf(clinic.EInvalid, "member_id does not name a patient of this clinic.")
	}
	return u, err
}

// applyIntake validates and applies the changeable fields.
func (a *App) applyIntake(ctx context.Context, p *clinic.Principal, it *clinic.Intake, in IntakeInput) error {
	err := CheckFields(optText("reason_for_visit", in.ReasonForVisit, MaxTextChars), optLine("location", in.Location, 32),
		optLine("phone", in.Phone, 32), optLine("consultation", in.Consultation, MaxCodeChars), optLine("type", in.Type, 32))
	if err != nil {
		return err
	}
	if in.ProviderID != nil && *in.ProviderID != 0 {
		prov, err := a.ProviderByID(ctx, p, *in.ProviderID)
		if err != nil {
			return err
		}
		it.ProviderID = prov.ID
	}
	if in.ReasonForVisit != nil {
		it.ReasonForVisit = strings.TrimSpace(*in.ReasonForVisit)
	}
	if in.Location != nil {
		loc, err := checkState(*in.Location)
		if err != nil {
			return clinic.Errorf(clinic.EInvalid, "location must be a two-letter state code.")
		}
		it.Location = loc
	}
	if in.Phone != nil {
		it.Phone = strings.TrimSpace(*in.Phone)
	}
	if in.Consultation != nil && *in.Consultation != it.ConsultationID {
		r, err := a.store.Read().RoomByID(ctx, p.Account.ID, it.RoomID)
		if err != nil {
			return fmt.Errorf("intake room: %w", err)
		}
		c := strings.TrimSpace(*in.Consultation)
		if c != "" && !slices.ContainsFunc(r.Settings.Consultations, func(rc clinic.Consultation) bool { return rc.ID == c }) {
			return clinic.Errorf(clinic.EInvalid, "consultation %q is not one of the room's consultations.", c)
		}
		it.ConsultationID = c
	}
	if err := applyCustom(it, in.Custom); err != nil {
		return err
	}
	if in.PreferredLanguage != nil {
		delete(it.Custom, PreferredLanguageKey)
		if v := strings.TrimSpace(*in.PreferredLanguage); v != "" {
			tag, err := LanguageTag(v)
			if err != nil {
				return clinic.Errorf(clinic.EInvalid, "preferred_language: %s", clinic.ErrorMessage(err))
			}
			if it.Custom == nil {
				it.Custom = map[string]string{}
			}
			it.Custom[PreferredLanguageKey] = tag
		}
	}
	if in.Attachments != nil {
		ids, err := a.intakeAttachments(ctx, p, it, *in.Attachments)
		if err != nil {
			return err
		}
		it.Attachments = ids
	}
	return nil
}

// applyCustom adds the intake's custom fields.
func applyCustom(it *clinic.Intake, custom map[string]string) error {
	if len(custom) > maxCustomFields {
		return clinic.Errorf(clinic.EInvalid, "at most %d custom fields.", maxCustomFields)
	}
	for k, v := range custom {
		if k == PreferredLanguageKey {
			continue // checked apart (IntakeInput.PreferredLanguage)
		}
		if err := CheckFields(Line("a custom field's name", k, 100), text("custom field "+clip(k, 100), v, MaxTextChars)); err != nil {
			return err
		}
		if it.Custom == nil {
			it.Custom = map[string]string{}
		}
		it.Custom[k] = v
	}
	return nil
}

// intakeAttachments are the files ids names, each one p may attach to the
// intake: p's own, the patient's, or any for the admin.
func (a *App) intakeAttachments(ctx context.Context, p *clinic.Principal, it *clinic.Intake, ids []int64) ([]int64, error) {
	out := []int64{}
	for _, n := range ids {
		f, err := a.store.Read().FileByID(ctx, p.Account.ID, n)
		visible := err == nil && (f.CreatorUserID == p.UserID() || f.CreatorUserID == it.MemberID ||
			(f.TargetType == "user" && f.TargetID == it.MemberID) || p.IsAdmin())
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("attachment: %w", err)
		}
		if !visible {
			return nil, clinic.Errorf(clinic.EInvalid, "attachment %d is not a file you may attach.", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// ProviderByID finds a provider of the clinic by id.
func (a *App) ProviderByID(ctx context.Context, p *clinic.Principal, id int64) (*clinic.User, error) {
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Type != clinic.UserProvider) {
		return nil, clinic.Errorf(clinic.EInvalid, "provider_id does not name a provider of this clinic.")
	}
	return u, err
}

var errIntakeNotFound = clinic.Errorf(clinic.ENotFound, "Intake not found.")

// intakeFor loads an intake the caller may see: its patient, whoever filed
// it, the provider it names or of its visit, and the admin.
func (a *App) intakeFor(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Intake, error) {
	it, err := a.store.Read().IntakeByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errIntakeNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	uid := p.UserID()
	if p.IsAdmin() || it.MemberID == uid || it.CreatorUserID == uid || (it.ProviderID != 0 && it.ProviderID == uid) {
		return it, nil
	}
	if it.VisitID != 0 && IsProvider(p) {
		v, err := a.store.Read().VisitByID(ctx, p.Account.ID, it.VisitID)
		if err != nil {
			return nil, fmt.Errorf("intake visit: %w", err)
		}
		if ok, err := a.canSeeVisit(ctx, p, v.Thread()); err != nil || ok {
			return it, err
		}
	}
	return nil, errIntakeNotFound
}

// GetIntake is GET /intakes/{id}.
func (a *App) GetIntake(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Intake, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	it, err := a.intakeFor(ctx, p, id)
	if err := a.AuditOutcome(ctx, p, "intake.read", "intake", i64s(id), err); err != nil {
		return nil, err
	}
	return it, nil
}

// UpdateIntake is POST /intakes/{id}: until its visit is over, whoever may
// see an intake may change its provider, reason, location, phone and fields.
func (a *App) UpdateIntake(ctx context.Context, p *clinic.Principal, id int64, in IntakeInput) (*clinic.Intake, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	it, err := a.intakeFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if it.VisitID != 0 {
		v, err := a.store.Read().VisitByID(ctx, p.Account.ID, it.VisitID)
		if err != nil {
			return nil, fmt.Errorf("intake visit: %w", err)
		}
		if v.Status == clinic.VisitCompleted || v.Status == clinic.VisitCancelled {
			return nil, clinic.Errorf(clinic.EConflict, "The intake's visit is over; its intake can no longer change.")
		}
	}
	if err := a.applyIntake(ctx, p, it, in); err != nil {
		return nil, err
	}
	it.Modified = a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UpdateIntake(ctx, it); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "intake.update", "intake", i64s(it.ID), OutcomeOK)
	})
	return it, StoreErr("update intake", err, "Intake not found.")
}

// IntakeAttachment is an attached file as an intake shows it.
type IntakeAttachment struct {
	ID        int64
	Name, Ext string
	Size      int64
	URL       string
}

// IntakeAttachments resolves an intake's file ids; files that are gone are left out.
func (a *App) IntakeAttachments(ctx context.Context, p *clinic.Principal, it *clinic.Intake) ([]IntakeAttachment, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	// it came from the caller, so whether the caller may see it is decided
	// again here, on the stored intake.
	if _, err := a.intakeFor(ctx, p, it.ID); err != nil {
		return nil, err
	}
	files, err := a.store.Read().FilesByIDs(ctx, p.Account.ID, it.Attachments)
	if err != nil {
		return nil, fmt.Errorf("intake attachments: %w", err)
	}
	return a.intakeFiles(it, files), nil
}

// intakeFiles are it's attachments among files, in its order; those not
// there (deleted) are left out.
func (a *App) intakeFiles(it *clinic.Intake, files map[int64]*clinic.File) []IntakeAttachment {
	out := []IntakeAttachment{}
	for _, id := range it.Attachments {
		if f := files[id]; f != nil {
			out = append(out, IntakeAttachment{ID: f.ID, Name: f.Name, Ext: f.Ext, Size: f.Size, URL: a.FileViewURL(f.ID, "")})
		}
	}
	return out
}

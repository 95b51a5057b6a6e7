package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
	"teleclinic/internal/mail"
	"teleclinic/internal/store"
)

// A booked visit's day: its call opens a set time before the start, the
// patient cancels or moves it up to a set time before, and reminder emails
// go out before it. The times are the room's (clinic.AppointmentSettings).

// TopicReminder is the outbox topic of appointment reminders: one item
// per reminder, due when it is to be sent, written with the booking.
const TopicReminder = "reminder"

// JoinOpens is when the patient's call of appointment v in room r opens;
// 0 for a visit that is not an appointment.
func JoinOpens(v *clinic.ThreadVisit, r *clinic.Room) int64 {
	if v.Kind != clinic.KindAppointment || v.Start == 0 {
		return 0
	}
	return v.Start - int64(r.Settings.AppointmentRules().JoinBeforeMinutes)*60
}

// ChangeCloses is when the patient can no longer cancel or move
// appointment v themselves.
func ChangeCloses(v *clinic.Visit, r *clinic.Room) int64 {
	return v.Start - int64(r.Settings.AppointmentRules().CancelHours)*3600
}

// patientChange refuses a patient's cancel or move of appointment v once
// the room's window has closed; staff change it at any time.
func (a *App) patientChange(ctx context.Context, p *clinic.Principal, v *clinic.Visit) error {
	if v.Kind != clinic.KindAppointment || v.MemberID != p.UserID() || v.RoomID == 0 {
		return nil
	}
	r, err := a.store.Read().RoomByID(ctx, p.Account.ID, v.RoomID)
	if err != nil {
		return fmt.Errorf("appointment room: %w", err)
	}
	if a.Unix() > ChangeCloses(v, r) {
		return clinic.Errorf(clinic.EConflict, "Appointments in room '%s' can be changed online up to %d hours before they start; contact the clinic to change this one.",
			r.Code, r.Settings.AppointmentRules().CancelHours)
	}
	return nil
}

// RescheduleInput is the new time of a booked visit: slots of its room
// that run back to back from SlotStart to SlotEnd, with one provider (any
// of the room's when 0).
type RescheduleInput struct {
	SlotStart, SlotEnd int64
	ProviderID         int64
}

// Reschedule moves a booked visit to another time of its room: the new
// slots are taken and the old given back in one transaction, so the visit
// always holds exactly one time. The patient may do it until the room's
// window closes; its provider and the admin at any time.
func (a *App) Reschedule(ctx context.Context, p *clinic.Principal, id int64, in RescheduleInput) (*VisitDetail, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	v, err := a.movableVisit(ctx, p, id)
	if err != nil {
		return nil, err
	}
	chain, err := a.rescheduleChain(ctx, p, v, in)
	if err != nil {
		return nil, err
	}
	nv := *v
	nv.Start, nv.End, nv.SlotID, nv.ProviderID = in.SlotStart, in.SlotEnd, chain[0].ID, chain[0].ProviderID
	nv.Meeting.Expiry = in.SlotEnd + 3600
	now := a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		moved, err := q.MoveAppointment(ctx, &nv, now)
		if err != nil {
			return err
		}
		if !moved {
			return clinic.Errorf(clinic.EConflict, "Visit %d changed meanwhile; it can no longer be moved.", v.ID)
		}
		if err := q.FreeVisitSlots(ctx, p.Account.ID, v.ID, now); err != nil {
			return err
		}
		for _, s := range chain {
			won, err := q.BookSlot(ctx, p.Account.ID, s.ID, v.ID, v.IntakeID, now)
			if err != nil {
				return err
			}
			if !won {
				return clinic.Errorf(clinic.EConflict, "That time was just booked by someone else.")
			}
		}
		if err := a.enqueueReminders(ctx, q, &nv); err != nil {
			return err
		}
		if err := a.mailAppointmentChange(ctx, q, p, changeMoved, &nv, v.Start, ""); err != nil {
			return err
		}
		if err := a.emitVisit(ctx, q, EventAppointmentMoved, &nv, nv.Status, ""); err != nil {
			return err
		}
		q.AfterCommit(func() { a.publishVisit(&nv) })
		return a.AuditIn(ctx, q, p, "visit.reschedule", "visit", i64s(v.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("reschedule", err, "")
	}
	return a.visitDetail(ctx, p, &nv)
}

// movableVisit is visit id, if p may move it: its patient (within the
// room's rules for patients' changes), its provider or the clinic admin,
// while it is booked and has not started.
func (a *App) movableVisit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Visit, error) {
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	staff := p.IsAdmin() || (v.ProviderID != 0 && v.ProviderID == p.UserID())
	if !staff && v.MemberID != p.UserID() {
		return nil, clinic.Errorf(clinic.EForbidden, "Only the visit's patient, its provider or the clinic admin may move it.")
	}
	if v.Kind != clinic.KindAppointment || (v.Status != clinic.VisitPending && v.Status != clinic.VisitConfirmed) {
		return nil, clinic.Errorf(clinic.EConflict, "Only a booked visit that has not started can be moved.")
	}
	if !staff {
		if err := a.patientChange(ctx, p, v); err != nil {
			return nil, a.AuditOutcome(ctx, p, "visit.reschedule", "visit", i64s(v.ID), err)
		}
	}
	return v, nil
}

// rescheduleChain is the run of open slots of v's room (of the provider
// in names, if any) that covers the new time.
func (a *App) rescheduleChain(ctx context.Context, p *clinic.Principal, v *clinic.Visit, in RescheduleInput) ([]clinic.Slot, error) {
	if in.SlotStart <= a.Unix() || in.SlotEnd <= in.SlotStart {
		return nil, clinic.Errorf(clinic.EInvalid, "slot_start must be in the future and slot_end after it.")
	}
	f := store.SlotFilter{AccountID: p.Account.ID, RoomID: v.RoomID, From: in.SlotStart, To: in.SlotEnd, Limit: MaxSlotList}
	if in.ProviderID != 0 {
		f.ProviderIDs = []int64{in.ProviderID}
	}
	slots, err := a.store.Read().ListSlots(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("reschedule: %w", err)
	}
	chain, anyBooked := pickChain(slots, in.SlotStart, in.SlotEnd, v.IntakeID, a.Unix())
	switch {
	case chain != nil:
		return chain, nil
	case anyBooked:
		return nil, clinic.Errorf(clinic.EConflict, "That time is already booked.")
	}
	return nil, clinic.Errorf(clinic.EInvalid, "No slot of the visit's room runs from %s to %s.",
		time.Unix(in.SlotStart, 0).UTC().Format(time.RFC3339), time.Unix(in.SlotEnd, 0).UTC().Format(time.RFC3339))
}

// SetReminders turns the reminder emails of the caller's own visit on or
// off.
func (a *App) SetReminders(ctx context.Context, p *clinic.Principal, id int64, on bool) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return err
	}
	if v.MemberID != p.UserID() {
		return clinic.Errorf(clinic.EForbidden, "Only the visit's patient chooses its reminders.")
	}
	return StoreErr("reminders", a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.SetVisitReminders(ctx, p.Account.ID, v.ID, !on, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "visit.reminders", "visit", i64s(v.ID), OutcomeOK)
	}), "")
}

// reminder is a reminder's outbox item: the visit, and the start it was
// written for, so a reminder of a time the visit no longer has is not sent.
type reminder struct {
	Visit int64 `json:"visit"`
	Start int64 `json:"start"`
	Lead  int   `json:"lead"` // minutes before the start
	// Text: the reminder by text message (when the patient said yes to
	// texts at its time), not by email.
	Text bool `json:"text,omitempty"`
}

// enqueueReminders writes the reminders of booked visit v that are still
// ahead, in the booking's (or the move's) transaction.
func (a *App) enqueueReminders(ctx context.Context, q *store.Q, v *clinic.Visit) error {
	r, err := q.RoomByID(ctx, v.AccountID, v.RoomID)
	if err != nil {
		return err
	}
	now := a.Unix()
	for _, lead := range r.Settings.AppointmentRules().ReminderMinutes {
		due := v.Start - int64(lead)*60
		if lead <= 0 || due <= now {
			continue
		}
		for _, text := range []bool{false, true} {
			b, _ := json.Marshal(reminder{Visit: v.ID, Start: v.Start, Lead: lead, Text: text})
			if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: v.AccountID, Topic: TopicReminder, Payload: string(b), Created: now, Due: due}); err != nil {
				return err
			}
		}
	}
	return nil
}

// TopicWaitAlert is the outbox topic of a walk-in's wait alert: due when
// the room's wait_alert_minutes have passed since the patient came in.
const TopicWaitAlert = "waitalert"

// DeliverReminders sends the reminders that are due, each once: a claim
// goes to one worker. A patient's reminder whose visit was cancelled,
// moved, started or had its reminders turned off is ended unsent; a wait
// alert whose patient a provider took meanwhile, too.
func (a *App) DeliverReminders(ctx context.Context) int {
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicReminder, TopicWaitAlert}, a.Unix(), mailLease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("reminders: claim", "err", err)
		}
		return 0
	}
	for _, it := range items {
		if it.Topic == TopicWaitAlert {
			a.settle(ctx, TopicWaitAlert, it, 0, a.waitAlert(ctx, it), mailMaxAttempts, int64(30)<<min(it.Attempts, 8))
			continue
		}
		m, err := a.reminderMail(ctx, it)
		if errors.Is(err, errTextReminder) {
			err = a.reminderText(ctx, it)
		} else if err == nil {
			sendCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = a.cfg.Mail.Send(sendCtx, *m)
			cancel()
		}
		a.settle(ctx, TopicReminder, it, 0, err, mailMaxAttempts, int64(30)<<min(it.Attempts, 8))
	}
	return len(items)
}

// enqueueWaitAlert writes walk-in v's wait alert when its room has one.
func (a *App) enqueueWaitAlert(ctx context.Context, q *store.Q, v *clinic.Visit, r *clinic.Room) error {
	mins := r.Settings.WaitAlertMinutes
	if mins <= 0 {
		return nil
	}
	b, _ := json.Marshal(reminder{Visit: v.ID, Lead: mins})
	return q.Enqueue(ctx, &store.OutboxItem{AccountID: v.AccountID, Topic: TopicWaitAlert, Payload: string(b), Created: v.Created, Due: v.Created + int64(mins)*60})
}

// waitAlert turns a due wait alert into one email to each of the room's
// providers, written to the mail outbox in one transaction (so each is
// sent once, with the mail's own retries); errSkip when the patient was
// taken meanwhile.
func (a *App) waitAlert(ctx context.Context, it store.OutboxItem) error {
	var rm reminder
	if err := json.Unmarshal([]byte(it.Payload), &rm); err != nil {
		return errSkip("unreadable wait alert")
	}
	rd := a.store.Read()
	v, err := rd.VisitByID(ctx, it.AccountID, rm.Visit)
	if errors.Is(err, store.ErrNotFound) {
		return errSkip("the visit is gone")
	}
	if err != nil {
		return err
	}
	if v.Status != clinic.VisitPending || v.ProviderID != 0 {
		return errSkip("a provider took the patient")
	}
	if Left(v, a.Unix()) {
		return errSkip("the patient has left the waiting room")
	}
	r, err := rd.RoomByID(ctx, it.AccountID, v.RoomID)
	if err != nil {
		return err
	}
	patient, err := rd.UserByID(ctx, it.AccountID, v.MemberID)
	if err != nil {
		return err
	}
	acct, err := rd.AccountByID(ctx, it.AccountID)
	if err != nil {
		return err
	}
	provs, err := rd.RoomUsers(ctx, it.AccountID, r.ID, clinic.UserProvider)
	if err != nil {
		return err
	}
	now := a.Unix()
	var sealed []string
	for _, u := range provs {
		if u.Email == "" || !u.Active {
			continue
		}
		body := fmt.Sprintf("Hello %s,\n\n%s has waited %s in %s and no provider has taken them yet.\n\nOpen your dashboard to start the visit:\n%s/providers/dashboard\n",
			u.FirstName, patient.FullName(), DurationWords(time.Duration(rm.Lead)*time.Minute), r.Name, a.portalBase())
		raw, _ := json.Marshal(mailMessage{To: u.Email, Subject: acct.Name + ": a patient is waiting in " + r.Name, Body: body})
		s, err := a.Seal(raw)
		if err != nil {
			return err
		}
		sealed = append(sealed, s)
	}
	if len(sealed) == 0 {
		return errSkip("no provider of the room has an email address")
	}
	// The alert is done in the transaction that writes its mails: a crash
	// between the two can neither lose them nor write them twice.
	return a.store.Tx(ctx, func(q *store.Q) error {
		for _, s := range sealed {
			if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: it.AccountID, Topic: TopicMail, Payload: s, Created: now, Due: now}); err != nil {
				return err
			}
		}
		return q.FinishOutbox(ctx, it.ID, now, 0, "")
	})
}

// errTextReminder: the due reminder is a text's (reminderText).
var errTextReminder = errors.New("a text reminder")

// reminderMail is the email of a due reminder, or errSkip when there is
// none to send.
func (a *App) reminderMail(ctx context.Context, it store.OutboxItem) (*mail.Message, error) {
	rm, v, u, err := a.dueReminder(ctx, it)
	if err != nil {
		return nil, err
	}
	if rm.Text {
		return nil, errTextReminder
	}
	if u.Email == "" {
		return nil, errSkip("the patient has no email address")
	}
	rd := a.store.Read()
	acct, err := rd.AccountByID(ctx, it.AccountID)
	if err != nil {
		return nil, err
	}
	zone := profileZone(u)
	when := time.Unix(v.Start, 0).In(zone)
	var link string
	if err := a.store.Tx(ctx, func(q *store.Q) error {
		link, err = a.visitLink(ctx, q, v, u)
		return err
	}); err != nil {
		return nil, err
	}
	loc := a.localeOf(u)
	lead := leadWords(loc, rm.Lead)
	var b strings.Builder
	b.WriteString(loc.T("Hello %s,", u.FirstName) + "\n\n")
	b.WriteString(loc.T("Your video visit with %s is %s: %s (%s).", acct.Name, lead, loc.Day(when)+", "+loc.Clock(when), zone.String()) + "\n\n")
	b.WriteString(loc.T("Join it here (the call opens a few minutes before the start):") + "\n" + link + "\n\n")
	if r, err := rd.RoomByID(ctx, it.AccountID, v.RoomID); err == nil {
		if note := r.WordsIn(loc.Tag.String()).EmailNote; note != "" {
			b.WriteString(loc.T("From the clinic:") + "\n" + note + "\n\n")
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	b.WriteString(loc.T("To cancel or change the time, or to stop these reminders, open the same page. The link signs you into this visit only, once.") + "\n")
	return &mail.Message{To: u.Email, Subject: loc.T("%s: your visit %s", acct.Name, lead), Body: b.String()}, nil
}

// reminderText writes a due reminder's text (app/sms.go sends it), when
// the patient said yes to texts.
func (a *App) reminderText(ctx context.Context, it store.OutboxItem) error {
	rm, v, u, err := a.dueReminder(ctx, it)
	if err != nil {
		return err
	}
	acct, err := a.store.Read().AccountByID(ctx, it.AccountID)
	if err != nil {
		return err
	}
	zone := profileZone(u)
	when := time.Unix(v.Start, 0).In(zone)
	return a.store.Tx(ctx, func(q *store.Q) error {
		return a.text(ctx, q, it.AccountID, u, TextReminder, func(loc *locale.Locale) (string, error) {
			link, err := a.visitLink(ctx, q, v, u)
			return loc.T("%s: your video visit is %s, %s (%s). Join here: %s", acct.Name, leadWords(loc, rm.Lead), loc.Day(when)+", "+loc.Clock(when), zone.String(), link), err
		})
	})
}

// dueReminder reads a due reminder, its visit and patient, or errSkip
// when it is not to be sent.
func (a *App) dueReminder(ctx context.Context, it store.OutboxItem) (*reminder, *clinic.Visit, *clinic.User, error) {
	var rm reminder
	if err := json.Unmarshal([]byte(it.Payload), &rm); err != nil {
		return nil, nil, nil, errSkip("unreadable reminder")
	}
	rd := a.store.Read()
	v, err := rd.VisitByID(ctx, it.AccountID, rm.Visit)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil, errSkip("the visit is gone")
	}
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case v.Status != clinic.VisitPending && v.Status != clinic.VisitConfirmed:
		return nil, nil, nil, errSkip("the visit is " + StatusName(v.Status))
	case v.Start != rm.Start:
		return nil, nil, nil, errSkip("the visit was moved")
	case v.RemindersOff:
		return nil, nil, nil, errSkip("the patient turned reminders off")
	}
	u, err := rd.UserByID(ctx, it.AccountID, v.MemberID)
	if err != nil {
		return nil, nil, nil, err
	}
	return &rm, v, u, nil
}

// profileZone is the zone of u's profile, UTC when it has none.
func profileZone(u *clinic.User) *time.Location {
	if z, err := time.LoadLocation(u.Timezone); err == nil && u.Timezone != "" {
		return z
	}
	return time.UTC
}

// leadWords says how far ahead a reminder is: "in 15 minutes", "in 2
// hours", "tomorrow", "in 3 days".
func leadWords(loc *locale.Locale, minutes int) string {
	switch {
	case minutes == 24*60:
		return loc.T("tomorrow")
	case minutes%(24*60) == 0:
		return loc.T("in %d days", minutes/(24*60))
	case minutes%60 == 0 && minutes > 60:
		return loc.T("in %d hours", minutes/60)
	case minutes == 60:
		return loc.T("in an hour")
	case minutes == 1:
		return loc.T("in a minute")
	}
	return loc.T("in %d minutes", minutes)
}

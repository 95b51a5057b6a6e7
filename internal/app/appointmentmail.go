package app

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
	"teleclinic/internal/store"
)

// The emails of an appointment's changes: a booking confirmed, a time
// moved, a visit cancelled, each to the people it concerns other than the
// one who made it (the patient, the visit's provider; a booking is
// confirmed to its patient all the same), at the address of
// their profile, with the time in their zone (their profile's, else the
// room's). They are written to the mail outbox in the change's
// transaction, so a change that did not happen mails nobody and one that
// did is mailed once. A person who turned emails off, or has no address,
// is not mailed; the reminders (appointments.go) are the patient's own.

// The changes an appointment mail tells.
const (
	changeBooked    = "booked"
	changeMoved     = "moved"
	changeCancelled = "cancelled"
	// A no-show, and a cancellation inside the room's window: cancelled,
	// and told with the room's fee for it.
	changeMissed        = "missed"
	changeCancelledLate = "cancelled_late"
)

// cancelling says whether change cancels the visit.
func cancelling(change string) bool {
	return change == changeCancelled || change == changeMissed || change == changeCancelledLate
}

// appointmentChange is what a mail of change tells: the visit as it now
// is, the start it had before a move, and a cancellation's reason.
type appointmentChange struct {
	change      string
	v           *clinic.Visit
	was         int64
	reason      string
	by          *clinic.Principal
	roomZone    string
	clinicName  string
	contact     *clinic.RoomContact
	fee         string // the room's fee for a missed or late-cancelled visit, in words; "" for none
	cancelHours int
	room        *clinic.Room // its words in the reader's language: the note, the calendar's name
}

// mailAppointmentChange writes the mails of change of appointment v, made
// by p, in transaction q.
func (a *App) mailAppointmentChange(ctx context.Context, q *store.Q, p *clinic.Principal, change string, v *clinic.Visit, was int64, reason string) error {
	if v.Kind != clinic.KindAppointment {
		return nil
	}
	r, err := q.RoomByID(ctx, v.AccountID, v.RoomID)
	if err != nil {
		return err
	}
	c := appointmentChange{change: change, v: v, was: was, reason: reason, by: p, roomZone: r.Settings.Operation.Timezone, clinicName: p.Account.Name,
		contact: r.Settings.Contact, cancelHours: r.Settings.AppointmentRules().CancelHours, room: r}
	if outcome := map[string]string{changeMissed: clinic.OutcomeNoShow, changeCancelledLate: clinic.OutcomeLateCancel}[change]; outcome != "" {
		if _, amount, currency := feeOf(r, outcome); amount > 0 {
			c.fee = FeeWords(amount, currency)
		}
	}
	// The calendar file goes with each mail: a booking's and a move's add
	// the event at its time (the same UID: the new time replaces the old),
	// a cancellation's marks it cancelled.
	cal := *v
	if cancelling(change) {
		cal.Status = clinic.VisitCancelled
	}
	for _, uid := range []int64{v.MemberID, v.ProviderID} {
		// The one who made the change knows of it, but a booking is
		// confirmed to its patient, who booked it: the mail is their
		// receipt, with the calendar file.
		if uid == 0 || uid == p.UserID() && !(change == changeBooked && uid == v.MemberID) {
			continue
		}
		u, err := q.UserByID(ctx, v.AccountID, uid)
		if err != nil {
			return err
		}
		if uid == v.MemberID {
			// The patient's text, when they said yes to texts: its own
			// one-time link, so opening the mail's does not spend it.
			err := a.text(ctx, q, v.AccountID, u, map[string]string{changeBooked: TextBooked, changeMoved: TextMoved, changeCancelled: TextCancelled,
				changeMissed: TextMissed, changeCancelledLate: TextCancelled}[change],
				func(loc *locale.Locale) (string, error) {
					link, err := a.patientLink(ctx, q, v, u)
					return c.text(loc, u, link), err
				})
			if err != nil {
				return err
			}
		}
		if u.Email == "" || u.DisableEmails {
			continue
		}
		link, err := a.patientLink(ctx, q, v, u)
		if err != nil {
			return err
		}
		loc := a.localeOf(u)
		subject, body := c.letter(loc, u, link, uid == v.MemberID)
		raw, _ := json.Marshal(mailMessage{To: u.Email, Subject: subject, Body: body,
			Calendar: VisitCalendar(loc, p.Account, &cal, r.WordsIn(loc.Tag.String()).Name, link, a.now())})
		sealed, err := a.Seal(raw)
		if err != nil {
			return err
		}
		if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: v.AccountID, Topic: TopicMail, Payload: sealed, Created: a.Unix(), Due: a.Unix()}); err != nil {
			return err
		}
	}
	return nil
}

// letter is the mail to u (the patient, or the provider), in their
// language (loc), with link, the way to the visit's page (the patient's
// signs them into it).
func (c appointmentChange) letter(loc *locale.Locale, u *clinic.User, link string, patient bool) (subject, body string) {
	when := c.when(loc, u)
	byPatient := c.by.User != nil && c.by.UserID() == c.v.MemberID
	var b strings.Builder
	b.WriteString(loc.T("Hello %s,", u.FirstName) + "\n\n")
	switch c.change {
	case changeBooked:
		subject = loc.T("%s: your video visit is booked", c.clinicName)
		if !patient {
			subject = loc.T("%s: a video visit was booked with you", c.clinicName)
		}
		b.WriteString(loc.T("A video visit with %s is booked for %s.", c.clinicName, when(c.v.Start)) + "\n\n")
		b.WriteString(loc.T("Open it here (the call opens a few minutes before the start):") + "\n" + link + "\n\n")
	case changeMoved:
		subject = loc.T("%s: your video visit has a new time", c.clinicName)
		if byPatient {
			b.WriteString(loc.T("The video visit with %s that was on %s is now on %s (moved by the patient).", c.clinicName, when(c.was), when(c.v.Start)))
		} else {
			b.WriteString(loc.T("The video visit with %s that was on %s is now on %s (moved by the clinic).", c.clinicName, when(c.was), when(c.v.Start)))
		}
		b.WriteString("\n\n" + loc.T("Open it here:") + "\n" + link + "\n\n")
	case changeCancelled:
		subject = loc.T("%s: your video visit was cancelled", c.clinicName)
		if byPatient {
			b.WriteString(loc.T("The video visit with %s on %s was cancelled by the patient.", c.clinicName, when(c.v.Start)) + "\n")
		} else {
			b.WriteString(loc.T("The video visit with %s on %s was cancelled by the clinic.", c.clinicName, when(c.v.Start)) + "\n")
		}
		if c.reason != "" {
			b.WriteString(loc.T("The reason given: %s", cancelReasonWords(loc, c.reason)) + "\n")
		}
		b.WriteString("\n" + loc.T("The visit's page says what was refunded, if anything, and how to book again:") + "\n" + link + "\n\n")
	case changeMissed:
		subject = loc.T("%s: you missed your video visit", c.clinicName)
		if !patient {
			subject = loc.T("%s: a patient missed their video visit", c.clinicName)
		}
		b.WriteString(loc.T("The video visit with %s on %s was marked missed: the patient had not come.", c.clinicName, when(c.v.Start)) + "\n")
		if c.fee != "" {
			b.WriteString(loc.T("Under the clinic's policy, a fee of %s is charged to the card saved for it.", c.fee) + "\n")
		}
		b.WriteString("\n" + loc.T("To book again, open the visit's page:") + "\n" + link + "\n\n")
	case changeCancelledLate:
		subject = loc.T("%s: your video visit was cancelled", c.clinicName)
		b.WriteString(loc.T("The video visit with %s on %s was cancelled less than %d hours before its start.", c.clinicName, when(c.v.Start), c.cancelHours) + "\n")
		if c.fee != "" {
			b.WriteString(loc.T("Under the clinic's policy, a fee of %s is charged to the card saved for it.", c.fee) + "\n")
		}
		b.WriteString("\n" + loc.T("The visit's page says what was refunded, if anything, and how to book again:") + "\n" + link + "\n\n")
	}
	if patient {
		if !cancelling(c.change) {
			if note := c.room.WordsIn(loc.Tag.String()).EmailNote; note != "" {
				b.WriteString(loc.T("From the clinic:") + "\n" + note + "\n\n")
			}
			b.WriteString(loc.T("The visit's page adds it to your calendar, and changes or cancels it.") + "\n")
		}
		b.WriteString(loc.T("The link above signs you into this visit only, once: open it on the device you will use. If it was opened already, the page it leads to sends you a new one.") + "\n")
		if c.contact != nil {
			b.WriteString(loc.T("Questions? Reach the clinic %s.", ContactWords(loc, c.contact)) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(c.clinicName + "\n")
	return subject, b.String()
}

// when writes a time for u: in their zone (their profile's, else the
// room's).
func (c appointmentChange) when(loc *locale.Locale, u *clinic.User) func(int64) string {
	zone := time.UTC
	for _, name := range []string{u.Timezone, c.roomZone} {
		if z, err := time.LoadLocation(name); err == nil && name != "" {
			zone = z
			break
		}
	}
	return func(t int64) string {
		at := time.Unix(t, 0).In(zone)
		return loc.Day(at) + ", " + loc.Clock(at) + " (" + zone.String() + ")"
	}
}

// text is the text message of the change to the visit's patient u: the
// letter's news in a line, with link.
func (c appointmentChange) text(loc *locale.Locale, u *clinic.User, link string) string {
	when := c.when(loc, u)
	switch c.change {
	case changeBooked:
		return loc.T("%s: your video visit is booked for %s. Open it here: %s", c.clinicName, when(c.v.Start), link)
	case changeMoved:
		return loc.T("%s: your video visit is now on %s (it was on %s). Open it here: %s", c.clinicName, when(c.v.Start), when(c.was), link)
	case changeMissed:
		if c.fee != "" {
			return loc.T("%s: you missed your video visit on %s. A fee of %s is charged under the clinic's policy. To book again: %s", c.clinicName, when(c.v.Start), c.fee, link)
		}
		return loc.T("%s: you missed your video visit on %s. To book again: %s", c.clinicName, when(c.v.Start), link)
	case changeCancelledLate:
		if c.fee != "" {
			return loc.T("%s: your video visit on %s was cancelled late; a fee of %s is charged under the clinic's policy. How to book again: %s", c.clinicName, when(c.v.Start), c.fee, link)
		}
	}
	return loc.T("%s: your video visit on %s was cancelled. What was refunded, and how to book again: %s", c.clinicName, when(c.v.Start), link)
}

// cancelReasonWords is a cancellation's reason as a person reads it: the
// spec's codes in words, anything else as written.
func cancelReasonWords(loc *locale.Locale, reason string) string {
	switch reason {
	case "patient_cancel_appointment":
		return loc.T("the patient cancelled")
	case "patient_exit_room":
		return loc.T("the patient left")
	case "provider_cancel_appointment":
		return loc.T("the provider cancelled")
	case ReasonLateCancel:
		return loc.T("cancelled late")
	}
	return reason
}

// ContactWords is a room's contact as a sentence's end: "at +1 555 0100
// or desk@clinic.example".
func ContactWords(loc *locale.Locale, c *clinic.RoomContact) string {
	switch {
	case c.Phone != "" && c.Email != "":
		return loc.T("at %s or %s", c.Phone, c.Email)
	case c.Phone != "":
		return loc.T("at %s", c.Phone)
	}
	return loc.T("at %s", c.Email)
}

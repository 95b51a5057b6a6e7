package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/clinic"
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
)

// appointmentChange is what a mail of change tells: the visit as it now
// is, the start it had before a move, and a cancellation's reason.
type appointmentChange struct {
	change     string
	v          *clinic.Visit
	was        int64
	reason     string
	by         *clinic.Principal
	roomZone   string
	clinicName string
	contact    *clinic.RoomContact
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
		contact: r.Settings.Contact}
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
		if u.Email == "" || u.DisableEmails {
			continue
		}
		link, err := a.patientLink(ctx, q, v, u)
		if err != nil {
			return err
		}
		subject, body := c.letter(u, link, uid == v.MemberID)
		raw, _ := json.Marshal(mailMessage{To: u.Email, Subject: subject, Body: body})
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

// letter is the mail to u (the patient, or the provider), with link, the
// way to the visit's page (the patient's signs them into it).
func (c appointmentChange) letter(u *clinic.User, link string, patient bool) (subject, body string) {
	zone := time.UTC
	for _, name := range []string{u.Timezone, c.roomZone} {
		if z, err := time.LoadLocation(name); err == nil && name != "" {
			zone = z
			break
		}
	}
	when := func(t int64) string {
		return time.Unix(t, 0).In(zone).Format("Monday 2 January 2006, 15:04") + " (" + zone.String() + ")"
	}
	who := "the clinic"
	if c.by.User != nil && c.by.UserID() == c.v.MemberID {
		who = "the patient"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Hello %s,\n\n", u.FirstName)
	switch c.change {
	case changeBooked:
		subject = c.clinicName + ": your video visit is booked"
		if !patient {
			subject = c.clinicName + ": a video visit was booked with you"
		}
		fmt.Fprintf(&b, "A video visit with %s is booked for %s.\n\n", c.clinicName, when(c.v.Start))
		fmt.Fprintf(&b, "Open it here (the call opens a few minutes before the start):\n%s\n\n", link)
	case changeMoved:
		subject = c.clinicName + ": your video visit has a new time"
		fmt.Fprintf(&b, "The video visit with %s that was on %s is now on %s (moved by %s).\n\n", c.clinicName, when(c.was), when(c.v.Start), who)
		fmt.Fprintf(&b, "Open it here:\n%s\n\n", link)
	case changeCancelled:
		subject = c.clinicName + ": your video visit was cancelled"
		fmt.Fprintf(&b, "The video visit with %s on %s was cancelled by %s.\n", c.clinicName, when(c.v.Start), who)
		if c.reason != "" {
			fmt.Fprintf(&b, "The reason given: %s\n", cancelReasonWords(c.reason))
		}
		fmt.Fprintf(&b, "\nThe visit's page says what was refunded, if anything, and how to book again:\n%s\n\n", link)
	}
	if patient {
		if c.change != changeCancelled {
			fmt.Fprintf(&b, "The visit's page adds it to your calendar, and changes or cancels it.\n")
		}
		fmt.Fprintf(&b, "The link above signs you into this visit only, once: open it on the device you will use. If it was opened already, the page it leads to sends you a new one.\n")
		if c.contact != nil {
			fmt.Fprintf(&b, "Questions? Reach the clinic %s.\n", ContactWords(c.contact))
		}
		b.WriteString("\n")
	}
	b.WriteString(c.clinicName + "\n")
	return subject, b.String()
}

// cancelReasonWords is a cancellation's reason as a person reads it: the
// spec's codes in words, anything else as written.
func cancelReasonWords(reason string) string {
	if w, ok := map[string]string{"patient_cancel_appointment": "the patient cancelled", "patient_exit_room": "the patient left",
		"provider_cancel_appointment": "the provider cancelled"}[reason]; ok {
		return w
	}
	return reason
}

// ContactWords is a room's contact as a sentence's end: "at +1 555 0100
// or desk@clinic.example".
func ContactWords(c *clinic.RoomContact) string {
	var ways []string
	for _, w := range []string{c.Phone, c.Email} {
		if w != "" {
			ways = append(ways, w)
		}
	}
	return "at " + strings.Join(ways, " or ")
}

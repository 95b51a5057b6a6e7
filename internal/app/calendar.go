package app

import (
	"strings"
	"time"
	"unicode/utf8"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
)

// VisitCalendar is booked visit v as an iCalendar event (RFC 5545) at its
// instant in UTC, in loc's words, with link, the way into the visit: the
// calendar file the visit page offers and the appointment emails carry.
// The UID is the visit's, so a calendar that has the event replaces it
// with a new time, and a cancellation marks it cancelled.
func VisitCalendar(loc *locale.Locale, acct *clinic.Account, v *clinic.Visit, roomName, link string, now time.Time) string {
	room := loc.T("Video visit")
	if roomName != "" {
		room = loc.T("Video visit: %s", roomName)
	}
	stamp := func(sec int64) string { return time.Unix(sec, 0).UTC().Format("20060102T150405Z") }
	status := "CONFIRMED"
	if v.Status == clinic.VisitCancelled {
		status = "CANCELLED"
	}
	lines := []string{"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Teleclinic//Visit//EN", "METHOD:PUBLISH", "BEGIN:VEVENT",
		"UID:visit-" + i64s(v.ID) + "-" + acct.Code + "@teleclinic",
		"DTSTAMP:" + stamp(now.Unix()), "DTSTART:" + stamp(v.Start), "DTEND:" + stamp(v.End),
		"SUMMARY:" + icsText(room), "DESCRIPTION:" + icsText(loc.T("Join the visit here: %s", link)), "URL:" + link, "STATUS:" + status,
		"BEGIN:VALARM", "ACTION:DISPLAY", "DESCRIPTION:" + icsText(room), "TRIGGER:-PT15M", "END:VALARM",
		"END:VEVENT", "END:VCALENDAR"}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(icsFold(l))
		b.WriteString("\r\n")
	}
	return b.String()
}

// icsText escapes a TEXT value (RFC 5545 3.3.11).
func icsText(s string) string {
	return strings.NewReplacer("\\", "\\\\", ";", "\\;", ",", "\\,", "\n", "\\n", "\r", "").Replace(s)
}

// icsFold folds a content line at 75 octets (RFC 5545 3.1), never inside
// a UTF-8 sequence.
func icsFold(l string) string {
	var b strings.Builder
	n := 0
	for _, r := range l {
		size := utf8.RuneLen(r)
		if n+size > 75 {
			b.WriteString("\r\n ")
			n = 1
		}
		b.WriteRune(r)
		n += size
	}
	return b.String()
}

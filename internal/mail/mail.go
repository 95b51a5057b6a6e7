// Package mail sends the clinic's email. The app puts messages in the outbox;
// a worker hands them to a Sender after the change that caused them commits.
package mail

import (
	"context"
	"log/slog"
)

// Message is one email.
type Message struct {
	To      string
	Subject string
	Body    string
	// Calendar, when set, is an iCalendar event (RFC 5545) sent with the
	// message as visit.ics, which mail apps offer to add.
	Calendar string
}

// Sender delivers email. Send returning nil means the message was accepted.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// LogSender is the default Sender when no mail server is configured: it
// records that a message would have been sent. It logs the recipient and the
// subject only; bodies carry single-use links and are never logged.
type LogSender struct{ Log *slog.Logger }

// Send logs the message's envelope.
func (s LogSender) Send(ctx context.Context, m Message) error {
	s.Log.InfoContext(ctx, "mail not sent: no mail server configured", "to", m.To, "subject", m.Subject)
	return nil
}

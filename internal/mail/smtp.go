package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// TLS modes of the connection to the mail server. Email here carries
// sign-in and password-reset links, so the default requires encryption.
const (
	// TLSStartTLS requires STARTTLS: a server that does not offer it is
	// refused (ports 587 and 25).
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte (port 465).
	TLSImplicit = "tls"
	// TLSNone sends in clear text: only for a relay on this host or a
	// private network the operator vouches for.
	TLSNone = "none"
)

// SMTP sends through a mail server with github.com/wneessen/go-mail.
type SMTP struct {
	Addr     string // host:port of the submission server
	From     string // envelope and header sender
	Username string // optional: authenticates (PLAIN) when set
	Password string
	// TLS is TLSStartTLS, TLSImplicit or TLSNone; "" is TLSImplicit on
	// port 465 and TLSStartTLS elsewhere.
	TLS string
	// TLSConfig verifies the server (default: its name, TLS 1.2 or later).
	TLSConfig *tls.Config
	// Now dates the message; default time.Now.
	Now func() time.Time
}

// TLSMode is the mode Send uses: TLS, or the default for Addr's port.
func (s *SMTP) TLSMode() string {
	if s.TLS != "" {
		return s.TLS
	}
	if _, port, _ := net.SplitHostPort(s.Addr); port == "465" {
		return TLSImplicit
	}
	return TLSStartTLS
}

// Check reports a configuration Send could not use.
func (s *SMTP) Check() error {
	if _, _, err := s.hostPort(); err != nil {
		return err
	}
	switch s.TLSMode() {
	case TLSStartTLS, TLSImplicit, TLSNone:
	default:
		return fmt.Errorf("smtp: TLS mode %q: use starttls, tls or none", s.TLS)
	}
	if err := checkHeader(s.From); err != nil {
		return fmt.Errorf("smtp: from: %w", err)
	}
	return nil
}

func (s *SMTP) hostPort() (string, int, error) {
	host, p, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return "", 0, fmt.Errorf("smtp: address %q: %w", s.Addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("smtp: address %q: bad port", s.Addr)
	}
	return host, port, nil
}

// Send delivers m. The context bounds the whole conversation.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	if err := checkHeader(m.To); err != nil {
		return fmt.Errorf("smtp: to: %w", err)
	}
	if err := s.Check(); err != nil {
		return err
	}
	host, port, _ := s.hostPort()
	cfg := s.TLSConfig
	if cfg == nil {
		cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	opts := []gomail.Option{gomail.WithPort(port), gomail.WithTLSConfig(cfg), gomail.WithTimeout(15 * time.Second)}
	switch s.TLSMode() {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if s.Username != "" {
		auth := gomail.SMTPAuthPlain
		if s.TLSMode() == TLSNone {
			// The operator chose clear text: the password goes with it.
			auth = gomail.SMTPAuthPlainNoEnc
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
	}
	c, err := gomail.NewClient(host, opts...)
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	msg, err := s.message(m)
	if err != nil {
		return err
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	return nil
}

// message is m with its headers; go-mail encodes the subject and writes
// the body with CRLF line ends.
func (s *SMTP) message(m Message) (*gomail.Msg, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	msg := gomail.NewMsg()
	if err := msg.From(s.From); err != nil {
		return nil, fmt.Errorf("smtp: from: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("smtp: to: %w", err)
	}
	msg.Subject(oneLine(m.Subject))
	msg.SetDateWithValue(now())
	msg.SetMessageID()
	msg.SetBodyString(gomail.TypeTextPlain, m.Body)
	if m.Calendar != "" {
		if err := msg.AttachReader("visit.ics", strings.NewReader(m.Calendar), gomail.WithFileContentType("text/calendar; charset=utf-8; method=PUBLISH")); err != nil {
			return nil, fmt.Errorf("smtp: calendar: %w", err)
		}
	}
	return msg, nil
}

// checkHeader refuses addresses that would inject headers.
func checkHeader(s string) error {
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return errors.New("empty or multi-line address")
	}
	return nil
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

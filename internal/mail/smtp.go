package mail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"strings"
	"time"
)

// SMTP sends through a mail server with the standard library's client. It
// upgrades the connection with STARTTLS whenever the server offers it, and
// authenticates (PLAIN) only over TLS or to a server on this host.
type SMTP struct {
	Addr     string // host:port of the submission server
	From     string // envelope and header sender
	Username string // optional
	Password string
	// TLSConfig is used for STARTTLS (default: verify the server's name).
	TLSConfig *tls.Config
	// Now dates the message; default time.Now.
	Now func() time.Time
}

// Send delivers m. The context bounds the whole conversation.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	if err := checkHeader(m.To); err != nil {
		return fmt.Errorf("smtp: to: %w", err)
	}
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("smtp: address %q: %w", s.Addr, err)
	}
	conn, err := (&net.Dialer{Timeout: 15 * time.Second}).DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp: %w", err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := s.TLSConfig
		if cfg == nil {
			cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("smtp: starttls: %w", err)
		}
	}
	if s.Username != "" {
		// PlainAuth itself refuses to send the password unencrypted to
		// anything but localhost.
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, host)); err != nil {
			return fmt.Errorf("smtp: auth: %w", err)
		}
	}
	if err := c.Mail(s.From); err != nil {
		return fmt.Errorf("smtp: from: %w", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return fmt.Errorf("smtp: rcpt: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp: data: %w", err)
	}
	if _, err := w.Write(s.render(m)); err != nil {
		return fmt.Errorf("smtp: data: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp: data: %w", err)
	}
	return c.Quit()
}

// render writes the message with its headers; the subject is encoded for
// non-ASCII text and the body's line ends are CRLF.
func (s *SMTP) render(m Message) []byte {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	domain := "teleclinic.local"
	if _, d, ok := strings.Cut(s.From, "@"); ok {
		domain = strings.Trim(d, "> ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\n", s.From)
	fmt.Fprintf(&b, "To: %s\r\n", m.To)
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", oneLine(m.Subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", now().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@%s>\r\n", hex.EncodeToString(id), domain)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	body := strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")
	b.WriteString(body)
	if !strings.HasSuffix(body, "\r\n") {
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// checkHeader refuses addresses that would inject headers.
func checkHeader(s string) error {
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return errors.New("empty or multi-line address")
	}
	return nil
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

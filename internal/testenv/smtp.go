package testenv

import (
	"bufio"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"teleclinic/internal/mail"
)

// SMTPServer is a mail server for tests: plain SMTP on a loopback port,
// enough of RFC 5321 for the server's real sender (mail.SMTP) to deliver,
// keeping each message it accepts.
type SMTPServer struct {
	Addr string
	mu   sync.Mutex
	msgs []Mail
	got  chan struct{}
}

// Mail is a message the server accepted: its envelope recipient and its
// data (headers and body as sent).
type Mail struct {
	To, Data string
}

// Text is the message's headers and its text decoded (quoted-printable or
// base64, as the sender chose; of a message with attachments, its
// text/plain part), so a test can look for the words sent.
func (m Mail) Text() string {
	head, _, _ := strings.Cut(m.Data, "\r\n\r\n")
	if h, err := new(mime.WordDecoder).DecodeHeader(head); err == nil { // an encoded subject, as words
		head = h
	}
	return head + "\n\n" + strings.ReplaceAll(m.part("text/plain"), "\r\n", "\n")
}

// Calendar is the message's iCalendar attachment (a visit's .ics),
// decoded; "" when it has none.
func (m Mail) Calendar() string { return m.part("text/calendar") }

// part is the first part of the message of media type want, decoded.
func (m Mail) part(want string) string {
	msg, err := netmail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		return ""
	}
	media, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if !strings.HasPrefix(media, "multipart/") {
		if media != want {
			return ""
		}
		return decodeBody(msg.Body, msg.Header.Get("Content-Transfer-Encoding"))
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err != nil {
			return ""
		}
		if t, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); t == want {
			return decodeBody(p, p.Header.Get("Content-Transfer-Encoding"))
		}
	}
}

// decodeBody reads r in its transfer encoding.
func decodeBody(r io.Reader, encoding string) string {
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, _ := io.ReadAll(r)
	return string(b)
}

// NewSMTPServer starts a mail server that lives as long as t.
func NewSMTPServer(t testing.TB) *SMTPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPServer{Addr: ln.Addr().String(), got: make(chan struct{}, 1)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// Sender is the server's real SMTP sender pointed at this server.
func (s *SMTPServer) Sender() mail.Sender {
	return &mail.SMTP{Addr: s.Addr, From: "clinic@teleclinic.test", TLS: mail.TLSNone}
}

// Mails are the messages accepted so far.
func (s *SMTPServer) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.msgs...)
}

// WaitFor waits up to EventWait for n messages in all, and returns them.
func (s *SMTPServer) WaitFor(t testing.TB, n int) []Mail {
	t.Helper()
	deadline := time.After(EventWait)
	for {
		if ms := s.Mails(); len(ms) >= n {
			return ms
		}
		select {
		case <-s.got:
		case <-deadline:
			t.Fatalf("the mail server has %d messages, not %d, after %v", len(s.Mails()), n, EventWait)
		}
	}
}

func (s *SMTPServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(l + "\r\n")) }
	say("220 mail.test ESMTP")
	var to string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		switch up := strings.ToUpper(cmd); {
		case strings.HasPrefix(up, "EHLO"):
			say("250-mail.test")
			say("250 8BITMIME")
		case strings.HasPrefix(up, "RCPT TO:"):
			to = strings.Trim(cmd[len("RCPT TO:"):], " <>")
			say("250 ok")
		case up == "DATA":
			say("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, Mail{To: to, Data: b.String()})
			s.mu.Unlock()
			select {
			case s.got <- struct{}{}:
			default:
			}
			say("250 queued")
		case up == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

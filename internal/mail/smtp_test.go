package mail

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// smtpServer is a minimal SMTP server: enough of RFC 5321 for a client to
// deliver one message, recording the envelope and the data.
type smtpServer struct {
	ln   net.Listener
	got  chan received
	auth bool // offer AUTH PLAIN
}

type received struct {
	from, to, data, auth string
}

func newSMTPServer(t *testing.T) *smtpServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln, got: make(chan received, 4)}
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

func (s *smtpServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(l + "\r\n")) }
	say("220 test.local ESMTP")
	var rec received
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		up := strings.ToUpper(cmd)
		switch {
		case strings.HasPrefix(up, "EHLO"):
			if s.auth {
				say("250-test.local\r\n250-8BITMIME\r\n250 AUTH PLAIN")
			} else {
				say("250-test.local\r\n250 8BITMIME")
			}
		case strings.HasPrefix(up, "AUTH PLAIN"):
			rec.auth = strings.TrimSpace(cmd[len("AUTH PLAIN"):])
			say("235 ok")
		case strings.HasPrefix(up, "MAIL FROM:"):
			rec.from = cmd[len("MAIL FROM:"):]
			say("250 ok")
		case strings.HasPrefix(up, "RCPT TO:"):
			rec.to = cmd[len("RCPT TO:"):]
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
			rec.data = b.String()
			say("250 queued")
			s.got <- rec
		case up == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

func TestSMTP_Delivers(t *testing.T) {
	srv := newSMTPServer(t)
	srv.auth = true
	s := &SMTP{Addr: srv.ln.Addr().String(), From: "clinic@example.com", Username: "u", Password: "p",
		Now: func() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Send(ctx, Message{To: "pat@example.com", Subject: "Your visit — confirmed", Body: "Hello,\nsee you.\n"}); err != nil {
		t.Fatal(err)
	}
	rec := <-srv.got
	if !strings.HasPrefix(rec.from, "<clinic@example.com>") || rec.to != "<pat@example.com>" || rec.auth == "" {
		t.Fatalf("envelope %+v", rec)
	}
	for _, want := range []string{"From: clinic@example.com\r\n", "To: pat@example.com\r\n", "Subject: =?utf-8?q?", "Date: Mon, 02 Mar 2026 09:00:00 +0000\r\n",
		"Content-Type: text/plain; charset=utf-8\r\n", "\r\n\r\nHello,\r\nsee you.\r\n"} {
		if !strings.Contains(rec.data, want) {
			t.Errorf("message lacks %q:\n%s", want, rec.data)
		}
	}
}

func TestSMTP_Errors(t *testing.T) {
	s := &SMTP{Addr: "127.0.0.1:1", From: "clinic@example.com"}
	if err := s.Send(context.Background(), Message{To: "a@b.c", Subject: "x"}); err == nil {
		t.Fatal("no server, no error")
	}
	srv := newSMTPServer(t)
	s.Addr = srv.ln.Addr().String()
	if err := s.Send(context.Background(), Message{To: "a@b.c\r\nBcc: x@y.z", Subject: "x"}); err == nil {
		t.Fatal("a header injection was sent")
	}
}

package mail

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// smtpServer is a minimal SMTP server: enough of RFC 5321 (and RFC 3207's
// STARTTLS) for a client to deliver one message, recording the envelope,
// the data and whether the conversation was encrypted.
type smtpServer struct {
	ln       net.Listener
	got      chan received
	starttls bool // offer STARTTLS
	implicit bool // TLS from the first byte (port 465 style)
	tls      *tls.Config
}

type received struct {
	from, to, data, auth string
	encrypted            bool
}

// testCert is a self-signed certificate for 127.0.0.1 and the pool that
// trusts it.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func newSMTPServer(t *testing.T, starttls, implicit bool) (*smtpServer, *x509.CertPool) {
	t.Helper()
	cert, pool := testCert(t)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln, got: make(chan received, 4), starttls: starttls, implicit: implicit, tls: cfg}
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
	return s, pool
}

func (s *smtpServer) serve(c net.Conn) {
	defer func() { c.Close() }()
	var rec received
	if s.implicit {
		c = tls.Server(c, s.tls)
		rec.encrypted = true
	}
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = c.Write([]byte(l + "\r\n")) }
	say("220 test.local ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		up := strings.ToUpper(cmd)
		switch {
		case strings.HasPrefix(up, "EHLO"):
			ext := []string{"test.local", "8BITMIME", "AUTH PLAIN"}
			if s.starttls && !rec.encrypted {
				ext = append(ext, "STARTTLS")
			}
			for i, e := range ext {
				sep := "-"
				if i == len(ext)-1 {
					sep = " "
				}
				say("250" + sep + e)
			}
		case up == "STARTTLS" && s.starttls:
			say("220 go ahead")
			c = tls.Server(c, s.tls)
			r = bufio.NewReader(c)
			rec.encrypted = true
		case strings.HasPrefix(up, "AUTH PLAIN"):
			rec.auth = strings.TrimSpace(cmd[len("AUTH PLAIN"):])
			if rec.auth == "" { // the credentials follow on their own line
				say("334 ")
				l, _ := r.ReadString('\n')
				rec.auth = strings.TrimSpace(l)
			}
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

func sendCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSMTP_Delivers(t *testing.T) {
	for _, tc := range []struct {
		name               string
		starttls, implicit bool
		mode               string
	}{
		{"STARTTLS by default", true, false, ""},
		{"implicit TLS", false, true, TLSImplicit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, pool := newSMTPServer(t, tc.starttls, tc.implicit)
			s := &SMTP{Addr: srv.ln.Addr().String(), From: "clinic@example.com", Username: "u", Password: "p", TLS: tc.mode,
				TLSConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
				Now:       func() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) }}
			if err := s.Send(sendCtx(t), Message{To: "pat@example.com", Subject: "Your visit — confirmed", Body: "Hello,\nsee you.\n"}); err != nil {
				t.Fatal(err)
			}
			rec := <-srv.got
			if !rec.encrypted {
				t.Fatal("the message went in clear text")
			}
			if cred, _ := base64.StdEncoding.DecodeString(rec.auth); string(cred) != "\x00u\x00p" {
				t.Errorf("auth %q", rec.auth)
			}
			if !strings.HasPrefix(rec.from, "<clinic@example.com>") || !strings.HasPrefix(rec.to, "<pat@example.com>") {
				t.Fatalf("envelope %+v", rec)
			}
			for _, want := range []string{"From: <clinic@example.com>\r\n", "To: <pat@example.com>\r\n", "Subject: =?UTF-8?q?Your_visit_", "Date: Mon, 02 Mar 2026 09:00:00 +0000\r\n",
				"Content-Type: text/plain; charset=UTF-8\r\n", "Message-ID: <", "Hello,\r\nsee you.\r\n"} {
				if !strings.Contains(rec.data, want) {
					t.Errorf("message lacks %q:\n%s", want, rec.data)
				}
			}
		})
	}
}

// A server that does not offer STARTTLS is refused by default: nothing is
// sent in clear text unless the operator says TLSNone.
func TestSMTP_RequiresTLS(t *testing.T) {
	srv, _ := newSMTPServer(t, false, false)
	s := &SMTP{Addr: srv.ln.Addr().String(), From: "clinic@example.com", Username: "u", Password: "p"}
	if err := s.Send(sendCtx(t), Message{To: "pat@example.com", Subject: "x", Body: "y"}); err == nil {
		t.Fatal("sent to a server without STARTTLS")
	}
	select {
	case rec := <-srv.got:
		t.Fatalf("the server got a message: %+v", rec)
	default:
	}
	// A certificate the client does not trust is refused too.
	tlsSrv, _ := newSMTPServer(t, true, false)
	s.Addr = tlsSrv.ln.Addr().String()
	if err := s.Send(sendCtx(t), Message{To: "pat@example.com", Subject: "x", Body: "y"}); err == nil {
		t.Fatal("sent to a server with an untrusted certificate")
	}
	// Clear text when asked for (a relay on this host).
	s.Addr, s.TLS = srv.ln.Addr().String(), TLSNone
	if err := s.Send(sendCtx(t), Message{To: "pat@example.com", Subject: "x", Body: "y"}); err != nil {
		t.Fatal(err)
	}
	if rec := <-srv.got; rec.encrypted || rec.auth == "" {
		t.Fatalf("%+v", rec)
	}
}

func TestSMTP_Errors(t *testing.T) {
	s := &SMTP{Addr: "127.0.0.1:1", From: "clinic@example.com"}
	if err := s.Send(sendCtx(t), Message{To: "a@b.c", Subject: "x"}); err == nil {
		t.Fatal("no server, no error")
	}
	srv, _ := newSMTPServer(t, false, false)
	s.Addr, s.TLS = srv.ln.Addr().String(), TLSNone
	if err := s.Send(sendCtx(t), Message{To: "a@b.c\r\nBcc: x@y.z", Subject: "x"}); err == nil {
		t.Fatal("a header injection was sent")
	}
	if err := (&SMTP{Addr: "mail.example.com:587", From: "c@example.com", TLS: "maybe"}).Check(); err == nil {
		t.Fatal("a bad TLS mode passed")
	}
	if m := (&SMTP{Addr: "mail.example.com:465"}).TLSMode(); m != TLSImplicit {
		t.Fatalf("port 465: %s", m)
	}
}

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"teleclinic/internal/mail"
)

// TestConfig_Senders: the mail and push channels are off until their flags
// are given, and bad settings are refused at start.
func TestConfig_Senders(t *testing.T) {
	parse := func(args ...string) *config {
		t.Helper()
		var c config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		serveFlags(fs, &c)
		if err := parseFlags(fs, args); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	m, apns, fcm, err := parse().senders()
	if err != nil || m != nil || apns != nil || fcm != nil {
		t.Fatalf("channels on without configuration: %v %v %v %v", m, apns, fcm, err)
	}
	m, _, _, err = parse("--smtp-addr", "mail.example.com:587", "--smtp-from", "clinic@example.com", "--smtp-username", "u").senders()
	if s, ok := m.(*mail.SMTP); err != nil || !ok || s.Addr != "mail.example.com:587" || s.From != "clinic@example.com" || s.Username != "u" {
		t.Fatalf("%#v %v", m, err)
	}
	if err := parse("--smtp-addr", "mail.example.com:587").validate(); err == nil {
		t.Fatal("--smtp-addr without --smtp-from accepted")
	}

	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	p8 := filepath.Join(dir, "AuthKey.p8")
	_ = os.WriteFile(p8, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	_, apns, _, err = parse("--apns-key-file", p8, "--apns-key-id", "K", "--apns-team-id", "T", "--apns-topic", "com.clinic.app").senders()
	if err != nil || apns == nil {
		t.Fatalf("apns: %v", err)
	}
	if _, _, _, err := parse("--apns-key-file", p8).senders(); err == nil {
		t.Fatal("an APNs key without its ids accepted")
	}
	if _, _, _, err := parse("--fcm-credentials-file", filepath.Join(dir, "missing.json")).senders(); err == nil {
		t.Fatal("a missing FCM credentials file accepted")
	}
}

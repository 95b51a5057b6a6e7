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

// parseServe parses args as serve's flags (and the environment).
func parseServe(t *testing.T, args ...string) *config {
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

// TestConfig_Senders: the mail and push channels are off until their flags
// are given, and bad settings are refused at start.
func TestConfig_Senders(t *testing.T) {
	parse := func(args ...string) *config { t.Helper(); return parseServe(t, args...) }
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

// TestConfig_ICE: STUN and TURN URLs are lists; TURN needs its secret (also
// from TELECLINIC_TURN_SECRET), and a URL that is not STUN or TURN is
// refused at start.
func TestConfig_ICE(t *testing.T) {
	parse := func(args ...string) *config { t.Helper(); return parseServe(t, args...) }
	if err := parse("--turn-url", "turn:t.example:3478").validate(); err == nil {
		t.Fatal("--turn-url without --turn-secret accepted")
	}
	if err := parse("--stun-url", "https://s.example").validate(); err == nil {
		t.Fatal("an https URL accepted as STUN")
	}
	t.Setenv("TELECLINIC_TURN_SECRET", "north")
	c := parse("--stun-url", "stun:s.example:3478, stun:s2.example:3478", "--turn-url", "turn:t.example:3478?transport=udp,turns:t.example:5349")
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if got := urlList(c.TURNURLs); len(got) != 2 || got[1] != "turns:t.example:5349" || c.TURNSecret != "north" || len(urlList(c.STUNURLs)) != 2 {
		t.Fatalf("%+v", c)
	}
}

// TestConfig_CallModes: a relay-only call needs a TURN server; LiveKit
// takes its address and both halves of its key, or nothing; the base URL
// is an absolute http(s) address (links and the SMART issuer are made
// from it).
func TestConfig_CallModes(t *testing.T) {
	parse := func(args ...string) *config { t.Helper(); return parseServe(t, args...) }
	for _, args := range [][]string{
		{"--turn-relay-only"},
		{"--livekit-url", "wss://sfu.example"},
		{"--livekit-url", "wss://sfu.example", "--livekit-api-key", "APIk"},
		{"--livekit-api-key", "APIk", "--livekit-api-secret", "s"},
		{"--livekit-url", "sfu.example", "--livekit-api-key", "APIk", "--livekit-api-secret", "s"},
		{"--base-url", "clinic.example.com"},
		{"--base-url", "ftp://clinic.example.com"},
		{"--base-url", "https://clinic.example.com/?x=1"},
	} {
		if err := parse(args...).validate(); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	t.Setenv("TELECLINIC_LIVEKIT_API_SECRET", "from-the-environment")
	c := parse("--livekit-url", "wss://sfu.example", "--livekit-api-key", "APIk", "--turn-url", "turn:t.example:3478", "--turn-secret", "x", "--turn-relay-only")
	if err := c.validate(); err != nil || c.LiveKitAPISecret != "from-the-environment" || !c.TURNRelayOnly {
		t.Fatalf("%+v: %v", c, err)
	}
}

package media_test

import (
	"testing"
	"time"

	"teleclinic/internal/media"
)

// TestTURNCredential_Coturn: the credential is coturn's use-auth-secret
// one. The expected password was computed independently:
// printf '%s' '1700000000:alice' | openssl dgst -sha1 -hmac 'north' -binary | base64
func TestTURNCredential_Coturn(t *testing.T) {
	user, pass := media.TURNCredential("north", "alice", time.Unix(1700000000, 0))
	if user != "1700000000:alice" || pass != "Cd/49soE35ICqcJF/bCTn8Z4OyE=" {
		t.Fatalf("%q %q", user, pass)
	}
}

// TestServers_Config: STUN servers as configured; TURN only with its
// secret, with a credential that expires after the TTL.
func TestServers_Config(t *testing.T) {
	now := time.Unix(1700000000, 0)
	if got := (media.Config{TURN: []string{"turn:t.example:3478"}}).Servers("u", now); len(got) != 0 {
		t.Fatalf("TURN without its secret: %+v", got)
	}
	got := media.Config{STUN: []string{"stun:s.example:3478"}, TURN: []string{"turn:t.example:3478?transport=udp"}, Secret: "north", TTL: time.Hour}.Servers("svc-1", now)
	if len(got) != 2 || got[0].URLs[0] != "stun:s.example:3478" || got[0].Username != "" {
		t.Fatalf("%+v", got)
	}
	want, pass := media.TURNCredential("north", "svc-1", now.Add(time.Hour))
	if got[1].Username != want || got[1].Credential != pass || got[1].Username != "1700003600:svc-1" {
		t.Fatalf("%+v", got[1])
	}
}

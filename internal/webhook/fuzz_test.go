package webhook

import (
	"net/netip"
	"testing"
)

// FuzzRefused: the address guard decides every 16-byte address without
// panicking, and decides an IPv4 address and its IPv4-mapped form alike.
func FuzzRefused(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "8.8.8.8", "::1", "2002:a00:1::", "2001::1", "::ffff:10.0.0.1", "::a00:1", "fe80::1", "64:ff9b::a00:1"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		ip := netip.AddrFrom16([16]byte(b))
		got := Refused(ip)
		if ip.Is4In6() && got != Refused(ip.Unmap()) {
			t.Fatalf("%v and %v decided differently", ip, ip.Unmap())
		}
	})
}

// FuzzCheckURL: the webhook address check never panics, and refuses what
// a request could not be made to.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com/x", "http://10.0.0.1/", "http://[::1]:80/", "https://user:pw@example.com", "ftp://x", "http://0x7f.1/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = CheckURL(s, false)
	})
}

// FuzzParseSecret: a webhook secret either parses to its bytes or is
// refused, never a panic.
func FuzzParseSecret(f *testing.F) {
	f.Add(NewSecret())
	f.Add("whsec_")
	f.Add("whsec_!!!")
	f.Fuzz(func(t *testing.T, s string) {
		if b, err := ParseSecret(s); err == nil && len(b) < 24 {
			t.Fatalf("accepted a %d-byte secret", len(b))
		}
	})
}

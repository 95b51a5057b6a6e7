package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrRefusedAddress is why a delivery to a private address did not go out.
var ErrRefusedAddress = errors.New("refused: a private or reserved address")

// refusedPrefixes are the networks a delivery may not reach: this host,
// private networks, link-local (which holds the cloud metadata address
// 169.254.169.254), shared carrier space, benchmarking, multicast and
// reserved ranges.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
	// IPv6 transition addresses that carry an IPv4 address a router may
	// deliver to: IPv4-compatible (::a.b.c.d, deprecated), 6to4 and
	// Teredo. No webhook receiver needs them, so none is reached through
	// them, whatever IPv4 address they carry.
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001::/32"),
}

// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4 address
// in their last 32 bits, which is checked in turn.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Refused reports whether a delivery may not connect to ip.
func Refused(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) {
		b := ip.As16()
		return Refused(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// guard resolves a receiver's host and connects only to an address it has
// checked. Every connection the client makes, including those a redirect
// asks for, goes through it.
type guard struct {
	allowPrivate bool
	lookup       func(ctx context.Context, network, host string) ([]netip.Addr, error)
	dial         func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (g *guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = g.lookup(ctx, "ip", host); err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		if !g.allowPrivate && Refused(ip) {
			errs = append(errs, fmt.Errorf("%s (%s): %w", host, ip, ErrRefusedAddress))
			continue
		}
		c, err := g.dial(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s: no address", host)
	}
	return nil, errors.Join(errs...)
}

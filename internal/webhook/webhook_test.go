package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestSend_SignatureVerifiedByTheStandardLibrary(t *testing.T) {
	secret := NewSecret()
	key, err := ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- wh.Verify(body, r.Header)
	}))
	defer srv.Close()
	c := NewClient(Options{AllowPrivate: true})
	now := time.Now().Unix()
	st, err := c.Send(context.Background(), Delivery{URL: srv.URL, ID: "msg_1", Timestamp: now, Body: []byte(`{"a":1}`), Secret: key})
	if err != nil || st != 200 {
		t.Fatalf("send: %d %v", st, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the standard library rejects our signature: %v", err)
	}
	// A body changed in transit does not verify.
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now, 10))
	h.Set("webhook-signature", Sign(key, "msg_1", now, []byte(`{"a":1}`)))
	if err := wh.Verify([]byte(`{"a":2}`), h); err == nil {
		t.Fatal("a tampered body verified")
	}
}

func TestWebhook_ParseSecret(t *testing.T) {
	for _, bad := range []string{"", "secret", "whsec_!!", "whsec_AAAA"} {
		if _, err := ParseSecret(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseSecret(NewSecret()); err != nil {
		t.Fatal(err)
	}
}

func TestSend_Non2xxIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	st, err := NewClient(Options{AllowPrivate: true}).Send(context.Background(), Delivery{URL: srv.URL, ID: "x", Body: []byte("{}")})
	if st != 503 || err == nil {
		t.Fatalf("%d %v", st, err)
	}
}

func TestSend_TimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	_, err := NewClient(Options{AllowPrivate: true, Timeout: 200 * time.Millisecond}).Send(context.Background(), Delivery{URL: srv.URL, ID: "x", Body: []byte("{}")})
	if err == nil {
		t.Fatal("a receiver that never answers acknowledged")
	}
}

// TestGuard_RefusesPrivateAddresses: without AllowPrivate nothing reaches
// this host, private networks, link-local or the metadata address, whether
// the URL names the address or a redirect does.
func TestGuard_RefusesPrivateAddresses(t *testing.T) {
	hits := 0
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer private.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(private.URL, "http://"))
	c := NewClient(Options{Timeout: 2 * time.Second})
	for _, u := range []string{
		private.URL,
		"http://127.0.0.1:" + port + "/hook",
		"http://10.0.0.1/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:" + port + "/hook",
		"http://[::ffff:127.0.0.1]:" + port + "/hook",
		"http://0.0.0.0:" + port + "/hook",
		"http://localhost:" + port + "/hook",
	} {
		_, err := c.Send(context.Background(), Delivery{URL: u, ID: "x", Body: []byte("{}")})
		if !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("%s: %v, want a refusal", u, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the private receiver was reached %d times", hits)
	}

	// A public receiver that redirects to a private one: the first hop is
	// allowed, the redirect is refused at its dial. The public name resolves
	// to a documentation address; only the final connect of that address is
	// pointed at a local server playing the public receiver.
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer redirector.Close()
	public := netip.MustParseAddr("203.0.113.10")
	g := &guard{
		lookup: func(ctx context.Context, network, host string) ([]netip.Addr, error) {
			if host == "hooks.example.com" {
				return []netip.Addr{public}, nil
			}
			return net.DefaultResolver.LookupNetIP(ctx, network, host)
		},
		dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == "203.0.113.10:80" {
				return net.Dial("tcp", strings.TrimPrefix(redirector.URL, "http://"))
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	rc := newClient(Options{Timeout: 2 * time.Second}, g)
	for _, to := range []string{"http://127.0.0.1:" + port + "/", "http://10.0.0.1/", "http://169.254.169.254/"} {
		_, err := rc.Send(context.Background(), Delivery{URL: "http://hooks.example.com/r?to=" + to, ID: "x", Body: []byte("{}")})
		if !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("redirect to %s: %v, want a refusal", to, err)
		}
	}
	if hits != 0 {
		t.Fatalf("a redirect reached the private receiver %d times", hits)
	}
	// The same public receiver answering 200 is delivered to: the guard lets
	// public addresses through.
	if st, err := rc.Send(context.Background(), Delivery{URL: "http://hooks.example.com/r", ID: "x", Body: []byte("{}")}); err != nil || st != 204 {
		t.Fatalf("public receiver: %d %v", st, err)
	}
}

func TestWebhook_Refused(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "172.20.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "::1": true, "fd00:ec2::254": true, "fe80::1": true, "64:ff9b::a00:1": true, "::ffff:10.0.0.1": true,
		"::7f00:1": true, "::8.8.8.8": true, "2002:7f00:1::1": true, "2002:808:808::1": true, "2001:0:4136:e378:8000:63bf:3fff:fdd2": true,
		"8.8.8.8": false, "203.0.113.10": false, "2606:4700::1111": false, "2001:4860:4860::8888": false,
	} {
		if got := Refused(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}

func TestWebhook_CheckURL(t *testing.T) {
	for _, bad := range []string{"", "ftp://x", "http://", "/path", "http://u:p@example.com/", "http://127.0.0.1/", "http://[::1]/", "http://169.254.169.254/"} {
		if CheckURL(bad, false) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := CheckURL("https://hooks.example.com/teleclinic", false); err != nil {
		t.Fatal(err)
	}
	if err := CheckURL("http://127.0.0.1:9000/", true); err != nil {
		t.Fatal(err)
	}
}

// TestDescribe: a failed delivery's text names the kind of failure and no
// address of the server's network or resolver.
func TestDescribe(t *testing.T) {
	// The resolver's answer for .invalid has taken over 2 s on a loaded
	// machine: the budget is the resolver's, not what is tested.
	c := NewClient(Options{Timeout: 15 * time.Second})
	cases := []struct{ url, says string }{
		{"http://no-such-host.invalid/hook", "DNS"},
		{"http://127.0.0.1:1/hook", "refused"}, // a private address, refused before any connection
	}
	for _, tc := range cases {
		_, err := c.Send(context.Background(), Delivery{URL: tc.url, ID: "msg_1", Timestamp: 1, Body: []byte("{}")})
		if err == nil || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "127.0.0") || strings.Contains(err.Error(), ":53") {
			t.Fatalf("%s: %v", tc.url, err)
		}
	}
	// With private addresses allowed (development), a closed port is a
	// refused connection, said without its address.
	_, err := NewClient(Options{AllowPrivate: true, Timeout: 2 * time.Second}).Send(context.Background(), Delivery{URL: "http://127.0.0.1:1/hook", ID: "msg_1", Timestamp: 1, Body: []byte("{}")})
	if err == nil || err.Error() != "connection refused by the receiver" {
		t.Fatalf("%v", err)
	}
}

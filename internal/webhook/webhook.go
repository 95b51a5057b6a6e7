// Package webhook sends signed HTTP deliveries to clinics' receivers: the
// outbound client with its guard against requests into private networks,
// and the Standard Webhooks signer. What an event means, and when it is
// retried, is the app's business.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configure a Client.
type Options struct {
	// AllowPrivate lets deliveries reach loopback, private, link-local and
	// other non-public addresses: for development and tests only.
	AllowPrivate bool
	// Timeout bounds one attempt, connection to last byte (default 30 s, the
	// receiver's acknowledgement limit).
	Timeout time.Duration
	// UserAgent names the sender (default "Teleclinic-Webhooks/1.0").
	UserAgent string
}

// Client posts deliveries. It is safe for concurrent use and keeps
// connections to receivers alive between deliveries.
type Client struct {
	hc  *http.Client
	ua  string
	max time.Duration
}

// NewClient returns a Client that resolves each receiver's name itself and
// connects only to an address it has checked, so neither a DNS answer that
// changes between check and use nor a redirect reaches a refused address.
func NewClient(o Options) *Client {
	return newClient(o, &guard{
		allowPrivate: o.AllowPrivate,
		lookup:       net.DefaultResolver.LookupNetIP,
		dial:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	})
}

func newClient(o Options, g *guard) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.UserAgent == "" {
		o.UserAgent = "Teleclinic-Webhooks/1.0"
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would connect on our behalf, past the guard
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.Timeout,
	}
	hc := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errTooManyRedirects
			}
			return nil
		},
	}
	return &Client{hc: hc, ua: o.UserAgent, max: o.Timeout}
}

// Delivery is one attempt's request.
type Delivery struct {
	URL       string
	ID        string // webhook-id: unique per attempt
	Timestamp int64  // webhook-timestamp: unix seconds of the attempt
	Body      []byte
	Secret    []byte // signs the attempt when not empty
}

// Send posts d and returns the receiver's status; err is nil only for a 2xx
// answered within the timeout.
func (c *Client) Send(ctx context.Context, d Delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.max)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if len(d.Secret) > 0 {
		req.Header.Set("webhook-id", d.ID)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(d.Timestamp, 10))
		req.Header.Set("webhook-signature", Sign(d.Secret, d.ID, d.Timestamp, d.Body))
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, &DeliveryError{Reason: describe(err), Err: err}
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // lets the connection be reused
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, fmt.Errorf("receiver answered %d", res.StatusCode)
	}
	return res.StatusCode, nil
}

// CloseIdle closes kept-alive connections.
func (c *Client) CloseIdle() { c.hc.CloseIdleConnections() }

// Sign is the Standard Webhooks signature of one attempt:
// "v1," + base64(HMAC-SHA256(secret, id "." timestamp "." body)).
func Sign(secret []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

const secretPrefix = "whsec_"

// NewSecret returns a new signing secret in the Standard Webhooks form.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ParseSecret decodes a secret written "whsec_" + base64 of 24 to 64 bytes.
func ParseSecret(s string) ([]byte, error) {
	if !strings.HasPrefix(s, secretPrefix) {
		return nil, errors.New(`a webhook secret starts with "whsec_" followed by base64`)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
	if err != nil || len(b) < 24 || len(b) > 64 {
		return nil, errors.New(`a webhook secret is "whsec_" followed by the base64 of 24 to 64 random bytes`)
	}
	return b, nil
}

// CheckURL checks that s can be a receiver: an absolute http or https URL
// with a host, without credentials in it; unless allowPrivate, a host
// written as an address must be a public one.
func CheckURL(s string, allowPrivate bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New("webhook_url must be an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return errors.New("webhook_url must not carry a user name or password")
	}
	if len(s) > 2048 {
		return errors.New("webhook_url must be at most 2048 characters")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && Refused(ip) {
		return fmt.Errorf("webhook_url points at %s, a private or reserved address", ip)
	}
	return nil
}

// errTooManyRedirects ends a delivery that was redirected a fourth time.
var errTooManyRedirects = errors.New("stopped after 3 redirects")

// DeliveryError is a delivery that reached no answer. Its text, which the
// clinic admin reads in the delivery log, says what failed (DNS, refused,
// a private address, timeout, TLS) and never the resolver's or the
// network's internal addresses; Err keeps the whole story for the
// server's own log.
type DeliveryError struct {
	Reason string
	Err    error
}

func (e *DeliveryError) Error() string { return e.Reason }
func (e *DeliveryError) Unwrap() error { return e.Err }

// describe says what kind of failure err is, in words fit for the clinic.
func describe(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var hostname x509.HostnameError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var nerr net.Error
	switch {
	case errors.Is(err, ErrRefusedAddress):
		return "refused: the receiver's host resolves to a private or reserved address"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "DNS: the receiver's host name does not exist"
	case errors.As(err, &dns) && dns.IsTimeout:
		return "DNS: the lookup of the receiver's host name timed out"
	case errors.As(err, &dns):
		return "DNS: the receiver's host name could not be looked up"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timeout: the receiver did not answer in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused by the receiver"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the receiver closed the connection before answering"
	case errors.As(err, &cert), errors.As(err, &hostname), errors.As(err, &unknown), errors.As(err, &invalid):
		return "TLS: the receiver's certificate is not valid for its host"
	case errors.As(err, &record):
		return "TLS: the receiver does not speak HTTPS on that port"
	case errors.Is(err, errTooManyRedirects):
		return errTooManyRedirects.Error()
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the receiver's network is unreachable"
	}
	return "the connection to the receiver failed"
}

// Package sms sends the clinic's text messages. The app puts texts in the
// outbox; a worker hands each to the clinic's Sender after the change that
// caused it commits. Twilio is the real adapter (its REST API, no SDK);
// Sandbox answers like Twilio's test credentials, sending nothing.
package sms

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Message is one outgoing text.
type Message struct {
	To   string // E.164
	From string // the clinic's number, E.164
	Body string
	// StatusCallback is where the carrier's delivery reports go ("": none).
	StatusCallback string
}

// Sent is the provider's receipt: its id for the message and the status
// it is in (queued, sent, delivered, undelivered, failed).
type Sent struct {
	SID    string
	Status string
}

// Sender delivers texts.
type Sender interface {
	Send(ctx context.Context, m Message) (Sent, error)
}

// Error is a refusal by the provider, with Twilio's code (21211: the To
// number is not valid; 21610: the person sent STOP; …). Permanent
// refusals are not retried.
type Error struct {
	Status  int // HTTP status of the answer (0 when sent by the sandbox)
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("sms: refused (%d): %s", e.Code, e.Message)
}

// Permanent reports whether sending again cannot help: a 4xx answer
// other than throttling.
func (e *Error) Permanent() bool {
	return e.Status != 429 && (e.Status == 0 || e.Status >= 400 && e.Status < 500)
}

// Signature is Twilio's X-Twilio-Signature of a request to addr (the full
// address Twilio called, with its query) carrying form: HMAC-SHA1, keyed by
// the account's auth token, of the address followed by each form key and
// value in key order, base64-encoded.
func Signature(authToken, addr string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(addr)
	for _, k := range keys {
		vs := slices.Clone(form[k])
		slices.Sort(vs)
		for _, v := range vs {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	m := hmac.New(sha1.New, []byte(authToken))
	m.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is Twilio's signature of the request.
func Verify(authToken, addr string, form url.Values, sig string) bool {
	if authToken == "" || sig == "" {
		return false
	}
	return hmac.Equal([]byte(Signature(authToken, addr, form)), []byte(sig))
}

// Keyword is what an incoming text asks of the clinic's texts.
type Keyword int

// The keywords carriers and Twilio honour (CTIA's opt-out words).
const (
	NoKeyword Keyword = iota
	Stop              // stop every text to this number
	Start             // texts again
	Help              // who is this, and how to stop
)

// KeywordOf reads an incoming text's body: one of the opt-out, opt-in or
// help words alone (any case, surrounding spaces and a final full stop
// ignored), else NoKeyword.
func KeywordOf(body string) Keyword {
	w := strings.ToUpper(strings.TrimRight(strings.TrimSpace(body), ".!"))
	switch w {
	case "STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE":
		return Stop
	case "START", "YES", "UNSTOP":
		return Start
	case "HELP", "INFO":
		return Help
	}
	return NoKeyword
}

// Normalize answers a phone number in E.164 (+ and 8 to 15 digits), from
// what a person types: spaces, dots, dashes and brackets dropped; a
// 10-digit number is taken as North American (+1). ok is false for
// anything else.
func Normalize(phone string) (e164 string, ok bool) {
	var d strings.Builder
	plus := false
	for i, r := range strings.TrimSpace(phone) {
		switch {
		case r >= '0' && r <= '9':
			d.WriteRune(r)
		case r == '+' && i == 0:
			plus = true
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')':
		default:
			return "", false
		}
	}
	n := d.String()
	if !plus && len(n) == 10 {
		n = "1" + n
	} else if !plus && !(len(n) == 11 && n[0] == '1') {
		return "", false
	}
	if len(n) < 8 || len(n) > 15 || n[0] == '0' {
		return "", false
	}
	return "+" + n, true
}

// Masked is a number as a delivery log shows it: the last four digits.
func Masked(e164 string) string {
	if len(e164) <= 4 {
		return "••••"
	}
	return strings.Repeat("•", len(e164)-4) + e164[len(e164)-4:]
}

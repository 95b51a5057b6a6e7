package sms

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// TwilioAPI is the address of Twilio's REST API.
const TwilioAPI = "https://api.twilio.com"

// Twilio sends through Twilio's Messages API: a form-encoded POST, basic
// auth with the account SID and its auth token.
type Twilio struct {
	BaseURL    string // TwilioAPI, or a mock's address in tests
	AccountSID string
	AuthToken  string
	HTTP       *http.Client
}

// Send creates the message at Twilio; Twilio queues it and reports its
// fate to m.StatusCallback.
func (t *Twilio) Send(ctx context.Context, m Message) (Sent, error) {
	form := url.Values{"To": {m.To}, "From": {m.From}, "Body": {m.Body}}
	if m.StatusCallback != "" {
		form.Set("StatusCallback", m.StatusCallback)
	}
	addr := strings.TrimRight(t.BaseURL, "/") + "/2010-04-01/Accounts/" + url.PathEscape(t.AccountSID) + "/Messages.json"
	req, err := http.NewRequestWithContext(ctx, "POST", addr, strings.NewReader(form.Encode()))
	if err != nil {
		return Sent{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(t.AccountSID, t.AuthToken)
	hc := t.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return Sent{}, fmt.Errorf("sms: twilio: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return Sent{}, fmt.Errorf("sms: twilio: %w", err)
	}
	if res.StatusCode/100 != 2 {
		// Twilio's error body: {"code": 21211, "message": "…", "status": 400}.
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Title   string `json:"title"`
		}
		_ = json.Unmarshal(raw, &e)
		return Sent{}, &Error{Status: res.StatusCode, Code: e.Code, Message: cmp.Or(e.Message, e.Title, res.Status)}
	}
	var out struct {
		SID    string `json:"sid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.SID == "" {
		return Sent{}, fmt.Errorf("sms: twilio: an answer without a message sid (%d)", res.StatusCode)
	}
	return Sent{SID: out.SID, Status: out.Status}, nil
}

// SandboxFrom is the one sender number the sandbox, like Twilio's test
// credentials, accepts.
const SandboxFrom = "+15005550006"

// Sandbox answers as Twilio does for its test credentials and sends
// nothing: the magic numbers below are refused with Twilio's codes, any
// other destination is accepted and its message "queued". No delivery
// report follows, as none follows a test message at Twilio.
type Sandbox struct{}

// The test credentials' magic numbers (Twilio's "Test credentials" page).
var sandboxTo = map[string]Error{
	"+15005550001": {Code: 21211, Message: "The 'To' number +15005550001 is not a valid phone number."},
	"+15005550002": {Code: 21612, Message: "The 'To' phone number: +15005550002, is not currently reachable using the 'From' phone number via SMS."},
	"+15005550003": {Code: 21408, Message: "Permission to send an SMS has not been enabled for the region indicated by the 'To' number: +15005550003."},
	"+15005550004": {Code: 21610, Message: "Attempt to send to unsubscribed recipient"},
	"+15005550009": {Code: 21614, Message: "'To' number is not a valid mobile number"},
}

var sandboxFrom = map[string]Error{
	"+15005550001": {Code: 21212, Message: "The 'From' number +15005550001 is not a valid phone number, shortcode, or alphanumeric sender ID."},
	"+15005550007": {Code: 21606, Message: "The 'From' phone number provided is not a valid, SMS-capable inbound phone number or short code for your account."},
	"+15005550008": {Code: 21611, Message: "This 'From' number has exceeded the maximum number of queued messages."},
}

// Send checks m as Twilio's test credentials would.
func (Sandbox) Send(ctx context.Context, m Message) (Sent, error) {
	if e, ok := sandboxFrom[m.From]; ok {
		e.Status = 400
		return Sent{}, &e
	}
	if m.From != SandboxFrom {
		return Sent{}, &Error{Status: 400, Code: 21606, Message: "The 'From' phone number provided is not a valid, SMS-capable inbound phone number or short code for your account (the sandbox sends from " + SandboxFrom + ")."}
	}
	if e, ok := sandboxTo[m.To]; ok {
		e.Status = 400
		return Sent{}, &e
	}
	if _, ok := Normalize(m.To); !ok {
		return Sent{}, &Error{Status: 400, Code: 21211, Message: "The 'To' number " + m.To + " is not a valid phone number."}
	}
	if strings.TrimSpace(m.Body) == "" {
		return Sent{}, &Error{Status: 400, Code: 21602, Message: "Message body is required."}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return Sent{SID: "SM" + hex.EncodeToString(b[:]), Status: "queued"}, nil
}

package sms_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"teleclinic/internal/sms"
)

// Twilio's own example of a signed request (its security documentation
// and helper libraries' tests): token 12345.
func TestSignature_TwilioExample(t *testing.T) {
	form := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675310"}, "Digits": {"1234"}, "From": {"+14158675310"}, "To": {"+18005551212"}}
	addr := "https://mycompany.com/myapp.php?foo=1&bar=2"
	if got := sms.Signature("12345", addr, form); got != "GvWf1cFY/Q7PnoempGyD5oXAezc=" {
		t.Fatalf("signature %q", got)
	}
	if !sms.Verify("12345", addr, form, "GvWf1cFY/Q7PnoempGyD5oXAezc=") {
		t.Fatal("the example does not verify")
	}
	form.Set("Digits", "1235")
	if sms.Verify("12345", addr, form, "GvWf1cFY/Q7PnoempGyD5oXAezc=") {
		t.Fatal("a changed form verifies")
	}
	if sms.Verify("", addr, url.Values{}, sms.Signature("", addr, url.Values{})) {
		t.Fatal("an empty token verifies")
	}
}

func TestKeywordOf(t *testing.T) {
	for body, want := range map[string]sms.Keyword{
		"STOP": sms.Stop, " stop. ": sms.Stop, "Unsubscribe": sms.Stop, "quit": sms.Stop,
		"START": sms.Start, "unstop": sms.Start, "yes": sms.Start,
		"help": sms.Help, "INFO": sms.Help,
		"stop texting me please": sms.NoKeyword, "": sms.NoKeyword, "see you at 3": sms.NoKeyword,
	} {
		if got := sms.KeywordOf(body); got != want {
			t.Errorf("%q: %v, want %v", body, got, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"(415) 555-0134": "+14155550134", "415.555.0134": "+14155550134", "+44 20 7946 0958": "+442079460958",
		"1 415 555 0134": "+14155550134", "+1-415-555-0134": "+14155550134",
		"555-0134": "", "+0 123 456 789": "", "415 555 0134 ext 2": "", "": "", "+1234567890123456": "", "44 20 7946 0958": "",
	} {
		got, ok := sms.Normalize(in)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
	if m := sms.Masked("+14155550134"); m != "••••••••0134" {
		t.Errorf("masked %q", m)
	}
}

// The sandbox answers as Twilio's test credentials do.
func TestSandbox(t *testing.T) {
	ctx := context.Background()
	s := sms.Sandbox{}
	sent, err := s.Send(ctx, sms.Message{To: "+14155550134", From: sms.SandboxFrom, Body: "hi"})
	if err != nil || !strings.HasPrefix(sent.SID, "SM") || len(sent.SID) != 34 || sent.Status != "queued" {
		t.Fatalf("%+v %v", sent, err)
	}
	for _, c := range []struct {
		to, from string
		code     int
	}{
		{"+15005550001", sms.SandboxFrom, 21211}, {"+15005550004", sms.SandboxFrom, 21610}, {"+15005550009", sms.SandboxFrom, 21614},
		{"+14155550134", "+15005550001", 21212}, {"+14155550134", "+14155550100", 21606}, {"not a number", sms.SandboxFrom, 21211},
	} {
		_, err := s.Send(ctx, sms.Message{To: c.to, From: c.from, Body: "hi"})
		var e *sms.Error
		if !errors.As(err, &e) || e.Code != c.code || !e.Permanent() {
			t.Errorf("%s from %s: %v, want %d", c.to, c.from, err, c.code)
		}
	}
}

// The adapter's answers: Twilio's error body read into Error; a 5xx and a
// 429 are worth retrying, a 4xx is not.
func TestTwilio_Errors(t *testing.T) {
	status := 400
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"code": 21211, "message": "The 'To' number is not a valid phone number.", "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}`))
	}))
	defer srv.Close()
	tw := &sms.Twilio{BaseURL: srv.URL, AccountSID: "AC1", AuthToken: "t", HTTP: srv.Client()}
	for st, permanent := range map[int]bool{400: true, 404: true, 429: false, 500: false, 503: false} {
		status = st
		_, err := tw.Send(context.Background(), sms.Message{To: "+1", From: "+2", Body: "b"})
		var e *sms.Error
		if !errors.As(err, &e) || e.Code != 21211 || e.Status != st || e.Permanent() != permanent {
			t.Errorf("%d: %v (permanent %v)", st, err, permanent)
		}
	}
}

// TestTwilio_Contract runs the adapter against a mock served from Twilio's
// own OpenAPI description (Prism, started by .ci/run): the mock answers 201
// only to a request its description allows (path, basic auth, form
// fields), and 422/401 otherwise.
func TestTwilio_Contract(t *testing.T) {
	base := os.Getenv("TELECLINIC_TWILIO_MOCK")
	if base == "" {
		t.Skip("TELECLINIC_TWILIO_MOCK is not set: no mock of Twilio's API to run against (.ci/run starts one with Prism on Twilio's OpenAPI description)")
	}
	ctx := context.Background()
	sid := "AC" + strings.Repeat("0123456789abcdef", 2)
	tw := &sms.Twilio{BaseURL: base, AccountSID: sid, AuthToken: "token"}
	sent, err := tw.Send(ctx, sms.Message{To: "+14155550134", From: "+14155550100", Body: "Your visit is booked: https://clinic.example/v/abc",
		StatusCallback: "https://clinic.example/sms/twilio/acme/status"})
	if err != nil || !strings.HasPrefix(sent.SID, "SM") || sent.Status == "" {
		t.Fatalf("send: %+v %v", sent, err)
	}
	// The mock does refuse what Twilio would: an account SID that is not
	// one, a status callback that is not an address, no credentials.
	var e *sms.Error
	for name, bad := range map[string]*sms.Twilio{
		"sid":      {BaseURL: base, AccountSID: "AC12", AuthToken: "token"},
		"callback": tw,
	} {
		_, err = bad.Send(ctx, sms.Message{To: "+14155550134", From: "+14155550100", Body: "x", StatusCallback: map[string]string{"callback": "not an address"}[name]})
		if !errors.As(err, &e) || e.Status != 422 || !e.Permanent() {
			t.Errorf("%s: %v", name, err)
		}
	}
	req, _ := http.NewRequest("POST", base+"/2010-04-01/Accounts/"+sid+"/Messages.json", strings.NewReader("To=%2B14155550134&From=%2B14155550100&Body=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 401 {
		t.Fatalf("without credentials: %v %v", res, err)
	}
}

package eligibility

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Sandbox is the zero-configuration checker. Like a clearinghouse's test
// mode it reads the inquiry and answers by the subscriber (member) number,
// so every outcome can be tried:
//
//	last digit 0–6, or not a digit   active (covered; plan, copay and deductible shown)
//	last digit 7                     inactive (coverage ended)
//	last digit 8                     not_found (the payer does not know the member)
//	last digit 9                     error (the payer did not answer)
//
// It never calls out. Its answers say "sandbox": nothing here is a real
// payer's word.
type Sandbox struct{}

// Name is shown in the job's details.
func (Sandbox) Name() string { return "sandbox" }

// Check answers an X12 270 inquiry.
func (Sandbox) Check(ctx context.Context, inquiry []byte) (*Result, error) {
	segs := Segments(inquiry)
	var member, payer, st, se string
	inTx, n, seCount := false, 0, -1
	for _, s := range segs {
		if s[0] == "ST" && len(s) > 1 {
			st, inTx, n = s[1], true, 0
		}
		if inTx {
			n++
		}
		if s[0] == "SE" && len(s) > 1 {
			se, seCount, inTx = s[1], n, false
		}
		if s[0] == "NM1" && len(s) > 9 && s[1] == "IL" {
			member = s[9]
		}
		if s[0] == "NM1" && len(s) > 3 && s[1] == "PR" {
			payer = s[3]
		}
	}
	if st != "270" || se != strconv.Itoa(seCount) {
		return nil, fmt.Errorf("sandbox: not a well-formed 270 (ST %q, SE %q for %d segments)", st, se, seCount)
	}
	if member == "" {
		return nil, errors.New("sandbox: the inquiry names no subscriber")
	}
	details := map[string]any{"checker": "sandbox", "member_id": member, "payer": payer}
	last := member[len(member)-1]
	switch {
	case last == '7':
		details["message"] = "Coverage ended (sandbox)."
		details["coverage_end"] = "2025-12-31"
		return &Result{Status: StatusInactive, Details: details}, nil
	case last == '8':
		details["message"] = "Subscriber not found (sandbox; X12 AAA 75)."
		return &Result{Status: StatusNotFound, Details: details}, nil
	case last == '9':
		details["message"] = "Payer unavailable (sandbox; X12 AAA 42)."
		return &Result{Status: StatusError, Details: details}, nil
	}
	details["plan_name"] = "Sandbox PPO"
	details["message"] = "Active coverage (sandbox)."
	details["copay_telehealth"] = "25.00"
	details["deductible_remaining"] = "500.00"
	details["currency"] = "USD"
	return &Result{Status: StatusActive, Details: details}, nil
}

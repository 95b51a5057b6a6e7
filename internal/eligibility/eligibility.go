// Package eligibility asks a payer whether a patient's insurance covers a
// visit. The job code builds an ASC X12 270 inquiry (005010X279A1) and hands
// it to a Checker: the sandbox here, or a clearinghouse adapter that sends
// the same document, so adding one touches nothing else.
package eligibility

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Outcomes of a check.
const (
	StatusPending  = "pending"
	StatusActive   = "active"    // covered
	StatusInactive = "inactive"  // the plan exists, coverage has ended
	StatusNotFound = "not_found" // the payer does not know the subscriber
	StatusError    = "error"     // the payer could not answer
)

// Request is what an inquiry is about.
type Request struct {
	ControlNumber int64 // unique per inquiry (the job id)
	Created       time.Time
	Payer         Party
	Provider      Party // the clinic, as information receiver
	Subscriber    Subscriber
	ServiceDate   time.Time
}

// Party is a payer or a provider: a name and an identifier.
type Party struct {
	Name string
	ID   string
}

// Subscriber is the insured person.
type Subscriber struct {
	MemberID   string
	Group      string
	FirstName  string
	MiddleName string
	LastName   string
	DOB        string // YYYY-MM-DD
	Gender     int    // 1 male, 2 female, else unknown
}

// Result is a payer's answer.
type Result struct {
	Status  string
	Details map[string]any
}

// Checker answers an X12 270 inquiry.
type Checker interface {
	Check(ctx context.Context, inquiry []byte) (*Result, error)
	// Name says which checker answered, for the job's details.
	Name() string
}

// clean keeps a value from breaking the X12 separators (* ~ : ^) and
// uppercases it, as payers expect.
func clean(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '*' || r == '~' || r == ':' || r == '^' || r < 0x20:
			return -1
		case r > 0x7e:
			return '?'
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(s)))
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// Build270 writes the inquiry as an X12 270 interchange: one functional
// group, one transaction, subscriber level, service type 30 (health
// benefit plan coverage).
func Build270(r Request) []byte {
	ctl := fmt.Sprintf("%09d", r.ControlNumber%1_000_000_000)
	sender, receiver := clean(r.Provider.ID, 15), clean(r.Payer.ID, 15)
	t := r.Created.UTC()
	var segs []string
	add := func(elems ...string) { segs = append(segs, strings.Join(elems, "*")) }
	add("ST", "270", "0001", "005010X279A1")
	add("BHT", "0022", "13", ctl, t.Format("20060102"), t.Format("1504"))
	add("HL", "1", "", "20", "1")
	add("NM1", "PR", "2", clean(r.Payer.Name, 60), "", "", "", "", "PI", clean(r.Payer.ID, 80))
	add("HL", "2", "1", "21", "1")
	add("NM1", "1P", "2", clean(r.Provider.Name, 60), "", "", "", "", "SV", clean(r.Provider.ID, 80))
	add("HL", "3", "2", "22", "0")
	add("TRN", "1", ctl, "9TELECLINC")
	add("NM1", "IL", "1", clean(r.Subscriber.LastName, 60), clean(r.Subscriber.FirstName, 35), clean(r.Subscriber.MiddleName, 25), "", "", "MI", clean(r.Subscriber.MemberID, 80))
	if g := clean(r.Subscriber.Group, 50); g != "" {
		add("REF", "6P", g)
	}
	if dob, err := time.Parse("2006-01-02", r.Subscriber.DOB); err == nil {
		add("DMG", "D8", dob.Format("20060102"), map[int]string{1: "M", 2: "F"}[r.Subscriber.Gender])
	}
	add("DTP", "291", "D8", r.ServiceDate.UTC().Format("20060102"))
	add("EQ", "30")
	add("SE", fmt.Sprint(len(segs)+1), "0001")

	var b strings.Builder
	// ISA is fixed width: 106 characters with its terminator.
	fmt.Fprintf(&b, "ISA*00*%-10s*00*%-10s*ZZ*%-15s*ZZ*%-15s*%s*%s*^*00501*%s*0*P*:~", "", "", sender, receiver,
		t.Format("060102"), t.Format("1504"), ctl)
	fmt.Fprintf(&b, "GS*HS*%s*%s*%s*%s*%d*X*005010X279A1~", sender, receiver, t.Format("20060102"), t.Format("1504"), r.ControlNumber%1_000_000_000)
	for _, s := range segs {
		b.WriteString(strings.TrimRight(s, "*"))
		b.WriteByte('~')
	}
	fmt.Fprintf(&b, "GE*1*%d~IEA*1*%s~", r.ControlNumber%1_000_000_000, ctl)
	return []byte(b.String())
}

// Segments splits an X12 document into its segments' elements.
func Segments(doc []byte) [][]string {
	var out [][]string
	for _, s := range strings.Split(string(doc), "~") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, strings.Split(s, "*"))
		}
	}
	return out
}

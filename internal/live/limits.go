package live

import (
	"fmt"
	"sync"

	"teleclinic/internal/clinic"
)

// Limits bounds the event streams one process holds open, for both doors:
// per credential (a person's tabs), per client address (a clinic behind
// one NAT) and in all. Each open stream holds a connection, a file
// descriptor and its goroutines: without bounds one client could take
// the server's descriptors (measured: 19,960 anonymous streams from one
// client reached 19,990 of 20,000).
type Limits struct {
	PerCredential, PerAddress, Total int

	mu     sync.Mutex
	byCred map[string]int
	byAddr map[string]int
	total  int
}

// Default bounds (serve's --max-streams* flags).
const (
	DefaultStreamsPerCredential = 20
	DefaultStreamsPerAddress    = 500
	DefaultStreams              = 10000
)

// NewLimits returns limits with these bounds; 0 is the default, a negative
// bound none.
func NewLimits(perCredential, perAddress, total int) *Limits {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	return &Limits{PerCredential: def(perCredential, DefaultStreamsPerCredential), PerAddress: def(perAddress, DefaultStreamsPerAddress),
		Total: def(total, DefaultStreams), byCred: map[string]int{}, byAddr: map[string]int{}}
}

// Open takes a place for a stream of credential cred from address addr
// ("" for none), or refuses: 429 (too_many) past a credential's or an
// address's bound, 503 (busy) past the process's, each with Retry-After.
// The caller calls release when the stream ends.
func (l *Limits) Open(cred, addr string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.Total >= 0 && l.total >= l.Total:
		return nil, &clinic.Error{Code: clinic.EBusy, RetryAfter: 10,
			Message: fmt.Sprintf("This server holds the most event streams it takes (%d); try again shortly.", l.Total)}
	case cred != "" && l.PerCredential >= 0 && l.byCred[cred] >= l.PerCredential:
		return nil, &clinic.Error{Code: clinic.ETooMany, RetryAfter: 30,
			Message: fmt.Sprintf("This credential has %d event streams open, the most it may; close one first.", l.byCred[cred])}
	case addr != "" && l.PerAddress >= 0 && l.byAddr[addr] >= l.PerAddress:
		return nil, &clinic.Error{Code: clinic.ETooMany, RetryAfter: 30,
			Message: fmt.Sprintf("Your address has %d event streams open, the most it may; close one first.", l.byAddr[addr])}
	}
	l.total++
	if cred != "" {
		l.byCred[cred]++
	}
	if addr != "" {
		l.byAddr[addr]++
	}
	var once sync.Once
	return func() { once.Do(func() { l.close(cred, addr) }) }, nil
}

func (l *Limits) close(cred, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	release(l.byCred, cred)
	release(l.byAddr, addr)
}

// release gives back one of key's places; the maps hold only keys with
// streams open.
func release(m map[string]int, key string) {
	if key == "" {
		return
	}
	if m[key]--; m[key] <= 0 {
		delete(m, key)
	}
}

// CredentialKey names p's credential for Open: a user's token, a clinic's
// admin token or API key; "" for a caller with the clinic's code only.
func CredentialKey(p *clinic.Principal) string {
	switch {
	case p == nil || p.Account == nil:
		return ""
	case p.TokenID != 0:
		return fmt.Sprintf("token:%d", p.TokenID)
	case p.Kind == clinic.CredAccountCode:
		return ""
	}
	return fmt.Sprintf("clinic:%d:%d", p.Account.ID, p.Kind)
}

// Len is how many streams are open.
func (l *Limits) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

package testenv

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Outcome is what a cell of an authorization matrix expects of a caller on
// a route, or what the answer it got was.
type Outcome byte

// The outcomes of a cell.
const (
	// Allow: let through (judged by status class: a request without the
	// right body may still be a 400).
	Allow Outcome = 'A'
	// Refuse: refused for the credential (401, the door's sign-in).
	Refuse Outcome = 'R'
	// Deny: denied the object (403 or 404).
	Deny Outcome = 'D'
	// Missing: let through to look up an object the fixture does not
	// have: exactly 404. It shows the credential and role checks let the
	// caller in.
	Missing Outcome = 'N'
	// Gone: let through, the object there or deleted by an earlier cell:
	// 2xx or 404.
	Gone Outcome = 'G'
	// Failed: a 5xx, which no cell expects.
	Failed Outcome = '!'
)

// Answer is a cell's answer: its status and the door's class of it.
type Answer struct {
	Status int
	Class  Outcome
	Detail string // shown on a failure (the start of the body, a redirect)
}

// Matrix is an authorization matrix: every route of a door × every kind
// of caller, each cell sent over HTTP. The doors (httpapi's routes, the
// portal's pages) each supply their callers, their declarations and how
// a cell is sent and classified; the running and the judging are here.
type Matrix struct {
	Name    string
	Callers []string
	// Routes are the door's registered routes ("GET /path").
	Routes []string
	// Want is a route's declared row, one outcome per caller in Callers'
	// order; nil when the route has none (the test then fails).
	Want func(route string) []Outcome
	// Rank orders the routes (reads before writes, what ends a session
	// last); lower runs first.
	Rank func(route string) int
	// Do sends route as caller.
	Do func(route, caller string) Answer
}

// Row is a declaration written as one letter per caller ("RRDDAA").
func Row(letters string) []Outcome { return []Outcome(letters) }

// Run sends every cell and fails t on each that differs from its row, and
// on a route without a row. On failure it logs the observed rows, in the
// declarations' own form.
func (m Matrix) Run(t *testing.T) {
	t.Helper()
	routes := append([]string(nil), m.Routes...)
	if m.Rank != nil {
		sort.SliceStable(routes, func(i, j int) bool { return m.Rank(routes[i]) < m.Rank(routes[j]) })
	}
	cells, failures := 0, 0
	var observed []string
	for _, route := range routes {
		want := m.Want(route)
		if len(want) != len(m.Callers) {
			t.Errorf("%s: route %s has no row in the authorization matrix", m.Name, route)
			continue
		}
		got := make([]byte, len(m.Callers))
		for i, who := range m.Callers {
			a := m.Do(route, who)
			cells++
			o := a.Class
			if a.Status >= 500 {
				o = Failed
			}
			switch {
			case want[i] == Missing && a.Status == http.StatusNotFound, want[i] == Gone && (o == Allow || a.Status == http.StatusNotFound):
				o = want[i]
			}
			got[i] = byte(o)
			if o != want[i] {
				failures++
				t.Errorf("%s as %s: %d (%c), want %c: %.200s", route, who, a.Status, o, want[i], a.Detail)
			}
		}
		observed = append(observed, strconv.Quote(route)+": "+strconv.Quote(string(got))+",")
	}
	if t.Failed() {
		t.Logf("%s observed:\n%s", m.Name, strings.Join(observed, "\n"))
	}
	t.Logf("%s: %d routes × %d callers = %d cells, %d failed", m.Name, len(routes), len(m.Callers), cells, failures)
}

// ClassifyAPI puts an API status in its class: 401 (and, where the spec
// says so, a missing token's 400) refuses, 403 and 404 deny.
func ClassifyAPI(status int, missingTokenIs400 bool) Outcome {
	switch {
	case status == http.StatusUnauthorized, missingTokenIs400 && status == http.StatusBadRequest:
		return Refuse
	case status == http.StatusForbidden, status == http.StatusNotFound:
		return Deny
	}
	return Allow
}

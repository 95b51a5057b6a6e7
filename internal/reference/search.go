package reference

import "strings"

// Query is a search of one list: Q is a code (with or without its dot, any
// case) or words, matched anywhere in an entry's code or text; empty
// matches everything. Limit caps the answer; 0 is the whole list.
type Query struct {
	Q     string
	Limit int
}

// FindDiagnoses searches the diagnoses by code and description.
func (l *Lists) FindDiagnoses(q Query) []Diagnosis {
	return find(l.Diagnoses, q, func(d Diagnosis) []string { return []string{d.Code, d.Description} })
}

// FindProcedures searches the procedures by code, text and description.
func (l *Lists) FindProcedures(q Query) []Entry { return find(l.Procedures, q, entryFields) }

// FindModifiers searches the billing modifiers as FindProcedures does.
func (l *Lists) FindModifiers(q Query) []Entry { return find(l.Modifiers, q, entryFields) }

// FindPayers searches the payers by code and name.
func (l *Lists) FindPayers(q Query) []Payer {
	return find(l.Payers, q, func(p Payer) []string { return []string{p.Code, p.Name} })
}

func entryFields(e Entry) []string { return []string{e.ID, e.Text, e.Description} }

// find is the entries of list that match q, in the list's order.
func find[T any](list []T, q Query, fields func(T) []string) []T {
	needle := strings.ToLower(strings.TrimSpace(q.Q))
	code := NormCode(needle)
	out := []T{}
	for _, e := range list {
		if q.Limit > 0 && len(out) >= q.Limit {
			break
		}
		if needle == "" || matches(fields(e), needle, code) {
			out = append(out, e)
		}
	}
	return out
}

func matches(fields []string, needle, code string) bool {
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), needle) || strings.Contains(NormCode(f), code) {
			return true
		}
	}
	return false
}

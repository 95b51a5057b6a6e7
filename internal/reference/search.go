package reference

import (
	"sort"
	"strings"
)

// Query is a search of one list: Q is a code (with or without its dot, any
// case) or words, matched anywhere in an entry's code or text; empty
// matches everything. Limit caps the answer; 0 is the whole list.
type Query struct {
	Q     string
	Limit int
}

// FindDiagnoses searches the diagnoses as a coder expects (dxIndex.find):
// the code typed first, then the codes it begins, then the conditions
// whose description holds every word, the clinic's common codes and the
// closest descriptions first. Only billable codes are found: a category
// header is not a diagnosis of a claim.
func (l *Lists) FindDiagnoses(q Query) []Diagnosis { return l.diagnoses().find(q) }

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

// dxIndex is a release's billable codes ready to search: their codes
// sorted (for a code and the codes it begins), and an inverted index of
// their descriptions' words (for words typed as prefixes). A search
// reads postings only, so the whole release (74,719 codes) answers in
// well under a millisecond (BenchmarkFindDiagnoses, docs/performance.md:
// the target is p99 under 5 ms); it is built once a release, in about
// half a second, and never changed: a new release is a new index.
type dxIndex struct {
	year  string
	codes []Diagnosis // billable, in code order
	norm  []string    // codes[i]'s code as compared, sorted with codes
	// nwords is the number of words in codes[i]'s description; common
	// marks the clinic's common codes (the built-in list), offered first.
	nwords []uint8
	common []bool
	words  []string           // every description word, sorted
	post   map[string][]int32 // word → the codes (indexes) it is in
	// text describes every code known: this release's, its headers and
	// codes of earlier releases still on notes.
	text     map[string]string
	billable map[string]bool
}

// wordsOf are a description's words: lower case, split at anything that
// is not a letter or a digit ("COVID-19" is "covid" and "19").
func wordsOf(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	})
}

// newDxIndex indexes codes (billable ones are found; every one is
// described), with common the built-in list's codes and retired the
// descriptions of codes of earlier releases.
func newDxIndex(year string, codes []Code, common map[string]bool, retired map[string]string) *dxIndex {
	x := &dxIndex{year: year, post: map[string][]int32{}, text: map[string]string{}, billable: map[string]bool{}}
	for code, desc := range retired {
		x.text[code] = desc
	}
	for _, c := range codes {
		n := NormCode(c.Code)
		x.text[n] = c.Long
		if c.Billable {
			x.billable[n] = true
			x.codes = append(x.codes, Diagnosis{Code: c.Code, Description: c.Long})
		}
	}
	sort.Slice(x.codes, func(i, j int) bool { return NormCode(x.codes[i].Code) < NormCode(x.codes[j].Code) })
	x.norm = make([]string, len(x.codes))
	x.nwords = make([]uint8, len(x.codes))
	x.common = make([]bool, len(x.codes))
	for i, d := range x.codes {
		x.norm[i] = NormCode(d.Code)
		x.common[i] = common[x.norm[i]]
		ws := wordsOf(d.Description)
		x.nwords[i] = uint8(min(len(ws), 255))
		seen := map[string]bool{}
		for _, w := range ws {
			if !seen[w] {
				seen[w] = true
				x.post[w] = append(x.post[w], int32(i))
			}
		}
	}
	x.words = make([]string, 0, len(x.post))
	for w := range x.post {
		x.words = append(x.words, w)
	}
	sort.Strings(x.words)
	return x
}

// emptyListLimit caps a search with neither words nor a limit (the spec's
// list of the whole code set, which a release makes 74,719 long): the
// common codes first, then the rest in code order.
const emptyListLimit = 1000

func (x *dxIndex) find(q Query) []Diagnosis {
	limit := q.Limit
	needle := strings.TrimSpace(q.Q)
	if limit <= 0 {
		limit = len(x.codes)
		if x.year != "" && needle == "" {
			limit = emptyListLimit
		}
	}
	out := make([]Diagnosis, 0, min(limit, 64))
	taken := map[int]bool{}
	take := func(i int) bool {
		if !taken[i] {
			taken[i] = true
			out = append(out, x.codes[i])
		}
		return len(out) < limit
	}
	if needle == "" {
		for _, want := range []bool{true, false} {
			for i := range x.codes {
				if x.common[i] == want && !take(i) {
					return out
				}
			}
		}
		return out
	}
	// The code typed, then the codes it begins.
	if code := NormCode(needle); looksLikeCode(code) {
		from := sort.SearchStrings(x.norm, code)
		if from < len(x.norm) && x.norm[from] == code && !take(from) {
			return out
		}
		for i := from; i < len(x.norm) && strings.HasPrefix(x.norm[i], code); i++ {
			if !take(i) {
				return out
			}
		}
	}
	// Then the descriptions holding every word typed (as a word's start).
	for _, i := range x.byWords(wordsOf(needle), limit) {
		if !take(i) {
			break
		}
	}
	return out
}

// byWords is the first limit codes whose description has a word beginning
// with each of words (a word of one letter or digit must be the word),
// ranked: the common codes first, then those with the fewest words
// besides the ones typed, then in code order. The ranking is a counting
// sort by (common, word count), so a word found in thousands of codes
// costs its postings, not a sort of them.
func (x *dxIndex) byWords(words []string, limit int) []int {
	if len(words) == 0 || len(words) > 255 {
		return nil
	}
	hits := make([]uint8, len(x.codes))
	for k, w := range words {
		lo := sort.SearchStrings(x.words, w)
		for j := lo; j < len(x.words) && strings.HasPrefix(x.words[j], w); j++ {
			if len(w) == 1 && x.words[j] != w {
				break // sorted: the exact word comes first
			}
			for _, i := range x.post[x.words[j]] {
				if hits[i] == uint8(k) {
					hits[i] = uint8(k + 1)
				}
			}
		}
	}
	// Buckets by rank: 0–255 the common codes by word count, 256–511 the
	// others; within a bucket, code order.
	var buckets [512][]int
	n := 0
	for i, h := range hits {
		if int(h) == len(words) {
			b := int(x.nwords[i])
			if !x.common[i] {
				b += 256
			}
			if len(buckets[b]) < limit {
				buckets[b] = append(buckets[b], i)
			}
			n++
		}
	}
	out := make([]int, 0, min(n, limit))
	for _, b := range buckets {
		for _, i := range b {
			if len(out) == limit {
				return out
			}
			out = append(out, i)
		}
	}
	return out
}

// looksLikeCode says whether s (as NormCode writes it) may be a code or
// a code's start: a letter and a digit, then letters and digits.
func looksLikeCode(s string) bool {
	if len(s) < 2 || len(s) > 7 || s[0] < 'A' || s[0] > 'Z' || s[1] < '0' || s[1] > '9' {
		return false
	}
	return validCode(s)
}

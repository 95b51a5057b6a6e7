// Package reference serves the insurance reference lists: diagnoses
// (ICD-10-CM), procedures (HCPCS Level II), billing modifiers and payers.
// The lists are data files embedded from data/ (SOURCES.md says where each
// comes from); a directory of newer files may replace them at start.
package reference

import (
	"bufio"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

//go:embed data/*.tsv
var embedded embed.FS

// Entry is a procedure, modifier or insurer: {id, text, description}.
type Entry struct {
	ID          string
	Text        string
	Description string
}

// Diagnosis is an ICD-10-CM code: Code with its dot (E11.9), as shown.
type Diagnosis struct {
	Code        string
	Description string
}

// Payer is an insurance carrier.
type Payer struct {
	Code, Name, PayerID                            string
	Address1, Address2, City, State, Zip, AreaCode string
}

// Lists holds every list, and indexes for validating codes. The
// diagnoses are a release of ICD-10-CM that may be replaced while the
// server runs (SetRelease); a reader sees the old index or the new one,
// whole.
type Lists struct {
	Procedures,
	Modifiers []Entry
	Payers []Payer

	dx        atomic.Pointer[dxIndex]
	common    map[string]bool   // the built-in diagnoses: the clinic's common codes
	proc, mod map[string]string // normalised code → description
}

func (l *Lists) diagnoses() *dxIndex { return l.dx.Load() }

// SetRelease makes rel the diagnoses searched and accepted on claims;
// retired describes codes of earlier releases that notes may still hold
// (normalised code → description).
func (l *Lists) SetRelease(rel *Release, retired map[string]string) {
	l.dx.Store(newDxIndex(rel.Year, rel.Codes, l.common, retired))
}

// ReleaseYear is the fiscal year of the ICD-10-CM release in use, "" for
// the built-in list of common codes.
func (l *Lists) ReleaseYear() string { return l.diagnoses().year }

// DiagnosisCount is how many billable codes the diagnoses hold.
func (l *Lists) DiagnosisCount() int { return len(l.diagnoses().codes) }

// Load reads the embedded lists, then replaces any of them found in dir
// (empty: none). dir may hold icd10cm-codes.txt (the CMS/CDC release format:
// a code without its dot, spaces, the description), dxs.tsv, procedures.tsv,
// billing_modifiers.tsv and payers.tsv.
func Load(dir string) (*Lists, error) {
	l := &Lists{}
	open := func(name string) (io.ReadCloser, error) {
		if dir != "" {
			f, err := os.Open(filepath.Join(dir, name))
			if err == nil {
				return f, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		return embedded.Open("data/" + name)
	}
	var builtin, fromDir []Code
	err := readTSV(func(name string) (io.ReadCloser, error) { return embedded.Open("data/" + name) }, "dxs.tsv", 2, func(f []string) {
		builtin = append(builtin, Code{Code: f[0], Billable: true, Long: f[1]})
	})
	if err != nil {
		return nil, err
	}
	l.common = map[string]bool{}
	for _, c := range builtin {
		l.common[NormCode(c.Code)] = true
	}
	if dir != "" {
		if f, ferr := os.Open(filepath.Join(dir, "icd10cm-codes.txt")); ferr == nil {
			fromDir, err = readCMS(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("reference: icd10cm-codes.txt: %w", err)
			}
		}
	}
	if fromDir != nil {
		l.dx.Store(newDxIndex("", fromDir, l.common, nil))
	} else {
		l.dx.Store(newDxIndex("", builtin, l.common, nil))
	}
	if err := readTSV(open, "procedures.tsv", 3, func(f []string) { l.Procedures = append(l.Procedures, Entry{f[0], f[1], f[2]}) }); err != nil {
		return nil, err
	}
	if err := readTSV(open, "billing_modifiers.tsv", 3, func(f []string) { l.Modifiers = append(l.Modifiers, Entry{f[0], f[1], f[2]}) }); err != nil {
		return nil, err
	}
	if err := readTSV(open, "payers.tsv", 9, func(f []string) {
		l.Payers = append(l.Payers, Payer{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]})
	}); err != nil {
		return nil, err
	}
	l.proc, l.mod = map[string]string{}, map[string]string{}
	for _, p := range l.Procedures {
		l.proc[NormCode(p.ID)] = p.Description
	}
	for _, m := range l.Modifiers {
		l.mod[NormCode(m.ID)] = m.Description
	}
	return l, nil
}

func readTSV(open func(string) (io.ReadCloser, error), name string, cols int, add func([]string)) error {
	f, err := open(name)
	if err != nil {
		return fmt.Errorf("reference: %s: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != cols {
			return fmt.Errorf("reference: %s line %d: %d fields, want %d", name, n, len(fields), cols)
		}
		add(fields)
	}
	return sc.Err()
}

// readCMS reads the release's codes file: "A000    Cholera due to …".
func readCMS(r io.Reader) ([]Code, error) {
	var out []Code
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		code, desc, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			if code == "" {
				continue
			}
			return nil, fmt.Errorf("line %d: no description", n)
		}
		out = append(out, Code{Code: DotCode(code), Billable: true, Long: strings.TrimSpace(desc)})
	}
	if len(out) == 0 {
		return nil, errors.New("no codes")
	}
	return out, sc.Err()
}

// NormCode is a code as compared: upper case, without its dot.
func NormCode(c string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(c), ".", ""))
}

// DotCode writes an ICD-10-CM code with its dot after the category (E119 → E11.9).
func DotCode(c string) string {
	c = NormCode(c)
	if len(c) > 3 {
		return c[:3] + "." + c[3:]
	}
	return c
}

// IsDiagnosis, IsProcedure and IsModifier validate codes (dot and case
// insensitive).
func (l *Lists) IsDiagnosis(c string) bool { return l.diagnoses().billable[NormCode(c)] }
func (l *Lists) IsProcedure(c string) bool { _, ok := l.proc[NormCode(c)]; return ok }
func (l *Lists) IsModifier(c string) bool  { _, ok := l.mod[NormCode(c)]; return ok }

// DiagnosisText and ProcedureText describe a code ("" if unknown).
func (l *Lists) DiagnosisText(c string) string { return l.diagnoses().text[NormCode(c)] }
func (l *Lists) ProcedureText(c string) string { return l.proc[NormCode(c)] }

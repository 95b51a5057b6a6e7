package reference

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// releaseFile is the FY2026 order file the repository's tests share
// (../shared/data/icd10cm, with its source); a test without it skips.
func releaseFile(t testing.TB) string {
	t.Helper()
	path := os.Getenv("TELECLINIC_ICD10CM_ORDER")
	if path == "" {
		path = filepath.Join("..", "..", "..", "shared", "data", "icd10cm", "icd10cm_order_2026.txt.gz")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no ICD-10-CM order file at %s (set TELECLINIC_ICD10CM_ORDER): %v", path, err)
	}
	return path
}

var (
	fy2026Once sync.Once
	fy2026     *Release
	fy2026Raw  []byte // the order file's text
	fy2026Err  error
)

// release2026 is the shared release, parsed once for the package's tests.
func release2026(t testing.TB) (*Release, []byte) {
	t.Helper()
	path := releaseFile(t)
	fy2026Once.Do(func() {
		f, err := os.Open(path)
		if err != nil {
			fy2026Err = err
			return
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			fy2026Err = err
			return
		}
		if fy2026Raw, fy2026Err = io.ReadAll(gz); fy2026Err != nil {
			return
		}
		fy2026, fy2026Err = ParseRelease(filepath.Base(path), bytes.NewReader(fy2026Raw))
	})
	if fy2026Err != nil {
		t.Fatal(fy2026Err)
	}
	return fy2026, fy2026Raw
}

// TestParseRelease_FY2026: the whole release, as CMS ships it — the text,
// gzipped, in CMS's zip — is 98,186 codes, 74,719 of them billable, with
// their long descriptions.
func TestParseRelease_FY2026(t *testing.T) {
	rel, raw := release2026(t)
	billable := 0
	for _, c := range rel.Codes {
		if c.Billable {
			billable++
		}
	}
	if rel.Year != "2026" || len(rel.Codes) != 98186 || billable != 74719 {
		t.Fatalf("year %s, %d codes, %d billable", rel.Year, len(rel.Codes), billable)
	}
	want := map[string]Code{
		"A00":      {Code: "A00", Short: "Cholera", Long: "Cholera"},
		"E11.9":    {Code: "E11.9", Billable: true, Short: "Type 2 diabetes mellitus without complications", Long: "Type 2 diabetes mellitus without complications"},
		"S72.001A": {Code: "S72.001A", Billable: true},
	}
	for _, c := range rel.Codes {
		if w, ok := want[c.Code]; ok {
			if c.Billable != w.Billable || w.Long != "" && (c.Long != w.Long || c.Short != w.Short) {
				t.Errorf("%s: %+v, want %+v", c.Code, c, w)
			}
			delete(want, c.Code)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing: %v", want)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("icd10cm_order_2026.txt")
	w.Write(raw)
	zw.Close()
	if rel, err := ParseRelease("2026-code-descriptions-tabular-order.zip", &zipped); err != nil || len(rel.Codes) != 98186 || rel.Year != "2026" {
		t.Fatalf("from CMS's zip: %v", err)
	}
	if rel, err := ParseRelease("icd10cm_order_2026.txt", bytes.NewReader(raw)); err != nil || len(rel.Codes) != 98186 {
		t.Fatalf("as text: %v", err)
	}
}

// TestParseRelease_Refused: what is not a whole release is refused,
// saying why: a cut file (at a line's end, within a line, within a
// header's codes), a changed line, a file without its year, a zip without
// the order file, and another file altogether.
func TestParseRelease_Refused(t *testing.T) {
	_, raw := release2026(t)
	text := string(raw)
	cutAt := func(n int) string { // the first n lines
		i := 0
		for range n {
			i += strings.Index(text[i:], "\r\n") + 2
		}
		return text[:i]
	}
	half := cutAt(49100)
	for _, c := range []struct {
		name, file, want string
	}{
		{"cut within a line", text[:len(text)/2], "does not end"},
		{"cut after a header", cutAt(49000) + strings.SplitAfter(text[len(cutAt(49000)):], "\r\n")[0], ""},
		{"cut at a line's end", half, ""},
		{"a changed number", strings.Replace(text, "\r\n00005 ", "\r\n00006 ", 1), "its number"},
		{"a flag that is neither", strings.Replace(text, "00002 A000    1", "00002 A000    2", 1), "billable flag"},
		{"LF line ends", strings.ReplaceAll(text, "\r\n", "\n"), "CRLF"},
		{"another file", "code,description\r\nE119,Diabetes\r\n", "columns"},
	} {
		_, err := ParseRelease("icd10cm_order_2026.txt", strings.NewReader(c.file))
		if err == nil || c.want != "" && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := ParseRelease("codes.txt", strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "year") {
		t.Errorf("no year in the name: %v", err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("icd10cm_codes_2026.txt")
	w.Write([]byte("A000    Cholera\r\n"))
	zw.Close()
	if _, err := ParseRelease("2026.zip", &zipped); err == nil || !strings.Contains(err.Error(), "order file") {
		t.Errorf("a zip without the order file: %v", err)
	}
	var gz bytes.Buffer
	g := gzip.NewWriter(&gz)
	g.Write(raw)
	g.Close()
	if _, err := ParseRelease("icd10cm_order_2026.txt.gz", bytes.NewReader(gz.Bytes()[:gz.Len()/2])); err == nil {
		t.Error("a cut gzip was taken")
	}
}

// TestFindDiagnoses_Ranked: over the whole release a search ranks as a
// coder expects: the code typed first, then the codes it begins; words
// find the condition meant (the clinic's common codes, then the closest
// descriptions); headers are never offered; a code of an earlier release
// still on notes keeps its description but is no longer accepted.
func TestFindDiagnoses_Ranked(t *testing.T) {
	rel, _ := release2026(t)
	l, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	l.SetRelease(rel, map[string]string{"Z0000X": "A code of an earlier year"})
	if l.ReleaseYear() != "2026" || l.DiagnosisCount() != 74719 {
		t.Fatalf("%s %d", l.ReleaseYear(), l.DiagnosisCount())
	}
	first := func(q string) string {
		got := l.FindDiagnoses(Query{Q: q, Limit: 10})
		if len(got) == 0 {
			return ""
		}
		return got[0].Code
	}
	for q, want := range map[string]string{
		"e119": "E11.9", "E11.9": "E11.9", "covid": "U07.1", "essential hypertension": "I10", "I10": "I10",
		"hypertension": "I10", "s72001a": "S72.001A", "streptococcal pharyngitis": "J02.0",
	} {
		if got := first(q); got != want {
			t.Errorf("%q: first %s, want %s (%+v)", q, got, want, l.FindDiagnoses(Query{Q: q, Limit: 5}))
		}
	}
	if got := first("type 2 diabetes"); !strings.HasPrefix(got, "E11.") {
		t.Errorf("type 2 diabetes: first %s", got)
	}
	if got := l.FindDiagnoses(Query{Q: "E11", Limit: 50}); len(got) < 40 || got[0].Code[:3] != "E11" || got[len(got)-1].Code[:3] != "E11" {
		t.Errorf("the codes E11 begins: %d, %+v", len(got), got[:3])
	}
	for _, d := range l.FindDiagnoses(Query{Q: "cholera"}) {
		if d.Code == "A00" {
			t.Error("a header is offered")
		}
	}
	if got := l.FindDiagnoses(Query{}); len(got) != emptyListLimit || !l.common[NormCode(got[0].Code)] {
		t.Errorf("the list without a search: %d, first %+v", len(got), got[0])
	}
	if !l.IsDiagnosis("U07.1") || l.IsDiagnosis("E11") || l.IsDiagnosis("Z00.00X") {
		t.Error("IsDiagnosis")
	}
	if l.DiagnosisText("Z00.00X") != "A code of an earlier year" || l.DiagnosisText("E11") != "Type 2 diabetes mellitus" {
		t.Errorf("descriptions: %q %q", l.DiagnosisText("Z00.00X"), l.DiagnosisText("E11"))
	}
}

// BenchmarkFindDiagnoses is a coder's searches over the whole release:
// the figure against the target of p99 under 5 ms is the slowest query's
// ns/op (docs/performance.md, "Diagnosis search").
func BenchmarkFindDiagnoses(b *testing.B) {
	rel, _ := release2026(b)
	l, err := Load("")
	if err != nil {
		b.Fatal(err)
	}
	l.SetRelease(rel, nil)
	for _, q := range []string{"e119", "covid", "essential hypertension", "fracture of femur", "a", "pain", "S7"} {
		b.Run(q, func(b *testing.B) {
			for b.Loop() {
				if len(l.FindDiagnoses(Query{Q: q, Limit: 20})) == 0 {
					b.Fatal("nothing found")
				}
			}
		})
	}
}

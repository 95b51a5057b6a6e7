package reference

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoad_Embedded(t *testing.T) {
	l, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if l.DiagnosisCount() < 150 || len(l.Procedures) < 40 || len(l.Modifiers) < 20 || len(l.Payers) < 5 || l.ReleaseYear() != "" {
		t.Fatalf("%d %d %d %d", l.DiagnosisCount(), len(l.Procedures), len(l.Modifiers), len(l.Payers))
	}
	if !l.IsDiagnosis("E11.9") || !l.IsDiagnosis("e119") || l.IsDiagnosis("E11.99") || !l.IsProcedure("G2012") || !l.IsModifier("95") || l.IsProcedure("99213") {
		t.Fatal("code lookups")
	}
}

func TestLoad_CMSFile(t *testing.T) {
	dir := t.TempDir()
	body := "A000    Cholera due to Vibrio cholerae 01, biovar cholerae\nZ9989   Dependence on other enabling machines and devices\n"
	if err := os.WriteFile(filepath.Join(dir, "icd10cm-codes.txt"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if all := l.FindDiagnoses(Query{}); len(all) != 2 || all[0].Code != "A00.0" || !l.IsDiagnosis("Z99.89") || l.IsDiagnosis("E11.9") {
		t.Fatalf("%+v", all)
	}
	if len(l.Procedures) < 40 {
		t.Fatal("the embedded procedures were not kept")
	}
}

// TestFind: a search matches a code with or without its dot, in any case,
// and words of the text; the limit caps the answer; an empty query is the
// whole list.
func TestFind(t *testing.T) {
	l, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"E11.9", "e119", "E119"} {
		got := l.FindDiagnoses(Query{Q: q})
		if len(got) == 0 || got[0].Code != "E11.9" {
			t.Errorf("%q: %+v", q, got)
		}
	}
	if got := l.FindDiagnoses(Query{Q: "diabetes", Limit: 2}); len(got) != 2 {
		t.Errorf("diabetes, limit 2: %d", len(got))
	}
	if got := l.FindModifiers(Query{}); len(got) != len(l.Modifiers) {
		t.Errorf("all modifiers: %d of %d", len(got), len(l.Modifiers))
	}
	if got := l.FindPayers(Query{Q: "no such payer at all"}); len(got) != 0 {
		t.Errorf("no match: %+v", got)
	}
}

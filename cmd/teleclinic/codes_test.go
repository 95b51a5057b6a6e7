package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

// TestCLI_CodesImport: `teleclinic codes import` takes CMS's FY2026 order
// file while a server runs on the same database; the server searches the
// whole release within seconds (covid → U07.1), without a restart. A cut
// file is refused, saying so, and changes nothing.
func TestCLI_CodesImport(t *testing.T) {
	path := testenv.ICD10OrderFile(t)
	dir := t.TempDir()
	db := testenv.DSN(t)
	srv := testenv.New(t, testenv.Options{DSN: db, Workers: true})
	common := []string{"--data-dir", dir, "--database", db, "--server-key", hex.EncodeToString(srv.Key)}
	c := srv.NewClinic("acme", true)
	search := func(q string) []string {
		t.Helper()
		res := srv.Do(testenv.Req{Path: "/api_v3/insurances/list/dxs", Query: map[string][]string{"q": {q}, "limit": {"3"}}, Header: map[string]string{"X-AccountCode": c.Code, "X-ApiToken": c.AdminToken}})
		var page struct {
			Data []struct {
				Code string `json:"code"`
			} `json:"data"`
		}
		if err := json.Unmarshal(res.Raw, &page); err != nil || res.Status != 200 {
			t.Fatalf("search %q: %d %s", q, res.Status, res.Raw)
		}
		var codes []string
		for _, d := range page.Data {
			codes = append(codes, d.Code)
		}
		return codes
	}
	before := search("cholera")

	// A cut file: the first 40,000 lines, gzipped as CMS's would be.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var cut bytes.Buffer
	w := gzip.NewWriter(&cut)
	sc := bufio.NewScanner(gz)
	for n := 0; n < 40000 && sc.Scan(); n++ {
		w.Write(append(sc.Bytes(), '\n'))
	}
	w.Close()
	f.Close()
	cutPath := filepath.Join(dir, "icd10cm_order_2026.txt.gz")
	if err := os.WriteFile(cutPath, cut.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, append([]string{"codes", "import"}, append(common, cutPath)...)...); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a cut file: %v", err)
	}
	if got := search("cholera"); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("after a refused import the search changed: %v, was %v", got, before)
	}

	out, _, err := runCmd(t, append([]string{"codes", "import"}, append(common, path)...)...)
	if err != nil || !strings.Contains(out, "Loaded ICD-10-CM 2026: 98186 codes, 74719 billable") {
		t.Fatalf("%q %v", out, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for srv.App.ReferenceLists().ReleaseYear() != "2026" {
		if time.Now().After(deadline) {
			t.Fatal("the running server did not take the release within 15 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := search("covid"); len(got) == 0 || got[0] != "U07.1" {
		t.Fatalf("covid: %v", got)
	}
	if got := search("cholera"); len(got) == 0 || !strings.HasPrefix(got[0], "A00.") {
		t.Fatalf("cholera in the whole release: %v", got)
	}
	if _, _, err := runCmd(t, append([]string{"codes", "import"}, common...)...); err == nil {
		t.Fatal("no file named, and no usage error")
	}
}

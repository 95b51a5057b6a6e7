package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"teleclinic/internal/app"
)

// cmdCodes is `teleclinic codes import FILE`: the operator loads a year's
// ICD-10-CM release (CMS's order file, gzipped or not, or CMS's zip) for
// every clinic of the server, while servers run (app.ImportDiagnoses).
func cmdCodes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "import" {
		return usageError{"codes: the subcommand is import"}
	}
	var c config
	fs := flag.NewFlagSet("codes import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: teleclinic codes import [flags] FILE\n\nFILE is CMS's icd10cm_order_YYYY.txt, gzipped or not, or CMS's zip of it (\"Code Descriptions in Tabular Order\").")
		fs.PrintDefaults()
	}
	storeFlags(fs, &c)
	// FILE comes first or last, the flags around it.
	rest, path := args[1:], ""
	switch {
	case len(rest) > 0 && !strings.HasPrefix(rest[0], "-"):
		path, rest = rest[0], rest[1:]
	case len(rest) > 0 && !strings.HasPrefix(rest[len(rest)-1], "-") && (len(rest) == 1 || !strings.HasPrefix(rest[len(rest)-2], "--") || strings.Contains(rest[len(rest)-2], "=")):
		path, rest = rest[len(rest)-1], rest[:len(rest)-1]
	}
	if err := parseFlags(fs, rest); err != nil {
		return flagsErr(err)
	}
	if path == "" {
		return usageError{"codes import: name one file, CMS's icd10cm_order_YYYY.txt (gzipped or not) or its zip"}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c.UserTokenIdle, c.UserTokenMax = time.Minute, time.Minute
	a, _, closeFn, err := open(ctx, &c, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	rel, err := a.ImportDiagnoses(ctx, filepath.Base(path), f, "operator")
	if err != nil {
		return cliErr(err)
	}
	fmt.Fprintf(stdout, "Loaded ICD-10-CM %s: %d codes, %d billable (sha256 %s). Running servers use it within %s.\n",
		rel.Year, rel.Codes, rel.Billable, rel.SHA256, app.DiagnosisPoll)
	return nil
}

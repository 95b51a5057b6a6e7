package reference

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// A release of ICD-10-CM as CMS publishes it each fiscal year: the "order"
// file of "Code Descriptions in Tabular Order" (icd10cm_order_YYYY.txt),
// which holds every code, the category headers (not billable) included.
// It is fixed-width, one code a line, every line ending in CRLF:
//
//	00002 A000    1 Cholera due to Vibrio cholerae 01, biovar cholerae   Cholera due to …
//
// columns 1–5 the order number, 7–13 the code without its dot, 15 the
// billable flag (1, or 0 for a header), 17–76 the short description and
// 78 on the long one. ParseRelease reads it as CMS ships it (the text, the
// text gzipped, or CMS's zip) and refuses anything that is not a whole
// file: a line of another shape, a number out of order, a header with no
// code under it (where a cut file ends), a last line without its CRLF.

// Release is a year's ICD-10-CM codes.
type Release struct {
	// Year is the fiscal year (2026: October 2025 to September 2026).
	Year  string
	Codes []Code
}

// Code is one line of a release.
type Code struct {
	Code     string // with its dot (E11.9)
	Billable bool   // false for a category header
	Short    string
	Long     string
}

// minReleaseCodes is fewer billable codes than any release since the
// first (2016: 69,823; 2026: 74,719): a file with fewer is not a whole
// release.
const minReleaseCodes = 60000

var yearRE = regexp.MustCompile(`(?:^|[^0-9])(20[0-9]{2})(?:[^0-9]|$)`)

// ReleaseYear is the fiscal year a release's file name says, "" when it
// names none.
func ReleaseYear(name string) string {
	if m := yearRE.FindStringSubmatch(path.Base(name)); m != nil {
		return m[1]
	}
	return ""
}

// ParseRelease reads the release in r, named name (its year is in the
// name, as CMS names the file and its zip).
func ParseRelease(name string, r io.Reader) (*Release, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("the gzip file cannot be read: %w", err)
		}
		defer gz.Close()
		return parseOrder(strings.TrimSuffix(name, ".gz"), gz)
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return parseZip(name, br)
	}
	return parseOrder(name, br)
}

// maxReleaseZip bounds what a zip is read into memory for: CMS's is 3 MB
// (the order file inside is 15 MB).
const maxReleaseZip = 64 << 20

func parseZip(name string, r io.Reader) (*Release, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxReleaseZip+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxReleaseZip {
		return nil, errors.New("the zip is larger than any ICD-10-CM release")
	}
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("the zip cannot be read: %w", err)
	}
	for _, f := range z.File {
		base := strings.ToLower(path.Base(f.Name))
		if !strings.HasPrefix(base, "icd10cm") || !strings.Contains(base, "order") || !strings.HasSuffix(base, ".txt") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		year := ReleaseYear(f.Name)
		if year == "" {
			year = ReleaseYear(name)
		}
		return parseOrder(year+"-"+f.Name, rc)
	}
	return nil, errors.New("the zip holds no order file (icd10cm_order_YYYY.txt): take CMS's \"Code Descriptions in Tabular Order\"")
}

func parseOrder(name string, r io.Reader) (*Release, error) {
	rel := &Release{Year: ReleaseYear(name)}
	if rel.Year == "" {
		return nil, errors.New("the file's name does not say its year: keep CMS's name, icd10cm_order_YYYY.txt")
	}
	br := bufio.NewReaderSize(r, 64<<10)
	billable := 0
	var open string // the header whose codes have not been seen yet
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if !strings.HasSuffix(line, "\r\n") {
			return nil, fmt.Errorf("line %d does not end as a release's lines do (CRLF): the file is cut or was changed", n)
		}
		c, err := parseOrderLine(strings.TrimSuffix(line, "\r\n"), n)
		if err != nil {
			return nil, err
		}
		norm := NormCode(c.Code)
		if open != "" && !strings.HasPrefix(norm, open) {
			return nil, fmt.Errorf("line %d: header %s has no code under it: the file is cut or was changed", n-1, DotCode(open))
		}
		open = ""
		if !c.Billable {
			open = norm
		} else {
			billable++
		}
		rel.Codes = append(rel.Codes, c)
	}
	if open != "" {
		return nil, fmt.Errorf("the last line is header %s, with no code under it: the file is cut", DotCode(open))
	}
	if billable < minReleaseCodes {
		return nil, fmt.Errorf("the file holds %d billable codes; a whole release holds over %d", billable, minReleaseCodes)
	}
	return rel, nil
}

func parseOrderLine(line string, n int) (Code, error) {
	bad := func(what string) (Code, error) {
		return Code{}, fmt.Errorf("line %d is not an order file's line (%s): take CMS's icd10cm_order_YYYY.txt", n, what)
	}
	if len(line) < 78 || line[5] != ' ' || line[13] != ' ' || line[15] != ' ' || line[76] != ' ' {
		return bad("its columns")
	}
	if seq, err := strconv.Atoi(line[:5]); err != nil || seq != n {
		return bad("its number")
	}
	code := strings.TrimRight(line[6:13], " ")
	if len(code) < 3 || !validCode(code) {
		return bad("its code")
	}
	var c Code
	switch line[14] {
	case '1':
		c.Billable = true
	case '0':
	default:
		return bad("its billable flag")
	}
	c.Code, c.Short, c.Long = DotCode(code), strings.TrimRight(line[16:76], " "), line[77:]
	if c.Long == "" {
		return bad("its description")
	}
	return c, nil
}

// validCode is an ICD-10-CM code's shape without its dot: a letter, then
// letters and digits (three to seven in all).
func validCode(c string) bool {
	if len(c) > 7 || c[0] < 'A' || c[0] > 'Z' {
		return false
	}
	for i := 1; i < len(c); i++ {
		if !(c[i] >= 'A' && c[i] <= 'Z' || c[i] >= '0' && c[i] <= '9') {
			return false
		}
	}
	return true
}

package store

import (
	"context"
	"fmt"
	"strings"

	"teleclinic/internal/reference"
)

// The ICD-10-CM releases (migration 00030): the server's, read by every
// process (app's diagnosis loop polls the current one's year) and written
// by an import, in one transaction, so a release is there whole or not at
// all.

// DxRelease is a loaded release.
type DxRelease struct {
	Year            string
	Codes, Billable int
	SHA256          string
	Loaded          int64
	LoadedBy        string
	Current         bool
}

// dxInsertRows is how many codes one INSERT carries: 5 values a row keeps
// a statement under SQLite's 32,766 variables and PostgreSQL's 65,535.
const dxInsertRows = 500

// ImportDxRelease stores rel as year's release and makes it current,
// replacing a release of the same year; it runs in a transaction.
func (q *Q) ImportDxRelease(ctx context.Context, r DxRelease, codes []reference.Code) error {
	if _, err := q.exec(ctx, `DELETE FROM dx_codes WHERE year = ?`, r.Year); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `DELETE FROM dx_releases WHERE year = ?`, r.Year); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `UPDATE dx_releases SET is_current = 0 WHERE is_current = 1`); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `INSERT INTO dx_releases (year, codes, billable, sha256, loaded, loaded_by, is_current) VALUES (?, ?, ?, ?, ?, ?, 1)`,
		r.Year, r.Codes, r.Billable, r.SHA256, r.Loaded, r.LoadedBy); err != nil {
		return err
	}
	for len(codes) > 0 {
		n := min(len(codes), dxInsertRows)
		var b strings.Builder
		args := make([]any, 0, 5*n)
		b.WriteString(`INSERT INTO dx_codes (year, code, billable, short, description) VALUES `)
		for i, c := range codes[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?)")
			billable := 0
			if c.Billable {
				billable = 1
			}
			args = append(args, r.Year, reference.NormCode(c.Code), billable, c.Short, c.Long)
		}
		if _, err := q.exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("dx codes: %w", err)
		}
		codes = codes[n:]
	}
	return nil
}

// CurrentDxRelease is the release in use; ErrNotFound when none was
// loaded (the built-in list serves).
func (q *Q) CurrentDxRelease(ctx context.Context) (*DxRelease, error) {
	var r DxRelease
	err := q.queryRow(ctx, `SELECT year, codes, billable, sha256, loaded, loaded_by FROM dx_releases WHERE is_current = 1`, nil,
		&r.Year, &r.Codes, &r.Billable, &r.SHA256, &r.Loaded, &r.LoadedBy)
	r.Current = err == nil
	return &r, err
}

// DxCodes are year's codes, in code order, and the descriptions of the
// billable codes of other years that year does not hold (normalised code
// → description): codes retired since, which notes may still hold.
func (q *Q) DxCodes(ctx context.Context, year string) ([]reference.Code, map[string]string, error) {
	rows, err := q.query(ctx, `SELECT code, billable, short, description FROM dx_codes WHERE year = ? ORDER BY code`, year)
	if err != nil {
		return nil, nil, err
	}
	var codes []reference.Code
	for rows.Next() {
		var c reference.Code
		var billable int
		if err := rows.Scan(&c.Code, &billable, &c.Short, &c.Long); err != nil {
			rows.Close()
			return nil, nil, q.d.translate(err)
		}
		c.Code, c.Billable = reference.DotCode(c.Code), billable == 1
		codes = append(codes, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, q.d.translate(err)
	}
	rows, err = q.query(ctx, `SELECT o.code, MAX(o.description) FROM dx_codes o
		WHERE o.year <> ? AND o.billable = 1 AND NOT EXISTS (SELECT 1 FROM dx_codes c WHERE c.year = ? AND c.code = o.code)
		GROUP BY o.code`, year, year)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	retired := map[string]string{}
	for rows.Next() {
		var code, desc string
		if err := rows.Scan(&code, &desc); err != nil {
			return nil, nil, q.d.translate(err)
		}
		retired[code] = desc
	}
	return codes, retired, q.d.translate(rows.Err())
}

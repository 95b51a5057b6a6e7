package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/reference"
	"teleclinic/internal/store"
)

// The ICD-10-CM release the clinics code with. The server starts with a
// built-in list of common codes (internal/reference/data); the operator
// loads CMS's whole release for a year with `teleclinic codes import
// FILE`, while servers run, and the admin of a server that holds one
// clinic may upload it from /admin. The release is the server's (the code
// set is public and the same for every clinic), so on a server of several
// clinics only the operator loads it: one clinic's admin does not change
// what the others code with. Every process polls the current release's
// year (RefreshDiagnoses, in the loop table) and loads a new one within
// DiagnosisPoll.

// DiagnosisPoll is how often a process looks for a newly imported release.
const DiagnosisPoll = 5 * time.Second

// maxReleaseUpload bounds an uploaded release: CMS's zip is 3 MB, the
// order file 15 MB (4 MB gzipped).
const maxReleaseUpload = 64 << 20

// CodeRelease is the release in use, for the admin's page and the
// command's answer.
type CodeRelease struct {
	// Year is the fiscal year; "" for the built-in list.
	Year             string
	Codes, Billable  int
	Loaded           int64
	LoadedBy, SHA256 string
	// Importable says whether the caller may upload a release (the admin
	// of a server with one clinic).
	Importable bool
}

// ImportDiagnoses loads the release in r (CMS's order file, gzipped or
// not, or its zip; name is the file's, which says the year) for every
// clinic, as the operator: parsed and checked whole before anything is
// written, stored in one transaction, in use in this process at once and
// in the others within DiagnosisPoll. A year older than the current one
// is refused.
func (a *App) ImportDiagnoses(ctx context.Context, name string, r io.Reader, by string) (*CodeRelease, error) {
	h := sha256.New()
	rel, err := reference.ParseRelease(name, io.TeeReader(io.LimitReader(r, maxReleaseUpload), h))
	if err != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "This is not a whole ICD-10-CM release, so nothing was changed: %v.", err)
	}
	_, _ = io.Copy(h, r) // a zip's tail, after the member read
	cur, err := a.store.Read().CurrentDxRelease(ctx)
	switch {
	case err == nil && rel.Year < cur.Year:
		return nil, clinic.Errorf(clinic.EConflict, "The release in use is %s's; %s's is older, so nothing was changed.", cur.Year, rel.Year)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("codes import: %w", err)
	}
	out := store.DxRelease{Year: rel.Year, Codes: len(rel.Codes), SHA256: hex.EncodeToString(h.Sum(nil)), Loaded: a.Unix(), LoadedBy: by}
	for _, c := range rel.Codes {
		if c.Billable {
			out.Billable++
		}
	}
	if err := a.store.Tx(ctx, func(q *store.Q) error { return q.ImportDxRelease(ctx, out, rel.Codes) }); err != nil {
		return nil, fmt.Errorf("codes import: %w", err)
	}
	if err := a.loadDiagnoses(ctx); err != nil {
		return nil, err
	}
	a.log.Info("codes: release imported", "year", out.Year, "codes", out.Codes, "billable", out.Billable, "by", by)
	return &CodeRelease{Year: out.Year, Codes: out.Codes, Billable: out.Billable, Loaded: out.Loaded, LoadedBy: by, SHA256: out.SHA256}, nil
}

// AdminImportDiagnoses is the admin's upload of a release from /admin:
// ImportDiagnoses, for the admin of a server that holds one clinic only;
// audited in the clinic's trail.
func (a *App) AdminImportDiagnoses(ctx context.Context, p *clinic.Principal, name string, r io.Reader) (*CodeRelease, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := a.soleClinic(ctx, p); err != nil {
		return nil, a.AuditOutcome(ctx, p, "codes.import", "account", p.Account.Code, err)
	}
	rel, err := a.ImportDiagnoses(ctx, name, r, "admin of "+p.Account.Code)
	if err := a.AuditOutcome(ctx, p, "codes.import", "account", p.Account.Code, err); err != nil {
		return nil, err
	}
	return rel, nil
}

// soleClinic refuses p's change of the server's release when the server
// holds other clinics than p's.
func (a *App) soleClinic(ctx context.Context, p *clinic.Principal) error {
	accts, err := a.store.Read().ListAccounts(ctx)
	if err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	if len(accts) != 1 || accts[0].ID != p.Account.ID {
		return clinic.Errorf(clinic.EForbidden, "This server holds several clinics, so its operator loads the ICD-10-CM release for all of them: teleclinic codes import FILE.")
	}
	return nil
}

// DiagnosisRelease is the release in use, as p's page shows it.
func (a *App) DiagnosisRelease(ctx context.Context, p *clinic.Principal) (*CodeRelease, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out := &CodeRelease{Codes: a.cfg.Reference.DiagnosisCount(), Billable: a.cfg.Reference.DiagnosisCount()}
	cur, err := a.store.Read().CurrentDxRelease(ctx)
	switch {
	case err == nil:
		out.Year, out.Codes, out.Billable, out.Loaded, out.LoadedBy, out.SHA256 = cur.Year, cur.Codes, cur.Billable, cur.Loaded, cur.LoadedBy, cur.SHA256
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("codes: %w", err)
	}
	out.Importable = p.IsAdmin() && a.soleClinic(ctx, p) == nil
	return out, nil
}

// RefreshDiagnoses loads the current release when another process
// imported a new one (the loop table runs it every DiagnosisPoll).
func (a *App) RefreshDiagnoses(ctx context.Context) int {
	if err := a.loadDiagnoses(ctx); err != nil && ctx.Err() == nil {
		a.log.Error("codes: refresh", "err", err)
	}
	return 0
}

// loadDiagnoses puts the current release in use in this process, when it
// is not already: one row read when nothing changed.
func (a *App) loadDiagnoses(ctx context.Context) error {
	cur, err := a.store.Read().CurrentDxRelease(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	if cur.Year == a.cfg.Reference.ReleaseYear() && a.loadedDx.Load() == cur.Loaded {
		return nil
	}
	codes, retired, err := a.store.Read().DxCodes(ctx, cur.Year)
	if err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	a.cfg.Reference.SetRelease(&reference.Release{Year: cur.Year, Codes: codes}, retired)
	a.loadedDx.Store(cur.Loaded)
	return nil
}

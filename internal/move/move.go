// Package move carries a clinic server from SQLite to PostgreSQL (teleclinic
// move): the rows, the file bytes, and the checks that nothing was lost —
// row counts, every clinic's audit trail verified on the target against the
// signed checkpoint and under the same server key, and a sample of files
// read back and hashed on both sides.
package move

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"

	"teleclinic/internal/app"
	"teleclinic/internal/blob"
	"teleclinic/internal/store"
)

// Source is the stopped SQLite server: its app (for the audit trail) and
// the disk store of its files.
type Source struct {
	App   *app.App
	Blobs *blob.Disk
	// AllowBrokenAudit moves clinics whose audit trail is already broken
	// in the source (the break moves with it, as evidence). Without it the
	// move refuses them: a wrong server key breaks every trail.
	AllowBrokenAudit bool
}

// Target is the PostgreSQL server the clinic moves to: its app, built with
// the same server key, and its blob store. Blobs nil means the target
// keeps using the source's store, and no bytes are copied.
type Target struct {
	App   *app.App
	Blobs blob.Store
}

// Report is what the move did and checked.
type Report struct {
	Tables      []store.TableCount
	Rows        int64
	BlobsCopied int
	BlobBytes   int64
	Hashed      []Hashed // the sampled files, read on both sides
	Clinics     []Clinic
}

// Hashed is one sampled file's SHA-256 on the target.
type Hashed struct {
	Key    string
	SHA256 string
	Size   int64
}

// Clinic is one clinic's audit trail as the target verified it.
type Clinic struct {
	Code       string
	Entries    int64
	Head       string
	Checkpoint int64 // the signed checkpoint's place the chain reached
	// Broken is set when the trail was already broken in the source: the
	// target shows the same break, which the move carries as evidence.
	Broken string
}

// ErrBrokenAudit is a source whose audit trail does not verify.
var ErrBrokenAudit = errors.New("move: the source's audit trail does not verify")

// sampleFiles is how many files the move reads back and hashes on both
// sides; every file's key is checked to exist in the copy list.
const sampleFiles = 50

// blobWorkers copy files in parallel: one at a time, an S3 put's round
// trip bounds the move at a few dozen files a second.
const blobWorkers = 8

// Run moves src into dst. A target that holds rows is refused first, with
// nothing written. The order makes a failure at any later step safe to
// run again: the file bytes are copied first (a put replaces what an
// earlier run left), then the rows in one transaction that refuses a
// target with rows in it, then the checks. progress gets a line per step.
func Run(ctx context.Context, src Source, dst Target, progress io.Writer) (*Report, error) {
	sst, dstStore := src.App.Store(), dst.App.Store()
	if sst.Engine() != "sqlite" || dstStore.Engine() != "postgres" {
		return nil, errors.New("move: from SQLite to PostgreSQL only")
	}
	// A target with rows is refused before anything is written: the
	// source's checks add audit entries, and its files (its audit
	// checkpoints among them) would replace a running target's own.
	if err := dstStore.MoveTargetEmpty(ctx); err != nil {
		return nil, err
	}
	accts, err := sst.Read().ListAccounts(ctx)
	if err != nil {
		return nil, err
	}
	// The source's own check first, which also proves the server key: a
	// trail already broken is refused unless allowed, and then moved as it
	// is, and the target must show the same break.
	before := map[int64]*app.AuditVerification{}
	for _, a := range accts {
		v, err := src.App.VerifyAudit(ctx, app.SystemPrincipal(a))
		if err != nil {
			return nil, fmt.Errorf("move: audit verify of %s in the source: %w", a.Code, err)
		}
		if b := v.Broken; b != nil {
			if !src.AllowBrokenAudit {
				return nil, fmt.Errorf("%w: the audit trail of %s is broken in the source at entry %d (%s); nothing was copied. "+
					"A server key other than the one the server ran with breaks every entry: check --data-dir or --server-key", ErrBrokenAudit, a.Code, b.Seq, b.Reason)
			}
			fmt.Fprintf(progress, "warning: the audit trail of %s is already broken in the source at entry %d: %s\n", a.Code, b.Seq, b.Reason)
		}
		before[a.ID] = v
	}
	// Every entry in the table (the read-audit journal flushed, with the
	// entries of the checks above), chained, and the chain's end signed, so
	// the target starts with no pending entry and a checkpoint at its end.
	if err := sst.FlushAudits(ctx); err != nil {
		return nil, err
	}
	for src.App.ChainAudits(ctx) > 0 {
	}
	if _, err := src.App.CheckpointAudits(ctx); err != nil {
		return nil, fmt.Errorf("move: audit checkpoint: %w", err)
	}
	heads := map[int64]store.AuditHead{}
	for after := int64(0); ; {
		hs, err := sst.Read().AuditChainHeads(ctx, after, 500)
		if err != nil {
			return nil, err
		}
		if len(hs) == 0 {
			break
		}
		for _, h := range hs {
			heads[h.AccountID] = h
			after = h.AccountID
		}
	}

	rep := &Report{}
	if dst.Blobs != nil {
		if err := copyBlobs(ctx, src.Blobs, dst.Blobs, rep); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "copied %d files (%d bytes) into the target's blob store\n", rep.BlobsCopied, rep.BlobBytes)
	}
	counts, err := sst.MoveTo(ctx, dstStore)
	if err != nil {
		return nil, err
	}
	rep.Tables = counts
	for _, c := range counts {
		if c.Source != c.Target {
			return rep, fmt.Errorf("move: table %s has %d rows in the source and %d in the target", c.Table, c.Source, c.Target)
		}
		rep.Rows += c.Target
	}
	fmt.Fprintf(progress, "copied %d rows in %d tables; every table's count matches\n", rep.Rows, len(counts))

	if err := hashSample(ctx, sst, src.Blobs, dst, rep); err != nil {
		return rep, err
	}
	fmt.Fprintf(progress, "read back %d sampled files: the same bytes on both sides\n", len(rep.Hashed))

	for _, a := range accts {
		acct, err := dstStore.Read().AccountByID(ctx, a.ID)
		if err != nil {
			return rep, fmt.Errorf("move: clinic %s in the target: %w", a.Code, err)
		}
		v, err := dst.App.VerifyAudit(ctx, app.SystemPrincipal(acct))
		if err != nil {
			return rep, fmt.Errorf("move: audit verify of %s in the target: %w", a.Code, err)
		}
		c := Clinic{Code: a.Code, Entries: v.Entries, Head: v.Head}
		if v.Checkpoint != nil {
			c.Checkpoint = v.Checkpoint.Seq
		}
		if err := sameTrail(before[a.ID], v, heads[a.ID]); err != nil {
			return rep, fmt.Errorf("move: the audit trail of %s: %w", a.Code, err)
		}
		if v.Broken != nil {
			c.Broken = v.Broken.Reason
		}
		rep.Clinics = append(rep.Clinics, c)
	}
	fmt.Fprintf(progress, "verified the audit trails of %d clinics on the target with the server key: each ends where the source's did\n", len(rep.Clinics))
	return rep, nil
}

// sameTrail checks the target's verification against the source's: the
// same break, or none, and the chain intact up to the head and checkpoint
// the source had after its last entry was chained. A server key other than
// the source's fails here: every entry's MAC and keyed hash depend on it.
func sameTrail(before, after *app.AuditVerification, head store.AuditHead) error {
	if before.Broken != nil {
		if after.Broken == nil || after.Broken.Seq != before.Broken.Seq {
			return fmt.Errorf("broken at entry %d in the source but not the same way in the target (%+v)", before.Broken.Seq, after.Broken)
		}
		return nil
	}
	if after.Broken != nil {
		return fmt.Errorf("broken at entry %d in the target: %s (is the target using the source's server key?)", after.Broken.Seq, after.Broken.Reason)
	}
	if after.Head != head.Head {
		return fmt.Errorf("ends at %s in the target, %s in the source", after.Head, head.Head)
	}
	if head.Seq > 0 && (after.Checkpoint == nil || after.Checkpoint.Seq != head.Seq) {
		return errors.New("the target's blob store has no checkpoint at the chain's end (were the files copied?)")
	}
	return nil
}

// copyBlobs puts every blob of the disk store into dst.
func copyBlobs(ctx context.Context, from *blob.Disk, to blob.Store, rep *Report) error {
	type item struct {
		key  string
		size int64
	}
	var items []item
	if err := from.Walk(ctx, func(key string, size int64) error {
		items = append(items, item{key, size})
		return nil
	}); err != nil {
		return fmt.Errorf("move: listing files: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blobWorkers)
	for _, it := range items {
		g.Go(func() error {
			r, _, err := from.Open(gctx, it.key)
			if err != nil {
				return fmt.Errorf("move: file %s: %w", it.key, err)
			}
			defer r.Close()
			n, err := to.Put(gctx, it.key, r)
			if err != nil {
				return fmt.Errorf("move: file %s: %w", it.key, err)
			}
			if n != it.size {
				return fmt.Errorf("move: file %s: wrote %d bytes of %d", it.key, n, it.size)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	rep.BlobsCopied = len(items)
	for _, it := range items {
		rep.BlobBytes += it.size
	}
	return nil
}

// hashSample reads up to sampleFiles of the files the rows name, spread
// over all of them, from both stores, and compares their SHA-256 and the
// size the row recorded.
func hashSample(ctx context.Context, st *store.Store, from *blob.Disk, dst Target, rep *Report) error {
	refs, err := st.BlobRefs(ctx)
	if err != nil {
		return err
	}
	to := dst.Blobs
	if to == nil {
		to = from
	}
	step := max(1, len(refs)/sampleFiles)
	for i := 0; i < len(refs) && len(rep.Hashed) < sampleFiles; i += step {
		ref := refs[i]
		a, na, err := hashBlob(ctx, from, ref.Key)
		if err != nil {
			return fmt.Errorf("move: file %s in the source: %w", ref.Key, err)
		}
		b, nb, err := hashBlob(ctx, to, ref.Key)
		if err != nil {
			return fmt.Errorf("move: file %s in the target: %w", ref.Key, err)
		}
		if a != b || na != nb {
			return fmt.Errorf("move: file %s differs: %s (%d bytes) in the source, %s (%d bytes) in the target", ref.Key, a, na, b, nb)
		}
		if ref.Size > 0 && nb != ref.Size {
			return fmt.Errorf("move: file %s holds %d bytes; its row says %d", ref.Key, nb, ref.Size)
		}
		rep.Hashed = append(rep.Hashed, Hashed{Key: ref.Key, SHA256: b, Size: nb})
	}
	return nil
}

func hashBlob(ctx context.Context, s blob.Store, key string) (string, int64, error) {
	r, _, err := s.Open(ctx, key)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

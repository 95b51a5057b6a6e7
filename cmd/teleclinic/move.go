package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"teleclinic/internal/blob"
	"teleclinic/internal/move"
	"teleclinic/internal/store"
)

// cmdMove is teleclinic move: a stopped SQLite server's data into an empty
// PostgreSQL database (and its files into a bucket), then the checks.
func cmdMove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("move", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeFlags(fs, &c)
	to := fs.String("to", "", "the empty PostgreSQL database to move into: postgres://…")
	allowBroken := fs.Bool("allow-broken-audit", false, "move clinics whose audit trail already fails audit verify in the source; the break moves with them")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: teleclinic move --to postgres://… [--data-dir DIR] [--database FILE] [--blob-url s3://…] [--server-key HEX] [--allow-broken-audit]

Moves a stopped server's SQLite database (--database, default teleclinic.db
in --data-dir) into an empty PostgreSQL database, keeping every id, and,
with --blob-url, its files (the data dir's blobs/) into that bucket. Then
it checks row counts, every clinic's audit trail on the target and a
sample of files. Start the servers afterwards with --database set to the
--to URL, the same --blob-url, and the same server key (server.key in the
data dir, or --server-key).

flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return flagsErr(err)
	}
	if !strings.HasPrefix(*to, "postgres://") && !strings.HasPrefix(*to, "postgresql://") {
		return usageError{"move: --to must be the target PostgreSQL database's postgres:// URL"}
	}
	if err := c.validate(); err != nil {
		return usageError{err.Error()}
	}
	if strings.HasPrefix(c.Database, "postgres") {
		return usageError{"move: --database is the source and must be a SQLite file"}
	}
	// The move never makes a key: the target must run with the one that
	// sealed the source's audit trail and outbox mail.
	if c.ServerKey == "" {
		if _, err := os.Stat(filepath.Join(c.DataDir, "server.key")); err != nil {
			return fmt.Errorf("move: no server.key in %s (is --data-dir the server's data directory? or pass --server-key): %w", c.DataDir, err)
		}
	}
	inUse, err := store.SQLiteInUse(c.Database)
	if err != nil {
		return err
	}
	if inUse {
		return fmt.Errorf("move: a server has %s open; stop it first (the move copies a database nothing writes to)", c.Database)
	}
	c.UserTokenIdle, c.UserTokenMax = time.Minute, time.Minute
	src := c
	src.BlobURL = ""
	srcApp, _, closeSrc, err := open(ctx, &src, stderr)
	if err != nil {
		return err
	}
	defer closeSrc()
	dst := c
	dst.Database = *to
	dstApp, _, closeDst, err := open(ctx, &dst, stderr)
	if err != nil {
		return err
	}
	defer closeDst()
	disk, err := blob.NewDisk(filepath.Join(c.DataDir, "blobs"))
	if err != nil {
		return err
	}
	target := move.Target{App: dstApp}
	if c.BlobURL != "" {
		if target.Blobs, err = blob.Open(ctx, c.BlobURL, ""); err != nil {
			return usageError{err.Error()}
		}
	}
	key, err := c.serverKey()
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := move.Run(ctx, move.Source{App: srcApp, Blobs: disk, AllowBrokenAudit: *allowBroken}, target, stdout)
	if errors.Is(err, store.ErrTargetNotEmpty) {
		return fmt.Errorf("%w; nothing was copied", err)
	}
	if err != nil {
		return err
	}
	fp := sha256.Sum256(key)
	fmt.Fprintf(stdout, "\n%-22s %12s %12s\n", "table", "source", "target")
	for _, t := range rep.Tables {
		fmt.Fprintf(stdout, "%-22s %12d %12d\n", t.Table, t.Source, t.Target)
	}
	fmt.Fprintln(stdout)
	for _, cl := range rep.Clinics {
		state := "intact"
		if cl.Broken != "" {
			state = "broken in the source as in the target: " + cl.Broken
		}
		fmt.Fprintf(stdout, "audit trail of %s: %s, %d entries, head %s, checkpoint at entry %d\n", cl.Code, state, cl.Entries, cl.Head, cl.Checkpoint)
	}
	fmt.Fprintf(stdout, "\nMoved in %s. The target servers need the server key with fingerprint %s\n", time.Since(start).Round(time.Millisecond), hex.EncodeToString(fp[:8]))
	fmt.Fprintf(stdout, "(the same --data-dir, or --server-key), --database %s", redactURL(*to))
	if c.BlobURL != "" {
		fmt.Fprintf(stdout, " and --blob-url %s", c.BlobURL)
	} else {
		fmt.Fprintf(stdout, " and the files in %s", disk.Dir)
	}
	fmt.Fprintln(stdout, ".")
	return nil
}

// redactURL is a database URL without its password, for printing.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the --to database"
	}
	return u.Redacted()
}

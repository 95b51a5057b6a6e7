// Package blob keeps file bytes: recordings now, uploaded files later. The
// interface streams in both directions, so no file is held whole in memory.
// The local-disk store is the default; an S3-compatible store comes with the
// files feature behind the same interface.
package blob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is a key with no bytes behind it.
var ErrNotFound = errors.New("blob: not found")

// Store keeps bytes under keys.
type Store interface {
	// Put stores r under key and returns how many bytes it wrote. The bytes
	// become visible only when Put returns nil.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open returns the bytes under key. The reader is also an io.Seeker when
	// the store can seek (the disk store can), for range requests.
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// Disk stores blobs as files under Dir.
type Disk struct{ Dir string }

// NewDisk returns a disk store, creating dir.
func NewDisk(dir string) (*Disk, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob dir: %w", err)
	}
	return &Disk{Dir: dir}, nil
}

// path maps a key to a file, refusing keys that could leave Dir.
func (d *Disk) path(key string) (string, error) {
	if key == "" || strings.Contains(key, "..") || strings.HasPrefix(key, "/") || strings.Contains(key, `\`) {
		return "", fmt.Errorf("blob: bad key %q", key)
	}
	return filepath.Join(d.Dir, filepath.FromSlash(key)), nil
}

// Put writes to a temporary file and renames it into place after an fsync,
// so a crash leaves either the whole blob or none.
func (d *Disk) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return 0, err
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	tmp := p + ".tmp-" + hex.EncodeToString(suffix)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, readerCtx{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("blob put: %w", err)
	}
	return n, nil
}

// Open opens the file behind key.
func (d *Disk) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// Delete removes the file behind key.
func (d *Disk) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Walk calls fn with the key and size of every blob under Dir, skipping
// the temporary files of puts that have not finished. It is how a disk
// store's blobs are carried elsewhere (teleclinic move).
func (d *Disk) Walk(ctx context.Context, fn func(key string, size int64) error) error {
	return filepath.WalkDir(d.Dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && p == d.Dir {
				return nil // nothing was ever stored
			}
			return err
		}
		if de.IsDir() || strings.Contains(de.Name(), ".tmp-") {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(d.Dir, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), info.Size())
	})
}

// readerCtx stops a long copy when the request is cancelled.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

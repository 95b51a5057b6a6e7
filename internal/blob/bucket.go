package blob

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Bucket stores blobs in an S3-compatible bucket through gocloud.dev.
type Bucket struct{ b *blob.Bucket }

// Open selects the store a --blob-url names: empty for the disk store under
// dir, or s3://bucket?region=…&endpoint=…&use_path_style=true for an
// S3-compatible bucket. Credentials come from the usual AWS environment
// variables or shared config, never from the URL, so they stay out of logs.
func Open(ctx context.Context, rawURL, dir string) (Store, error) {
	switch {
	case rawURL == "":
		return NewDisk(dir)
	case strings.HasPrefix(rawURL, s3blob.Scheme+"://"):
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("blob url: %w", err)
		}
		b, err := (&s3blob.URLOpener{}).OpenBucketURL(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("blob url: %w", err)
		}
		return &Bucket{b: b}, nil
	}
	return nil, fmt.Errorf("blob url: %q is not s3://bucket?… (leave it empty for the data directory)", rawURL)
}

// NewBucket wraps an opened bucket (tests and embedders).
func NewBucket(b *blob.Bucket) *Bucket { return &Bucket{b: b} }

// Put streams r into the bucket. S3 makes an object visible only when its
// upload completes; an error or a cancelled context aborts the upload.
func (s *Bucket) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.b.NewWriter(ctx, key, nil)
	if err != nil {
		return 0, fmt.Errorf("blob put: %w", err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		cancel() // abort: the partial object is never written
		_ = w.Close()
		return 0, fmt.Errorf("blob put: %w", err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("blob put: %w", err)
	}
	return n, nil
}

// Open returns a reader that can seek (ranges are fetched on demand).
func (s *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	r, err := s.b.NewReader(ctx, key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("blob open: %w", err)
	}
	return r, r.Size(), nil
}

// Delete removes key; a missing key is not an error.
func (s *Bucket) Delete(ctx context.Context, key string) error {
	err := s.b.Delete(ctx, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("blob delete: %w", err)
	}
	return nil
}

// Close releases the bucket's resources.
func (s *Bucket) Close() error { return s.b.Close() }

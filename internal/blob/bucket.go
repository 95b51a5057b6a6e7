package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Bucket stores blobs in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2…)
// through minio-go: a plain S3 client of ~40 packages, where the AWS SDK
// with gocloud.dev brought ~250 (gRPC and OpenTelemetry among them) to a
// binary most clinics run on one disk (docs/performance.md, build).
type Bucket struct {
	c      *minio.Client
	bucket string
}

// partSize is the buffer of an upload of unknown length: each part is sent
// as it fills, so a put holds this much memory however large the file.
// (S3's smallest part is 5 MiB; minio-go's default for an unknown length is
// 512 MiB.)
const partSize = 8 << 20

// Open selects the store a --blob-url names: empty for the disk store under
// dir, or s3://bucket?region=…&endpoint=…&use_path_style=true for an
// S3-compatible bucket. Credentials come from the usual AWS environment
// variables or shared credentials file, never from the URL, so they stay
// out of logs.
func Open(ctx context.Context, rawURL, dir string) (Store, error) {
	switch {
	case rawURL == "":
		return NewDisk(dir)
	case strings.HasPrefix(rawURL, "s3://"):
		return openS3(rawURL)
	}
	return nil, fmt.Errorf("blob url: %q is not s3://bucket?… (leave it empty for the data directory)", rawURL)
}

// openS3 reads the URL's bucket and its settings (the names gocloud.dev's
// s3blob took, so existing URLs keep working): region, endpoint (a full
// URL; AWS's own when empty) and use_path_style.
func openS3(rawURL string) (*Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("blob url: %q: want s3://bucket?region=…", rawURL)
	}
	q := u.Query()
	region := q.Get("region")
	host, secure := "s3.amazonaws.com", true
	if region != "" {
		host = "s3." + region + ".amazonaws.com"
	}
	if ep := q.Get("endpoint"); ep != "" {
		eu, err := url.Parse(ep)
		if err != nil || eu.Host == "" || (eu.Scheme != "http" && eu.Scheme != "https") {
			return nil, fmt.Errorf("blob url: endpoint %q: want http(s)://host[:port]", ep)
		}
		host, secure = eu.Host, eu.Scheme == "https"
	}
	lookup := minio.BucketLookupAuto
	switch q.Get("use_path_style") {
	case "true", "1":
		lookup = minio.BucketLookupPath
	case "", "false", "0":
	default:
		return nil, fmt.Errorf("blob url: use_path_style must be true or false")
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
	})
	c, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("blob url: %w", err)
	}
	return &Bucket{c: c, bucket: u.Host}, nil
}

// Put streams r into the bucket. S3 makes an object visible only when its
// upload completes; an error or a cancelled context aborts the upload.
func (s *Bucket) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	// Each part carries its MD5, which every S3 checks, instead of the
	// aws-chunked streaming signature minio-go uses over plain http: not
	// every S3-compatible server (nor the test fake) decodes that.
	info, err := s.c.PutObject(ctx, s.bucket, key, r, -1, minio.PutObjectOptions{PartSize: partSize, ContentType: "application/octet-stream",
		DisableContentSha256: true, SendContentMd5: true})
	if err != nil {
		return 0, fmt.Errorf("blob put: %w", err)
	}
	return info.Size, nil
}

// Open returns a reader that can seek (ranges are fetched on demand).
func (s *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("blob open: %w", err)
	}
	st, err := obj.Stat() // the object is fetched lazily: this is the request
	if err != nil {
		obj.Close()
		if notFound(err) {
			return nil, 0, ErrNotFound
		}
		return nil, 0, fmt.Errorf("blob open: %w", err)
	}
	return obj, st.Size, nil
}

// Delete removes key; a missing key is not an error.
func (s *Bucket) Delete(ctx context.Context, key string) error {
	err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && !notFound(err) {
		return fmt.Errorf("blob delete: %w", err)
	}
	return nil
}

func notFound(err error) bool {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.Code == "NoSuchKey" || er.StatusCode == 404
	}
	return minio.ToErrorResponse(err).Code == "NoSuchKey"
}

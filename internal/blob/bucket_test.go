package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"teleclinic/internal/blob"
	"teleclinic/internal/testenv"
)

func TestBucket_S3RoundTrip(t *testing.T) {
	ctx := context.Background()
	st, err := blob.Open(ctx, testenv.NewS3(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*blob.Bucket); !ok {
		t.Fatalf("%T, want the bucket store", st)
	}
	body := bytes.Repeat([]byte("0123456789"), 200_000) // 2 MB: more than one part buffer
	n, err := st.Put(ctx, "files/1/2/abc", bytes.NewReader(body))
	if err != nil || n != int64(len(body)) {
		t.Fatalf("put: %d %v", n, err)
	}
	r, size, err := st.Open(ctx, "files/1/2/abc")
	if err != nil || size != int64(len(body)) {
		t.Fatalf("open: %d %v", size, err)
	}
	// The reader seeks, so range requests work from the bucket too.
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		t.Fatalf("%T cannot seek", r)
	}
	if _, err := rs.Seek(1_999_990, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tail, _ := io.ReadAll(rs)
	r.Close()
	if string(tail) != "0123456789" {
		t.Fatalf("tail %q", tail)
	}
	if err := st.Delete(ctx, "files/1/2/abc"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Open(ctx, "files/1/2/abc"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := st.Delete(ctx, "files/1/2/abc"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	// A failed upload leaves no object behind.
	if _, err := st.Put(ctx, "files/broken", io.MultiReader(strings.NewReader("part"), errReader{})); err == nil {
		t.Fatal("a failing reader was stored")
	}
	if _, _, err := st.Open(ctx, "files/broken"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("half an upload is visible: %v", err)
	}
}

func TestOpen_URLs(t *testing.T) {
	ctx := context.Background()
	st, err := blob.Open(ctx, "", t.TempDir())
	if _, ok := st.(*blob.Disk); !ok || err != nil {
		t.Fatalf("%T %v", st, err)
	}
	if _, err := blob.Open(ctx, "ftp://x", t.TempDir()); err == nil {
		t.Fatal("an unknown scheme was accepted")
	}
	if st, err := blob.Open(ctx, "s3://clinic-files?region=eu-west-1", ""); err != nil {
		t.Fatalf("AWS's own endpoint: %T %v", st, err)
	}
	for _, bad := range []string{"s3://", "s3://b?endpoint=minio.internal:9000", "s3://b?endpoint=ftp://minio.internal", "s3://b?use_path_style=maybe"} {
		if _, err := blob.Open(ctx, bad, ""); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

package testenv

import (
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// NewS3 starts an in-process S3 fake with one bucket, closed when t ends,
// and returns the --blob-url that selects it. The fake does not check
// signatures, but the client still signs, so credentials come from the
// environment as in production.
func NewS3(t testing.TB) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("clinic-files"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return "s3://clinic-files?region=us-east-1&use_path_style=true&endpoint=" + srv.URL
}

package blob

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestBlob_Disk(t *testing.T) {
	d, err := NewDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, err := d.Put(ctx, "a/b/c.bin", strings.NewReader("hello"))
	if err != nil || n != 5 {
		t.Fatalf("%d %v", n, err)
	}
	r, size, err := d.Open(ctx, "a/b/c.bin")
	if err != nil || size != 5 {
		t.Fatalf("%d %v", size, err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "hello" {
		t.Fatalf("%q", b)
	}
	if _, ok := r.(io.Seeker); !ok {
		t.Fatal("disk blobs seek")
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../x", ""} {
		if _, err := d.Put(ctx, bad, strings.NewReader("x")); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	if err := d.Delete(ctx, "a/b/c.bin"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Open(ctx, "a/b/c.bin"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("%v", err)
	}
	if err := d.Delete(ctx, "a/b/c.bin"); err != nil {
		t.Fatal("deleting twice is fine")
	}
	// A failed copy leaves nothing behind.
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.Put(ctx2, "a/x.bin", strings.NewReader("data")); err == nil {
		t.Fatal("cancelled put succeeded")
	}
	entries, _ := os.ReadDir(d.Dir + "/a")
	for _, e := range entries {
		if e.Name() != "b" {
			t.Fatalf("left behind %s", e.Name())
		}
	}
}

package move

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"teleclinic/internal/app"
	"teleclinic/internal/blob"
	"teleclinic/internal/store"
)

// TestSameTrail: the target's verification must match the source's: the
// same break or none, the same head, and a checkpoint at the chain's end
// when the source had one.
func TestSameTrail(t *testing.T) {
	head := store.AuditHead{AccountID: 1, Seq: 40, Head: "h40"}
	intact := &app.AuditVerification{Entries: 40, Head: "h40", Checkpoint: &app.AuditCheckpoint{Seq: 40, Head: "h40"}}
	brokenAt := func(seq int64) *app.AuditVerification {
		return &app.AuditVerification{Entries: seq, Broken: &app.AuditBreak{Seq: seq, Reason: "mac"}}
	}
	for _, tc := range []struct {
		name          string
		before, after *app.AuditVerification
		head          store.AuditHead
		fails         string // "" when the trails agree
	}{
		{"OKIntact", intact, intact, head, ""},
		{"OKBrokenTheSameWay", brokenAt(7), brokenAt(7), head, ""},
		{"OKNoEntriesNoCheckpoint", &app.AuditVerification{}, &app.AuditVerification{}, store.AuditHead{AccountID: 1}, ""},
		{"ErrBrokenElsewhere", brokenAt(7), brokenAt(9), head, "not the same way"},
		{"ErrBrokenOnlyInTarget", intact, brokenAt(3), head, "server key"},
		{"ErrOtherHead", intact, &app.AuditVerification{Head: "h39", Checkpoint: intact.Checkpoint}, head, "ends at h39"},
		{"ErrNoCheckpoint", intact, &app.AuditVerification{Head: "h40"}, head, "no checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sameTrail(tc.before, tc.after, tc.head)
			if (tc.fails == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.fails)) {
				t.Fatalf("%v, want %q", err, tc.fails)
			}
		})
	}
}

// TestCopyBlobs: every file of the disk store reaches the target with its
// bytes, and the report counts them; the sample then hashes alike.
func TestCopyBlobs(t *testing.T) {
	ctx := context.Background()
	from, err := blob.NewDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	to, err := blob.NewDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"ab/one": []byte("first file"), "cd/two": bytes.Repeat([]byte{7}, 70_000), "ef/empty": {}}
	for k, b := range files {
		if _, err := from.Put(ctx, k, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	var rep Report
	if err := copyBlobs(ctx, from, to, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.BlobsCopied != 3 || rep.BlobBytes != 70_010 {
		t.Fatalf("report: %d files, %d bytes", rep.BlobsCopied, rep.BlobBytes)
	}
	for k, want := range files {
		r, _, err := to.Open(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes (%v), want %d", k, len(got), err, len(want))
		}
		a, na, err1 := hashBlob(ctx, from, k)
		b, nb, err2 := hashBlob(ctx, to, k)
		if err1 != nil || err2 != nil || a != b || na != nb {
			t.Fatalf("%s hashes %s/%d and %s/%d (%v, %v)", k, a, na, b, nb, err1, err2)
		}
	}
}

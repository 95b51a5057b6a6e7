package imaging

import (
	"bytes"
	"io"
	"testing"
)

// FuzzResize feeds the image header check and the decoder arbitrary bytes
// with a small pixel budget: it never panics, and an image over the
// budget is refused from its header before it is decoded.
func FuzzResize(f *testing.F) {
	f.Add(pngHeader(10, 10))
	f.Add(pngHeader(100000, 100000))
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	f.Add([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Fuzz(func(t *testing.T, b []byte) {
		admitted := int64(0)
		_ = Resize(io.Discard, bytes.NewReader(b), 32, 32, 4096, func(n int64) (func(), error) {
			admitted = n
			return func() {}, nil
		})
		if admitted > MemoryFor(4096, 1, 32, 32)*2 {
			t.Fatalf("admitted %d bytes for a 4096-pixel budget", admitted)
		}
	})
}

// pngHeader is the start of a PNG that declares w × h.
func pngHeader(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	b = append(b, byte(w>>24), byte(w>>16), byte(w>>8), byte(w), byte(h>>24), byte(h>>16), byte(h>>8), byte(h))
	return append(b, 8, 6, 0, 0, 0, 0, 0, 0, 0)
}

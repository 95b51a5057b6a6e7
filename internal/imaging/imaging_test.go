package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"testing"
)

// HugePNGHeader is a valid PNG signature and IHDR declaring w × h pixels,
// followed by nothing: decoding it would need w×h×4 bytes.
func HugePNGHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// countingReader fails the test if more than the header is read.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestResize_RefusesHugeImageFromItsHeader(t *testing.T) {
	hdr := HugePNGHeader(30000, 30000)
	// Pad with junk: a decoder that went on would read it.
	cr := &countingReader{r: io.MultiReader(bytes.NewReader(hdr), bytes.NewReader(make([]byte, 1<<20)))}
	err := Resize(io.Discard, cr, 100, 100, 40_000_000, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v, want ErrTooLarge", err)
	}
	if cr.n > 64<<10 {
		t.Fatalf("read %d bytes before refusing", cr.n)
	}
}

func testPNG(t testing.TB, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 100, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestImaging_Resize(t *testing.T) {
	var out bytes.Buffer
	if err := Resize(&out, bytes.NewReader(testPNG(t, 400, 200)), 100, 100, 40_000_000, nil); err != nil {
		t.Fatal(err)
	}
	img, format, err := image.Decode(&out)
	if err != nil || format != "png" || img.Bounds().Dx() != 100 || img.Bounds().Dy() != 50 {
		t.Fatalf("%v %s %v", err, format, img.Bounds())
	}
	// Never enlarged.
	out.Reset()
	if err := Resize(&out, bytes.NewReader(testPNG(t, 40, 20)), 100, 100, 40_000_000, nil); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := png.DecodeConfig(&out); cfg.Width != 40 || cfg.Height != 20 {
		t.Fatalf("%+v", cfg)
	}
	if err := Resize(io.Discard, bytes.NewReader([]byte("%PDF-1.4 not an image")), 10, 10, 1000, nil); !errors.Is(err, ErrNotImage) {
		t.Fatal(err)
	}
}

func TestImaging_Fit(t *testing.T) {
	for _, c := range []struct{ w, h, mw, mh, ww, wh int }{
		{400, 200, 100, 100, 100, 50}, {200, 400, 100, 100, 50, 100}, {50, 50, 100, 100, 50, 50},
		{1000, 10, 100, 100, 100, 1}, {10000, 1, 100, 100, 100, 1},
	} {
		if w, h := Fit(c.w, c.h, c.mw, c.mh); w != c.ww || h != c.wh {
			t.Errorf("Fit(%d,%d,%d,%d) = %d,%d want %d,%d", c.w, c.h, c.mw, c.mh, w, h, c.ww, c.wh)
		}
	}
}

func BenchmarkResize(b *testing.B) {
	src := testPNG(b, 1200, 900)
	b.ReportAllocs()
	for b.Loop() {
		if err := Resize(io.Discard, bytes.NewReader(src), 200, 200, 40_000_000, nil); err != nil {
			b.Fatal(err)
		}
	}
}

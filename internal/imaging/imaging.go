// Package imaging reads image headers and makes bounded PNG thumbnails.
// Sizes are checked from the header before any pixel is decoded, so a small
// file that declares a huge image cannot make the server allocate for it.
package imaging

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders register themselves
	_ "image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp"
)

// ErrTooLarge is an image whose width × height exceeds the pixel budget.
var ErrTooLarge = errors.New("imaging: image too large")

// ErrNotImage is content no registered decoder reads.
var ErrNotImage = errors.New("imaging: not an image")

// Resize reads an image from r and writes it to w as a PNG that fits within
// maxW × maxH, keeping its aspect ratio and never enlarging it. An image of
// more than maxPixels pixels is refused from its header. admit, when set,
// is asked with the memory the decode and the scaled copy will take
// (MemoryFor) before any pixel is decoded; its error ends the resize, and
// the release it returns is called once the pixels are no longer held.
func Resize(w io.Writer, r io.Reader, maxW, maxH int, maxPixels int64, admit func(bytes int64) (release func(), err error)) error {
	// The header is read through a recorder so the same bytes can be fed to
	// the decoder afterwards without reading the file twice.
	var head bytes.Buffer
	br := bufio.NewReader(r)
	cfg, _, err := image.DecodeConfig(io.TeeReader(br, &head))
	if err != nil {
		return ErrNotImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return fmt.Errorf("%w: %d×%d", ErrTooLarge, cfg.Width, cfg.Height)
	}
	if admit != nil {
		release, err := admit(MemoryFor(cfg.Width, cfg.Height, maxW, maxH))
		if err != nil {
			return err
		}
		defer release()
	}
	src, _, err := image.Decode(io.MultiReader(&head, br))
	if err != nil {
		return fmt.Errorf("imaging: decode: %w", err)
	}
	b := src.Bounds()
	tw, th := Fit(b.Dx(), b.Dy(), maxW, maxH)
	if tw == b.Dx() && th == b.Dy() {
		return png.Encode(w, src)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, tw, th))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, dst)
}

// Fit returns the largest size within maxW × maxH with the aspect ratio of
// w × h, never larger than w × h and never zero.
func Fit(w, h, maxW, maxH int) (int, int) {
	if w <= maxW && h <= maxH {
		return w, h
	}
	// Scale by the tighter bound, in integers to stay exact.
	tw, th := maxW, int(int64(h)*int64(maxW)/int64(w))
	if th > maxH {
		tw, th = int(int64(w)*int64(maxH)/int64(h)), maxH
	}
	return max(tw, 1), max(th, 1)
}

// IsImage reports whether a content type is one Resize reads.
func IsImage(contentType string) bool {
	switch contentType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// MemoryFor is what resizing a w × h image into maxW × maxH holds at its
// peak: the decoded image (at most 4 bytes a pixel: RGBA; JPEG's YCbCr
// takes less) and the scaled copy (4 bytes a pixel).
func MemoryFor(w, h, maxW, maxH int) int64 {
	tw, th := Fit(w, h, maxW, maxH)
	return 4*int64(w)*int64(h) + 4*int64(tw)*int64(th)
}

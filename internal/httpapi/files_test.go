package httpapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"teleclinic/client"
	"teleclinic/internal/blob"
	"teleclinic/internal/testenv"
)

func pngBytes(t testing.TB, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 80, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// hugePNG is a valid PNG header declaring w×h pixels and no pixel data.
func hugePNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6
	_ = binary.Write(&b, binary.BigEndian, uint32(13))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func mustUpload(t *testing.T, e *testenv.Env, c *testenv.Clinic, token, name string, body []byte, kv ...string) client.File {
	t.Helper()
	return dataOf[client.File](t, upload(e, c, token, name, body, kv...))
}

func TestFiles_UploadViewList(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{MaxFile: 64 << 10})
	s := newClinicSetup(t, e, "alpha")
	pic := pngBytes(t, 400, 200)

	f := mustUpload(t, e, s.c, s.pat.Token, "scan.png", pic, "meta.title", "Rash photo", "meta.description", "left arm")
	m := f.Meta
	if f.Name != "scan.png" || f.Ext != "png" || f.Size != len(pic) || f.ContentType != "image/png" || !f.IsDeletable ||
		m.Category != "user_document" || deref(m.Title) != "Rash photo" || deref(m.Description) != "left arm" ||
		m.Target.Type != "user" || m.Target.Id != s.pat.UserID || deref(m.Account.Code) != "alpha" || deref(f.Creator.Id) != s.pat.UserID {
		t.Fatalf("%+v", f)
	}
	fid, link := f.Id, f.Fullpath
	if !strings.HasPrefix(link, "http://teleclinic.test/api_v3/files/view/"+fid+"?") || !strings.Contains(link, "auth_code=") || !strings.Contains(link, "time=") {
		t.Fatal(link)
	}

	// View link: bytes, headers, resize, tampering, expiry.
	t.Run("OKViewLink", func(t *testing.T) {
		res := view(t, e, link)
		if res.Status != 200 || !bytes.Equal(res.Raw, pic) || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
			res.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "inline") {
			t.Fatalf("%d %v", res.Status, res.Header)
		}
		res = view(t, e, link, "size", "100x100")
		cfg, format, err := image.DecodeConfig(bytes.NewReader(res.Raw))
		if res.Status != 200 || err != nil || format != "png" || cfg.Width != 100 || cfg.Height != 50 {
			t.Fatalf("%d %v %s %+v", res.Status, err, format, cfg)
		}
		wantErr(t, view(t, e, link, "size", "huge"), 400, 400)
		u, _ := url.Parse(link)
		code := u.Query().Get("auth_code")
		tampered := strings.Replace(link, code, strings.Repeat("0", len(code)), 1)
		wantErr(t, view(t, e, tampered), 403, 403)
		// The signature covers the id: another file's id with this code fails.
		wantErr(t, view(t, e, strings.Replace(link, "/view/"+fid+"?", "/view/9"+fid+"?", 1)), 403, 403)
		exp := u.Query().Get("time")
		wantErr(t, view(t, e, link, "time", exp+"0"), 403, 403)
		// Expired: a fresh env clock moved past the link's time.
		clock := testenv.NewClock()
		clock.Advance(3 * time.Hour)
		later := testenv.New(t, testenv.Options{DSN: e.DSN, ServerKey: e.Key, BlobDir: e.Blobs, Clock: clock})
		wantErr(t, view(t, later, link), 403, 403)
	})

	// Non-images download; size is ignored.
	t.Run("OKNonImageDownload", func(t *testing.T) {
		pdf := []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
		d := mustUpload(t, e, s.c, s.pat.Token, "labs.pdf", pdf, "meta.category", "user_consent")
		res := view(t, e, d.Fullpath, "size", "10x10")
		if res.Status != 200 || !bytes.Equal(res.Raw, pdf) || res.Header.Get("Content-Type") != "application/pdf" ||
			res.Header.Get("Content-Disposition") != "attachment; filename=labs.pdf" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%d %v", res.Status, res.Header)
		}
	})

	// A 30000x30000 image is refused from its header.
	t.Run("ErrHugeImage", func(t *testing.T) {
		d := mustUpload(t, e, s.c, s.pat.Token, "bomb.png", hugePNG(30000, 30000))
		wantErr(t, view(t, e, d.Fullpath, "size", "100x100"), 413, 413)
		// Unresized, it is served as stored.
		if res := view(t, e, d.Fullpath); res.Status != 200 {
			t.Fatal(res.Status)
		}
	})

	// Bad uploads.
	t.Run("ErrBadUpload", func(t *testing.T) {
		wantErr(t, upload(e, s.c, s.pat.Token, "page.html", []byte("<!DOCTYPE html><script>alert(1)</script>")), 400, 400)
		wantErr(t, upload(e, s.c, s.pat.Token, "a.exe", []byte("MZ\x90\x00\x03\x00\x00\x00\x04\x00")), 400, 400)
		wantErr(t, upload(e, s.c, s.pat.Token, "empty.txt", []byte{}), 400, 400)
		wantErr(t, upload(e, s.c, s.pat.Token, "big.txt", bytes.Repeat([]byte("a"), 70<<10)), 413, 413)
		wantErr(t, upload(e, s.c, s.pat.Token, "x.txt", []byte("hello"), "meta.category", "selfies"), 400, 400)
		wantErr(t, upload(e, s.c, s.pat.Token, "x.txt", []byte("hello"), "meta.category", "user_avatar"), 400, 400)
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files", Header: userHeaders(s.c, s.pat.Token), Multipart: map[string]string{"meta.title": "x"}}), 400, 400)
		wantErr(t, upload(e, s.c, "nope", "x.txt", []byte("hello")), 401, 401)
	})

	// Who may upload for whom.
	t.Run("ErrUploadForOthers", func(t *testing.T) {
		// Another patient is not found; a provider without a visit is refused.
		wantErr(t, upload(e, s.c, s.pat2.Token, "x.txt", []byte("hello"), "meta.target.id", s.pat.UserID, "meta.target.type", "user"), 404, 404)
		wantErr(t, upload(e, s.c, s.doc.Token, "x.txt", []byte("hello"), "meta.target.id", s.pat.UserID, "meta.target.type", "user"), 403, 403)
		// The admin uploads for the patient.
		d := mustUpload(t, e, s.c, "", "consent.txt", []byte("I consent."), "meta.target.id", s.pat.UserID, "meta.target.type", "user", "meta.category", "user_consent")
		if d.Meta.Target.Id != s.pat.UserID {
			t.Fatalf("%+v", d)
		}
	})

	// Visit files, listing and access.
	t.Run("OKVisitFiles", func(t *testing.T) {
		visit := s.econsult(t, s.pat)
		if res := s.post(s.doc.Token, "/api_v3/visits/accept", "id", visit); res.Status != 200 {
			t.Fatalf("accept: %s", res.Raw)
		}
		att := mustUpload(t, e, s.c, s.pat.Token, "throat.jpg.txt", []byte("notes for the visit"), "meta.target.id", visit, "meta.target.type", "visit")
		if att.Meta.Category != "intake_attachment" || att.Meta.Intake == nil {
			t.Fatalf("%+v", att)
		}
		wantErr(t, upload(e, s.c, s.pat.Token, "x.txt", []byte("x"), "meta.target.id", visit, "meta.target.type", "visit", "meta.category", "user_document"), 400, 400)
		wantErr(t, upload(e, s.c, s.pat2.Token, "x.txt", []byte("x"), "meta.target.id", visit, "meta.target.type", "visit"), 404, 404)

		list := func(token string, kv ...string) []client.File {
			t.Helper()
			return dataOf[[]client.File](t, e.Do(testenv.Req{Path: "/api_v3/files", Header: userHeaders(s.c, token), Query: q(kv...)}))
		}
		mine := list(s.pat.Token)
		for _, x := range mine {
			if x.Id == att.Id {
				t.Fatal("a visit's file in the profile list")
			}
		}
		if len(list(s.pat.Token, "include_shared", "1")) != len(mine)+1 {
			t.Fatal("include_shared leaves out the visit's file")
		}
		if got := list(s.pat.Token, "target_type", "visit", "target_id", visit); len(got) != 1 || got[0].Id != att.Id {
			t.Fatalf("%+v", got)
		}
		if got := list(s.pat.Token, "category_type", "user_consent"); len(got) != 2 {
			t.Fatalf("%d consents", len(got))
		}
		// The provider now has a visit with the patient: reads their files, and
		// cannot delete the patient's own upload.
		docView := list(s.doc.Token, "target_id", s.pat.UserID, "target_type", "user")
		if len(docView) != len(mine) || docView[0].IsDeletable {
			t.Fatalf("%+v", docView)
		}
		if res := e.Do(testenv.Req{Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.doc.Token)}); res.Status != 200 {
			t.Fatal(res.Status)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.doc.Token)}), 403, 403)
		// Others see nothing.
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.pat2.Token)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/files", Header: userHeaders(s.c, s.pat2.Token), Query: q("target_id", s.pat.UserID)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/files", Header: userHeaders(s.c, s.other.Token), Query: q("target_id", s.pat.UserID)}), 403, 403)
		beta := e.NewClinic("beta", true)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/files/" + fid, Header: adminHeaders(beta)}), 404, 404)
	})

	// Rename, retitle, delete.
	t.Run("OKRenameRetitleDelete", func(t *testing.T) {
		got := dataOf[client.File](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.pat.Token), Form: q("name", "arm.png")}))
		if got.Name != "arm.png" || deref(got.Meta.Title) != "arm.png" {
			t.Fatalf("%+v", got)
		}
		got = dataOf[client.File](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.pat.Token), JSON: js(`{"meta": {"title": "Arm, day 2"}}`)}))
		if deref(got.Meta.Title) != "Arm, day 2" || got.Name != "arm.png" {
			t.Fatalf("%+v", got)
		}
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.pat2.Token), Form: q("name", "x")}), 404, 404)
		var key string
		if err := e.Store.DB().QueryRow("SELECT blob_key FROM files WHERE id = " + fid).Scan(&key); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(e.Blobs, key)); err != nil {
			t.Fatalf("bytes missing before delete: %v", err)
		}
		if deleted := dataOf[bool](t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.pat.Token)})); !deleted {
			t.Fatal("deleted: false")
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/files/" + fid, Header: userHeaders(s.c, s.pat.Token)}), 404, 404)
		wantErr(t, view(t, e, link), 404, 404)
		if _, err := os.Stat(filepath.Join(e.Blobs, key)); !os.IsNotExist(err) {
			t.Fatalf("bytes left after delete: %v", err)
		}
		var n int
		e.FlushAudits()
		_ = e.Store.DB().QueryRow("SELECT COUNT(*) FROM audit WHERE action IN ('file.create', 'file.read', 'file.view', 'file.list', 'file.update', 'file.delete')").Scan(&n)
		if n < 10 {
			t.Fatalf("%d audit entries for file access", n)
		}
	})

	// POST /me photo upload.
	t.Run("OKPhotoUpload", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat2.Token),
			Multipart: map[string]string{"first_name": "Pia"}, Files: map[string][]byte{"photo": pngBytes(t, 300, 300)}, FileNames: map[string]string{"photo": "me.png"}})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		me := e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(s.c, s.pat2.Token), Query: q("user_photo_size", "64x64")})
		photo := dataOf[client.UserProfile](t, me).Photo
		if photo == "" {
			t.Fatalf("%s", me.Raw)
		}
		got := view(t, e, photo)
		cfg, _, err := image.DecodeConfig(bytes.NewReader(got.Raw))
		if got.Status != 200 || err != nil || cfg.Width != 64 {
			t.Fatalf("%d %v %+v", got.Status, err, cfg)
		}
		// Deleting the picture's file removes the photo.
		u, _ := url.Parse(photo)
		fileID := strings.TrimPrefix(u.Path, "/api_v3/files/view/")
		if res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/files/" + fileID, Header: userHeaders(s.c, s.pat2.Token)}); res.Status != 200 {
			t.Fatalf("%s", res.Raw)
		}
		if p := dataOf[client.UserProfile](t, e.Do(testenv.Req{Path: "/api_v3/me", Header: userHeaders(s.c, s.pat2.Token)})).Photo; p != "" {
			t.Fatalf("photo after its file was deleted: %v", p)
		}
		// A non-image photo is refused.
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/me", Header: userHeaders(s.c, s.pat2.Token),
			Multipart: map[string]string{}, Files: map[string][]byte{"photo": []byte("%PDF-1.4 x")}})
		if res.Status != 400 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
}

// TestFiles_S3 runs an upload and a download through an S3-compatible
// bucket (an in-process fake) selected by its --blob-url.
func TestFiles_S3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("clinic"); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(gofakes3.New(backend).Server())
	defer fake.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	st, err := blob.Open(context.Background(), "s3://clinic?region=us-east-1&use_path_style=true&endpoint="+fake.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.New(t, testenv.Options{BlobStore: st})
	s := newClinicSetup(t, e, "alpha")
	pic := pngBytes(t, 120, 80)
	f := mustUpload(t, e, s.c, s.pat.Token, "x.png", pic)
	var key string
	if err := e.Store.DB().QueryRow("SELECT blob_key FROM files WHERE id = " + f.Id).Scan(&key); err != nil {
		t.Fatal(err)
	}
	obj, err := backend.HeadObject("clinic", key)
	if err != nil || obj.Size != int64(len(pic)) {
		t.Fatalf("object %q: %v", key, err)
	}
	res := view(t, e, f.Fullpath)
	if res.Status != 200 || !bytes.Equal(res.Raw, pic) {
		t.Fatalf("%d %d bytes", res.Status, len(res.Raw))
	}
	if res := view(t, e, f.Fullpath, "size", "60x60"); res.Status != 200 {
		t.Fatal(res.Status)
	}
	if res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/files/" + f.Id, Header: userHeaders(s.c, s.pat.Token)}); res.Status != 200 {
		t.Fatal(res.Status)
	}
	if _, err := backend.HeadObject("clinic", key); err == nil {
		t.Fatal("the object outlived its file")
	}
}

// TestFiles_ListStatements: a file list reads its files' creators in one
// statement, so files by two creators take as many statements as by one.
func TestFiles_ListStatements(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	count := func(want int) int64 {
		t.Helper()
		res := e.Do(testenv.Req{Path: "/api_v3/files", Header: userHeaders(s.c, s.pat.Token)})
		if res.Status != 200 || len(res.List()) != want {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		return e.Statements()
	}
	mustUpload(t, e, s.c, s.pat.Token, "a.txt", []byte("mine"))
	count(1) // warm the caches both reads use
	one := count(1)
	mustUpload(t, e, s.c, "", "consent.txt", []byte("I consent."), "meta.target.id", s.pat.UserID, "meta.target.type", "user", "meta.category", "user_consent")
	count(2)
	if two := count(2); one != two || one == 0 {
		t.Fatalf("%d statements for one creator's file, %d for two creators' files", one, two)
	}
}

// GET /files pages by file (before, limit, Link rel=next): a patient's
// files are read whole across pages, newest first, each once; the intake
// attachments a user's list leaves out do not shorten its pages.
func TestFiles_Pages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	visit := s.econsult(t, s.pat)
	var want []string
	for i := range 9 {
		d := mustUpload(t, e, s.c, s.pat.Token, fmt.Sprintf("f%d.txt", i), []byte("mine"))
		want = append([]string{d.Id}, want...)
		// A visit's file between each: in the list with include_shared only.
		mustUpload(t, e, s.c, s.pat.Token, fmt.Sprintf("v%d.txt", i), []byte("for the visit"), "meta.target.id", visit, "meta.target.type", "visit")
	}
	h := userHeaders(s.c, s.pat.Token)
	for _, limit := range []int{1, 2, 4, 9} {
		files, _ := pageWalk{path: "/api_v3/files", query: q("limit", fmt.Sprint(limit)), header: h, cursor: "before", idKey: "id", limit: limit}.walk(t, e)
		if got := idsOf(files, "id"); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%d a page: %v, want %v", limit, got, want)
		}
	}
	// All 18 on one page: that page is the last and names no next one.
	shared := e.Do(testenv.Req{Path: "/api_v3/files", Query: q("include_shared", "1", "limit", "18"), Header: h})
	if shared.Status != 200 || len(shared.List()) != 18 || shared.Header.Get("Link") != "" {
		t.Fatalf("with the visit's files: %d files, Link %q", len(shared.List()), shared.Header.Get("Link"))
	}
	if part := e.Do(testenv.Req{Path: "/api_v3/files", Query: q("include_shared", "1", "limit", "17"), Header: h}); part.Status != 200 || len(part.List()) != 17 || part.Header.Get("Link") == "" {
		t.Fatalf("17 of the 18: %d files, Link %q", len(part.List()), part.Header.Get("Link"))
	}
	for _, before := range []string{"-1", "soon"} {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/files", Query: q("before", before), Header: h}), 400, 400)
	}
}

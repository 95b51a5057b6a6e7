package httpapi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// webm is the start of a WebM file: enough for content sniffing to call it video.
var webm = append([]byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01}, bytes.Repeat([]byte("recording-bytes "), 4096)...)

func TestRecordings_UploadAndDownload(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{MaxUpload: 200 << 10})
	s := newClinicSetup(t, e, "alpha")
	it := s.intake(t, s.pat)
	vid := dataOf[client.Visit](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, s.pat.Token), Form: q("intake_id", it, "room_code", "main")})).Id
	it2 := s.intake(t, s.pat2)
	other := dataOf[client.Visit](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, s.pat2.Token), Form: q("intake_id", it2, "room_code", "main")})).Id
	start := e.Clock.Now().Unix()
	upload := func(h map[string]string, path string, file []byte, fields map[string]string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: path, Header: h, Multipart: fields, Files: map[string][]byte{"file": file}})
	}
	fields := map[string]string{"start": "1772442000", "end": "1772442600", "participants": `[{"first_name":"Pat","last_name":"One","svcid":"tc1"}]`}

	rec := dataOf[client.Recording](t, upload(adminHeaders(s.c), "/api_v3/visits/"+vid+"/recordings", webm, fields))
	if rec.ContentType != "video/webm" || rec.Size != len(webm) || len(rec.Participants) != 1 || deref(rec.Participants[0].Svcid) != "tc1" {
		t.Fatalf("%+v", rec)
	}
	recID := rec.Id

	// Upload errors.
	t.Run("ErrUpload", func(t *testing.T) {
		wantObjErr(t, upload(adminHeaders(s.c), "/api_v3/visits/"+vid+"/recordings", []byte("<html><body>not a video</body></html>"), fields), 400, "text/html")
		wantObjErr(t, upload(adminHeaders(s.c), "/api_v3/visits/"+vid+"/recordings", webm, map[string]string{"start": "10", "end": "5"}), 400, "start and end")
		wantObjErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/" + vid + "/recordings", Header: adminHeaders(s.c), Multipart: fields}), 400, "file")
		wantObjErr(t, upload(userHeaders(s.c, s.doc.Token), "/api_v3/visits/"+vid+"/recordings", webm, fields), 401, "admin")
		wantObjErr(t, upload(adminHeaders(s.c), "/api_v3/visits/999999/recordings", webm, fields), 404, "Visit")
		wantObjErr(t, upload(adminHeaders(s.c), "/api_v3/visits/"+vid+"/recordings", bytes.Repeat(webm, 4), fields), 413, "larger")
	})
	// Listed with fields=recordings and with_recordings_only.
	t.Run("OKListedWithVisits", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c), Query: q("fields", "recordings")})
		counts := map[string]int{}
		for _, v := range dataOf[[]client.Visit](t, res) {
			if v.Recordings == nil {
				t.Fatalf("visit %s without its recordings: %s", v.Id, res.Raw)
			}
			counts[v.Id] = v.Recordings.Count
		}
		if counts[vid] != 1 || counts[other] != 0 {
			t.Fatalf("%s", res.Raw)
		}
		res = e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c), Query: q("with_recordings_only", "1")})
		if l := dataOf[[]client.Visit](t, res); len(l) != 1 || l[0].Id != vid || l[0].Recordings == nil || len(l[0].Recordings.Data) != 1 || l[0].Recordings.Data[0].Path != nil {
			t.Fatalf("%s", res.Raw)
		}
		if l := dataOf[[]client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c)})); l[0].Recordings != nil {
			t.Fatal("recordings appear only when asked for")
		}
		if v := dataOf[client.Visit](t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat.Token), Query: q("fields", "recordings")})); v.Recordings == nil || v.Recordings.Count != 1 {
			t.Fatalf("%+v", v.Recordings)
		}
	})
	var link string
	// Fetch with a link that downloads.
	t.Run("OKDownloadLink", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/visits/" + vid + "/recordings/" + formatID(recID), Header: adminHeaders(s.c)})
		got := decode[client.Recording](t, res) // unwrapped, as the spec shows it
		if got.Id != recID || got.Path == nil {
			t.Fatalf("the recording comes unwrapped, with its link: %s", res.Raw)
		}
		if int64(got.Path.Expiry) != start+3600 || !strings.HasPrefix(got.Path.Url, "http://teleclinic.test/api_v3/recordings/") {
			t.Fatalf("%+v", got.Path)
		}
		link = strings.TrimPrefix(got.Path.Url, "http://teleclinic.test")
		dl := e.Do(testenv.Req{Path: link})
		if dl.Status != 200 || !bytes.Equal(dl.Raw, webm) || dl.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("%d %d bytes %v", dl.Status, len(dl.Raw), dl.Header)
		}
		part := e.Do(testenv.Req{Path: link, Header: map[string]string{"Range": "bytes=0-3"}})
		if part.Status != http.StatusPartialContent || !bytes.Equal(part.Raw, webm[:4]) {
			t.Fatalf("%d %v", part.Status, part.Raw)
		}
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + other + "/recordings/" + formatID(recID), Header: adminHeaders(s.c)}), 404, "Recording")
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid + "/recordings/" + formatID(recID), Header: userHeaders(s.c, s.pat.Token)}), 401, "admin")
	})
	// An altered or expired link is 403.
	t.Run("ErrBadLink", func(t *testing.T) {
		u, _ := url.Parse(link)
		qv := u.Query()
		sig := qv.Get("signature")
		for name, mod := range map[string]func(url.Values){
			"signature": func(v url.Values) { v.Set("signature", strings.Repeat("0", len(sig))) },
			"expires":   func(v url.Values) { v.Set("expires", "9999999999") },
			"account":   func(v url.Values) { v.Set("account", "beta") },
		} {
			t.Run(name, func(t *testing.T) {
				v := url.Values{}
				for k, x := range qv {
					v[k] = append([]string(nil), x...)
				}
				mod(v)
				wantErr(t, e.Do(testenv.Req{Path: u.Path + "?" + v.Encode()}), 403, 403)
			})
		}
		wantErr(t, e.Do(testenv.Req{Path: strings.Replace(u.Path, formatID(recID), formatID(recID+1), 1) + "?" + qv.Encode()}), 403, 403)
		e.Clock.Advance(61 * time.Minute)
		res := e.Do(testenv.Req{Path: link})
		wantErr(t, res, 403, 403)
		if !strings.Contains(messageOf(res), "expired") {
			t.Fatalf("%s", res.Raw)
		}
	})
	// Another clinic's admin sees nothing.
	t.Run("ErrOtherClinic", func(t *testing.T) {
		b := e.NewClinic("beta", true)
		wantObjErr(t, e.Do(testenv.Req{Path: "/api_v3/visits/" + vid + "/recordings/" + formatID(recID), Header: adminHeaders(b)}), 404, "Recording")
		wantObjErr(t, upload(adminHeaders(b), "/api_v3/visits/"+vid+"/recordings", webm, fields), 404, "Visit")
	})
	// Downloads are audited.
	t.Run("OKAudited", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/audit", Header: adminHeaders(s.c), Query: q("action", "recording.download")})
		if decode[auditPage](t, res).TotalCount < 2 {
			t.Fatalf("%s", res.Raw)
		}
	})
}

// formatID writes a JSON number id as a path segment.
func formatID(id int) string { return strconv.Itoa(id) }

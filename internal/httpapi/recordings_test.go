package httpapi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

// webm is the start of a WebM file: enough for content sniffing to call it video.
var webm = append([]byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01}, bytes.Repeat([]byte("recording-bytes "), 4096)...)

func TestRecordings_UploadAndDownload(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{MaxUpload: 200 << 10})
	s := newClinicSetup(t, e, "alpha")
	it := s.intake(t, s.pat)
	v := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, s.pat.Token), Form: q("intake_id", it, "room_code", "main")}).Data()
	vid := v["id"].(string)
	it2 := s.intake(t, s.pat2)
	other := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/visits/add_econsult", Header: userHeaders(s.c, s.pat2.Token), Form: q("intake_id", it2, "room_code", "main")}).Data()["id"].(string)
	start := e.Clock.Now().Unix()
	upload := func(h map[string]string, path string, file []byte, fields map[string]string) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: path, Header: h, Multipart: fields, Files: map[string][]byte{"file": file}})
	}
	fields := map[string]string{"start": "1772442000", "end": "1772442600", "participants": `[{"first_name":"Pat","last_name":"One","svcid":"tc1"}]`}

	res := upload(adminHeaders(s.c), "/api_v3/visits/"+vid+"/recordings", webm, fields)
	if res.Status != 200 || res.Data()["content_type"] != "video/webm" || res.Data()["size"].(float64) != float64(len(webm)) ||
		res.Data()["participants"].([]any)[0].(map[string]any)["svcid"] != "tc1" {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	recID := res.Data()["id"].(float64)

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
		byID := map[string]map[string]any{}
		for _, x := range res.List() {
			byID[x["id"].(string)] = x
		}
		if rec := byID[vid]["recordings"].(map[string]any); rec["count"].(float64) != 1 || byID[other]["recordings"].(map[string]any)["count"].(float64) != 0 {
			t.Fatalf("%s", res.Raw)
		}
		res = e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c), Query: q("with_recordings_only", "1")})
		if l := res.List(); len(l) != 1 || l[0]["id"] != vid || l[0]["recordings"].(map[string]any)["data"].([]any)[0].(map[string]any)["path"] != nil {
			t.Fatalf("%s", res.Raw)
		}
		if l := e.Do(testenv.Req{Path: "/api_v3/visits", Header: adminHeaders(s.c)}).List(); l[0]["recordings"] != nil {
			t.Fatal("recordings appear only when asked for")
		}
		if r := e.Do(testenv.Req{Path: "/api_v3/visits/" + vid, Header: userHeaders(s.c, s.pat.Token), Query: q("fields", "recordings")}); r.Data()["recordings"].(map[string]any)["count"].(float64) != 1 {
			t.Fatalf("%s", r.Raw)
		}
	})
	var link string
	// Fetch with a link that downloads.
	t.Run("OKDownloadLink", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/visits/" + vid + "/recordings/" + formatID(recID), Header: adminHeaders(s.c)})
		if res.Status != 200 || res.Body["data"] != nil || res.Body["id"].(float64) != recID {
			t.Fatalf("the recording comes unwrapped: %d %s", res.Status, res.Raw)
		}
		path := res.Body["path"].(map[string]any)
		if int64(path["expiry"].(float64)) != start+3600 || !strings.HasPrefix(path["url"].(string), "http://teleclinic.test/api_v3/recordings/") {
			t.Fatalf("%v", path)
		}
		link = strings.TrimPrefix(path["url"].(string), "http://teleclinic.test")
		got := e.Do(testenv.Req{Path: link})
		if got.Status != 200 || !bytes.Equal(got.Raw, webm) || got.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(got.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("%d %d bytes %v", got.Status, len(got.Raw), got.Header)
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
		if !strings.Contains(res.Body["message"].(string), "expired") {
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
		if res.Body["total_count"].(float64) < 2 {
			t.Fatalf("%s", res.Raw)
		}
	})
}

// formatID writes a JSON number id as a path segment.
func formatID(f float64) string { return strconv.FormatInt(int64(f), 10) }

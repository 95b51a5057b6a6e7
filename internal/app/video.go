package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"teleclinic/internal/clinic"
)

// videoToken is the token the browser call SDK presents to the video
// gateway (fields=vsee): an HS256 JWT whose subject is the user's video
// identity, signed with a key derived from the server key and valid as long
// as an access token. A gateway configured with the same derived key
// verifies it without calling back.
func (a *App) videoToken(acct *clinic.Account, u *clinic.User) string {
	now := a.unix()
	header := b64json(map[string]string{"alg": "HS256", "typ": "JWT"})
	claims := b64json(map[string]any{
		"iss": "teleclinic", "aud": "video", "sub": u.SvcID, "account": acct.Code,
		"name": u.FullName(), "utype": u.Type, "iat": now, "exp": now + int64(a.cfg.UserTokenMax/time.Second),
	})
	m := hmac.New(sha256.New, a.VideoKey())
	m.Write([]byte(header + "." + claims))
	return header + "." + claims + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// VideoKey is the HMAC key of video tokens, for the video gateway's config.
func (a *App) VideoKey() []byte {
	k := sha256.Sum256(append([]byte("teleclinic-video:"), a.cfg.ServerKey...))
	return k[:]
}

func b64json(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// fileLinkTTL is how long a file view link works.
const fileLinkTTL = time.Hour

// FileViewURL is the time-limited view link of a file (COMPAT.md):
// {base}/api_v3/files/view/{id}?auth_code=<hmac>&time=<expiry>, with an
// optional size for images. The expiry is rounded up to the next ten minutes
// so that a profile read twice gives the same link, which caches well.
func (a *App) FileViewURL(id int64, size string) string {
	exp := (a.unix()+int64(fileLinkTTL/time.Second))/600*600 + 600
	v := url.Values{"auth_code": {a.fileSig(id, exp)}, "time": {fmt.Sprint(exp)}}
	if size != "" {
		v.Set("size", size)
	}
	return strings.TrimRight(a.cfg.BaseURL, "/") + "/api_v3/files/view/" + fmt.Sprint(id) + "?" + v.Encode()
}

// fileSig signs a file id and a link expiry. File ids are never reused, so
// a link cannot come to name another file.
func (a *App) fileSig(id, exp int64) string { return a.mac("file", fmt.Sprintf("%d.%d", id, exp)) }

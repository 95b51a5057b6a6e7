package app

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"teleclinic/internal/clinic"
)

// videoIdentityToken is SSO's fields=vsee: the user's video identity and
// a token of the media service that carries calls. With LiveKit it is a
// LiveKit token naming the user, valid as long as an access token; it
// joins no room (each visit's page is given a token of its own room, so a
// token never opens another visit's call). In peer-to-peer mode Teleclinic
// itself is the media service, and what it accepts is this login's access
// token (GET /auth?sso_token= opens the visit page with it).
func (a *App) videoIdentityToken(u *clinic.User, s *Session) (*VideoIdentity, error) {
	out := &VideoIdentity{ID: u.SvcID, Token: s.Token}
	if lk := a.cfg.LiveKit; lk.Enabled() {
		var err error
		if out.Token, err = lk.IdentityToken(videoIdentity(u), u.FullName(), a.cfg.UserTokenMax); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fileLinkTTL is how long a file view link works.
const fileLinkTTL = time.Hour

// FileViewURL is the time-limited view link of a file (docs/compat.md):
// {base}/api_v3/files/view/{id}?auth_code=<hmac>&time=<expiry>, with an
// optional size for images. The expiry is rounded up to the next ten minutes
// so that a profile read twice gives the same link, which caches well.
func (a *App) FileViewURL(id int64, size string) string {
	exp := (a.Unix()+int64(fileLinkTTL/time.Second))/600*600 + 600
	v := url.Values{"auth_code": {a.fileSig(id, exp)}, "time": {fmt.Sprint(exp)}}
	if size != "" {
		v.Set("size", size)
	}
	return strings.TrimRight(a.cfg.BaseURL, "/") + "/api_v3/files/view/" + fmt.Sprint(id) + "?" + v.Encode()
}

// fileSig signs a file id and a link expiry. File ids are never reused, so
// a link cannot come to name another file.
func (a *App) fileSig(id, exp int64) string { return a.mac("file", fmt.Sprintf("%d.%d", id, exp)) }

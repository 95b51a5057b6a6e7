// Package media is what a visit's call needs from the server besides its
// signalling: the ICE servers each participant is handed when they join,
// with TURN credentials that expire.
package media

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"strconv"
	"time"
)

// ICEServer is one entry of RTCConfiguration.iceServers.
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// Config are the ICE servers of the deployment.
type Config struct {
	// STUN are stun: URLs, handed out as they are.
	STUN []string
	// TURN are turn: and turns: URLs of TURN servers that share Secret
	// (coturn's use-auth-secret with static-auth-secret).
	TURN   []string
	Secret string
	// TTL is how long a TURN credential works (default DefaultTURNTTL): a
	// relay is refreshed with the same credential, so it bounds how long
	// a relayed call lasts, and how long a credential that leaks is good.
	TTL time.Duration
	// RelayOnly makes calls connect through TURN only: no participant
	// learns another's network address (a patient's home IP, say), at
	// the relay's cost.
	RelayOnly bool
}

// DefaultTURNTTL is a TURN credential's default life: longer than a visit's
// call, short enough that one taken from a page is soon worthless.
const DefaultTURNTTL = 2 * time.Hour

// HasTURN says the deployment hands out TURN credentials.
func (c Config) HasTURN() bool { return len(c.TURN) > 0 && c.Secret != "" }

// Policy is RTCConfiguration.iceTransportPolicy: "relay" or "all".
func (c Config) Policy() string {
	if c.RelayOnly {
		return "relay"
	}
	return "all"
}

// Servers are the ICE servers for user at now: the STUN ones, and the
// TURN ones with a credential for user that expires after TTL.
func (c Config) Servers(user string, now time.Time) []ICEServer {
	var out []ICEServer
	if len(c.STUN) > 0 {
		out = append(out, ICEServer{URLs: c.STUN})
	}
	if len(c.TURN) > 0 && c.Secret != "" {
		ttl := c.TTL
		if ttl <= 0 {
			ttl = DefaultTURNTTL
		}
		name, pass := TURNCredential(c.Secret, user, now.Add(ttl))
		out = append(out, ICEServer{URLs: c.TURN, Username: name, Credential: pass})
	}
	return out
}

// TURNCredential is the time-limited TURN credential of the TURN REST API
// scheme that coturn's use-auth-secret implements: the username is
// "<expiry unix seconds>:<user>", the password the base64 of the
// HMAC-SHA1 of the username under the shared secret. The TURN server
// recomputes the password and refuses a username whose time has passed.
func TURNCredential(secret, user string, expires time.Time) (username, password string) {
	username = strconv.FormatInt(expires.Unix(), 10) + ":" + user
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(username))
	return username, base64.StdEncoding.EncodeToString(m.Sum(nil))
}

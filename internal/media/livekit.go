package media

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// LiveKit is a LiveKit server (an SFU) that carries calls too large for a
// peer-to-peer mesh. When URL is set, visit pages join the LiveKit room of
// their visit instead of connecting browser to browser.
type LiveKit struct {
	URL         string // wss://… as livekit-client's connect takes it
	Key, Secret string // an API key of the server and its secret
}

// Enabled reports whether calls go through LiveKit.
func (l LiveKit) Enabled() bool { return l.URL != "" }

// LiveKitTokenTTL is how long a LiveKit token lets its holder join: long
// enough to load the page and connect, short enough that a copied token is
// soon worth nothing. LiveKit checks it at join only; a call in progress
// goes on past it.
const LiveKitTokenTTL = 10 * time.Minute

// liveKitClaims is a LiveKit access token's payload, as LiveKit documents
// it (and livekit/protocol's auth package writes it: the tests check ours
// with that package): an HS256 JWT issued by the API key, its subject the
// participant's identity, with the video grant. Written here on a JWT
// library because that package brings protobuf, cel-go and pion to the
// binary to sign one token (docs/performance.md, build).
type liveKitClaims struct {
	jwt.RegisteredClaims
	Identity string       `json:"identity,omitempty"`
	Name     string       `json:"name,omitempty"`
	Video    liveKitGrant `json:"video"`
}

// liveKitGrant is the part of LiveKit's video grant the visits use.
type liveKitGrant struct {
	RoomJoin bool   `json:"roomJoin,omitempty"`
	Room     string `json:"room,omitempty"`
}

func (l LiveKit) token(identity, name string, grant liveKitGrant, ttl time.Duration) (string, error) {
	if l.Key == "" || l.Secret == "" {
		return "", fmt.Errorf("livekit token: no API key and secret")
	}
	now := time.Now()
	claims := liveKitClaims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: l.Key, Subject: identity,
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl))},
		Identity: identity, Name: name, Video: grant,
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(l.Secret))
	if err != nil {
		return "", fmt.Errorf("livekit token: %w", err)
	}
	return tok, nil
}

// RoomToken is a LiveKit access token that joins room only, as identity
// (shown to others as name), for ttl. The expiry is on the wall clock:
// LiveKit checks it against its own.
func (l LiveKit) RoomToken(room, identity, name string, ttl time.Duration) (string, error) {
	return l.token(identity, name, liveKitGrant{RoomJoin: true, Room: room}, ttl)
}

// IdentityToken is a LiveKit access token that names identity and grants
// no room: SSO's fields=vsee hands it out, when no visit is known yet.
// LiveKit accepts its signature and identity; a visit's room needs the
// RoomToken its call page is given.
func (l LiveKit) IdentityToken(identity, name string, ttl time.Duration) (string, error) {
	return l.token(identity, name, liveKitGrant{}, ttl)
}

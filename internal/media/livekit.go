package media

import (
	"fmt"
	"time"

	"github.com/livekit/protocol/auth"
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

// RoomToken is a LiveKit access token that joins room only, as identity
// (shown to others as name), for ttl. The expiry is on the wall clock:
// LiveKit checks it against its own.
func (l LiveKit) RoomToken(room, identity, name string, ttl time.Duration) (string, error) {
	tok, err := auth.NewAccessToken(l.Key, l.Secret).
		SetVideoGrant(&auth.VideoGrant{RoomJoin: true, Room: room}).
		SetIdentity(identity).SetName(name).SetValidFor(ttl).ToJWT()
	if err != nil {
		return "", fmt.Errorf("livekit token: %w", err)
	}
	return tok, nil
}

// IdentityToken is a LiveKit access token that names identity and grants
// no room: SSO's fields=vsee hands it out, when no visit is known yet.
// LiveKit accepts its signature and identity; a visit's room needs the
// RoomToken its call page is given.
func (l LiveKit) IdentityToken(identity, name string, ttl time.Duration) (string, error) {
	tok, err := auth.NewAccessToken(l.Key, l.Secret).
		SetVideoGrant(&auth.VideoGrant{}).SetIdentity(identity).SetName(name).SetValidFor(ttl).ToJWT()
	if err != nil {
		return "", fmt.Errorf("livekit token: %w", err)
	}
	return tok, nil
}

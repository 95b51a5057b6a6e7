package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// LiveKit is a LiveKit server (an SFU) that carries calls too large for a
// peer-to-peer mesh. When URL is set, visit pages join the LiveKit room of
// their visit instead of connecting browser to browser.
type LiveKit struct {
	URL         string // wss://… as livekit-client's connect takes it
	Key, Secret string // an API key of the server and its secret
	// Departure is how long a visit's room stays after its last
	// participant left (0: the app's default); tests shorten it.
	Departure time.Duration
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

// liveKitGrant is the part of LiveKit's video grant the server uses: a
// participant's join of one room, or its own API call making rooms.
type liveKitGrant struct {
	RoomCreate bool   `json:"roomCreate,omitempty"`
	RoomJoin   bool   `json:"roomJoin,omitempty"`
	Room       string `json:"room,omitempty"`
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

// HTTPURL is the LiveKit server's HTTP address, where its server API (Twirp)
// answers: the wss:// URL pages connect to, as https://.
func (l LiveKit) HTTPURL() string {
	switch {
	case strings.HasPrefix(l.URL, "wss://"):
		return "https://" + strings.TrimPrefix(l.URL, "wss://")
	case strings.HasPrefix(l.URL, "ws://"):
		return "http://" + strings.TrimPrefix(l.URL, "ws://")
	}
	return l.URL
}

// liveKitAPITTL is how long a token for one server API call is valid.
const liveKitAPITTL = time.Minute

// Room is a LiveKit room to make: its name, how long it waits for its
// first participant (EmptyTimeout) and stays after its last one left
// (DepartureTimeout) before LiveKit closes it and reports room_finished,
// and how many may be in it (0: LiveKit's default).
type Room struct {
	Name                           string
	EmptyTimeout, DepartureTimeout time.Duration
	MaxParticipants                int
}

// CreateRoom makes room on the LiveKit server through its server API
// (RoomService.CreateRoom over Twirp, JSON), or finds it there: LiveKit
// answers an existing room's name with that room.
func (l LiveKit) CreateRoom(ctx context.Context, hc *http.Client, r Room) error {
	room := r.Name
	tok, err := l.token("", "", liveKitGrant{RoomCreate: true}, liveKitAPITTL)
	if err != nil {
		return fmt.Errorf("livekit create room: %w", err)
	}
	body, _ := json.Marshal(map[string]any{"name": room, "empty_timeout": int(r.EmptyTimeout / time.Second),
		"departure_timeout": int(r.DepartureTimeout / time.Second), "max_participants": r.MaxParticipants})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(l.HTTPURL(), "/")+"/twirp/livekit.RoomService/CreateRoom", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("livekit create room: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("livekit create room: %w", err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("livekit create room: %s: %s", res.Status, bytes.TrimSpace(msg))
	}
	var got struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(msg, &got); err != nil || got.Name != room {
		return fmt.Errorf("livekit create room: unexpected answer %q", msg)
	}
	return nil
}

// ErrWebhookSignature is a webhook request LiveKit did not sign.
var ErrWebhookSignature = errors.New("livekit webhook: not signed by the configured LiveKit server")

// VerifyWebhook checks a webhook request as LiveKit signs it: the
// Authorization header is a JWT (HS256) issued by this API key, signed
// with its secret, unexpired, whose sha256 claim is the body's SHA-256 in
// base64.
func (l LiveKit) VerifyWebhook(authorization string, body []byte) error {
	var claims struct {
		jwt.RegisteredClaims
		SHA256 string `json:"sha256"`
	}
	_, err := jwt.ParseWithClaims(strings.TrimPrefix(authorization, "Bearer "), &claims, func(*jwt.Token) (any, error) { return []byte(l.Secret), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithIssuer(l.Key), jwt.WithExpirationRequired(), jwt.WithLeeway(30*time.Second))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWebhookSignature, err)
	}
	sum := sha256.Sum256(body)
	if subtle.ConstantTimeCompare([]byte(claims.SHA256), []byte(base64.StdEncoding.EncodeToString(sum[:]))) != 1 {
		return fmt.Errorf("%w: the body's checksum does not match", ErrWebhookSignature)
	}
	return nil
}

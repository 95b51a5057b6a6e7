package push

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// APNsConfig is an Apple push key (a .p8 file from the developer account)
// and the app it sends for.
type APNsConfig struct {
	KeyPEM []byte // the .p8 file's contents
	KeyID  string
	TeamID string
	Topic  string // the app's bundle id
	// URL is the service: https://api.push.apple.com (default) or
	// https://api.sandbox.push.apple.com for development builds.
	URL    string
	Client *http.Client // default: an HTTP/2 client
	Now    func() time.Time
}

// APNs sends through Apple Push Notification service.
type APNs struct {
	cfg APNsConfig
	key *ecdsa.PrivateKey

	mu       sync.Mutex
	token    string
	tokenIAT time.Time
}

// NewAPNs checks cfg and parses its key.
func NewAPNs(cfg APNsConfig) (*APNs, error) {
	if cfg.KeyID == "" || cfg.TeamID == "" || cfg.Topic == "" {
		return nil, errors.New("apns: key id, team id and topic are required")
	}
	k, err := parseKey(cfg.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("apns: key (.p8): %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("apns: the key is not an EC (ES256) key")
	}
	if cfg.URL == "" {
		cfg.URL = "https://api.push.apple.com"
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &APNs{cfg: cfg, key: ek}, nil
}

// bearer returns the provider token, made anew every 50 minutes: Apple
// accepts a token for an hour and refuses one renewed more than every 20.
func (s *APNs) bearer() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	if s.token != "" && now.Sub(s.tokenIAT) < 50*time.Minute {
		return s.token, nil
	}
	t, err := jwt(map[string]string{"alg": "ES256", "kid": s.cfg.KeyID},
		map[string]any{"iss": s.cfg.TeamID, "iat": now.Unix()}, s.key, true)
	if err != nil {
		return "", err
	}
	s.token, s.tokenIAT = t, now
	return t, nil
}

type apnsPayload struct {
	APS  apnsAPS           `json:"aps"`
	Data map[string]string `json:"data,omitempty"`
}

type apnsAPS struct {
	Alert apnsAlert `json:"alert"`
	Badge int       `json:"badge"`
	Sound string    `json:"sound"`
}

type apnsAlert struct {
	Title string `json:"title"`
}

// Send posts one notification.
func (s *APNs) Send(ctx context.Context, m Message) error {
	tok, err := s.bearer()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(apnsPayload{APS: apnsAPS{Alert: apnsAlert{Title: m.Title}, Badge: m.Badge, Sound: "default"}, Data: m.Data})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL+"/3/device/"+m.Token, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("authorization", "bearer "+tok)
	req.Header.Set("apns-topic", s.cfg.Topic)
	req.Header.Set("apns-push-type", "alert")
	req.Header.Set("apns-priority", "10")
	req.Header.Set("content-type", "application/json")
	res, err := s.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("apns: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK {
		return nil
	}
	var reason struct {
		Reason string `json:"reason"`
	}
	_ = json.NewDecoder(io.LimitReader(res.Body, 4096)).Decode(&reason)
	if res.StatusCode == http.StatusGone || reason.Reason == "BadDeviceToken" || reason.Reason == "Unregistered" {
		return fmt.Errorf("apns: %d %s: %w", res.StatusCode, reason.Reason, ErrUnregistered)
	}
	return fmt.Errorf("apns: %d %s", res.StatusCode, reason.Reason)
}

// ecdsaRaw turns an ASN.1 ECDSA signature into the fixed-size r||s form.
func ecdsaRaw(der []byte) ([]byte, error) {
	var r, s big.Int
	var inner cryptobyte.String
	in := cryptobyte.String(der)
	if !in.ReadASN1(&inner, asn1.SEQUENCE) || !inner.ReadASN1Integer(&r) || !inner.ReadASN1Integer(&s) {
		return nil, errors.New("push: malformed ECDSA signature")
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	s.FillBytes(out[32:])
	return out, nil
}

package push

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	googlejwt "golang.org/x/oauth2/jwt"
)

// FCMConfig is a Firebase service account (the JSON key file).
type FCMConfig struct {
	CredentialsJSON []byte
	// URL is the messaging service (default https://fcm.googleapis.com).
	URL    string
	Client *http.Client
}

// FCM sends through Firebase Cloud Messaging's HTTP v1 API. Its access
// tokens come from golang.org/x/oauth2/google: a service account's signed
// assertion traded for a token, kept until shortly before it expires.
type FCM struct {
	cfg     FCMConfig
	project string
	jwt     *googlejwt.Config

	mu sync.Mutex
	ts oauth2.TokenSource
}

// NewFCM checks cfg and reads the service account key.
func NewFCM(cfg FCMConfig) (*FCM, error) {
	var sa struct {
		ProjectID string `json:"project_id"`
	}
	if err := json.Unmarshal(cfg.CredentialsJSON, &sa); err != nil {
		return nil, fmt.Errorf("fcm: credentials: %w", err)
	}
	// Only a service account key is taken: the file names who signs.
	conf, err := google.JWTConfigFromJSON(cfg.CredentialsJSON, fcmScope)
	if err != nil {
		return nil, fmt.Errorf("fcm: credentials: %w", err)
	}
	if sa.ProjectID == "" || conf.Email == "" || len(conf.PrivateKey) == 0 {
		return nil, errors.New("fcm: credentials need project_id, client_email and private_key")
	}
	if conf.TokenURL == "" {
		conf.TokenURL = google.JWTTokenURL
	}
	if cfg.URL == "" {
		cfg.URL = "https://fcm.googleapis.com"
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	// A key that cannot sign is a configuration error now, not a failed
	// send later.
	if k, err := parseKey(conf.PrivateKey); err != nil {
		return nil, fmt.Errorf("fcm: private_key: %w", err)
	} else if _, ok := k.(*rsa.PrivateKey); !ok {
		return nil, errors.New("fcm: private_key is not an RSA key")
	}
	return &FCM{cfg: cfg, project: sa.ProjectID, jwt: conf}, nil
}

const fcmScope = "https://www.googleapis.com/auth/firebase.messaging"

// tokens is the cached token source; a refused token starts a new one.
func (s *FCM) tokens() oauth2.TokenSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts == nil {
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.cfg.Client)
		s.ts = oauth2.ReuseTokenSource(nil, s.jwt.TokenSource(ctx))
	}
	return s.ts
}

type fcmRequest struct {
	Message fcmMessage `json:"message"`
}

type fcmMessage struct {
	Token        string            `json:"token"`
	Notification fcmNotification   `json:"notification"`
	Data         map[string]string `json:"data,omitempty"`
}

type fcmNotification struct {
	Title string `json:"title"`
}

// Send posts one notification.
func (s *FCM) Send(ctx context.Context, m Message) error {
	tok, err := s.tokens().Token()
	if err != nil {
		return fmt.Errorf("fcm: token: %w", err)
	}
	body, _ := json.Marshal(fcmRequest{Message: fcmMessage{Token: m.Token, Notification: fcmNotification{Title: m.Title}, Data: m.Data}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL+"/v1/projects/"+url.PathEscape(s.project)+"/messages:send", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("fcm: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Error struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(res.Body, 16<<10)).Decode(&e)
	if res.StatusCode == http.StatusUnauthorized {
		s.mu.Lock()
		s.ts = nil // fetch a new access token on the next try
		s.mu.Unlock()
	}
	if res.StatusCode == http.StatusNotFound || e.Error.Status == "UNREGISTERED" {
		return fmt.Errorf("fcm: %d %s: %w", res.StatusCode, e.Error.Status, ErrUnregistered)
	}
	return fmt.Errorf("fcm: %d %s", res.StatusCode, e.Error.Status)
}

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
)

// FCMConfig is a Firebase service account (the JSON key file).
type FCMConfig struct {
	CredentialsJSON []byte
	// URL is the messaging service (default https://fcm.googleapis.com).
	URL    string
	Client *http.Client
	Now    func() time.Time
}

type serviceAccount struct {
	ProjectID   string `json:"project_id"`
	PrivateKey  string `json:"private_key"`
	ClientEmail string `json:"client_email"`
	TokenURI    string `json:"token_uri"`
}

// FCM sends through Firebase Cloud Messaging's HTTP v1 API. It trades a
// signed assertion for an OAuth access token, and keeps the token until
// shortly before it expires.
type FCM struct {
	cfg FCMConfig
	sa  serviceAccount
	key *rsa.PrivateKey

	mu      sync.Mutex
	access  string
	expires time.Time
}

// NewFCM checks cfg and parses the service account.
func NewFCM(cfg FCMConfig) (*FCM, error) {
	var sa serviceAccount
	if err := json.Unmarshal(cfg.CredentialsJSON, &sa); err != nil {
		return nil, fmt.Errorf("fcm: credentials: %w", err)
	}
	if sa.ProjectID == "" || sa.ClientEmail == "" || sa.PrivateKey == "" {
		return nil, errors.New("fcm: credentials need project_id, client_email and private_key")
	}
	if sa.TokenURI == "" {
		sa.TokenURI = "https://oauth2.googleapis.com/token"
	}
	k, err := parseKey([]byte(sa.PrivateKey))
	if err != nil {
		return nil, fmt.Errorf("fcm: private_key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("fcm: private_key is not an RSA key")
	}
	if cfg.URL == "" {
		cfg.URL = "https://fcm.googleapis.com"
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &FCM{cfg: cfg, sa: sa, key: rk}, nil
}

const fcmScope = "https://www.googleapis.com/auth/firebase.messaging"

func (s *FCM) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	if s.access != "" && now.Before(s.expires) {
		return s.access, nil
	}
	assertion, err := jwt(map[string]string{"alg": "RS256", "typ": "JWT"}, map[string]any{
		"iss": s.sa.ClientEmail, "scope": fcmScope, "aud": s.sa.TokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}, s.key, false)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.sa.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := s.cfg.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fcm: token: %w", err)
	}
	defer res.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fcm: token: %d", res.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&tr); err != nil || tr.AccessToken == "" {
		return "", errors.New("fcm: token: malformed answer")
	}
	s.access = tr.AccessToken
	s.expires = now.Add(time.Duration(max(tr.ExpiresIn-60, 0)) * time.Second)
	return s.access, nil
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
	tok, err := s.token(ctx)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(fcmRequest{Message: fcmMessage{Token: m.Token, Notification: fcmNotification{Title: m.Title}, Data: m.Data}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL+"/v1/projects/"+url.PathEscape(s.sa.ProjectID)+"/messages:send", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
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
		s.access = "" // fetch a new access token on the next try
		s.mu.Unlock()
	}
	if res.StatusCode == http.StatusNotFound || e.Error.Status == "UNREGISTERED" {
		return fmt.Errorf("fcm: %d %s: %w", res.StatusCode, e.Error.Status, ErrUnregistered)
	}
	return fmt.Errorf("fcm: %d %s", res.StatusCode, e.Error.Status)
}

package push

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// verifyJWT checks a compact JWS with pub and returns its header and claims.
func verifyJWT(t *testing.T, tok string, pub crypto.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if len(sig) != 64 || !ecdsa.Verify(k, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			t.Fatal("ES256 signature does not verify")
		}
	case *rsa.PublicKey:
		if err := rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig); err != nil {
			t.Fatalf("RS256 signature: %v", err)
		}
	}
	var h, c map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(hb, &h)
	_ = json.Unmarshal(cb, &c)
	return h, c
}

func pemPKCS8(t *testing.T, k any) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
}

func TestPush_APNs(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.ProtoMajor != 2 {
			t.Errorf("APNs requires HTTP/2; got %s", r.Proto)
		}
		if r.Method != "POST" || r.Header.Get("apns-topic") != "com.clinic.app" || r.Header.Get("apns-push-type") != "alert" {
			t.Errorf("request %s %v", r.Method, r.Header)
		}
		h, c := verifyJWT(t, strings.TrimPrefix(r.Header.Get("authorization"), "bearer "), &key.PublicKey)
		if h["alg"] != "ES256" || h["kid"] != "KEY123" || c["iss"] != "TEAM456" {
			t.Errorf("token %v %v", h, c)
		}
		var p apnsPayload
		_ = json.NewDecoder(r.Body).Decode(&p)
		if p.APS.Alert.Title != "New message" || p.APS.Badge != 3 || p.Data["visit_id"] != "7" {
			t.Errorf("payload %+v", p)
		}
		switch r.URL.Path {
		case "/3/device/aabbcc":
			w.WriteHeader(200)
		case "/3/device/dead":
			w.WriteHeader(410)
			_, _ = w.Write([]byte(`{"reason":"Unregistered"}`))
		default:
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"reason":"BadTopic"}`))
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	s, err := NewAPNs(APNsConfig{KeyPEM: pemPKCS8(t, key), KeyID: "KEY123", TeamID: "TEAM456", Topic: "com.clinic.app", URL: srv.URL, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	m := Message{Title: "New message", Badge: 3, Data: map[string]string{"visit_id": "7"}}
	m.Token = "aabbcc"
	if err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	m.Token = "dead"
	if err := s.Send(context.Background(), m); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("410: %v", err)
	}
	m.Token = "other"
	if err := s.Send(context.Background(), m); err == nil || errors.Is(err, ErrUnregistered) || !strings.Contains(err.Error(), "BadTopic") {
		t.Fatalf("400: %v", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls", calls.Load())
	}
	if _, err := NewAPNs(APNsConfig{KeyPEM: []byte("nope"), KeyID: "k", TeamID: "t", Topic: "x"}); err == nil {
		t.Fatal("a bad key was accepted")
	}
}

func TestPush_FCM(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	var tokens, sends atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			tokens.Add(1)
			_ = r.ParseForm()
			if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
				t.Errorf("grant %q", r.Form.Get("grant_type"))
			}
			h, c := verifyJWT(t, r.Form.Get("assertion"), &key.PublicKey)
			if h["alg"] != "RS256" || c["iss"] != "push@clinic.iam.gserviceaccount.com" || c["scope"] != fcmScope || c["aud"] != srv.URL+"/token" {
				t.Errorf("assertion %v %v", h, c)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"ya29.test","expires_in":3600,"token_type":"Bearer"}`))
		case "/v1/projects/clinic-app/messages:send":
			sends.Add(1)
			if r.Header.Get("Authorization") != "Bearer ya29.test" {
				t.Errorf("auth %q", r.Header.Get("Authorization"))
			}
			var req fcmRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			if req.Message.Notification.Title != "Visit confirmed" || req.Message.Data["type"] != "visit_confirmed" {
				t.Errorf("message %+v", req)
			}
			if req.Message.Token == "stale-auth-0123456789" && tokens.Load() == 1 {
				w.WriteHeader(401)
				_, _ = w.Write([]byte(`{"error":{"code":401,"status":"UNAUTHENTICATED"}}`))
				return
			}
			if req.Message.Token == "gone-token-0123456789" {
				w.WriteHeader(404)
				_, _ = w.Write([]byte(`{"error":{"code":404,"status":"NOT_FOUND","message":"Requested entity was not found."}}`))
				return
			}
			_, _ = w.Write([]byte(`{"name":"projects/clinic-app/messages/1"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	creds, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "clinic-app", "client_email": "push@clinic.iam.gserviceaccount.com",
		"private_key": string(pemPKCS8(t, key)), "token_uri": srv.URL + "/token"})
	s, err := NewFCM(FCMConfig{CredentialsJSON: creds, URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := Message{Token: "device-token-0123456789", Title: "Visit confirmed", Data: map[string]string{"type": "visit_confirmed"}}
	for i := 0; i < 2; i++ {
		if err := s.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	m.Token = "gone-token-0123456789"
	if err := s.Send(context.Background(), m); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("404: %v", err)
	}
	if tokens.Load() != 1 || sends.Load() != 3 {
		t.Fatalf("access token fetched %d times for %d sends; it should be kept", tokens.Load(), sends.Load())
	}
	// A refused access token is dropped: the retry fetches a new one.
	m.Token = "stale-auth-0123456789"
	if err := s.Send(context.Background(), m); err == nil {
		t.Fatal("a 401 was taken as sent")
	}
	if err := s.Send(context.Background(), m); err != nil || tokens.Load() != 2 {
		t.Fatalf("after a 401: %v, %d token fetches", err, tokens.Load())
	}
	if _, err := NewFCM(FCMConfig{CredentialsJSON: []byte(`{}`)}); err == nil {
		t.Fatal("empty credentials accepted")
	}
	// Only a service account's key: another kind of Google credential is
	// refused, and so is a key that cannot sign.
	other, _ := json.Marshal(map[string]string{"type": "authorized_user", "project_id": "clinic-app", "client_id": "x", "client_secret": "y", "refresh_token": "z"})
	if _, err := NewFCM(FCMConfig{CredentialsJSON: other}); err == nil {
		t.Fatal("user credentials accepted")
	}
	broken, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "clinic-app", "client_email": "push@clinic.iam.gserviceaccount.com",
		"private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"})
	if _, err := NewFCM(FCMConfig{CredentialsJSON: broken}); err == nil {
		t.Fatal("a key that cannot sign accepted")
	}
}

// Package push sends notifications to phones: Apple Push Notification
// service over HTTP/2 with token authentication, and Firebase Cloud
// Messaging's HTTP v1 API with a service account. Neither is used until it
// is configured; the app queues nothing for a channel that is off.
package push

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
)

// Message is one notification for one device.
type Message struct {
	Token string            // the device token or registration id
	Title string            // shown to the user; never health data
	Badge int               // the app icon's count
	Data  map[string]string // for the app: notification id, type, visit id
}

// Sender delivers a Message to one device.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// ErrUnregistered means the device token is no longer valid: the app was
// removed or the token rotated. The endpoint should be deleted.
var ErrUnregistered = errors.New("push: device token no longer registered")

// jwt signs a compact JWS of header and claims with key (ES256 or RS256).
func jwt(header, claims any, key crypto.Signer, es256 bool) (string, error) {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	sig, err := key.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return "", err
	}
	if es256 {
		// A JWS ES256 signature is r||s, 32 bytes each, not ASN.1.
		if sig, err = ecdsaRaw(sig); err != nil {
			return "", err
		}
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// parseKey reads a PEM-encoded PKCS #8 private key, the form of both Apple's
// .p8 files and Google's service account keys.
func parseKey(b []byte) (any, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not a PEM private key")
	}
	return x509.ParsePKCS8PrivateKey(block.Bytes)
}

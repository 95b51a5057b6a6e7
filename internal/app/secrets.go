package app

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// NewSecret returns a random secret of 32 bytes (256 bits) as URL-safe text.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// RandomHex returns n random bytes as hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// HashSecret is how every token and secret is stored: SHA-256, hex. The
// secrets are 256-bit random values, so a fast hash is enough; passwords,
// which are not, use argon2id.
func HashSecret(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// equalHash compares two hashes in constant time.
func equalHash(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// mac signs msg with a key derived from the server key for purpose.
func (a *App) mac(purpose string, msg string) string {
	k := sha256.Sum256(append([]byte("teleclinic-mac:"+purpose+":"), a.cfg.ServerKey...))
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// Seal encrypts an outbox payload that carries a secret (a reset link), so
// the database never holds it in plain text.
func (a *App) Seal(plain []byte) (string, error) { return a.sealFor(plain, "") }

// sealFor is Seal bound to where the sealed text is kept (aad, not
// secret): opened anywhere else it fails, so a row's sealed value cannot
// be moved into another row.
func (a *App) sealFor(plain []byte, aad string) (string, error) {
	gcm, err := a.gcm()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.StdEncoding.EncodeToString(gcm.Seal(nonce, nonce, plain, []byte(aad))), nil
}

// unsealFor reverses sealFor with the same aad.
func (a *App) unsealFor(s, aad string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	gcm, err := a.gcm()
	if err != nil {
		return nil, err
	}
	if len(raw) < gcm.NonceSize() {
		return nil, errors.New("sealed payload too short")
	}
	return gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], []byte(aad))
}

func (a *App) gcm() (cipher.AEAD, error) {
	block, err := aes.NewCipher(a.sealKey[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Unseal reverses seal.
func (a *App) Unseal(s string) ([]byte, error) { return a.unsealFor(s, "") }

package app

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the argon2id cost settings. The encoded hash records them,
// so hashes made with other settings still verify.
type Argon2Params struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// DefaultArgon2 is the production cost: t=3, 64 MiB, 2 lanes.
var DefaultArgon2 = Argon2Params{Time: 3, MemoryKiB: 64 * 1024, Threads: 2}

// dummyHash is verified against when a login names no user, so that a
// missing user and a wrong password take the same time.
var dummyHash = "$argon2id$v=19$m=65536,t=3,p=2$c29tZXNhbHRzb21lc2FsdA$ZHVtbXloYXNoZHVtbXloYXNoZHVtbXloYXNoZHVtbXk"

// acquire waits for a hashing slot: each hash takes 64 MiB, so a burst of
// logins must queue rather than exhaust memory.
func (a *App) acquire(ctx context.Context) (func(), error) {
	select {
	case a.hashSem <- struct{}{}:
		return func() { <-a.hashSem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *App) hashPassword(ctx context.Context, pw string) (string, error) {
	release, err := a.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	p := a.cfg.Argon2
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, 32)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// verifyPassword reports whether pw matches the encoded argon2id hash.
func (a *App) verifyPassword(ctx context.Context, encoded, pw string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, nil
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false, nil
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || m > 1<<20 || t > 16 || p == 0 {
		return false, nil
	}
	release, err := a.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

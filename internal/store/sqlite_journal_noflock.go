//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package store

import (
	"errors"
	"os"
)

// canLock is false where flock is missing: read audits are committed
// directly, without a journal.
const canLock = false

func tryLock(*os.File) (bool, error) { return false, errors.New("file locks are not supported here") }

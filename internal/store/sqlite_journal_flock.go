//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package store

import (
	"errors"
	"os"
	"syscall"
)

// canLock says the audit journal can tell a live store's files from those
// a process left behind.
const canLock = true

// tryLock takes an exclusive flock on f without waiting; false if another
// open file holds it. The lock lasts until f is closed, or its process ends.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

//go:build !linux

package live

import (
	"context"
	"net"
)

// hangups tells parked streams that their clients hung up: off Linux, a
// goroutine a stream reads its connection.
type hangups struct{}

func newHangups(context.Context) *hangups { return &hangups{} }

func (h *hangups) watch(conn net.Conn, gone func()) (unwatch func()) { return readHangup(conn, gone) }

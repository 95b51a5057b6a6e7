package live

import "net"

// readHangup calls gone when a read of conn ends: its client hung up (or
// sent something, which a stream's client does not), or conn was closed.
// It is the goroutine a stream that the hangups set cannot hold.
func readHangup(conn net.Conn, gone func()) (unwatch func()) {
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		gone()
	}()
	return func() {}
}

package live

import (
	"context"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hangups tells parked streams that their clients hung up, with no
// goroutine a stream: one epoll set of their connections (a descriptor
// may be in the runtime's set and this one at once), one goroutine
// waiting on it. A connection the set cannot take (not a socket) gets a
// goroutine that reads it.
type hangups struct {
	ep   int // -1: epoll is not available
	mu   sync.Mutex
	next uint32
	by   map[uint32]func()
}

func newHangups(closing context.Context) *hangups {
	h := &hangups{by: map[uint32]func(){}}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		h.ep = -1
		return h
	}
	h.ep = ep
	go h.loop(closing)
	return h
}

// watch calls gone once when conn's client hangs up (or sends anything,
// which a stream's client does not); unwatch stops that, before conn is
// closed.
func (h *hangups) watch(conn net.Conn, gone func()) (unwatch func()) {
	nc := conn
	if t, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok || h.ep < 0 {
		return readHangup(conn, gone)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return readHangup(conn, gone)
	}
	h.mu.Lock()
	h.next++
	for h.by[h.next] != nil || h.next == 0 {
		h.next++
	}
	id := h.next
	h.by[id] = gone
	h.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(id)}
	var addErr error
	if err := raw.Control(func(fd uintptr) { addErr = unix.EpollCtl(h.ep, unix.EPOLL_CTL_ADD, int(fd), &ev) }); err != nil || addErr != nil {
		h.forget(id)
		return readHangup(conn, gone)
	}
	return func() {
		_ = raw.Control(func(fd uintptr) { _ = unix.EpollCtl(h.ep, unix.EPOLL_CTL_DEL, int(fd), nil) })
		h.forget(id)
	}
}

func (h *hangups) forget(id uint32) {
	h.mu.Lock()
	delete(h.by, id)
	h.mu.Unlock()
}

// loop hands each hang-up to its stream until closing is done; it looks
// at closing every half second.
func (h *hangups) loop(closing context.Context) {
	defer unix.Close(h.ep)
	evs := make([]unix.EpollEvent, 256)
	for closing.Err() == nil {
		n, err := unix.EpollWait(h.ep, evs, int(500*time.Millisecond/time.Millisecond))
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		h.mu.Lock()
		gone := make([]func(), 0, n)
		for _, ev := range evs[:n] {
			if f := h.by[uint32(ev.Fd)]; f != nil {
				gone = append(gone, f)
			}
		}
		h.mu.Unlock()
		for _, f := range gone {
			f()
		}
	}
}

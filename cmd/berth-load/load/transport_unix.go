//go:build unix

package load

import (
	"errors"
	"syscall"
)

// connAlive reports whether the server still keeps pc open: a
// non-blocking peek at the socket finds nothing to read. End of file (the
// server closed it), an error, or bytes nobody asked for mean it is not
// to be reused.
func connAlive(pc *persistConn) bool {
	sc, ok := pc.nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = errors.Is(rerr, syscall.EAGAIN)
		return true // never wait for the socket to become readable
	})
	return err == nil && alive
}

//go:build !unix

package load

// connAlive cannot peek at a socket here; a connection the server closed
// is found when a request is sent on it (see keepAliveTransport).
func connAlive(*persistConn) bool { return true }

// Package uuid is Berth's one place for UUIDs: checking and canonicalising
// the forms Placement accepts, and making random and name-derived ones. It
// wraps github.com/google/uuid so that every package agrees on what a UUID
// is.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"

	guuid "github.com/google/uuid"
)

// Valid reports whether s is a UUID in a form Placement accepts: oslo's
// is_uuid_like, which (as Python's uuid.UUID) removes every "urn:" and
// then every "uuid:", strips braces from both ends and removes every dash,
// and wants 32 hex digits in either case. Dashes may be anywhere.
func Valid(s string) bool {
	_, ok := hexDigits(s)
	return ok
}

// Canonical returns s in the canonical lowercase, dashed form, or ok false
// when s is not Valid.
func Canonical(s string) (string, bool) {
	if isCanonical(s) {
		return s, true
	}
	h, ok := hexDigits(s)
	if !ok {
		return "", false
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// Bytes returns the 16 bytes of s, a uuid in the canonical form, or ok
// false when s is not in that form.
func Bytes(s string) (b [16]byte, ok bool) {
	if !isCanonical(s) {
		return b, false
	}
	u, err := guuid.Parse(s)
	return u, err == nil
}

// isCanonical reports whether s is in the canonical form already.
func isCanonical(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// hexDigits returns the 32 hex digits of s in lower case, as oslo's
// is_uuid_like finds them, or ok false.
func hexDigits(s string) (string, bool) {
	s = strings.ReplaceAll(s, "urn:", "")
	s = strings.ReplaceAll(s, "uuid:", "")
	s = strings.ReplaceAll(strings.Trim(s, "{}"), "-", "")
	if len(s) != 32 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// New returns a random (version 4) UUID in canonical form.
func New() string { return guuid.NewString() }

// NewPrefixed is prefix followed by a random (version 4) UUID in
// canonical form, built in one allocation (a request's id,
// "req-<uuid>"). Its random bits come from crypto/rand as New's do, read
// randBlock bytes at a time (see randBlocks).
func NewPrefixed(prefix string) string {
	var u [16]byte
	randIDs.read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var text [36]byte
	hex.Encode(text[0:8], u[0:4])
	hex.Encode(text[9:13], u[4:6])
	hex.Encode(text[14:18], u[6:8])
	hex.Encode(text[19:23], u[8:10])
	hex.Encode(text[24:], u[10:])
	text[8], text[13], text[18], text[23] = '-', '-', '-', '-'
	var b strings.Builder
	b.Grow(len(prefix) + len(text))
	b.WriteString(prefix)
	b.Write(text[:])
	return b.String()
}

// randBlock is how many random bytes randBlocks reads at once: sixteen
// UUIDs' worth.
const randBlock = 16 * 16

// randBlocks hands out bytes of crypto/rand read a block at a time, so
// that sixteen UUIDs take one read of the system's random source instead
// of sixteen. Bytes it hands out are handed out once.
type randBlocks struct {
	mu   sync.Mutex
	buf  [randBlock]byte
	next int // buf[next:] is unread
}

// randIDs is the random source of NewPrefixed.
var randIDs = &randBlocks{next: randBlock}

// read fills p (at most randBlock bytes) with random bytes.
func (r *randBlocks) read(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) > randBlock-r.next {
		// crypto/rand.Read does not fail (it crashes the program if
		// the system's source fails).
		_, _ = rand.Read(r.buf[:])
		r.next = 0
	}
	r.next += copy(p, r.buf[r.next:])
}

// FromName returns the RFC 4122 version 5 (SHA-1) UUID of name in
// namespace: the same namespace and name always give the same UUID.
func FromName(namespace [16]byte, name string) string {
	return guuid.NewSHA1(guuid.UUID(namespace), []byte(name)).String()
}

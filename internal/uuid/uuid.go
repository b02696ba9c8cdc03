// Package uuid is Berth's one place for UUIDs: checking and canonicalising
// the forms Placement accepts, and making random and name-derived ones. It
// wraps github.com/google/uuid so that every package agrees on what a UUID
// is.
package uuid

import (
	"encoding/hex"
	"strings"

	guuid "github.com/google/uuid"
)

// Valid reports whether s is a UUID in a form Placement accepts: oslo's
// is_uuid_like, which (as Python's uuid.UUID) removes every "urn:" and
// then every "uuid:", strips braces from both ends and removes every dash,
// and wants 32 hex digits in either case. Dashes may be anywhere.
func Valid(s string) bool {
	// The canonical form, the usual one, is valid without copying it.
	if isCanonical(s) {
		return true
	}
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

// NewPrefixed is prefix followed by New(), built in one allocation (a
// request's id, "req-<uuid>").
func NewPrefixed(prefix string) string {
	u := guuid.New()
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

// Random UUIDs (New, NewPrefixed, one a request at least) take their bits
// from google/uuid's pool: crypto/rand read sixteen UUIDs' worth at a time
// instead of once each. Enabled before anything can ask for one, as the
// pool requires; no UUID here is a secret.
func init() { guuid.EnableRandPool() }

// FromName returns the RFC 4122 version 5 (SHA-1) UUID of name in
// namespace: the same namespace and name always give the same UUID.
func FromName(namespace [16]byte, name string) string {
	return guuid.NewSHA1(guuid.UUID(namespace), []byte(name)).String()
}

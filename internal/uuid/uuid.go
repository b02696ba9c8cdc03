// Package uuid is Berth's one place for UUIDs: checking and canonicalising
// the forms Placement accepts, and making random and name-derived ones. It
// wraps github.com/google/uuid so that every package agrees on what a UUID
// is.
package uuid

import guuid "github.com/google/uuid"

// Valid reports whether s is a UUID in a form Placement accepts (oslo's
// is_uuid_like): dashed or dashless hex in either case, optionally in
// braces or with a urn:uuid: prefix.
func Valid(s string) bool {
	_, err := guuid.Parse(s)
	return err == nil
}

// Canonical returns s in the canonical lowercase, dashed form, or ok false
// when s is not Valid.
func Canonical(s string) (string, bool) {
	u, err := guuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// New returns a random (version 4) UUID in canonical form.
func New() string { return guuid.NewString() }

// FromName returns the RFC 4122 version 5 (SHA-1) UUID of name in
// namespace: the same namespace and name always give the same UUID.
func FromName(namespace [16]byte, name string) string {
	return guuid.NewSHA1(guuid.UUID(namespace), []byte(name)).String()
}

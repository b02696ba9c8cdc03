package engine

import "github.com/google/uuid"

// canonicalUUID returns s in the canonical lowercase, dashed form, or ok
// false when s is not a UUID (any form Placement accepts: dashed or
// dashless hex, in braces, with a urn:uuid: prefix). The snapshot keys
// providers and aggregates by canonical uuid.
func canonicalUUID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

package ledger

import "github.com/berthd/berth/internal/uuid"

// canonicalUUID returns s in the canonical lowercase, dashed form, or ok
// false when s is not a UUID. It accepts what Placement's uuid format
// accepts: dashed or dashless hex, optionally in braces or with a urn:uuid:
// prefix. Every uuid is canonicalised before it reaches a query, so a
// malformed one is a plain "not found" rather than a driver error.
func canonicalUUID(s string) (string, bool) { return uuid.Canonical(s) }

// storedUUID returns s when it is a uuid in the canonical form, the form
// every stored provider and consumer uuid has; ok is false otherwise. A
// lookup by a uuid from a URL path uses it: Placement compares such a uuid
// with the stored ones as a string, so an upper-case or dashless spelling
// of an existing uuid finds nothing there.
func storedUUID(s string) (string, bool) {
	c, ok := canonicalUUID(s)
	return c, ok && c == s
}

// canonicalUUIDs canonicalises every element of in; ok is false if any
// element is not a UUID.
func canonicalUUIDs(in []string) ([]string, bool) {
	out := make([]string, len(in))
	for i, s := range in {
		c, ok := canonicalUUID(s)
		if !ok {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

package core

import (
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
)

// CanonicalUUID returns s in the canonical lowercase, dashed form, or ok
// false when s is not a UUID. It accepts what Placement's uuid format
// accepts: dashed or dashless hex, optionally in braces or with a urn:uuid:
// prefix. Every uuid is canonicalised before it reaches a query, so a
// malformed one is a plain "not found" rather than a driver error.
func CanonicalUUID(s string) (string, bool) { return uuid.Canonical(s) }

// StoredUUID returns s when it is a uuid in the canonical form, the form
// every stored provider and consumer uuid has; ok is false otherwise. A
// lookup by a uuid from a URL path uses it: Placement compares such a uuid
// with the stored ones as a string, so an upper-case or dashless spelling
// of an existing uuid finds nothing there.
func StoredUUID(s string) (string, bool) {
	c, ok := CanonicalUUID(s)
	return c, ok && c == s
}

// aggregateUUIDMax is the length of Placement's aggregate uuid column
// (varchar(36)), and of Berth's: the longest spellings (braced and dashed,
// urn:uuid:) do not fit. Placement answers them with a database error (a
// 500); Berth refuses them as invalid.
const aggregateUUIDMax = 36

// AggregateSpellings checks that every element of in is a uuid that
// Placement could store, and returns in as it is: aggregates are kept and
// compared as spelled (migrations/0006_aggregate_spelling.up.sql).
func AggregateSpellings(in []string) ([]string, error) {
	for _, s := range in {
		if _, ok := CanonicalUUID(s); !ok {
			return nil, fault.Invalid("", "Aggregates must be UUIDs: %v", in)
		}
		if len(s) > aggregateUUIDMax {
			return nil, fault.Invalid("", "Aggregate uuid %s is longer than %d characters: spell it with or without dashes, without braces or urn:uuid:.", s, aggregateUUIDMax)
		}
	}
	if in == nil {
		in = []string{}
	}
	return in, nil
}

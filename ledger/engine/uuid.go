package engine

import "github.com/berthd/berth/internal/uuid"

// canonicalUUID returns s in the canonical lowercase, dashed form, or ok
// false when s is not a UUID (see uuid.Canonical). The snapshot keys
// providers and aggregates by canonical uuid.
func canonicalUUID(s string) (string, bool) { return uuid.Canonical(s) }

package load

import (
	"fmt"

	"github.com/berthd/berth/internal/uuid"
)

// benchNamespace is the UUID namespace of every name-derived UUID the tool
// makes (a random v4 UUID fixed once; changing it changes every seeded UUID).
var benchNamespace = [16]byte{0x6b, 0x1e, 0x93, 0x0c, 0x5a, 0x2f, 0x4d, 0x71, 0x9c, 0x3e, 0x12, 0x8a, 0xd4, 0x60, 0xb7, 0x25}

// NameUUID returns the version 5 UUID of name in the tool's namespace:
// the same name always gives the same UUID.
func NameUUID(name string) string { return uuid.FromName(benchNamespace, name) }

// NodeName is the name of flat compute node i (0-based).
func NodeName(i int) string { return fmt.Sprintf("bench-cn-%05d", i) }

// NodeUUID is the UUID of flat compute node i.
func NodeUUID(i int) string { return NameUUID(NodeName(i)) }

// AggregateUUID is the UUID of benchmark aggregate i (0-based); node i is a
// member of aggregate i % Aggregates.
func AggregateUUID(i int) string { return NameUUID(fmt.Sprintf("bench-agg-%d", i)) }

package load

import (
	"crypto/rand"
	"crypto/sha1"
	"fmt"
)

// benchNamespace is the UUID namespace of every name-derived UUID the tool
// makes (a random v4 UUID fixed once; changing it changes every seeded UUID).
var benchNamespace = [16]byte{0x6b, 0x1e, 0x93, 0x0c, 0x5a, 0x2f, 0x4d, 0x71, 0x9c, 0x3e, 0x12, 0x8a, 0xd4, 0x60, 0xb7, 0x25}

// NameUUID returns the RFC 4122 version 5 UUID of name in the tool's
// namespace: the same name always gives the same UUID.
func NameUUID(name string) string {
	h := sha1.New()
	h.Write(benchNamespace[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return format(u)
}

// RandomUUID returns a random version 4 UUID.
func RandomUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never returns an error.
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return format(u)
}

func format(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// NodeName is the name of flat compute node i (0-based).
func NodeName(i int) string { return fmt.Sprintf("bench-cn-%05d", i) }

// NodeUUID is the UUID of flat compute node i.
func NodeUUID(i int) string { return NameUUID(NodeName(i)) }

// AggregateUUID is the UUID of benchmark aggregate i (0-based); node i is a
// member of aggregate i % Aggregates.
func AggregateUUID(i int) string { return NameUUID(fmt.Sprintf("bench-agg-%d", i)) }

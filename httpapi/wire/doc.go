// Package wire is the wire format of OpenStack Placement's Python
// service, which Placement's clients depend on byte for byte. It reads
// request bodies as Placement does: one entry point per body
// (Bodies.Decode, decode.go), which bounds it, parses it as Python's
// json.loads does (refusing with Python's words), validates it against
// the route's schema and decodes it into the handler's typed body. It
// writes answers as Placement does (encode.go: encoding/json's bytes,
// json.dumps's floats, Object's members in the order set, lists streamed
// in stream.go), and errors in Placement's and webob's formats
// (errors.go, webob.go: the Error type every handler returns). It holds
// the microversions (version.go), and reads the Accept header and query
// strings as webob does (accept.go, query.go). It imports nothing of
// Berth's but leaves (internal/...): the routes that use it are Placement's
// (package placement) and Berth's (package berthapi).
package wire

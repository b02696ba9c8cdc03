// Package jsonschema compiles and checks JSON Schemas: the subset of draft
// 4 that Placement's request schemas use (types, properties, pattern and
// additional properties, required, item and length bounds, minimum and
// maximum, enum, anyOf, oneOf, not, const, the uuid format). Its error
// messages read exactly like those of Python's jsonschema library, trailer
// included, because Placement's clients and tests match on them. It knows
// nothing about HTTP; httpapi validates request bodies with it.
package jsonschema

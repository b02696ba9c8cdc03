// Package catalog is the catalogue of the scheduling policies, Starlark
// scriptlets and server-wide scheduling config stored in the ledger: every
// replica's compiled view of them, and their one writer. Its writes check
// what they are given (a scriptlet compiles and a trial run stays within
// its limits; a policy builds), store it through the ledger, and reload, so
// a replica sees its own writes at once; Run keeps the view fresh after
// other replicas' writes (PostgreSQL LISTEN/NOTIFY, and a periodic reload).
// Claims resolve their policy through it (claims.PolicySource).
//
// The active shadows (a scriptlet or policy run beside real claims, see
// claims/shadow) are catalogue state too: loaded with the rest, built
// against the same load, handed to the shadow runner.
//
// Files: catalog.go (the Catalog: load, resolve, write), compile.go (what
// storing a scriptlet checks, and building a policy), shadow.go (the
// shadows: build, start, stop, report).
package catalog

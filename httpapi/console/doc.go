// Package console serves the read-only operator console at /ui
// (docs/console.md): HTML pages rendered on the server (console.go: the
// login, the layout, the helpers; pages.go: the pages; templates/: the
// templates and the stylesheet, embedded) over the components the API
// uses, each page guarded by the policy rule of the API route whose data
// it shows and authenticated as the API is.
package console

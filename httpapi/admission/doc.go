// Package admission decides what the API server lets in, and how much at
// once. WrapListener (listener.go) frames the requests of each connection
// so that a non-integer Content-Length reaches the handlers to be refused
// in Placement's words, and rewrites net/http's own refusals of requests
// it cannot read into Placement's error format (listener_errors.go).
// Slots (slots.go) bound the expensive requests running at once, queueing
// the rest up to a timeout; BodyBudget (body_budget.go) bounds the large
// request bodies held at once. Its refusals are wire.Errors, 503
// berth.overloaded with a Retry-After.
package admission

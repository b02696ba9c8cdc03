package scheduler

import (
	"fmt"
	"strings"
)

// Code says how a plugin answered.
type Code int

const (
	// Success: the candidate passes. A nil *Status means the same.
	Success Code = iota
	// Rejected: an expected "no" (the candidate, or the whole request,
	// does not fit the policy), with reasons for the operator.
	Rejected
	// Failed: a bug or outage in the plugin or scriptlet; the request
	// cannot be answered.
	Failed
)

// Status is a plugin's answer. A nil *Status is success.
type Status struct {
	Code    Code
	Reasons []string
	Err     error // set when Code is Failed
}

// Reject returns an expected rejection with reasons.
func Reject(reasons ...string) *Status { return &Status{Code: Rejected, Reasons: reasons} }

// AsError returns a failure status carrying err.
func AsError(err error) *Status { return &Status{Code: Failed, Err: err} }

// IsSuccess reports whether s lets the candidate through.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// IsRejected reports whether s is an expected rejection.
func (s *Status) IsRejected() bool { return s != nil && s.Code == Rejected }

// Reason is the reasons joined, or a placeholder when there are none.
func (s *Status) Reason() string {
	if s == nil || len(s.Reasons) == 0 {
		return "rejected"
	}
	return strings.Join(s.Reasons, "; ")
}

// RefusedError is returned by Policy.Rank when the scriptlet refused the
// whole request: instance_placement returned a value other than None,
// called fail(message), raised a runtime error or exceeded its limits.
// It is an expected answer (the claim is not placed), not a server fault.
// Err, when set, is the *scriptlet.LimitError or *scriptlet.RunError behind it.
type RefusedError struct {
	Reason string
	Err    error
}

// RefusalPrefix begins the words of a scriptlet's refusal, as LXD words
// it; the reason follows.
const RefusalPrefix = "Failed instance placement scriptlet: "

func (e *RefusedError) Error() string { return RefusalPrefix + e.Reason }
func (e *RefusedError) Unwrap() error { return e.Err }

// PluginError is returned by Policy.Rank when a built-in unit failed (a
// Failed status: a CloudData outage, a bug), not a rejection.
type PluginError struct {
	Plugin string
	Err    error
}

func (e *PluginError) Error() string { return fmt.Sprintf("scheduler plugin %s: %v", e.Plugin, e.Err) }
func (e *PluginError) Unwrap() error { return e.Err }

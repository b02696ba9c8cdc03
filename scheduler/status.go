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
// Err, when set, is the *ScriptletLimitError or *ScriptletError behind it.
type RefusedError struct {
	Reason string
	Err    error
}

// RefusalPrefix begins the words of a scriptlet's refusal, as LXD words
// it; the reason follows.
const RefusalPrefix = "Failed instance placement scriptlet: "

func (e *RefusedError) Error() string { return RefusalPrefix + e.Reason }
func (e *RefusedError) Unwrap() error { return e.Err }

// Limits a scriptlet run can exceed.
const (
	LimitSteps    = "steps"
	LimitDeadline = "deadline"
	LimitMemory   = "memory"
)

// ScriptletLimitError is a scriptlet run that exceeded its step budget
// (Limit LimitSteps) or deadline (LimitDeadline). Rank returns it inside
// a *RefusedError.
type ScriptletLimitError struct {
	Scriptlet string
	Limit     string
	Steps     uint64
	// Detail says what went over, when known.
	Detail string
}

func (e *ScriptletLimitError) Error() string {
	var s string
	switch e.Limit {
	case LimitSteps:
		s = fmt.Sprintf("scriptlet %q exceeded its step budget (%d steps)", e.Scriptlet, e.Steps)
	case LimitMemory:
		s = fmt.Sprintf("scriptlet %q exceeded its memory budget", e.Scriptlet)
	default:
		s = fmt.Sprintf("scriptlet %q exceeded its deadline (after %d steps)", e.Scriptlet, e.Steps)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// ScriptletError is a runtime error in a scriptlet (an exception, a bad
// return value, a builtin called wrongly), with where it happened. Rank
// returns it inside a *RefusedError.
type ScriptletError struct {
	Scriptlet string
	Line, Col int
	Msg       string
	// Backtrace is Starlark's traceback, for logs.
	Backtrace string
}

func (e *ScriptletError) Error() string {
	return fmt.Sprintf("scriptlet %q: line %d:%d: %s", e.Scriptlet, e.Line, e.Col, e.Msg)
}

// CompileError is a scriptlet that does not compile: a syntax or
// resolution error, a failure of its top level, or (when it is stored) a
// trial run on a synthetic claim that failed. Line and Col are 1-based;
// 0 when the error has no position. It is the one error type of
// scriptlet source that cannot be used; a run's failures are
// *ScriptletError and *ScriptletLimitError.
type CompileError struct {
	Scriptlet string
	Line, Col int
	Msg       string
}

func (e *CompileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("Scriptlet %s does not compile: line %d, column %d: %s", e.Scriptlet, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("Scriptlet %s does not compile: %s", e.Scriptlet, e.Msg)
}

// PluginError is returned by Policy.Rank when a built-in unit failed (a
// Failed status: a CloudData outage, a bug), not a rejection.
type PluginError struct {
	Plugin string
	Err    error
}

func (e *PluginError) Error() string { return fmt.Sprintf("scheduler plugin %s: %v", e.Plugin, e.Err) }
func (e *PluginError) Unwrap() error { return e.Err }

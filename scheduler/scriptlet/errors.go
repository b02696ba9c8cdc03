package scriptlet

import "fmt"

// Limits a scriptlet run can exceed.
const (
	LimitSteps    = "steps"
	LimitDeadline = "deadline"
	LimitMemory   = "memory"
)

// LimitError is a scriptlet run that exceeded its step budget
// (Limit LimitSteps) or deadline (LimitDeadline). Rank returns it inside
// a *scheduler.RefusedError.
type LimitError struct {
	Scriptlet string
	Limit     string
	Steps     uint64
	// Detail says what went over, when known.
	Detail string
}

func (e *LimitError) Error() string {
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

// RunError is a runtime error in a scriptlet (an exception, a bad
// return value, a builtin called wrongly), with where it happened. Rank
// returns it inside a *scheduler.RefusedError.
type RunError struct {
	Scriptlet string
	Line, Col int
	Msg       string
	// Backtrace is Starlark's traceback, for logs.
	Backtrace string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("scriptlet %q: line %d:%d: %s", e.Scriptlet, e.Line, e.Col, e.Msg)
}

// CompileError is a scriptlet that does not compile: a syntax or
// resolution error, a failure of its top level, or (when it is stored) a
// trial run on a synthetic claim that failed. Line and Col are 1-based;
// 0 when the error has no position. It is the one error type of
// scriptlet source that cannot be used; a run's failures are
// *RunError and *LimitError.
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

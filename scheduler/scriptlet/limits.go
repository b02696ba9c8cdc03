package scriptlet

import (
	"fmt"
	"time"
)

// Scriptlet limit defaults.
const (
	DefaultSteps       = 1_000_000
	DefaultTimeout     = time.Second
	DefaultMaxAlloc    = 64 << 20
	DefaultMaxLogLines = 1000
	DefaultMaxLogBytes = 64 << 10
)

// What a claim does when its scriptlet fails (Limits.OnError).
const (
	// OnErrorRefuse (the default, as LXD does) refuses the claim, as an
	// explicit refusal does.
	OnErrorRefuse = "refuse"
	// OnErrorIgnore ranks the claim as if the failing scriptlet were
	// not there: instance_placement leaves the policy's ranking as it
	// is, a starlark: filter keeps the candidate its call failed on, a
	// starlark: weigher contributes nothing to the claim. An operator's
	// choice: a broken policy then stops applying, logged and counted.
	OnErrorIgnore = "ignore"
)

// Which of LXD's and Incus's readings of a call they disagree on a
// scriptlet gets (Limits.Dialect).
const (
	// DialectLXD (the default) is LXD's: set_target of a name that is
	// not a candidate logs a warning, answers "Invalid member name" and
	// leaves the built-in choice; get_cluster_member_state and
	// get_cluster_member_resources of an unknown name answer "Invalid
	// member name".
	DialectLXD = "lxd"
	// DialectIncus is Incus's: each of those is an error ("Invalid member
	// name: NAME"), which refuses the claim unless OnError ignores it.
	DialectIncus = "incus"
)

// Limits bound the Starlark of one Rank.
type Limits struct {
	// MaxSteps is the step budget of one call (instance_placement once,
	// or one filter/weigh call per candidate). Builtins and operators
	// whose work grows with their operands (sorted, list(range(n)),
	// comparing lists, repeating a string) count it too. 0 means
	// DefaultSteps.
	MaxSteps uint64
	// MaxAlloc is the memory budget of one call, in bytes: what the
	// operations that build values of any size (repeat, concatenation,
	// list(), sorted(), str(), format, slices, joins) may allocate in
	// total. An operation over the budget fails before it allocates.
	// Values built one element per step (append, comprehensions) cost
	// at most a few dozen bytes per step on top. 0 means
	// DefaultMaxAlloc.
	MaxAlloc uint64
	// Timeout is the deadline of all the scriptlet work of one Rank.
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxLogLines and MaxLogBytes bound the scriptlet log of one Rank;
	// what is over is dropped and counted in a last line. 0 means
	// DefaultMaxLogLines and DefaultMaxLogBytes.
	MaxLogLines int
	MaxLogBytes int
	// OnError is what a claim does when a scriptlet fails (a runtime
	// error or a limit): OnErrorRefuse ("" means it) or OnErrorIgnore.
	OnError string
	// Dialect is DialectLXD ("" means it) or DialectIncus.
	Dialect string
	// Metrics, when set, counts scriptlet runs (shared by every policy
	// built with it).
	Metrics *Metrics
}

func (l Limits) withDefaults() Limits {
	if l.MaxSteps == 0 {
		l.MaxSteps = DefaultSteps
	}
	if l.MaxAlloc == 0 {
		l.MaxAlloc = DefaultMaxAlloc
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxLogLines <= 0 {
		l.MaxLogLines = DefaultMaxLogLines
	}
	if l.MaxLogBytes <= 0 {
		l.MaxLogBytes = DefaultMaxLogBytes
	}
	if l.OnError == "" {
		l.OnError = OnErrorRefuse
	}
	if l.Dialect == "" {
		l.Dialect = DialectLXD
	}
	return l
}

// Validate reports a limit out of its range.
func (l Limits) Validate() error {
	if l.OnError != "" && l.OnError != OnErrorIgnore && l.OnError != OnErrorRefuse {
		return fmt.Errorf("on_error must be %q or %q", OnErrorIgnore, OnErrorRefuse)
	}
	if l.Dialect != "" && l.Dialect != DialectLXD && l.Dialect != DialectIncus {
		return fmt.Errorf("dialect must be %q or %q", DialectLXD, DialectIncus)
	}
	return nil
}

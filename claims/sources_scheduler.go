package claims

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/syntax"

	"github.com/berthd/berth/scheduler"
)

// This file adapts Sources to the scheduler package's API for scriptlets
// and policies: compiling a scriptlet and building a policy.

// program is a compiled scriptlet.
type program = scheduler.Scriptlet

// scriptletLimits bounds every run of a scriptlet; zero fields mean the
// scheduler's defaults.
type scriptletLimits struct {
	MaxSteps uint64
	Timeout  time.Duration
}

// compileScriptlet compiles src; a compile error is a *ScriptletError.
func compileScriptlet(name string, src []byte, l scriptletLimits, log *slog.Logger) (*program, error) {
	p, err := scheduler.NewScriptlet(name, src, scheduler.ScriptletConfig{MaxSteps: l.MaxSteps, Timeout: scheduler.Duration(l.Timeout)}, log)
	if err != nil {
		return nil, scriptletError(name, err)
	}
	return p, nil
}

// scriptletError finds the position of a Starlark error.
func scriptletError(name string, err error) *ScriptletError {
	e := &ScriptletError{Name: name, Msg: err.Error()}
	var se syntax.Error
	var rl resolve.ErrorList
	switch {
	case errors.As(err, &se):
		e.Line, e.Col, e.Msg = int(se.Pos.Line), int(se.Pos.Col), se.Msg
	case errors.As(err, &rl) && len(rl) > 0:
		e.Line, e.Col, e.Msg = int(rl[0].Pos.Line), int(rl[0].Pos.Col), rl[0].Msg
	}
	return e
}

// defaultPolicySpec is the policy claims use when no stored policy is the
// default.
func defaultPolicySpec() PolicySpec { return PolicySpec{} }

// buildPolicy builds spec with the scriptlets of c.
func buildPolicy(spec PolicySpec, c *compiled, reg *scheduler.Registry) (*scheduler.Policy, error) {
	script := c.defaultScript
	if spec.Scriptlet != "" {
		var ok bool
		if script, ok = c.scripts[spec.Scriptlet]; !ok {
			return nil, fmt.Errorf("scriptlet %s: %w", spec.Scriptlet, errNoScriptlet)
		}
	}
	return scheduler.NewPolicy(scheduler.PolicyConfig{Filters: spec.Filters, Weighers: spec.Weighers}, reg, script)
}

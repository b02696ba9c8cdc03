package claims

import (
	"errors"
	"fmt"

	"github.com/berthd/berth/scheduler"
)

// This file adapts Sources to the scheduler package's API for scriptlets
// and policies: compiling a scriptlet and building a policy.

// compileScriptlet compiles src; a compile error is a *ScriptletError.
func compileScriptlet(name string, src []byte) (*scheduler.Program, error) {
	p, err := scheduler.CompileScriptlet(name, src)
	if err != nil {
		e := &ScriptletError{Name: name, Msg: err.Error()}
		var ce *scheduler.CompileError
		if errors.As(err, &ce) {
			e.Line, e.Col, e.Msg = ce.Line, ce.Col, ce.Msg
		}
		return nil, e
	}
	return p, nil
}

// checkScriptlet is what storing a scriptlet checks: it compiles, and a
// run on synthetic data stays within limits (scheduler.CheckScriptlet).
// The error is a *ScriptletError.
func checkScriptlet(name string, src []byte, limits scheduler.ScriptletLimits) error {
	if _, err := compileScriptlet(name, src); err != nil {
		return err
	}
	if err := scheduler.CheckScriptlet(name, src, limits); err != nil {
		return &ScriptletError{Name: name, Msg: "a trial run on a synthetic claim failed: " + err.Error()}
	}
	return nil
}

// Scriptlet implements scheduler.ScriptletResolver over one load.
func (c *compiled) Scriptlet(name string) (*scheduler.Program, bool) {
	p, ok := c.scripts[name]
	return p, ok
}

// DefaultScriptlet implements scheduler.ScriptletResolver: the source of
// the config key instances.placement.scriptlet, compiled.
func (c *compiled) DefaultScriptlet() *scheduler.Program { return c.defaultScript }

var _ scheduler.ScriptletResolver = (*compiled)(nil)

// buildPolicy builds cfg with the scriptlets and limits of c. A scriptlet
// the policy names that is not stored is an error.
func buildPolicy(cfg scheduler.PolicyConfig, c *compiled, reg *scheduler.Registry) (*scheduler.Policy, error) {
	p, err := scheduler.NewPolicy(cfg, reg, c, c.limits)
	if err != nil {
		return nil, err
	}
	for _, name := range p.Scriptlets() {
		if _, ok := c.scripts[name]; !ok {
			return nil, fmt.Errorf("scriptlet %s does not exist", name)
		}
	}
	return p, nil
}

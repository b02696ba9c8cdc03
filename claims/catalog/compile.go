package catalog

import (
	"errors"
	"fmt"

	"github.com/berthd/berth/scheduler"
)

// This file adapts the Catalog to the scheduler package's API for
// scriptlets and policies: checking a scriptlet and building a policy.

// checkScriptlet is what storing a scriptlet checks: it compiles, and a
// run on synthetic data stays within limits (scheduler.CheckScriptlet).
// The error is a *scheduler.CompileError.
func checkScriptlet(name string, src []byte, limits scheduler.ScriptletLimits) error {
	err := scheduler.CheckScriptlet(name, src, limits)
	var ce *scheduler.CompileError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return &scheduler.CompileError{Scriptlet: name, Msg: "a trial run on a synthetic claim failed: " + err.Error()}
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
	return buildPolicyWith(cfg, c, reg, c.limits)
}

// buildPolicyWith is buildPolicy with other scriptlet limits (a shadow's).
func buildPolicyWith(cfg scheduler.PolicyConfig, c *compiled, reg *scheduler.Registry, limits scheduler.ScriptletLimits) (*scheduler.Policy, error) {
	p, err := scheduler.NewPolicy(cfg, reg, c, limits)
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

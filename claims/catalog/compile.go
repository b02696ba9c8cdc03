package catalog

import (
	"errors"
	"fmt"

	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// This file adapts the Catalog to the scheduler's API for scriptlets and
// policies (scheduler, scheduler/scriptlet): checking a scriptlet and
// building a policy.

// checkScriptlet is what storing a scriptlet checks: it compiles, and a
// run on synthetic data stays within limits (scriptlet.Check). The error
// is a *scriptlet.CompileError.
func checkScriptlet(name string, src []byte, limits scriptlet.Limits) error {
	err := scriptlet.Check(name, src, limits)
	var ce *scriptlet.CompileError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return &scriptlet.CompileError{Scriptlet: name, Msg: "a trial run on a synthetic claim failed: " + err.Error()}
}

// Scriptlet implements scriptlet.Resolver over one load.
func (c *compiled) Scriptlet(name string) (*scriptlet.Program, bool) {
	p, ok := c.scripts[name]
	return p, ok
}

// DefaultScriptlet implements scriptlet.Resolver: the source of
// the config key instances.placement.scriptlet, compiled.
func (c *compiled) DefaultScriptlet() *scriptlet.Program { return c.defaultScript }

var _ scriptlet.Resolver = (*compiled)(nil)

// buildPolicy builds cfg with the scriptlets and limits of c. A scriptlet
// the policy names that is not stored is an error.
func buildPolicy(cfg scheduler.PolicyConfig, c *compiled, reg *scheduler.Registry) (*scheduler.Policy, error) {
	return buildPolicyWith(cfg, c, reg, c.limits)
}

// buildPolicyWith is buildPolicy with other scriptlet limits (a shadow's).
func buildPolicyWith(cfg scheduler.PolicyConfig, c *compiled, reg *scheduler.Registry, limits scriptlet.Limits) (*scheduler.Policy, error) {
	p, err := scheduler.NewPolicy(cfg, reg, scriptlet.NewRuntime(c, limits))
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

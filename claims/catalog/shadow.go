package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// Shadows are catalogue state: the ledger's active shadows are loaded
// with the rest (Reload), built against this load's scriptlets and
// default policy, and handed to the shadow runner, so every replica runs
// them beside its claims.

// Shadows returns the runner of the active shadows (the Claimer submits
// its claims to it).
func (s *Catalog) Shadows() *shadow.Runner { return s.shadows }

// defaultPolicy is the policy of claims that name none in load c.
func (s *Catalog) defaultPolicy(c *compiled) *scheduler.Policy {
	if p, ok := c.policies[c.defaultPolicy]; ok {
		return p
	}
	if c.defaultPolicy == "" && s.fallback != nil {
		return s.fallback
	}
	return c.builtin
}

// defaultSpec is the configuration of the default policy of load c.
func (s *Catalog) defaultSpec(c *compiled) scheduler.PolicyConfig {
	if spec, ok := c.specs[c.defaultPolicy]; ok {
		return spec
	}
	if s.fallback != nil {
		return s.fallback.Config()
	}
	return scheduler.DefaultPolicyConfig()
}

// shadowPolicy builds what the shadow of kind and name ranks with in
// load c: for a scriptlet, the default policy with that scriptlet as its
// scriptlet; for a policy, that policy. Both refuse when a scriptlet
// fails, so that a shadow's failures are counted as such, and count no
// scriptlet metrics (those are the claims'). It refuses, as an ErrNotFound
// or ErrInvalid *fault.Error with a shadow code, what cannot be shadowed.
func (s *Catalog) shadowPolicy(ctx context.Context, c *compiled, kind, name string) (*scheduler.Policy, error) {
	limits := c.limits
	limits.OnError, limits.Metrics = scriptlet.OnErrorRefuse, nil
	var spec scheduler.PolicyConfig
	switch kind {
	case scheduling.ShadowScriptlet:
		prog, ok := c.scripts[name]
		if !ok {
			if _, err := s.store.Catalogue.ScriptletGet(ctx, name); err != nil {
				return nil, shadowFault(err)
			}
			return nil, shadowInvalid("Scriptlet %s does not compile; it cannot run in shadow.", name)
		}
		if !prog.HasPlacement() {
			return nil, shadowInvalid("Scriptlet %s defines no instance_placement(request, candidate_members); it cannot run in shadow.", name)
		}
		spec = s.defaultSpec(c)
		spec.Scriptlet = name
	case scheduling.ShadowPolicy:
		if name == c.defaultPolicy {
			return nil, shadowInvalid("Scheduling policy %s is the default policy: a shadow is compared with the default, and cannot shadow itself.", name)
		}
		var ok bool
		if spec, ok = c.specs[name]; !ok {
			if err, broken := c.broken[name]; broken {
				return nil, shadowInvalid("Scheduling policy %s cannot be used: %v", name, err)
			}
			return nil, &fault.Error{Kind: fault.ErrNotFound, Code: fault.CodeShadowNotFound, Msg: fmt.Sprintf("No scheduling policy named %s.", name)}
		}
	default:
		return nil, shadowInvalid("Unknown shadow kind %q.", kind)
	}
	p, err := buildPolicyWith(spec, c, s.reg, limits)
	if err != nil {
		return nil, shadowInvalid("The shadow of %s %s does not build: %v", kind, name, err)
	}
	return p, nil
}

// loadShadows builds the active shadows of load c (those that no longer
// build are logged and left out) and installs them in the runner.
func (s *Catalog) loadShadows(ctx context.Context, c *compiled, active []scheduling.Shadow) {
	var built []shadow.Shadow
	for _, sh := range active {
		p, err := s.shadowPolicy(ctx, c, sh.Kind, sh.Name)
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "claims: a shadow cannot run; left out",
				slog.String("kind", sh.Kind), slog.String("name", sh.Name), slog.Any("error", err))
			continue
		}
		built = append(built, shadow.Shadow{ID: sh.ID, Kind: sh.Kind, Name: sh.Name, Policy: p})
	}
	s.shadows.Set(built)
}

// ShadowStart starts running the stored scriptlet or policy of that name
// (kind scheduling.ShadowScriptlet or scheduling.ShadowPolicy) in shadow of every
// claim the default policy ranks, then reloads. Refusals, with nothing
// changed: what does not exist is ErrNotFound; a scriptlet that does not
// compile or defines no instance_placement, a policy that does not build
// or is the default, ErrInvalid; a shadow already running, ErrConflict.
func (s *Catalog) ShadowStart(ctx context.Context, kind, name string) (scheduling.Shadow, error) {
	c, err := s.current(ctx)
	if err != nil {
		return scheduling.Shadow{}, err
	}
	if _, err := s.shadowPolicy(ctx, c, kind, name); err != nil {
		return scheduling.Shadow{}, err
	}
	sh, err := s.store.Catalogue.ShadowStart(ctx, kind, name)
	if err != nil {
		return scheduling.Shadow{}, err
	}
	s.reloadAfterWrite(ctx)
	return sh, nil
}

// ShadowStop stops the shadow of kind and name (ErrNotFound when none
// runs) and forgets its counts, then reloads.
func (s *Catalog) ShadowStop(ctx context.Context, kind, name string) error {
	if err := s.store.Catalogue.ShadowStop(ctx, kind, name); err != nil {
		return err
	}
	s.reloadAfterWrite(ctx)
	return nil
}

// reportWait bounds how long a report waits for this replica's shadows
// to judge the claims already queued.
const reportWait = time.Second

// ShadowReport is what the shadow of kind and name counted since it
// started, on every replica: this replica's counts are flushed first,
// once its shadows have judged the claims it already answered (waiting at
// most reportWait); other replicas' are as of their last flush.
// ErrNotFound when none runs.
func (s *Catalog) ShadowReport(ctx context.Context, kind, name string) (scheduling.Shadow, error) {
	wctx, cancel := context.WithTimeout(ctx, reportWait)
	_ = s.shadows.Idle(wctx) // past the bound, the claims still queued count at the next report
	cancel()
	if err := s.shadows.Flush(ctx); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "shadow: flush before a report failed", slog.Any("error", err))
	}
	return s.store.Catalogue.ShadowGet(ctx, kind, name)
}

// shadowInvalid is a shadow that cannot run.
func shadowInvalid(format string, args ...any) error {
	return &fault.Error{Kind: fault.ErrInvalid, Code: fault.CodeShadowInvalid, Msg: fmt.Sprintf(format, args...)}
}

// shadowFault gives a not-found of the ledger the shadow code.
func shadowFault(err error) error {
	var fe *fault.Error
	if errors.As(err, &fe) && errors.Is(fe, fault.ErrNotFound) {
		return &fault.Error{Kind: fault.ErrNotFound, Code: fault.CodeShadowNotFound, Msg: fe.Msg}
	}
	return err
}

package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
	"github.com/berthd/berth/scheduler/scriptlet"
)

// Server-wide settings kept in the ledger's config (GET/PATCH /config).
const (
	// ConfigDefaultScriptlet holds the Starlark source of the default
	// scriptlet (as LXD's instances.placement.scriptlet): it runs for
	// policies that name no scriptlet.
	ConfigDefaultScriptlet = "instances.placement.scriptlet"
	// ConfigScriptletMaxSteps is the Starlark step budget of one
	// scriptlet run (an integer).
	ConfigScriptletMaxSteps = "scheduler.scriptlet.max_steps"
	// ConfigScriptletTimeout is the deadline of one scriptlet run, a Go
	// duration string such as "200ms".
	ConfigScriptletTimeout = "scheduler.scriptlet.timeout"
	// ConfigScriptletMaxMemory is the memory budget of one scriptlet
	// run, in bytes (an integer).
	ConfigScriptletMaxMemory = "scheduler.scriptlet.max_memory"
	// ConfigScriptletOnError is what a claim does when its scriptlet
	// fails: "refuse" (the default) or "ignore" (rank without it).
	ConfigScriptletOnError = "scheduler.scriptlet.on_error"
	// ConfigScriptletDialect is whose reading of the calls LXD and Incus
	// disagree on scriptlets get: "lxd" (the default) or "incus".
	ConfigScriptletDialect = "scheduler.scriptlet.dialect"
)

// ConfigKeys lists the settings PATCH /config accepts.
func ConfigKeys() []string {
	return []string{ConfigDefaultScriptlet, ConfigScriptletMaxSteps, ConfigScriptletTimeout, ConfigScriptletMaxMemory, ConfigScriptletOnError, ConfigScriptletDialect}
}

// Bounds of the scriptlet limits.
const (
	maxScriptletSteps   = 1_000_000_000
	maxScriptletTimeout = time.Minute
	maxScriptletMemory  = 1 << 30
)

// DefaultRefresh is how often Catalog reloads everything even
// without a change notification.
const DefaultRefresh = time.Minute

// Catalog is every replica's compiled view of the scheduling policies,
// scriptlets and config stored in the ledger, and their one writer. It
// resolves policies by name for claims (PolicySource) and scriptlets for
// policies; its writes (ScriptletPut, PolicyPut, ConfigPatch and the
// deletes) check what they are given, store it, and reload, so that a
// replica sees its own writes at once. Run keeps it fresh otherwise: it
// reloads within moments of a change committed by any replica
// (PostgreSQL LISTEN/NOTIFY) and at least every refresh interval. It is
// safe for concurrent use.
type Catalog struct {
	store   *ledger.Store
	reg     *scheduler.Registry
	log     *slog.Logger
	refresh time.Duration

	// fallback, when set, replaces the built-in policy as the policy of
	// claims when no stored policy is the default.
	fallback *scheduler.Policy

	// metrics counts the runs of every scriptlet of every policy built.
	metrics *scriptlet.Metrics

	// shadows runs the active shadows (shadow.go).
	shadows *shadow.Runner

	cur      atomic.Pointer[compiled]
	reloadMu sync.Mutex
	// generation counts reloads, for tests and metrics.
	generation atomic.Int64
}

// compiled is one load of the stored scheduling data. It never changes.
type compiled struct {
	limits        scriptlet.Limits
	scripts       map[string]*scriptlet.Program
	defaultScript *scriptlet.Program
	// specs are the stored policies' specs; policies those that built,
	// broken why the others did not.
	specs         map[string]scheduler.PolicyConfig
	policies      map[string]*scheduler.Policy
	broken        map[string]error
	defaultPolicy string
	builtin       *scheduler.Policy
}

// Options configure a Catalog.
type Options struct {
	// Store holds the policies, scriptlets and config. Required.
	Store *ledger.Store
	// Registry holds the plugins policies are built from; nil means
	// scheduler.DefaultRegistry().
	Registry *scheduler.Registry
	// Logger receives failed scriptlet runs and reload errors; nil
	// means slog.Default().
	Logger *slog.Logger
	// Refresh is the safety-net reload interval; 0 means DefaultRefresh.
	Refresh time.Duration
	// Fallback, when set, is the policy claims use when no stored policy
	// is the default (berthd's --scheduler-policy file); nil means the
	// built-in policy.
	Fallback *scheduler.Policy
	// Shadows runs the active shadows beside claims; nil means a runner
	// of its own that sees no cloud view (shadow.New with Store). Run
	// flushes its counts.
	Shadows *shadow.Runner
}

// New returns a Catalog as o says. Call Reload (or Run) before use.
func New(o Options) *Catalog {
	if o.Registry == nil {
		o.Registry = scheduler.DefaultRegistry()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Shadows == nil {
		o.Shadows = shadow.New(shadow.Options{Store: o.Store, Logger: o.Logger})
	}
	s := &Catalog{store: o.Store, reg: o.Registry, log: o.Logger, refresh: o.Refresh, fallback: o.Fallback, shadows: o.Shadows}
	s.metrics = &scriptlet.Metrics{OnFailure: s.logRun}
	return s
}

// Metrics counts the scriptlet runs of every policy s builds: runs,
// refusals, errors, limits exceeded, steps and time. Read its counters at
// any time; its OnFailure is Catalog' own (it logs failed runs, rate-limited).
func (s *Catalog) Metrics() *scriptlet.Metrics { return s.metrics }

// logRun logs a scriptlet run that failed or exceeded a limit, at most
// once a second per scriptlet (scriptlet.Metrics.OnFailure), with how many
// were not logged since; refusals and successes are the claim's answer,
// not the operator's concern.
func (s *Catalog) logRun(st scriptlet.RunStats, suppressed uint64) {
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "scriptlet run failed",
		slog.String("scriptlet", st.Scriptlet), slog.String("entry", st.Entry), slog.String("outcome", st.Outcome),
		slog.Uint64("steps", st.Steps), slog.Duration("duration", st.Duration), slog.String("error", st.Error),
		slog.Uint64("failures_not_logged", suppressed))
}

// Registry returns the plugins policies are built from.
func (s *Catalog) Registry() *scheduler.Registry { return s.reg }

// Generation counts completed reloads.
func (s *Catalog) Generation() int64 { return s.generation.Load() }

// Run keeps s fresh until ctx is done: it reloads on every change
// notification and every refresh interval. Failed reloads are logged and
// retried on the next signal; the last good load stays in use. It also
// flushes the shadows' counts (shadow.Runner.Run) and, when ctx is done,
// stops the shadows' workers.
func (s *Catalog) Run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	signal := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.store.Catalogue.ListenScheduling(ctx, signal) }()
	wg.Add(1)
	go func() { defer wg.Done(); s.shadows.Run(ctx, 0) }()
	defer wg.Wait()
	tick := time.NewTicker(s.refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-tick.C:
		}
		if err := s.Reload(ctx); err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "claims: reload of scheduling policies failed", slog.Any("error", err))
		}
	}
}

// Reload reads the stored policies, scriptlets and config and compiles
// them. A scriptlet or policy that no longer compiles (say, it names a unit
// a newer berthd dropped) is logged and left out; asking for it is an
// error. Only a failed read fails the reload.
func (s *Catalog) Reload(ctx context.Context) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cfg, err := s.store.Catalogue.Config(ctx)
	if err != nil {
		return err
	}
	scripts, err := s.store.Catalogue.Scriptlets(ctx)
	if err != nil {
		return err
	}
	pols, err := s.store.Catalogue.SchedulingPolicies(ctx)
	if err != nil {
		return err
	}
	shadows, err := s.store.Catalogue.Shadows(ctx)
	if err != nil {
		return err
	}
	c := &compiled{scripts: map[string]*scriptlet.Program{}, specs: map[string]scheduler.PolicyConfig{},
		policies: map[string]*scheduler.Policy{}, broken: map[string]error{}}
	if c.limits, err = limitsOf(cfg); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "claims: stored scriptlet limits are invalid; using the defaults", slog.Any("error", err))
		c.limits = scriptlet.Limits{}
	}
	c.limits.Metrics = s.metrics
	if raw, ok := cfg[ConfigDefaultScriptlet]; ok {
		var src string
		if err := json.Unmarshal(raw, &src); err == nil && strings.TrimSpace(src) != "" {
			if c.defaultScript, err = scriptlet.Compile(ConfigDefaultScriptlet, []byte(src)); err != nil {
				s.log.LogAttrs(ctx, slog.LevelError, "claims: the default scriptlet does not compile; ignored", slog.Any("error", err))
			}
		}
	}
	for _, sc := range scripts {
		p, err := scriptlet.Compile(sc.Name, []byte(sc.Source))
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "claims: stored scriptlet does not compile; ignored",
				slog.String("scriptlet", sc.Name), slog.Any("error", err))
			continue
		}
		c.scripts[sc.Name] = p
	}
	if c.builtin, err = buildPolicy(scheduler.DefaultPolicyConfig(), c, s.reg); err != nil {
		return fmt.Errorf("claims: the built-in policy does not build: %w", err)
	}
	for _, p := range pols {
		var spec scheduler.PolicyConfig
		if err := json.Unmarshal(p.Spec, &spec); err != nil {
			c.broken[p.Name] = err
			continue
		}
		c.specs[p.Name] = spec
		if p.Default {
			c.defaultPolicy = p.Name
		}
		built, err := buildPolicy(spec, c, s.reg)
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "claims: stored scheduling policy does not build",
				slog.String("policy", p.Name), slog.Any("error", err))
			c.broken[p.Name] = err
			continue
		}
		c.policies[p.Name] = built
	}
	s.cur.Store(c)
	s.loadShadows(ctx, c, shadows)
	s.generation.Add(1)
	return nil
}

// current returns the last load, loading first if there is none.
func (s *Catalog) current(ctx context.Context) (*compiled, error) {
	if c := s.cur.Load(); c != nil {
		return c, nil
	}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s.cur.Load(), nil
}

// Policy implements PolicySource: the stored policy of that name; for ""
// the stored default, or the built-in policy when none is the default.
// An unknown name is ErrNotFound; a stored policy that does not build
// (now) is ErrInvalid.
func (s *Catalog) Policy(ctx context.Context, name string) (pol *scheduler.Policy, isDefault bool, err error) {
	c, err := s.current(ctx)
	if err != nil {
		return nil, false, err
	}
	if name == "" {
		if c.defaultPolicy == "" {
			if p := s.fallback; p != nil {
				return p, true, nil
			}
			return c.builtin, true, nil
		}
		name = c.defaultPolicy
	}
	if p, ok := c.policies[name]; ok {
		return p, name == c.defaultPolicy, nil
	}
	if err, ok := c.broken[name]; ok {
		return nil, false, &fault.Error{Kind: fault.ErrInvalid, Msg: fmt.Sprintf("Scheduling policy %s cannot be used: %v", name, err)}
	}
	return nil, false, &fault.Error{Kind: fault.ErrNotFound, Msg: fmt.Sprintf("No scheduling policy named %s.", name)}
}

// PolicyWithScriptlet builds the policy of that name ("" the default) with
// the stored scriptlet named instead of its own: what POST
// /scriptlets/{name}/test runs. Unknown names are ErrNotFound; a
// scriptlet without instance_placement (one of units only) is ErrInvalid
// (berth.scriptlet.invalid).
func (s *Catalog) PolicyWithScriptlet(ctx context.Context, policy, scriptlet string) (*scheduler.Policy, error) {
	c, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	prog, ok := c.scripts[scriptlet]
	if !ok {
		return nil, &fault.Error{Kind: fault.ErrNotFound, Msg: fmt.Sprintf("No scriptlet named %s.", scriptlet)}
	}
	if !prog.HasPlacement() {
		return nil, &fault.Error{Kind: fault.ErrInvalid, Code: fault.CodeScriptletInvalid, Msg: fmt.Sprintf(
			"Scriptlet %s defines no instance_placement(request, candidate_members): there is nothing to test; its units run in a policy (starlark:%s).", scriptlet, scriptlet)}
	}
	spec := scheduler.DefaultPolicyConfig()
	if policy == "" {
		policy = c.defaultPolicy
	}
	if policy != "" {
		var ok bool
		if spec, ok = c.specs[policy]; !ok {
			return nil, &fault.Error{Kind: fault.ErrNotFound, Msg: fmt.Sprintf("No scheduling policy named %s.", policy)}
		}
	}
	spec.Scriptlet = scriptlet
	p, err := buildPolicy(spec, c, s.reg)
	if err != nil {
		return nil, &fault.Error{Kind: fault.ErrInvalid, Msg: err.Error()}
	}
	return p, nil
}

// PolicyConfig returns the stored policy of that name as configured:
// ErrNotFound if there is none.
func (s *Catalog) PolicyConfig(ctx context.Context, name string) (scheduler.PolicyConfig, error) {
	c, err := s.current(ctx)
	if err != nil {
		return scheduler.PolicyConfig{}, err
	}
	cfg, ok := c.specs[name]
	if !ok {
		return cfg, &fault.Error{Kind: fault.ErrNotFound, Msg: fmt.Sprintf("No scheduling policy named %s.", name)}
	}
	return cfg, nil
}

// StarlarkUnits lists the units the stored scriptlets offer: a
// "starlark:<name>" filter for each that defines filter(request,
// candidate), a weigher for each that defines weigh.
func (s *Catalog) StarlarkUnits(ctx context.Context) ([]scheduler.UnitInfo, error) {
	c, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	var out []scheduler.UnitInfo
	for _, name := range slices.Sorted(maps.Keys(c.scripts)) {
		p := c.scripts[name]
		if p.HasFilter() {
			out = append(out, scheduler.UnitInfo{Name: scheduler.StarlarkUnitPrefix + name, Kind: scheduler.KindFilter,
				Description: "filter(request, candidate) of scriptlet " + name + ".", Parameters: []scheduler.ParamInfo{}})
		}
		if p.HasWeigh() {
			out = append(out, scheduler.UnitInfo{Name: scheduler.StarlarkUnitPrefix + name, Kind: scheduler.KindWeigher,
				Description: "weigh(request, candidate) of scriptlet " + name + ".", Parameters: []scheduler.ParamInfo{}})
		}
	}
	return out, nil
}

// CheckScriptlet compiles src as a scriptlet named name: nil or a
// *scheduler.CompileError.
func (s *Catalog) CheckScriptlet(name string, src []byte) error {
	return checkScriptlet(name, src, s.limits())
}

// limits are the scriptlet limits of the last load (the defaults before
// the first).
func (s *Catalog) limits() scriptlet.Limits {
	if c := s.cur.Load(); c != nil {
		return c.limits
	}
	return scriptlet.Limits{}
}

// CheckPolicy builds spec against the registry and the stored scriptlets
// and returns it built, or an ErrInvalid *fault.Error naming the unit,
// parameter, balancer setting or scriptlet at fault.
func (s *Catalog) CheckPolicy(ctx context.Context, spec scheduler.PolicyConfig) (*scheduler.Policy, error) {
	c, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	if spec.Balancer != nil {
		if err := spec.Balancer.Validate(); err != nil {
			return nil, &fault.Error{Kind: fault.ErrInvalid, Msg: "Invalid scheduling policy: " + err.Error()}
		}
	}
	p, err := buildPolicy(spec, c, s.reg)
	if err != nil {
		return nil, &fault.Error{Kind: fault.ErrInvalid, Msg: "Invalid scheduling policy: " + err.Error()}
	}
	return p, nil
}

// CheckConfig validates a PATCH /config: known keys only, each value of
// its type (null removes a key); the default scriptlet must compile. It returns a *scheduler.CompileError for a scriptlet that
// does not compile and an ErrInvalid *fault.Error otherwise.
func (s *Catalog) CheckConfig(ctx context.Context, changes map[string]json.RawMessage) error {
	stored, err := s.store.Catalogue.Config(ctx)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(changes)) {
		if !slices.Contains(ConfigKeys(), k) {
			return &fault.Error{Kind: fault.ErrInvalid, Msg: fmt.Sprintf("Unknown config key %s; known keys: %s.", k, strings.Join(ConfigKeys(), ", "))}
		}
		if v := changes[k]; v == nil {
			delete(stored, k)
		} else {
			stored[k] = v
		}
	}
	limits, err := limitsOf(stored)
	if err != nil {
		return &fault.Error{Kind: fault.ErrInvalid, Msg: err.Error()}
	}
	if raw, ok := changes[ConfigDefaultScriptlet]; ok && raw != nil {
		var src string
		if err := json.Unmarshal(raw, &src); err != nil {
			return &fault.Error{Kind: fault.ErrInvalid, Msg: ConfigDefaultScriptlet + " must be a string of Starlark source or null."}
		}
		if strings.TrimSpace(src) != "" {
			if err := checkScriptlet(ConfigDefaultScriptlet, []byte(src), limits); err != nil {
				return err
			}
		}
	}
	return nil
}

// ScriptletPut compiles src as the scriptlet name and stores it (created
// reports a new name), then reloads so that this replica uses it at once.
// Source that does not compile is a *scheduler.CompileError and nothing is
// stored.
func (s *Catalog) ScriptletPut(ctx context.Context, name string, src []byte) (created bool, err error) {
	if err := s.CheckScriptlet(name, src); err != nil {
		return false, err
	}
	if created, err = s.store.Catalogue.ScriptletPut(ctx, name, string(src)); err != nil {
		return false, err
	}
	s.reloadAfterWrite(ctx)
	return created, nil
}

// ScriptletDelete deletes the stored scriptlet name (ErrConflict while a
// scheduling policy names it), then reloads.
func (s *Catalog) ScriptletDelete(ctx context.Context, name string) error {
	if err := s.store.Catalogue.ScriptletDelete(ctx, name); err != nil {
		return err
	}
	s.reloadAfterWrite(ctx)
	return nil
}

// PolicyPutParams is a scheduling policy to store.
type PolicyPutParams struct {
	Name, Description string
	// Default makes it the policy of claims that name none.
	Default bool
	Spec    scheduler.PolicyConfig
	// Create refuses to replace a stored policy of that name (ErrConflict).
	Create bool
}

// PolicyPut checks p's spec (as CheckPolicy) and stores it, then reloads.
// It returns the policy as stored, and whether it is new.
func (s *Catalog) PolicyPut(ctx context.Context, p PolicyPutParams) (_ scheduling.SchedulingPolicy, created bool, err error) {
	built, err := s.CheckPolicy(ctx, p.Spec)
	if err != nil {
		return scheduling.SchedulingPolicy{}, false, err
	}
	raw, err := json.Marshal(p.Spec)
	if err != nil {
		return scheduling.SchedulingPolicy{}, false, err
	}
	stored, created, err := s.store.Catalogue.SchedulingPolicyPut(ctx, scheduling.SchedulingPolicy{Name: p.Name, Description: p.Description,
		Default: p.Default, Spec: raw, Scriptlets: built.Scriptlets()}, scheduling.SchedulingPolicyPutParams{Create: p.Create})
	if err != nil {
		return scheduling.SchedulingPolicy{}, false, err
	}
	s.reloadAfterWrite(ctx)
	return stored, created, nil
}

// PolicyDelete deletes the stored scheduling policy name, then reloads.
func (s *Catalog) PolicyDelete(ctx context.Context, name string) error {
	if err := s.store.Catalogue.SchedulingPolicyDelete(ctx, name); err != nil {
		return err
	}
	s.reloadAfterWrite(ctx)
	return nil
}

// ConfigPatch checks changes (as CheckConfig; a nil value removes the key)
// and stores them, all or none, then reloads.
func (s *Catalog) ConfigPatch(ctx context.Context, changes map[string]json.RawMessage) error {
	if err := s.CheckConfig(ctx, changes); err != nil {
		return err
	}
	if err := s.store.Catalogue.ConfigPatch(ctx, changes); err != nil {
		return err
	}
	s.reloadAfterWrite(ctx)
	return nil
}

// reloadAfterWrite makes this replica see a write it just committed (other
// replicas learn of it through the ledger's notification). A failure is
// logged, not returned: the write is done, and the next reload (Run) will
// catch up.
func (s *Catalog) reloadAfterWrite(ctx context.Context) {
	if err := s.Reload(context.WithoutCancel(ctx)); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "reload of scheduling data failed after a write", slog.Any("error", err))
	}
}

// limitsOf reads the scriptlet limits from config values.
func limitsOf(cfg map[string]json.RawMessage) (scriptlet.Limits, error) {
	var l scriptlet.Limits
	if raw, ok := cfg[ConfigScriptletMaxSteps]; ok {
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > maxScriptletSteps {
			return l, fmt.Errorf("%s must be an integer from 1 to %d", ConfigScriptletMaxSteps, maxScriptletSteps)
		}
		l.MaxSteps = uint64(n)
	}
	if raw, ok := cfg[ConfigScriptletTimeout]; ok {
		var str string
		d, err := time.Duration(0), json.Unmarshal(raw, &str)
		if err == nil {
			d, err = time.ParseDuration(str)
		}
		if err != nil || d < time.Millisecond || d > maxScriptletTimeout {
			return l, fmt.Errorf("%s must be a duration such as \"200ms\", from 1ms to %s", ConfigScriptletTimeout, maxScriptletTimeout)
		}
		l.Timeout = d
	}
	if raw, ok := cfg[ConfigScriptletMaxMemory]; ok {
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 1<<20 || n > maxScriptletMemory {
			return l, fmt.Errorf("%s must be an integer number of bytes from %d to %d", ConfigScriptletMaxMemory, 1<<20, maxScriptletMemory)
		}
		l.MaxAlloc = uint64(n)
	}
	if raw, ok := cfg[ConfigScriptletOnError]; ok {
		if err := json.Unmarshal(raw, &l.OnError); err != nil || l.Validate() != nil {
			return l, fmt.Errorf("%s must be %q or %q", ConfigScriptletOnError, scriptlet.OnErrorIgnore, scriptlet.OnErrorRefuse)
		}
	}
	if raw, ok := cfg[ConfigScriptletDialect]; ok {
		if err := json.Unmarshal(raw, &l.Dialect); err != nil || l.Validate() != nil {
			return l, fmt.Errorf("%s must be %q or %q", ConfigScriptletDialect, scriptlet.DialectLXD, scriptlet.DialectIncus)
		}
	}
	return l, nil
}

package scriptlet

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// builtins are the functions every scriptlet may call. They find the
// run they serve through the thread; at top level (while compiling)
// they fail.
var builtins = starlark.StringDict{
	"log_info":                     starlark.NewBuiltin("log_info", logBuiltin("info")),
	"log_warn":                     starlark.NewBuiltin("log_warn", logBuiltin("warn")),
	"log_error":                    starlark.NewBuiltin("log_error", logBuiltin("error")),
	"set_target":                   starlark.NewBuiltin("set_target", setTarget),
	"get_cluster_member_state":     starlark.NewBuiltin("get_cluster_member_state", getMemberState),
	"get_cluster_member_resources": starlark.NewBuiltin("get_cluster_member_resources", getMemberResources),
	"get_instance_resources":       starlark.NewBuiltin("get_instance_resources", getInstanceResources),
	"get_instances":                starlark.NewBuiltin("get_instances", getInstances),
	"get_instances_count":          starlark.NewBuiltin("get_instances_count", getInstancesCount),
	"get_cluster_members":          starlark.NewBuiltin("get_cluster_members", getClusterMembers),
	"get_project":                  starlark.NewBuiltin("get_project", getProject),
	"fail":                         starlark.NewBuiltin("fail", failBuiltin),
	"struct":                       starlark.NewBuiltin("struct", starlarkstruct.Make),
}

type builtinFn = func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error)

// state is the call a builtin serves; an error outside a run.
func state(th *starlark.Thread, b *starlark.Builtin) (*callState, error) {
	st, _ := th.Local(threadStateKey).(*callState)
	if st == nil || st.run == nil {
		return nil, fmt.Errorf("%s: only callable while placing (not at top level)", b.Name())
	}
	return st, nil
}

// data is the call's CloudData, an error when the caller gave none.
func (st *callState) data(b *starlark.Builtin) error {
	if st.req.Data == nil {
		return fmt.Errorf("%s: no cloud data available", b.Name())
	}
	return nil
}

func logBuiltin(level string) builtinFn {
	return func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		st, err := state(th, b)
		if err != nil {
			return nil, err
		}
		// As LXD's and Incus's: keyword arguments are ignored.
		if st.run.dropped > 0 { // the log is full: count the line only
			st.run.log(level, "")
			return starlark.None, nil
		}
		st.run.log(level, logLine(args))
		return starlark.None, nil
	}
}

// logLine is a log_* line: the arguments (strings as they are, other
// values as str() prints them) joined by a space, except where one ends
// or the next begins with white space. LXD and Incus concatenate their
// arguments; their scriptlets put the separators in ("free: ", 3), and
// read the same here ("free: 3"), while Berth's ("free", 3) read "free 3".
func logLine(args starlark.Tuple) string {
	var b strings.Builder
	for _, a := range args {
		s, ok := starlark.AsString(a)
		if !ok {
			s = a.String()
		}
		if b.Len() > 0 && !endsInSpace(b.String()) && !startsWithSpace(s) {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

func endsInSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(r)
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// chargeResult charges a builtin's result of n values of about size
// bytes each: a step and its bytes per value.
func chargeResult(th *starlark.Thread, b *starlark.Builtin, n int, size uint64) error {
	sb := sandboxOf(th)
	what := func() string { return b.Name() + "()" }
	if err := sb.steps(th, uint64(n), what); err != nil {
		return err
	}
	return sb.alloc(mul(uint64(n), size), what)
}

func setTarget(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	st, err := state(th, b)
	if err != nil {
		return nil, err
	}
	var target string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "member_name", &target); err != nil {
		return nil, err
	}
	if st.gang != nil {
		return setGangTarget(st, b, target)
	}
	if st.ranked == nil {
		return nil, fmt.Errorf("%s: only callable from instance_placement or gang_placement", b.Name())
	}
	for _, s := range st.ranked {
		if s.Cand.RootIs(target) {
			st.target = s.Cand
			return starlark.None, nil
		}
	}
	if st.run.limits.Dialect == DialectIncus {
		return nil, fmt.Errorf("%s: %w: %s", b.Name(), errInvalidMember, target)
	}
	// As LXD: a warning, and the choice stays as it was (the ranking's
	// unless an earlier call chose).
	st.run.log("warn", fmt.Sprintf("%s: %q is not a candidate member; the built-in choice stands", b.Name(), target))
	return starlark.String(invalidMemberName), nil
}

// invalidMemberName is what LXD's set_target, get_cluster_member_state
// and get_cluster_member_resources answer for a name they do not know;
// Incus's fail with errInvalidMember.
const invalidMemberName = "Invalid member name"

var errInvalidMember = errors.New(invalidMemberName)

func failBuiltin(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if _, err := state(th, b); err != nil {
		return nil, err
	}
	var msg starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &msg); err != nil {
		return nil, err
	}
	if s, ok := starlark.AsString(msg); ok {
		return nil, &failError{s}
	}
	return nil, &failError{msg.String()}
}

// member looks up a cluster member by name or uuid, nil when there is
// none.
func (st *callState) member(b *starlark.Builtin, name string) (*scheduler.ProviderView, error) {
	if err := st.data(b); err != nil {
		return nil, err
	}
	p, err := st.req.Data.Member(st.ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	return p, nil
}

// memberBuiltin is a builtin that takes one cluster member's name or
// uuid and answers view of it.
func memberBuiltin(view func(*scheduler.ProviderView) starlark.Value) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		st, err := state(th, b)
		if err != nil {
			return nil, err
		}
		var name string
		if err := starlark.UnpackArgs(b.Name(), args, kwargs, "member_name", &name); err != nil {
			return nil, err
		}
		p, err := st.member(b, name)
		switch {
		case err != nil:
			return nil, err
		case p != nil:
			return view(p), nil
		case st.run.limits.Dialect == DialectIncus:
			return nil, fmt.Errorf("%s: %w: %s", b.Name(), errInvalidMember, name)
		}
		return starlark.String(invalidMemberName), nil // LXD's answer
	}
}

var (
	getMemberState     = memberBuiltin(func(p *scheduler.ProviderView) starlark.Value { return memberStateValue(p.State) })
	getMemberResources = memberBuiltin(memberResourcesValue)
)

// getInstanceResources is LXD's get_instance_resources(): an error in
// LXD's words when the instance's limits do not parse.
func getInstanceResources(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	st, err := state(th, b)
	if err != nil {
		return nil, err
	}
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
		return nil, err
	}
	r, err := instanceResources(st.req)
	if err != nil {
		return nil, err
	}
	return instanceResourcesValue(r, st.req.Resources), nil
}

// getProject is Incus's get_project(name).
func getProject(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	st, err := state(th, b)
	if err != nil {
		return nil, err
	}
	var name string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name); err != nil {
		return nil, err
	}
	if err := st.data(b); err != nil {
		return nil, err
	}
	is, err := st.req.Data.Instances(st.ctx, scheduler.InstancesQuery{Project: name, Max: affordable(th, projectUserSize)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if err := chargeResult(th, b, len(is), projectUserSize); err != nil {
		return nil, err
	}
	return projectValue(name, is), nil
}

// optString unpacks an optional string argument that may be None.
func optString(v starlark.Value, what string) (string, error) {
	if v == nil || v == starlark.None {
		return "", nil
	}
	s, ok := starlark.AsString(v)
	if !ok {
		return "", fmt.Errorf("%s must be a string or None, not %s", what, v.Type())
	}
	return s, nil
}

// What a builtin's answer is charged per element: an instance of
// get_instances (besides its document's bytes), a used_by entry of
// get_project.
const (
	instanceSize    = 512
	projectUserSize = 64
)

// affordable is how many elements of size bytes the call's memory budget
// has room for: the bound of a listing read from the database, so that a
// call is refused for its size before it is read whole, not after.
func affordable(th *starlark.Thread, size uint64) int {
	sb := sandboxOf(th)
	left := sb.maxAllocs - min(sb.allocs, sb.maxAllocs)
	return int(min(left/size, 1<<30)) + 1
}

// instancesQuery unpacks the arguments of get_instances and
// get_instances_count.
func instancesQuery(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (*callState, scheduler.InstancesQuery, error) {
	var q scheduler.InstancesQuery
	st, err := state(th, b)
	if err != nil {
		return nil, q, err
	}
	var locV, projV starlark.Value
	var pending bool // Incus's: Berth has no instances pending (a claim is one write)
	// Incus's order: get_instances(project, location) and
	// get_instances_count(project, location, pending).
	params := []any{"project?", &projV, "location?", &locV}
	if b.Name() == "get_instances_count" {
		params = append(params, "pending?", &pending)
	}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, params...); err != nil {
		return nil, q, err
	}
	if q.Location, err = optString(locV, b.Name()+": location"); err != nil {
		return nil, q, err
	}
	if q.Project, err = optString(projV, b.Name()+": project"); err != nil {
		return nil, q, err
	}
	return st, q, st.data(b)
}

func getInstances(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	st, q, err := instancesQuery(th, b, args, kwargs)
	if err != nil {
		return nil, err
	}
	q.Documents, q.Max = true, affordable(th, instanceSize)
	is, err := st.req.Data.Instances(st.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if err := chargeResult(th, b, len(is), instanceSize); err != nil {
		return nil, err
	}
	var docs uint64
	for i := range is {
		docs += uint64(approxSize(is[i].Instance))
	}
	if err := sandboxOf(th).alloc(docs, func() string { return b.Name() + "()" }); err != nil {
		return nil, err
	}
	list := make([]starlark.Value, len(is))
	for i := range is {
		list[i] = instanceValue(&is[i])
	}
	// As Incus's: the list is the scriptlet's own.
	return starlark.NewList(list), nil
}

func getInstancesCount(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	st, q, err := instancesQuery(th, b, args, kwargs)
	if err != nil {
		return nil, err
	}
	n, err := st.req.Data.InstancesCount(st.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	return starlark.MakeInt(n), nil
}

// approxSize is about how many bytes a decoded JSON document takes.
func approxSize(v any) int {
	switch v := v.(type) {
	case string:
		return 16 + len(v)
	case []any:
		n := 24
		for _, x := range v {
			n += approxSize(x)
		}
		return n
	case map[string]any:
		n := 48
		for k, x := range v {
			n += 16 + len(k) + approxSize(x)
		}
		return n
	}
	return 16
}

func getClusterMembers(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	st, err := state(th, b)
	if err != nil {
		return nil, err
	}
	var aggV, groupV starlark.Value
	var all bool
	// Incus's get_cluster_members(group); aggregate and all are Berth's.
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "group?", &groupV, "aggregate?", &aggV, "all?", &all); err != nil {
		return nil, err
	}
	agg, err := optString(aggV, b.Name()+": aggregate")
	if err != nil {
		return nil, err
	}
	group, err := optString(groupV, b.Name()+": group")
	if err != nil {
		return nil, err
	}
	// Incus's group: an aggregate uuid, or "default" (every member).
	if agg == "" && group != DefaultGroup {
		agg = group
	}
	if agg == DefaultGroup {
		agg = ""
	}
	if err := st.data(b); err != nil {
		return nil, err
	}
	ps, err := st.req.Data.Members(st.ctx, agg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if err := chargeResult(th, b, len(ps), 256); err != nil {
		return nil, err
	}
	if !all {
		ps = placeableMembers(ps, time.Now())
	}
	list := make([]starlark.Value, len(ps))
	for i, p := range ps {
		list[i] = clusterMember(p)
	}
	return starlark.NewList(list), nil
}

// placeableMembers are the members of ps that Incus's
// get_cluster_members answers: those that may take an instance (not
// evacuated, not offline), the fewest consumers first (Incus: fewest
// instances), then in ps's order (by name).
func placeableMembers(ps []*scheduler.ProviderView, now time.Time) []*scheduler.ProviderView {
	out := make([]*scheduler.ProviderView, 0, len(ps))
	for _, p := range ps {
		if status, _ := memberStatus(p, p.State, now); status == MemberOnline {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b *scheduler.ProviderView) int { return cmp.Compare(a.Consumers, b.Consumers) })
	return out
}

func stateValue(s *engine.ProviderState) starlark.Value {
	if s == nil {
		return starlark.None
	}
	return (*stateStruct)(s)
}

func frozenStruct(name string, d starlark.StringDict) starlark.Value {
	v := starlarkstruct.FromStringDict(starlark.String(name), d)
	v.Freeze()
	return v
}

func frozenList(vs []starlark.Value) *starlark.List {
	l := starlark.NewList(vs)
	l.Freeze()
	return l
}

func stringList(ss []string) *starlark.List {
	vs := make([]starlark.Value, len(ss))
	for i, s := range ss {
		vs[i] = starlark.String(s)
	}
	return frozenList(vs)
}

// amountsDict is an allocation's amounts as a frozen dict, classes in name
// order.
func amountsDict(res []engine.ResourceAmount) *starlark.Dict {
	var buf [8]engine.ResourceAmount
	sorted := append(buf[:0], res...)
	slices.SortFunc(sorted, func(a, b engine.ResourceAmount) int { return strings.Compare(a.Class, b.Class) })
	d := starlark.NewDict(len(res))
	for _, r := range sorted {
		_ = d.SetKey(starlark.String(r.Class), starlark.MakeInt64(r.Amount))
	}
	d.Freeze()
	return d
}

func intDict(m map[string]int64) *starlark.Dict {
	d := starlark.NewDict(len(m))
	for _, k := range sortedKeys(m) {
		_ = d.SetKey(starlark.String(k), starlark.MakeInt64(m[k]))
	}
	d.Freeze()
	return d
}

// toStarlark converts a decoded JSON value (properties) to a frozen
// Starlark value; integral numbers become ints.
func toStarlark(v any) starlark.Value { return fromJSON(v, true) }

// thawedStarlark is toStarlark's value with its lists and dicts left
// mutable: LXD hands instance_placement a request whose config, devices
// and profiles the scriptlet may change (they are its own copies).
func thawedStarlark(v any) starlark.Value { return fromJSON(v, false) }

func fromJSON(v any, freeze bool) starlark.Value {
	switch v := v.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(v)
	case string:
		return starlark.String(v)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return starlark.MakeInt64(int64(v))
		}
		return starlark.Float(v)
	case int:
		return starlark.MakeInt(v)
	case int64:
		return starlark.MakeInt64(v)
	case []any:
		vs := make([]starlark.Value, len(v))
		for i, x := range v {
			vs[i] = fromJSON(x, freeze)
		}
		l := starlark.NewList(vs)
		if freeze {
			l.Freeze()
		}
		return l
	case map[string]any:
		d := starlark.NewDict(len(v))
		for _, k := range sortedKeys(v) {
			_ = d.SetKey(starlark.String(k), fromJSON(v[k], freeze))
		}
		if freeze {
			d.Freeze()
		}
		return d
	}
	return starlark.String(fmt.Sprint(v))
}

var errNotNumber = errors.New("not a number")

// asNumber is v as a float64 (an int or a float).
func asNumber(v starlark.Value) (float64, error) {
	switch v.(type) {
	case starlark.Int, starlark.Float:
		f, _ := starlark.AsFloat(v)
		return f, nil
	}
	return 0, errNotNumber
}

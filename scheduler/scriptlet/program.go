package scriptlet

import (
	"errors"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// DefaultName is how Ranking.Scriptlet names the server's default
// scriptlet.
const DefaultName = "(default)"

// Entry points a scriptlet may define.
const (
	entryPlacement     = "instance_placement"
	entryGangPlacement = "gang_placement"
	entryFilter        = "filter"
	entryWeigh         = "weigh"
)

// Program is a compiled scriptlet: Starlark source whose top level has
// run once (under the default step budget) and whose globals are frozen.
// It defines any of
//
//	instance_placement(request, candidate_members)  the policy's scriptlet
//	gang_placement(request, domains)                the policy's scriptlet, for gangs (gang.go)
//	filter(request, candidate)                      a "starlark:<name>" filter
//	weigh(request, candidate)                       a "starlark:<name>" weigher
//
// A Program is immutable and safe for concurrent use; every run gets its
// own thread, budget and deadline.
type Program struct {
	name      string
	src       []byte
	placement *starlark.Function
	gang      *starlark.Function
	filter    *starlark.Function
	weigh     *starlark.Function
}

// Compile compiles src and runs its top level. Errors are a
// *CompileError with the line and column: syntax errors, undefined names,
// a failing top level, an entry point that is not a function of two
// parameters, or none of the entry points defined.
func Compile(name string, src []byte) (*Program, error) {
	p, err := compileScriptlet(name, src)
	if err != nil {
		err.Scriptlet = name
		return nil, err
	}
	return p, nil
}

// compileScriptlet is Compile but for the name in its error.
func compileScriptlet(name string, src []byte) (*Program, *CompileError) {
	f, err := (&syntax.FileOptions{}).Parse(name, src, 0)
	if err != nil {
		return nil, compileError(err)
	}
	if err := rewriteFile(f); err != nil {
		return nil, compileError(err)
	}
	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, compileError(err)
	}
	th := newSandboxThread("scriptlet:"+name+":load", DefaultSteps, DefaultMaxAlloc,
		func(*starlark.Thread, string) {}, nil)
	timer := time.AfterFunc(DefaultTimeout, func() { th.Cancel("deadline exceeded") })
	globals, err := prog.Init(th, predeclared)
	timer.Stop()
	if err != nil {
		return nil, compileError(err)
	}
	globals.Freeze()
	p := &Program{name: name, src: append([]byte(nil), src...)}
	for entry, dst := range map[string]**starlark.Function{entryPlacement: &p.placement, entryGangPlacement: &p.gang,
		entryFilter: &p.filter, entryWeigh: &p.weigh} {
		v, ok := globals[entry]
		if !ok {
			continue
		}
		fn, ok := v.(*starlark.Function)
		if !ok || fn.NumParams() != 2 {
			line, col := 0, 0
			if ok {
				line, col = int(fn.Position().Line), int(fn.Position().Col)
			}
			return nil, &CompileError{Line: line, Col: col, Msg: entry + " must be a function of two parameters"}
		}
		*dst = fn
	}
	if p.placement == nil && p.gang == nil && p.filter == nil && p.weigh == nil {
		return nil, &CompileError{Line: 1, Col: 1, Msg: "defines none of instance_placement(request, candidate_members), " +
			"gang_placement(request, domains), filter(request, candidate), weigh(request, candidate)"}
	}
	return p, nil
}

// predeclared are the names a scriptlet sees: the builtins, and the
// sandbox's hidden ones (which no source can name).
var predeclared = func() starlark.StringDict {
	d := starlark.StringDict{}
	for k, v := range builtins {
		d[k] = v
	}
	for k, v := range hidden {
		d[k] = v
	}
	return d
}()

func isPredeclared(n string) bool { _, ok := predeclared[n]; return ok }

func compileError(err error) *CompileError {
	var re *rewriteError
	if errors.As(err, &re) {
		return &CompileError{Line: int(re.pos.Line), Col: int(re.pos.Col), Msg: re.msg}
	}
	var se syntax.Error
	var rl resolve.ErrorList
	var ee *starlark.EvalError
	switch {
	case errors.As(err, &se):
		return &CompileError{Line: int(se.Pos.Line), Col: int(se.Pos.Col), Msg: se.Msg}
	case errors.As(err, &rl):
		return &CompileError{Line: int(rl[0].Pos.Line), Col: int(rl[0].Pos.Col), Msg: rl[0].Msg}
	case errors.As(err, &ee):
		line, col := evalPos(ee)
		return &CompileError{Line: line, Col: col, Msg: truncate(ee.Msg, maxMessageBytes)}
	}
	return &CompileError{Msg: truncate(err.Error(), maxMessageBytes)}
}

// evalPos is the innermost Starlark (not builtin) position of ee.
func evalPos(ee *starlark.EvalError) (int, int) {
	for i := range ee.CallStack {
		if pos := ee.CallStack.At(i).Pos; pos.Line > 0 {
			return int(pos.Line), int(pos.Col)
		}
	}
	return 0, 0
}

// Name is the name the program was compiled under.
func (p *Program) Name() string { return p.name }

// Source is the program's source.
func (p *Program) Source() []byte { return p.src }

// HasPlacement, HasGangPlacement, HasFilter and HasWeigh report which
// entry points the program defines.
func (p *Program) HasPlacement() bool     { return p.placement != nil }
func (p *Program) HasGangPlacement() bool { return p.gang != nil }
func (p *Program) HasFilter() bool        { return p.filter != nil }
func (p *Program) HasWeigh() bool         { return p.weigh != nil }

// Resolver finds compiled scriptlets by name. A Runtime asks it at
// every Rank, since scriptlets change while the server runs. It must be
// safe for concurrent use.
type Resolver interface {
	// Scriptlet returns the stored scriptlet name, false if none.
	Scriptlet(name string) (*Program, bool)
	// DefaultScriptlet returns the server's default scriptlet, nil if
	// none is set.
	DefaultScriptlet() *Program
}

// Static is a Resolver over a fixed set of programs, for tests and
// file-configured servers.
type Static struct {
	Default *Program
	Named   map[string]*Program
}

var _ Resolver = Static{}

// Scriptlet implements Resolver.
func (s Static) Scriptlet(name string) (*Program, bool) {
	p, ok := s.Named[name]
	return p, ok
}

// DefaultScriptlet implements Resolver.
func (s Static) DefaultScriptlet() *Program { return s.Default }

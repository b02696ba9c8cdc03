package scriptlet

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// Sandbox bounds that are not configurable: no scriptlet needs more,
// and each keeps one interpreter step cheap.
const (
	// maxIntBits bounds the integers a scriptlet computes: a product
	// or shift that would be longer fails.
	maxIntBits = 1 << 16
	// maxTupleNodes bounds the values a tuple (or struct) holds,
	// counted through nested tuples and structs: hashing and comparing
	// a tuple visit them all in one step, and `t = (t, t)` doubles them.
	maxTupleNodes = 1 << 16
	// maxWalkDepth bounds how deep the sandbox follows nested values.
	maxWalkDepth = 1000
	// maxMessageBytes bounds a refusal or error message taken from a
	// scriptlet (fail(x) of a huge x).
	maxMessageBytes = 1024
)

// Bytes charged per value, roughly what the Go runtime allocates.
const (
	sizeValue = 16 // an interface in a list or tuple
	sizeEntry = 80 // a dict or set entry
	sizePair  = 64 // a 2-tuple made by enumerate or items()
)

// sandbox is the budget of one run (a compile's top level, or one call),
// kept on the thread. Steps are the thread's own counter, which the
// sandbox advances by the work of each operation it sees (one step per
// element copied, compared or hashed); allocs count the bytes the
// operations it sees are about to allocate.
type sandbox struct {
	maxSteps  uint64
	allocs    uint64
	maxAllocs uint64
}

// newSandboxThread is a thread bounded by steps and allocation bytes.
// st is what builtins see of the call (nil at top level); the sandbox
// lives in it, so that a thread has one local.
func newSandboxThread(name string, maxSteps, maxAllocs uint64, print func(*starlark.Thread, string), st *callState) *starlark.Thread {
	th := &starlark.Thread{Name: name, Print: print}
	th.SetMaxExecutionSteps(maxSteps)
	if st == nil {
		st = &callState{}
	}
	st.sb = sandbox{maxSteps: maxSteps, maxAllocs: maxAllocs}
	th.SetLocal(threadStateKey, st)
	return th
}

func sandboxOf(th *starlark.Thread) *sandbox {
	if st, ok := th.Local(threadStateKey).(*callState); ok {
		return &st.sb
	}
	// A thread the sandbox did not make (cannot happen for scriptlets):
	// the default budgets.
	st := &callState{sb: sandbox{maxSteps: DefaultSteps, maxAllocs: DefaultMaxAlloc}}
	th.SetLocal(threadStateKey, st)
	return &st.sb
}

// budgetError is an operation refused because it would exceed a budget.
type budgetError struct {
	limit string // LimitSteps or LimitMemory
	msg   string
}

func (e *budgetError) Error() string { return e.msg }

// remaining is how many steps are left.
func (sb *sandbox) remaining(th *starlark.Thread) uint64 {
	if th.Steps >= sb.maxSteps {
		return 0
	}
	return sb.maxSteps - th.Steps
}

// steps charges n steps of work about to be done by what.
func (sb *sandbox) steps(th *starlark.Thread, n uint64, what func() string) error {
	if n >= sb.remaining(th) {
		th.Steps = sb.maxSteps
		return &budgetError{limit: LimitSteps, msg: fmt.Sprintf("%s: needs %d more steps than the step budget (%d) allows", what(), n, sb.maxSteps)}
	}
	th.Steps += n
	return nil
}

// alloc charges n bytes about to be allocated by what.
func (sb *sandbox) alloc(n uint64, what func() string) error {
	if n > sb.maxAllocs-min(sb.allocs, sb.maxAllocs) {
		return &budgetError{limit: LimitMemory, msg: fmt.Sprintf("%s: needs %d bytes, over the memory budget of %d bytes (%d used)",
			what(), n, sb.maxAllocs, sb.allocs)}
	}
	sb.allocs += n
	return nil
}

// mul is a*b, saturating.
func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// hidden are the builtins the rewrite calls (see scriptlet_rewrite.go).
var hidden = func() starlark.StringDict {
	d := starlark.StringDict{
		hiddenCall:     starlark.NewBuiltin(hiddenCall, sandboxCall),
		hiddenSlice:    starlark.NewBuiltin(hiddenSlice, sandboxSlice),
		hiddenTuple:    starlark.NewBuiltin(hiddenTuple, sandboxTuple),
		hiddenSpread:   starlark.NewBuiltin(hiddenSpread, spreadBuiltin(sizeValue, func() string { return "*args" })),
		hiddenSpreadKw: starlark.NewBuiltin(hiddenSpreadKw, spreadBuiltin(sizePair, func() string { return "**kwargs" })),
	}
	for _, op := range guardedOps {
		d[hiddenBinop(op)] = starlark.NewBuiltin(hiddenBinop(op), binopBuiltin(op))
	}
	for op := syntax.PLUS; op <= syntax.GTGT; op++ {
		d[hiddenAug(op)] = starlark.NewBuiltin(hiddenAug(op), augBuiltin(op))
	}
	return d
}()

func binopBuiltin(op syntax.Token) builtinFn {
	return func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		if err := sandboxOf(th).binop(th, op, x, y); err != nil {
			return nil, err
		}
		switch op {
		case syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE:
			ok, err := starlark.Compare(op, x, y)
			if err != nil {
				return nil, err
			}
			return starlark.Bool(ok), nil
		}
		z, err := starlark.Binary(op, x, y)
		if err != nil {
			return nil, err
		}
		return z, checkInt(z)
	}
}

// augBuiltin checks x op= y and returns y for the interpreter's own
// (in place, for lists) update.
func augBuiltin(op syntax.Token) builtinFn {
	return func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		sb := sandboxOf(th)
		if _, isList := x.(*starlark.List); isList && op == syntax.PLUS {
			// list += iterable extends the list in place, from any
			// iterable (list += range(n) included).
			what := func() string { return "list += " + y.Type() }
			y, n, err := sb.lengthOf(th, y, what)
			if err != nil {
				return nil, err
			}
			if err := sb.alloc(mul(n, 2*sizeValue), what); err != nil {
				return nil, err
			}
			return y, sb.steps(th, n, what)
		}
		if err := sb.binop(th, op, x, y); err != nil {
			return nil, err
		}
		if op != syntax.PLUS && op != syntax.PIPE {
			// The interpreter computes x op y like the binary operator:
			// check the result's size once it exists.
			if xi, ok := x.(starlark.Int); ok {
				if yi, ok := y.(starlark.Int); ok {
					if z, err := starlark.Binary(op, xi, yi); err == nil {
						if err := checkInt(z); err != nil {
							return nil, err
						}
					}
				}
			}
		}
		return y, nil
	}
}

func intBits(i starlark.Int) int {
	if v, ok := i.Int64(); ok {
		if v < 0 {
			v = -v
		}
		return bits.Len64(uint64(v))
	}
	return i.BigInt().BitLen()
}

// checkInt refuses an integer result longer than maxIntBits.
func checkInt(v starlark.Value) error {
	if i, ok := v.(starlark.Int); ok {
		if _, small := i.Int64(); !small && intBits(i) > maxIntBits {
			return &budgetError{limit: LimitMemory, msg: fmt.Sprintf("integer result longer than %d bits", maxIntBits)}
		}
	}
	return nil
}

// seqLen is the length of x as the repeat and concatenation operators
// copy it, and the bytes per element; ok false for other types.
func seqLen(x starlark.Value) (n, size uint64, ok bool) {
	switch x := x.(type) {
	case starlark.String:
		return uint64(len(x)), 1, true
	case starlark.Bytes:
		return uint64(len(x)), 1, true
	case *starlark.List:
		return uint64(x.Len()), sizeValue, true
	case starlark.Tuple:
		return uint64(len(x)), sizeValue, true
	}
	return 0, 0, false
}

// isContainer reports whether comparing or hashing v may visit more than v.
func isContainer(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set, *starlarkstruct.Struct:
		return true
	}
	return false
}

// binop charges x op y before it is computed, by the operator's family:
// concatenation, repetition (or an integer product), string formatting,
// shifts, set operators, comparisons and membership. Operators whose
// work does not grow with their operands cost nothing here.
func (sb *sandbox) binop(th *starlark.Thread, op syntax.Token, x, y starlark.Value) error {
	what := func() string { return fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()) }
	switch op {
	case syntax.PLUS:
		return sb.concat(th, x, y, what)
	case syntax.STAR:
		return sb.repeat(th, x, y, what)
	case syntax.PERCENT:
		return sb.interpolate(th, x, y, what)
	case syntax.LTLT:
		return shift(x, y, what)
	case syntax.PIPE, syntax.AMP, syntax.CIRCUMFLEX, syntax.MINUS:
		return sb.setOp(th, x, y, what)
	case syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE:
		return sb.compare(th, x, y, what)
	case syntax.IN, syntax.NOT_IN:
		return sb.membership(th, x, y, what)
	}
	return nil
}

// concat charges x + y: copying both sequences (strings, bytes, lists,
// tuples of one type), and a tuple's nested values.
func (sb *sandbox) concat(th *starlark.Thread, x, y starlark.Value, what func() string) error {
	nx, sx, okx := seqLen(x)
	ny, _, oky := seqLen(y)
	if !okx || !oky || x.Type() != y.Type() {
		return nil
	}
	n := nx + ny
	if err := sb.alloc(mul(n, sx), what); err != nil {
		return err
	}
	if _, ok := x.(starlark.Tuple); ok {
		if err := sb.tupleNodes(th, what, x, y); err != nil {
			return err
		}
	}
	return sb.steps(th, n/stepDivisor(sx), what)
}

// repeat charges x * y: a sequence repeated (either operand may be the
// count), or the length of an integer product.
func (sb *sandbox) repeat(th *starlark.Thread, x, y starlark.Value, what func() string) error {
	seq, k := x, y
	if _, ok := seq.(starlark.Int); ok {
		seq, k = y, x
	}
	ki, kok := k.(starlark.Int)
	if n, size, ok := seqLen(seq); ok && kok {
		times, small := ki.Int64()
		if times <= 0 && small {
			return nil
		}
		if !small {
			times = math.MaxInt64
		}
		total := mul(n, uint64(times))
		if err := sb.alloc(mul(total, size), what); err != nil {
			return err
		}
		if err := sb.steps(th, total/stepDivisor(size), what); err != nil {
			return err
		}
		if t, ok := seq.(starlark.Tuple); ok && len(t) > 0 {
			w := walker{hash: true, limit: maxTupleNodes}
			w.walk(t, 0)
			if mul(w.nodes, uint64(times)) > maxTupleNodes {
				return tupleTooBig(what)
			}
		}
		return nil
	}
	if xi, ok := x.(starlark.Int); ok && kok {
		if intBits(xi)+intBits(ki) > maxIntBits+1 {
			return &budgetError{limit: LimitMemory, msg: fmt.Sprintf("%s: integer result longer than %d bits", what(), maxIntBits)}
		}
	}
	return nil
}

// interpolate charges x % y for a format string x: printing y, once per
// conversion unless y is a tuple of the arguments.
func (sb *sandbox) interpolate(th *starlark.Thread, x, y starlark.Value, what func() string) error {
	f, ok := x.(starlark.String)
	if !ok {
		return nil
	}
	w := sb.walker(th, false)
	w.walk(y, 0)
	if err := sb.chargeWalk(th, &w, what); err != nil {
		return err
	}
	out := uint64(len(f)) + w.bytes
	if _, isTuple := y.(starlark.Tuple); !isTuple {
		out = uint64(len(f)) + mul(uint64(strings.Count(string(f), "%")), w.bytes)
	}
	return sb.alloc(out, what)
}

// shift refuses x << y when the result would be longer than maxIntBits.
func shift(x, y starlark.Value, what func() string) error {
	xi, okx := x.(starlark.Int)
	yi, oky := y.(starlark.Int)
	if okx && oky {
		if s, small := yi.Int64(); small && s >= 0 && intBits(xi)+int(min(s, maxIntBits+1)) > maxIntBits {
			return &budgetError{limit: LimitMemory, msg: fmt.Sprintf("%s: integer result longer than %d bits", what(), maxIntBits)}
		}
	}
	return nil
}

// setOp charges x | y, x & y, x ^ y and x - y over operands with a
// length (sets, dicts): a step and an entry per element of both.
func (sb *sandbox) setOp(th *starlark.Thread, x, y starlark.Value, what func() string) error {
	lx, ly := starlark.Len(x), starlark.Len(y)
	if lx < 0 || ly < 0 {
		return nil
	}
	n := uint64(lx + ly)
	if err := sb.steps(th, n, what); err != nil {
		return err
	}
	return sb.alloc(mul(n, sizeEntry), what)
}

// compare charges comparing x and y when either is a container: a step
// per value visited.
func (sb *sandbox) compare(th *starlark.Thread, x, y starlark.Value, what func() string) error {
	if !isContainer(x) && !isContainer(y) {
		return nil
	}
	w := sb.comparer(th)
	w.walk(x, 0)
	w.walk(y, 0)
	return sb.chargeWalk(th, &w, what)
}

// membership charges x in y (and not in): a scan of a string or bytes,
// comparisons with a list's or tuple's elements, hashing a container x.
func (sb *sandbox) membership(th *starlark.Thread, x, y starlark.Value, what func() string) error {
	switch y := y.(type) {
	case starlark.String:
		return sb.steps(th, uint64(len(y))/64, what)
	case starlark.Bytes:
		return sb.steps(th, uint64(len(y))/64, what)
	case *starlark.List, starlark.Tuple:
		w := sb.comparer(th)
		w.walk(x, 0)
		w.walk(y, 0)
		return sb.chargeWalk(th, &w, what)
	default:
		if isContainer(x) {
			w := sb.walker(th, true)
			w.walk(x, 0)
			return sb.chargeWalk(th, &w, what)
		}
	}
	return nil
}

// stepDivisor is how many units of size per element make one step:
// copying bytes is much cheaper than copying values.
func stepDivisor(size uint64) uint64 {
	if size == 1 {
		return 64
	}
	return 1
}

func tupleTooBig(what func() string) error {
	return &budgetError{limit: LimitMemory, msg: fmt.Sprintf("%s: a tuple holding more than %d values (counted through nested tuples)", what(), maxTupleNodes)}
}

// tupleNodes refuses a tuple made of vs when it would hold too many
// values.
func (sb *sandbox) tupleNodes(th *starlark.Thread, what func() string, vs ...starlark.Value) error {
	w := walker{hash: true, limit: min(maxTupleNodes, sb.remaining(th))}
	for _, v := range vs {
		w.walk(v, 0)
	}
	if w.over && w.limit == maxTupleNodes {
		return tupleTooBig(what)
	}
	return sb.chargeWalk(th, &w, what)
}

// walker visits a value's tree to bound what comparing, hashing or
// printing it costs: nodes counts the values visited (a string counts
// one per 64 bytes), bytes estimates the length of its repr. A hash
// walker follows only tuples and structs (what hashing follows); others
// follow lists, dicts and sets too. Cycles are visited once. The walk
// stops when nodes passes limit (over).
type walker struct {
	hash bool
	// compare: a value that contains itself is over (comparing it
	// recurses to Starlark's depth limit, exponentially).
	compare bool
	limit   uint64
	nodes   uint64
	bytes   uint64
	over    bool
	path    map[starlark.Value]bool
}

func (sb *sandbox) walker(th *starlark.Thread, hash bool) walker {
	return walker{hash: hash, limit: sb.remaining(th)}
}

// comparer is a walker for operations that compare their operands.
func (sb *sandbox) comparer(th *starlark.Thread) walker {
	return walker{compare: true, limit: sb.remaining(th)}
}

// chargeWalk charges the walk's nodes as steps.
func (sb *sandbox) chargeWalk(th *starlark.Thread, w *walker, what func() string) error {
	if w.over {
		th.Steps = sb.maxSteps
		return &budgetError{limit: LimitSteps, msg: fmt.Sprintf("%s: its operands are larger (or nested deeper) than the step budget (%d) lets it visit", what(), sb.maxSteps)}
	}
	return sb.steps(th, w.nodes, what)
}

func (w *walker) add(nodes, bytes uint64) {
	w.nodes += nodes
	w.bytes += bytes
	if w.nodes > w.limit {
		w.over = true
	}
}

// enter marks a mutable container as being walked; false if it already
// is (a cycle).
func (w *walker) enter(v starlark.Value) bool {
	if w.path == nil {
		w.path = map[starlark.Value]bool{}
	}
	if w.path[v] {
		if w.compare {
			w.over = true
		}
		return false
	}
	w.path[v] = true
	return true
}

func (w *walker) walk(v starlark.Value, depth int) {
	if w.over {
		return
	}
	if depth > maxWalkDepth {
		w.over = true
		return
	}
	switch v := v.(type) {
	case starlark.String:
		w.add(1+uint64(len(v))/64, uint64(len(v))+2)
	case starlark.Bytes:
		w.add(1+uint64(len(v))/64, uint64(len(v))+3)
	case starlark.Int:
		w.add(1, uint64(intBits(v))/3+2)
	case starlark.Float:
		w.add(1, 24)
	case starlark.Bool, starlark.NoneType:
		w.add(1, 5)
	case starlark.Tuple:
		w.add(1, 2)
		for _, e := range v {
			w.add(0, 2)
			w.walk(e, depth+1)
		}
	case *starlarkstruct.Struct:
		w.add(1, uint64(len(v.Constructor().String()))+2)
		for _, name := range v.AttrNames() {
			a, err := v.Attr(name)
			if err != nil || a == nil {
				continue
			}
			w.add(0, uint64(len(name))+4)
			w.walk(a, depth+1)
		}
	case *starlark.List:
		w.add(1, 2)
		if w.hash || !w.enter(v) {
			return
		}
		for i := range v.Len() {
			w.add(0, 2)
			w.walk(v.Index(i), depth+1)
		}
		delete(w.path, v)
	case *starlark.Dict:
		w.add(1, 2)
		if w.hash || !w.enter(v) {
			return
		}
		for _, k := range v.Keys() {
			val, _, _ := v.Get(k)
			w.add(0, 4)
			w.walk(k, depth+1)
			if val != nil {
				w.walk(val, depth+1)
			}
			if w.over {
				break
			}
		}
		delete(w.path, v)
	case *starlark.Set:
		w.add(1, 7)
		if w.hash || !w.enter(v) {
			return
		}
		it := v.Iterate()
		var e starlark.Value
		for it.Next(&e) && !w.over {
			w.add(0, 2)
			w.walk(e, depth+1)
		}
		it.Done()
		delete(w.path, v)
	default:
		// Members, mappings, functions and the like print a short
		// description of themselves.
		if n := starlark.Len(v); n > 0 {
			w.add(uint64(n), uint64(n)*32)
		} else {
			w.add(1, 64)
		}
	}
}

// sandboxSlice is x[lo:hi:step], charged for what it copies.
func sandboxSlice(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, lo, hi, stepV := args[0], args[1], args[2], args[3]
	s, ok := x.(starlark.Sliceable)
	if !ok {
		return nil, fmt.Errorf("invalid slice operand %s", x.Type())
	}
	n := s.Len()
	step := 1
	if stepV != starlark.None {
		var err error
		if step, err = starlark.AsInt32(stepV); err != nil {
			return nil, fmt.Errorf("invalid slice step: %s", err)
		}
		if step == 0 {
			return nil, fmt.Errorf("zero is not a valid slice step")
		}
	}
	asIndex := func(v starlark.Value, dst *int, what string) error {
		if v == starlark.None {
			return nil
		}
		i, err := starlark.AsInt32(v)
		if err != nil {
			return fmt.Errorf("invalid %s index: %s", what, err)
		}
		if i < 0 {
			i += n
		}
		*dst = i
		return nil
	}
	var start, end, count int
	if step > 0 {
		start, end = 0, n
		if err := asIndex(lo, &start, "start"); err != nil {
			return nil, err
		}
		if err := asIndex(hi, &end, "end"); err != nil {
			return nil, err
		}
		start, end = max(0, min(start, n)), max(0, min(end, n))
		if end < start {
			end = start
		}
		count = (end - start + step - 1) / step
	} else {
		start, end = n-1, -1
		if err := asIndex(lo, &start, "start"); err != nil {
			return nil, err
		}
		if err := asIndex(hi, &end, "end"); err != nil {
			return nil, err
		}
		start, end = min(start, n-1), max(end, -1)
		if start < end {
			start = end
		}
		count = (start - end - step - 1) / -step
	}
	_, size, _ := seqLen(x)
	if size == 0 {
		size = sizeValue
	}
	if _, isStr := x.(starlark.String); isStr && step == 1 {
		size = 0 // a substring shares the string's bytes
	}
	sb := sandboxOf(th)
	what := func() string { return x.Type() + " slice" }
	if err := sb.alloc(mul(uint64(count), size), what); err != nil {
		return nil, err
	}
	if err := sb.steps(th, uint64(count)/stepDivisor(max(size, 1)), what); err != nil {
		return nil, err
	}
	return s.Slice(start, end, step), nil
}

func whatTuple() string { return "tuple" }

// sandboxTuple is a tuple literal.
func sandboxTuple(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	sb := sandboxOf(th)
	for _, a := range args {
		if isContainer(a) {
			if err := sb.tupleNodes(th, whatTuple, args...); err != nil {
				return nil, err
			}
			break
		}
	}
	if err := sb.alloc(uint64(len(args))*sizeValue+24, whatTuple); err != nil {
		return nil, err
	}
	return append(starlark.Tuple(nil), args...), nil
}

// spreadBuiltin charges the copy f(*x) or f(**x) makes of x (size bytes
// per element) and returns x (materialised, if it had no length).
func spreadBuiltin(size uint64, what func() string) builtinFn {
	return func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		sb := sandboxOf(th)
		v, n, err := sb.lengthOf(th, args[0], what)
		if err != nil {
			return nil, err
		}
		if err := sb.alloc(mul(n, size), what); err != nil {
			return nil, err
		}
		return v, sb.steps(th, n, what)
	}
}

// sandboxCall is f(args...): a builtin's work is charged before it runs
// (see chargeBuiltin); a Starlark function's varargs tuple is bounded
// like any tuple.
func sandboxCall(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	// args is the interpreter's copy (it copies the arguments of every
	// builtin call), so the callee may have the rest of it.
	fn, args := args[0], args[1:]
	sb := sandboxOf(th)
	switch f := fn.(type) {
	case *starlark.Builtin:
		var err error
		if args, kwargs, err = sb.chargeBuiltin(th, f, args, kwargs); err != nil {
			return nil, err
		}
	case *starlark.Function:
		if f.HasVarargs() && len(args) > f.NumParams() {
			if err := sb.tupleNodes(th, func() string { return "arguments of " + f.Name() }, args...); err != nil {
				return nil, err
			}
		}
	}
	return starlark.Call(th, fn, args, kwargs)
}

// guardedBuiltin wraps a builtin another builtin will call (sorted's
// key=str) so that its calls are charged too.
func guardedBuiltin(b *starlark.Builtin) *starlark.Builtin {
	return starlark.NewBuiltin(b.Name(), func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return sandboxCall(th, nil, append(starlark.Tuple{b}, args...), kwargs)
	})
}

// lengthOf is the number of elements iterating v gives; for an iterable
// without a length (none of Starlark's own) it materialises v as a list,
// charging each element, and returns the list in its place.
func (sb *sandbox) lengthOf(th *starlark.Thread, v starlark.Value, what func() string) (starlark.Value, uint64, error) {
	if n := starlark.Len(v); n >= 0 {
		return v, uint64(n), nil
	}
	it, ok := v.(starlark.Iterable)
	if !ok {
		return v, 0, nil
	}
	var out []starlark.Value
	iter := it.Iterate()
	defer iter.Done()
	var e starlark.Value
	for iter.Next(&e) {
		if err := sb.steps(th, 1, what); err != nil {
			return nil, 0, err
		}
		if err := sb.alloc(sizeValue, what); err != nil {
			return nil, 0, err
		}
		out = append(out, e)
	}
	return starlark.NewList(out), uint64(len(out)), nil
}

// builtinCost is how a builtin's work grows with its iterable arguments:
// per element, steps and bytes allocated, plus whether it compares
// elements (deep walks) and how much.
type builtinCost struct {
	perElem uint64 // bytes allocated per element of the iterable arguments
	walk    bool   // compares or hashes elements: walk them
	sort    bool   // n log n comparisons
	tuple   bool   // builds a tuple: bounded like a tuple literal
}

var universeCosts = map[string]builtinCost{
	"list": {perElem: sizeValue}, "tuple": {perElem: sizeValue, tuple: true}, "reversed": {perElem: sizeValue},
	"sorted": {perElem: sizeValue, walk: true, sort: true}, "set": {perElem: sizeEntry, walk: true},
	"dict": {perElem: sizeEntry, walk: true}, "enumerate": {perElem: sizePair}, "zip": {perElem: sizePair},
	"bytes": {perElem: 1}, "any": {}, "all": {}, "max": {walk: true}, "min": {walk: true},
}

// chargeBuiltin charges b(args, kwargs) before it runs and returns the
// arguments to call it with.
func (sb *sandbox) chargeBuiltin(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, []starlark.Tuple, error) {
	name := b.Name()
	for i, kv := range kwargs {
		if kb, ok := kv[1].(*starlark.Builtin); ok && string(kv[0].(starlark.String)) == "key" {
			kwargs = append([]starlark.Tuple(nil), kwargs...)
			kwargs[i] = starlark.Tuple{kv[0], guardedBuiltin(kb)}
		}
	}
	if recv := b.Receiver(); recv != nil {
		return args, kwargs, sb.chargeMethod(th, recv, name, args, kwargs)
	}
	what := func() string { return name + "()" }
	switch name {
	case "str", "repr", "print", "fail", "log_info", "log_warn", "log_error":
		w := sb.walker(th, false)
		for _, a := range args {
			w.walk(a, 0)
		}
		if err := sb.chargeWalk(th, &w, what); err != nil {
			return nil, nil, err
		}
		return args, kwargs, sb.alloc(w.bytes, what)
	case "hash":
		w := sb.walker(th, true)
		for _, a := range args {
			w.walk(a, 0)
		}
		return args, kwargs, sb.chargeWalk(th, &w, what)
	case "int":
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok && len(s) > maxIntBits/3+64 {
				return nil, nil, &budgetError{limit: LimitMemory, msg: fmt.Sprintf("int(): a string of %d characters is longer than any integer a scriptlet may use (%d bits)", len(s), maxIntBits)}
			}
		}
		return args, kwargs, nil
	case "struct":
		vals := make([]starlark.Value, len(kwargs))
		for i, kv := range kwargs {
			vals[i] = kv[1]
		}
		return args, kwargs, sb.tupleNodes(th, what, vals...)
	}
	cost, ok := universeCosts[name]
	if !ok {
		return args, kwargs, nil // O(1), or charged by the builtin itself
	}
	var total uint64
	args = append(starlark.Tuple(nil), args...)
	for i, a := range args {
		if _, isStr := a.(starlark.String); isStr && name != "bytes" {
			continue
		}
		v, n, err := sb.lengthOf(th, a, what)
		if err != nil {
			return nil, nil, err
		}
		args[i] = v
		total += n
	}
	if err := sb.alloc(mul(total, cost.perElem), what); err != nil {
		return nil, nil, err
	}
	steps := total
	if cost.walk {
		w := sb.comparer(th)
		w.hash = name == "set" || name == "dict"
		for _, a := range args {
			w.walk(a, 0)
		}
		if w.over {
			return nil, nil, sb.chargeWalk(th, &w, what)
		}
		steps = w.nodes
	}
	if cost.sort && total > 1 {
		steps = mul(steps, uint64(bits.Len64(total)))
	}
	if err := sb.steps(th, steps, what); err != nil {
		return nil, nil, err
	}
	if cost.tuple && len(args) > 0 {
		if err := sb.tupleNodes(th, what, args[0]); err != nil {
			return nil, nil, err
		}
	}
	return args, kwargs, nil
}

// chargeMethod charges a method of a built-in type, by the receiver's
// type: strings, lists, dicts and sets. Methods of other types, and
// those whose work does not grow with their operands, cost nothing here.
func (sb *sandbox) chargeMethod(th *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	what := func() string { return recv.Type() + "." + name + "()" }
	switch r := recv.(type) {
	case starlark.String:
		return sb.chargeStringMethod(th, r, name, args, kwargs, what)
	case *starlark.List:
		return sb.chargeListMethod(th, r, name, args, what)
	case *starlark.Dict:
		return sb.chargeDictMethod(th, r, name, args, kwargs, what)
	case *starlark.Set:
		return sb.chargeSetMethod(th, r, name, args, what)
	}
	return nil
}

// argsLength is the number of elements of args together, as lengthOf
// counts them.
func (sb *sandbox) argsLength(th *starlark.Thread, args starlark.Tuple, what func() string) (uint64, error) {
	var n uint64
	for _, a := range args {
		_, l, err := sb.lengthOf(th, a, what)
		if err != nil {
			return 0, err
		}
		n += l
	}
	return n, nil
}

// chargeStringMethod charges a method of the string r: by what it
// builds from r and its arguments; a scan of r for any other.
func (sb *sandbox) chargeStringMethod(th *starlark.Thread, r starlark.String, name string, args starlark.Tuple, kwargs []starlark.Tuple, what func() string) error {
	l := uint64(len(r))
	switch name {
	case "join":
		if len(args) != 1 {
			return nil
		}
		w := sb.walker(th, false)
		w.walk(args[0], 0)
		if err := sb.chargeWalk(th, &w, what); err != nil {
			return err
		}
		n := uint64(max(starlark.Len(args[0]), 0))
		return sb.alloc(w.bytes+mul(n, l), what)
	case "replace":
		return sb.chargeReplace(th, r, args, what)
	case "format":
		w := sb.walker(th, false)
		for _, a := range args {
			w.walk(a, 0)
		}
		for _, kv := range kwargs {
			w.walk(kv[1], 0)
		}
		if err := sb.chargeWalk(th, &w, what); err != nil {
			return err
		}
		return sb.alloc(l+mul(uint64(strings.Count(string(r), "{")), w.bytes), what)
	case "split", "rsplit", "splitlines", "partition", "rpartition":
		if err := sb.steps(th, l/16, what); err != nil {
			return err
		}
		return sb.alloc(mul(l+1, sizeValue+16), what)
	case "elems", "codepoints", "elem_ords", "codepoint_ords":
		return nil // lazy
	case "upper", "lower", "title", "capitalize", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix":
		if err := sb.steps(th, l/64, what); err != nil {
			return err
		}
		return sb.alloc(mul(l, 3), what)
	}
	return sb.steps(th, l/64, what)
}

// chargeReplace charges r.replace(old, new): a scan of r, and r with
// every occurrence of old replaced.
func (sb *sandbox) chargeReplace(th *starlark.Thread, r starlark.String, args starlark.Tuple, what func() string) error {
	if len(args) < 2 {
		return nil
	}
	old, ok1 := args[0].(starlark.String)
	new, ok2 := args[1].(starlark.String)
	if !ok1 || !ok2 {
		return nil
	}
	l := uint64(len(r))
	occ := uint64(len(r)) + 1
	if len(old) > 0 {
		occ = uint64(strings.Count(string(r), string(old)))
	}
	if err := sb.steps(th, l/64+occ, what); err != nil {
		return err
	}
	return sb.alloc(l+mul(occ, uint64(len(new))), what)
}

// chargeListMethod charges a method of the list r.
func (sb *sandbox) chargeListMethod(th *starlark.Thread, r *starlark.List, name string, args starlark.Tuple, what func() string) error {
	switch name {
	case "append":
		return sb.alloc(2*sizeValue, what)
	case "extend":
		n, err := sb.argsLength(th, args, what)
		if err != nil {
			return err
		}
		if err := sb.alloc(mul(n, 2*sizeValue), what); err != nil {
			return err
		}
		return sb.steps(th, n, what)
	case "insert", "pop":
		return sb.steps(th, uint64(r.Len()), what)
	case "index", "remove":
		w := sb.comparer(th)
		w.walk(r, 0)
		for _, a := range args {
			w.walk(a, 0)
		}
		return sb.chargeWalk(th, &w, what)
	}
	return nil
}

// chargeDictMethod charges a method of the dict r.
func (sb *sandbox) chargeDictMethod(th *starlark.Thread, r *starlark.Dict, name string, args starlark.Tuple, kwargs []starlark.Tuple, what func() string) error {
	switch name {
	case "items", "keys", "values":
		n := uint64(r.Len())
		if err := sb.steps(th, n, what); err != nil {
			return err
		}
		per := uint64(sizeValue)
		if name == "items" {
			per = sizePair
		}
		return sb.alloc(mul(n, per), what)
	case "update":
		n, err := sb.argsLength(th, args, what)
		if err != nil {
			return err
		}
		n += uint64(len(kwargs))
		if err := sb.steps(th, n, what); err != nil {
			return err
		}
		return sb.alloc(mul(n, sizeEntry), what)
	case "get", "pop", "setdefault":
		if len(args) > 0 && isContainer(args[0]) {
			w := sb.walker(th, true)
			w.walk(args[0], 0)
			return sb.chargeWalk(th, &w, what)
		}
	}
	return nil
}

// chargeSetMethod charges a method of the set r.
func (sb *sandbox) chargeSetMethod(th *starlark.Thread, r *starlark.Set, name string, args starlark.Tuple, what func() string) error {
	switch name {
	case "union", "intersection", "difference", "symmetric_difference", "update", "issubset", "issuperset":
		n, err := sb.argsLength(th, args, what)
		if err != nil {
			return err
		}
		n += uint64(r.Len())
		if err := sb.steps(th, n, what); err != nil {
			return err
		}
		if name == "issubset" || name == "issuperset" {
			return nil
		}
		return sb.alloc(mul(n, sizeEntry), what)
	}
	return nil
}

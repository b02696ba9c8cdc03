package scriptlet

import (
	"go.starlark.net/syntax"
)

// The sandbox needs to see every operation that can allocate or compute
// more than a constant amount in one interpreter step: go.starlark.net
// counts steps per bytecode instruction, so `[None] * (1<<30)` is one
// step that allocates 16 GiB, and `sorted(x)` is one step whatever len(x).
// The interpreter offers no hook for that, so the compiled program is
// rewritten before it is resolved: every such expression becomes a call
// of a hidden builtin (names starting with "$", which no source can
// spell) that charges the work to the run's budgets before doing it:
//
//	x + y, x * y, x % y, ...        $binop_+(x, y), ...
//	x += y                          x += $aug_+(x, y) (checks, returns y)
//	f(a, *b, k=c)                   $call(f, a, *b, k=c)
//	x[lo:hi:step]                   $slice(x, lo, hi, step)
//	(a, b)                          $tuple(a, b)
//	f(*x, **y)                      $call(f, *$spread(x), **$spreadkw(y))
//
// Short-circuit `and`/`or`, `not`, unary minus and indexing are left as
// they are: they allocate nothing that grows.

// Hidden builtin names.
const (
	hiddenCall  = "$call"
	hiddenSlice = "$slice"
	hiddenTuple = "$tuple"
	// f(*x), f(**x)           f(*$spread(x)), f(**$spreadkw(x))
	hiddenSpread   = "$spread"
	hiddenSpreadKw = "$spreadkw"
)

func hiddenBinop(op syntax.Token) string { return "$binop_" + op.String() }
func hiddenAug(op syntax.Token) string   { return "$aug_" + op.String() }

// guardedOps are the binary operators routed through the sandbox.
var guardedOps = []syntax.Token{
	syntax.PLUS, syntax.MINUS, syntax.STAR, syntax.PERCENT, syntax.SLASH, syntax.SLASHSLASH,
	syntax.PIPE, syntax.AMP, syntax.CIRCUMFLEX, syntax.LTLT, syntax.GTGT,
	syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE, syntax.IN, syntax.NOT_IN,
}

// rewriteError is a construct the sandbox refuses to compile.
type rewriteError struct {
	pos syntax.Position
	msg string
}

func (e *rewriteError) Error() string { return e.msg }

type rewriter struct{ err *rewriteError }

// rewriteFile rewrites f in place; see above.
func rewriteFile(f *syntax.File) error {
	var rw rewriter
	rw.stmts(f.Stmts)
	if rw.err != nil {
		return rw.err
	}
	return nil
}

func (rw *rewriter) stmts(ss []syntax.Stmt) {
	for _, s := range ss {
		rw.stmt(s)
	}
}

func (rw *rewriter) stmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		if s.Op == syntax.EQ {
			rw.target(s.LHS)
			s.RHS = rw.expr(s.RHS)
			return
		}
		if hasCall(s.LHS) {
			rw.fail(s.OpPos, "augmented assignment to a target that calls a function is not allowed in a scriptlet; assign it to a variable first")
			return
		}
		// The target read again as an expression: it has no calls, so
		// reading it twice has no side effects.
		load := rw.expr(loadCopy(s.LHS))
		rw.target(s.LHS)
		op := s.Op - syntax.PLUS_EQ + syntax.PLUS
		s.RHS = callOf(hiddenAug(op), s.OpPos, load, rw.expr(s.RHS))
	case *syntax.DefStmt:
		rw.params(s.Params)
		rw.stmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rw.expr(s.X)
	case *syntax.IfStmt:
		s.Cond = rw.expr(s.Cond)
		rw.stmts(s.True)
		rw.stmts(s.False)
	case *syntax.ForStmt:
		rw.target(s.Vars)
		s.X = rw.expr(s.X)
		rw.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rw.expr(s.Cond)
		rw.stmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rw.expr(s.Result)
		}
	}
}

func (rw *rewriter) fail(pos syntax.Position, msg string) {
	if rw.err == nil {
		rw.err = &rewriteError{pos: pos, msg: msg}
	}
}

// params rewrites the default values of parameters.
func (rw *rewriter) params(ps []syntax.Expr) {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rw.expr(b.Y)
		}
	}
}

// target rewrites the expressions inside an assignment target (indexes,
// the operands of a.b and a[i]) but not the target's shape.
func (rw *rewriter) target(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.TupleExpr:
		for _, x := range e.List {
			rw.target(x)
		}
	case *syntax.ListExpr:
		for _, x := range e.List {
			rw.target(x)
		}
	case *syntax.ParenExpr:
		rw.target(e.X)
	case *syntax.IndexExpr:
		e.X = rw.expr(e.X)
		e.Y = rw.expr(e.Y)
	case *syntax.DotExpr:
		e.X = rw.expr(e.X)
	}
}

func (rw *rewriter) exprs(es []syntax.Expr) {
	for i, e := range es {
		es[i] = rw.expr(e)
	}
}

// expr returns e rewritten.
func (rw *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = rw.expr(e.X), rw.expr(e.Y)
		for _, op := range guardedOps {
			if e.Op == op {
				return callOf(hiddenBinop(op), e.OpPos, e.X, e.Y)
			}
		}
		return e
	case *syntax.CallExpr:
		e.Fn = rw.expr(e.Fn)
		for i, a := range e.Args {
			switch a := a.(type) {
			case *syntax.BinaryExpr:
				if a.Op == syntax.EQ { // k=v
					a.Y = rw.expr(a.Y)
					continue
				}
			case *syntax.UnaryExpr:
				// f(*x) and f(**x): the interpreter copies x before
				// the call, so x is charged first.
				if a.Op == syntax.STAR {
					a.X = callOf(hiddenSpread, a.OpPos, rw.expr(a.X))
					continue
				}
				if a.Op == syntax.STARSTAR {
					a.X = callOf(hiddenSpreadKw, a.OpPos, rw.expr(a.X))
					continue
				}
			}
			e.Args[i] = rw.expr(a)
		}
		args := append([]syntax.Expr{e.Fn}, e.Args...)
		fn := &syntax.Ident{NamePos: e.Lparen, Name: hiddenCall}
		return &syntax.CallExpr{Fn: fn, Lparen: e.Lparen, Args: args, Rparen: e.Rparen}
	case *syntax.Comprehension:
		e.Body = rw.expr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				rw.target(c.Vars)
				c.X = rw.expr(c.X)
			case *syntax.IfClause:
				c.Cond = rw.expr(c.Cond)
			}
		}
		return e
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = rw.expr(e.Cond), rw.expr(e.True), rw.expr(e.False)
		return e
	case *syntax.DictExpr:
		for _, x := range e.List {
			if de, ok := x.(*syntax.DictEntry); ok {
				de.Key, de.Value = rw.expr(de.Key), rw.expr(de.Value)
			}
		}
		return e
	case *syntax.DotExpr:
		e.X = rw.expr(e.X)
		return e
	case *syntax.IndexExpr:
		e.X, e.Y = rw.expr(e.X), rw.expr(e.Y)
		return e
	case *syntax.LambdaExpr:
		rw.params(e.Params)
		e.Body = rw.expr(e.Body)
		return e
	case *syntax.ListExpr:
		rw.exprs(e.List)
		return e
	case *syntax.ParenExpr:
		e.X = rw.expr(e.X)
		return e
	case *syntax.SliceExpr:
		x := rw.expr(e.X)
		opt := func(v syntax.Expr) syntax.Expr {
			if v == nil {
				return &syntax.Ident{NamePos: e.Lbrack, Name: "None"}
			}
			return rw.expr(v)
		}
		return callOf(hiddenSlice, e.Lbrack, x, opt(e.Lo), opt(e.Hi), opt(e.Step))
	case *syntax.TupleExpr:
		rw.exprs(e.List)
		pos := e.Lparen
		if !pos.IsValid() && len(e.List) > 0 {
			pos, _ = e.List[0].Span()
		}
		return callOf(hiddenTuple, pos, e.List...)
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = rw.expr(e.X)
		}
		return e
	}
	return e
}

// callOf is the call name(args...) placed at pos.
func callOf(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	end := pos
	if len(args) > 0 {
		_, end = args[len(args)-1].Span()
	}
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: end}
}

// hasCall reports whether an assignment target calls anything.
func hasCall(e syntax.Expr) bool {
	found := false
	syntax.Walk(e, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.CallExpr); ok {
			found = true
		}
		return !found
	})
	return found
}

// loadCopy is a fresh copy of an augmented assignment's target (an
// identifier, a.b or a[i] of call-free operands) to be read as an
// expression: the resolver binds each identifier node once, so the
// target's own nodes cannot be shared.
func loadCopy(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: loadCopy(e.X), Dot: e.Dot, NamePos: e.NamePos,
			Name: &syntax.Ident{NamePos: e.Name.NamePos, Name: e.Name.Name}}
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: loadCopy(e.X), Lbrack: e.Lbrack, Y: loadCopy(e.Y), Rbrack: e.Rbrack}
	case *syntax.ParenExpr:
		return &syntax.ParenExpr{Lparen: e.Lparen, X: loadCopy(e.X), Rparen: e.Rparen}
	case *syntax.BinaryExpr:
		return &syntax.BinaryExpr{X: loadCopy(e.X), OpPos: e.OpPos, Op: e.Op, Y: loadCopy(e.Y)}
	case *syntax.UnaryExpr:
		if e.X == nil {
			return e
		}
		return &syntax.UnaryExpr{OpPos: e.OpPos, Op: e.Op, X: loadCopy(e.X)}
	case *syntax.TupleExpr:
		l := make([]syntax.Expr, len(e.List))
		for i, x := range e.List {
			l[i] = loadCopy(x)
		}
		return &syntax.TupleExpr{Lparen: e.Lparen, List: l, Rparen: e.Rparen}
	case *syntax.ListExpr:
		l := make([]syntax.Expr, len(e.List))
		for i, x := range e.List {
			l[i] = loadCopy(x)
		}
		return &syntax.ListExpr{Lbrack: e.Lbrack, List: l, Rbrack: e.Rbrack}
	case *syntax.CondExpr:
		return &syntax.CondExpr{If: e.If, Cond: loadCopy(e.Cond), True: loadCopy(e.True), ElsePos: e.ElsePos, False: loadCopy(e.False)}
	case *syntax.SliceExpr:
		opt := func(v syntax.Expr) syntax.Expr {
			if v == nil {
				return nil
			}
			return loadCopy(v)
		}
		return &syntax.SliceExpr{X: loadCopy(e.X), Lbrack: e.Lbrack, Lo: opt(e.Lo), Hi: opt(e.Hi), Step: opt(e.Step), Rbrack: e.Rbrack}
	}
	return e // literals
}

package berth_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The module's import rules (STYLE.md: "one owner per concern, imports
// one way"), checked on every file of every package of the module.
//
// A rule is a row of importRules: the files of the packages matched by
// from (less notFrom) import no path matched by banned (less allowed);
// test files (_test.go) too when tests is set. A pattern is an import
// path, or a path followed by "/..." for it and everything under it.
// except lets a named package (module-relative) break the rule, with the
// reason; a package named there that no longer breaks the rule fails the
// test, so that the list cannot go stale.

// mod is the module's path and a slash, the prefix of every pattern that
// names Berth's own packages (mod + "..." is all of them).
const mod = "github.com/berthd/berth/"

// drivers are the database drivers, and what speaks SQL through them.
var drivers = []string{
	"github.com/jackc/pgx/...",
	"github.com/jackc/pgconn/...",
	"github.com/lib/pq/...",
	"github.com/go-sql-driver/mysql/...",
	"github.com/golang-migrate/migrate/...",
	"database/sql/...",
}

type importRule struct {
	rule    string   // what it keeps, as a failure says it
	from    []string // importing packages
	notFrom []string
	banned  []string // imported paths
	allowed []string
	tests   bool              // _test.go files are held to it too
	except  map[string]string // module-relative importing package: why it may
}

var importRules = []importRule{
	{
		rule:    "only packages under ledger/ speak to a database (STYLE.md 1, 2)",
		from:    []string{mod + "..."},
		notFrom: []string{mod + "ledger/..."},
		banned:  drivers,
		tests:   true,
		// internal/pgcluster, the embedded PostgreSQL, runs initdb and
		// postgres as processes and imports no driver: it needs no row.
		except: map[string]string{
			"internal/testing/mariadbtest": "starts MariaDB for integration/migrate's tests and connects with " +
				"go-sql-driver/mysql to see it answer and to run the tests' statements (Exec); a harness, imported by tests only",
		},
	},
	{
		rule:    "only httpapi imports echo (STYLE.md 1)",
		from:    []string{mod + "..."},
		notFrom: []string{mod + "httpapi/..."},
		banned:  []string{"github.com/labstack/echo/..."},
		tests:   true,
	},
	{
		// httpapi (the server: middleware, the route table, the error
		// table) wires its parts; each part imports only those below it:
		// wire <- admission, wire <- placement <- berthapi <- console.
		rule:    "httpapi/wire, the wire format, imports nothing of Berth's but leaves",
		from:    []string{mod + "httpapi/wire"},
		banned:  []string{mod + "..."},
		allowed: []string{mod + "internal/..."},
	},
	{
		rule:    "httpapi/admission imports of httpapi only the wire format",
		from:    []string{mod + "httpapi/admission"},
		banned:  []string{mod + "httpapi/..."},
		allowed: []string{mod + "httpapi/wire"},
	},
	{
		rule:    "httpapi/placement, Placement's routes, imports of httpapi only the wire format, and neither claims nor scheduler",
		from:    []string{mod + "httpapi/placement"},
		banned:  []string{mod + "httpapi/...", mod + "claims/...", mod + "scheduler/..."},
		allowed: []string{mod + "httpapi/wire"},
	},
	{
		rule:    "httpapi/berthapi, Berth's routes, imports of httpapi only the wire format and placement",
		from:    []string{mod + "httpapi/berthapi"},
		banned:  []string{mod + "httpapi/..."},
		allowed: []string{mod + "httpapi/wire", mod + "httpapi/placement"},
	},
	{
		rule:    "httpapi/console imports of httpapi only the wire format, placement and berthapi",
		from:    []string{mod + "httpapi/console"},
		banned:  []string{mod + "httpapi/..."},
		allowed: []string{mod + "httpapi/wire", mod + "httpapi/placement", mod + "httpapi/berthapi"},
	},
	{
		rule:    "scheduler and ledger/engine never see the database nor the layers above them",
		from:    []string{mod + "scheduler/...", mod + "ledger/engine/..."},
		banned:  append([]string{mod + "ledger/...", mod + "claims/...", mod + "httpapi/..."}, drivers...),
		allowed: []string{mod + "ledger/engine/..."},
		tests:   true,
	},
	{
		// The runtime imports the policy's types (the request, the
		// candidates, the ranking); a policy runs it through the
		// scheduler.Scriptlets it is built with.
		rule:   "scheduler does not import its scriptlet runtime (scheduler/scriptlet)",
		from:   []string{mod + "scheduler"},
		banned: []string{mod + "scheduler/scriptlet/..."},
	},
	{
		rule:    "ledger/engine imports nothing of Berth's but the leaves internal/uuid and internal/fault",
		from:    []string{mod + "ledger/engine"},
		banned:  []string{mod + "..."},
		allowed: []string{mod + "internal/uuid", mod + "internal/fault"},
		tests:   true,
	},
	{
		rule:   "internal/fault, the error kinds everyone imports, is a leaf: it imports nothing of Berth's (STYLE.md 15)",
		from:   []string{mod + "internal/fault"},
		banned: []string{mod + "..."},
		tests:  true,
	},
	{
		// The Claimer takes them as interfaces (claims.PolicySource,
		// claims.Cloud); cmd/berthd/compose wires them in.
		rule:   "claims/catalog, claims/cloud and claims/shadow serve claims without importing it",
		from:   []string{mod + "claims/catalog/...", mod + "claims/cloud/...", mod + "claims/shadow/..."},
		banned: []string{mod + "claims"},
	},
	{
		rule:   "imports go one way: ledger never imports claims, httpapi, scheduler or cmd/",
		from:   []string{mod + "ledger/..."},
		banned: []string{mod + "claims/...", mod + "httpapi/...", mod + "scheduler/...", mod + "cmd/..."},
		tests:  true,
	},
	{
		// Package ledger opens the parts and holds them (ledger.Store);
		// their external tests open a Store through it.
		rule: "imports go one way inside the ledger: its parts never import package ledger, which opens them",
		from: []string{mod + "ledger/internal/...", mod + "ledger/resources/...", mod + "ledger/claimrecords/...",
			mod + "ledger/quotas/...", mod + "ledger/audit/...", mod + "ledger/snapshot/...", mod + "ledger/scheduling/..."},
		banned: []string{mod + "ledger"},
	},
	{
		rule:    "ledger/internal/core, the plumbing the ledger's parts share, imports none of them",
		from:    []string{mod + "ledger/internal/core"},
		banned:  []string{mod + "ledger/..."},
		allowed: []string{mod + "ledger/internal/core"},
		tests:   true,
	},
	{
		// Claims and the API ask a quota.Source for the limits; the
		// ledger checks them.
		rule:   "imports go one way: quota never imports claims, httpapi or cmd/",
		from:   []string{mod + "claims/quota/..."},
		banned: []string{mod + "claims/...", mod + "httpapi/...", mod + "cmd/..."},
		tests:  true,
	},
	{
		rule:   "imports go one way: claims never imports httpapi",
		from:   []string{mod + "claims/..."},
		banned: []string{mod + "httpapi/..."},
		tests:  true,
	},
	{
		// Composition roots and command-line code live with their
		// commands; integration/ is on top of everything and may test
		// them.
		rule:    "nothing but cmd/... and integration/... imports cmd/...",
		from:    []string{mod + "..."},
		notFrom: []string{mod + "cmd/...", mod + "integration/..."},
		banned:  []string{mod + "cmd/..."},
		tests:   true,
	},
	{
		// httpapi/client is a leaf too (the rule below), which
		// internal/placementdiff sends its reads through.
		rule:    "internal/ holds leaves: internal/... imports nothing of Berth's outside internal/... but the public client (httpapi/client)",
		from:    []string{mod + "internal/..."},
		banned:  []string{mod + "..."},
		allowed: []string{mod + "internal/...", mod + "httpapi/client"},
		tests:   true,
	},
	{
		// Its users are other projects' schedulers: a client they can
		// import (or copy) without Berth's server or its dependencies.
		rule:   "httpapi/client, the public Go client, imports only the standard library",
		from:   []string{mod + "httpapi/client"},
		banned: []string{mod + "...", "github.com/...", "golang.org/...", "go.opentelemetry.io/...", "gopkg.in/..."},
	},
	{
		// integration/'s tests build the components through it too
		// (daemon.NewAPI), so test files are not held to it.
		rule:    "cmd/berthd/compose, the one composition root, is used by cmd/berthd/daemon alone",
		from:    []string{mod + "..."},
		notFrom: []string{mod + "cmd/berthd/daemon", mod + "cmd/berthd/compose/..."},
		banned:  []string{mod + "cmd/berthd/compose/..."},
	},
	{
		rule:   "the commands' main packages stay tiny: each imports only its program root",
		from:   []string{mod + "cmd/berthd", mod + "cmd/berth", mod + "cmd/berth-load", mod + "cmd/berth-soak"},
		banned: []string{mod + "..."},
		allowed: []string{mod + "cmd/berthd/daemon", mod + "cmd/berth/cli", mod + "cmd/berth-load/load",
			mod + "cmd/berth-soak/soak"},
		tests: true,
	},
	{
		rule: "the test harnesses (internal/testing/..., cmd/berthd/daemon/daemontest, ledger/internal/dbwork, httpapi/apitest/...) are test code: " +
			"only _test.go files import them (STYLE.md 16)",
		from:    []string{mod + "..."},
		notFrom: []string{mod + "internal/testing/...", mod + "httpapi/apitest/..."},
		banned:  []string{mod + "internal/testing/...", mod + "cmd/berthd/daemon/daemontest", mod + "ledger/internal/dbwork", mod + "httpapi/apitest/..."},
		except: map[string]string{
			"cmd/berth-soak/soak": "the failover soak benchmark (cmd/berth-soak) is a program whose whole job is to run " +
				"berthd on a Patroni cluster and fail it over: it starts one with patronitest",
		},
	},
}

// aliasAllowlist holds cross-package aliases allowed to exist, as
// "file: name" (module-relative file): none (STYLE.md 13: a name lives
// where it is owned and is imported from there). A line whose alias is
// gone fails the test.
var aliasAllowlist = map[string]bool{}

// goPackage is what the test reads of `go list -json`.
type goPackage struct {
	ImportPath, Name, Dir                                        string
	GoFiles, CgoFiles, IgnoredGoFiles, TestGoFiles, XTestGoFiles []string
}

// goList runs `go list -json args...` in the module's root.
func goList(t *testing.T, args ...string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []goPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// sourceFile is one Go file of the module, parsed.
type sourceFile struct {
	pkg  string // import path
	rel  string // module-relative path
	test bool
	ast  *ast.File
}

// moduleFiles parses every Go file of every package of the module,
// whatever its build constraints.
func moduleFiles(t *testing.T) []sourceFile {
	t.Helper()
	pkgs := goList(t, "./...")
	if len(pkgs) < 20 {
		t.Fatalf("go list ./... found %d packages", len(pkgs))
	}
	root, err := os.Getwd() // a test runs in its package's directory: the module's root
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []sourceFile
	for _, p := range pkgs {
		for _, names := range [][]string{p.GoFiles, p.CgoFiles, p.IgnoredGoFiles, p.TestGoFiles, p.XTestGoFiles} {
			for _, name := range names {
				path := filepath.Join(p.Dir, name)
				f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
				if err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(root, path)
				files = append(files, sourceFile{pkg: p.ImportPath, rel: filepath.ToSlash(rel),
					test: strings.HasSuffix(name, "_test.go"), ast: f})
			}
		}
	}
	return files
}

// match reports whether import path p is matched by one of patterns.
func match(p string, patterns []string) bool {
	for _, pat := range patterns {
		if base, ok := strings.CutSuffix(pat, "/..."); ok {
			if p == base || strings.HasPrefix(p, base+"/") {
				return true
			}
		} else if p == pat {
			return true
		}
	}
	return false
}

// TestImports checks importRules and the aliases on every file of the
// module.
func TestImports(t *testing.T) {
	files := moduleFiles(t)
	t.Run("rules", func(t *testing.T) { checkImportRules(t, files) })
	t.Run("aliases", func(t *testing.T) { checkAliases(t, files, packageNames(t)) })
}

func checkImportRules(t *testing.T, files []sourceFile) {
	for _, r := range importRules {
		used := map[string]bool{} // except entries that were needed
		held := 0                 // files the rule was checked on
		for _, f := range files {
			if (f.test && !r.tests) || !match(f.pkg, r.from) || match(f.pkg, r.notFrom) {
				continue
			}
			held++
			for _, imp := range f.ast.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !match(path, r.banned) || match(path, r.allowed) {
					continue
				}
				if pkg := strings.TrimPrefix(f.pkg, mod); r.except[pkg] != "" {
					used[pkg] = true
					continue
				}
				t.Errorf("%s imports %s: %s", f.rel, path, r.rule)
			}
		}
		if held == 0 {
			t.Errorf("rule %q holds no file: are its packages gone?", r.rule)
		}
		for pkg := range r.except {
			if !used[pkg] {
				t.Errorf("rule %q: the exception for %s is stale (it imports nothing the rule bans): delete it", r.rule, pkg)
			}
		}
	}
}

// checkAliases: no non-test file declares a type alias of another
// package's type (type X = pkg.Y, also of an instance pkg.Y[T]), nor an
// exported constant or variable that is another Berth package's (Name =
// pkg.Name), but for aliasAllowlist. (A constant that is a value of
// another package, as DefaultTimeout = time.Minute, names no concept
// twice.) names maps import paths to package names.
func checkAliases(t *testing.T, files []sourceFile, names map[string]string) {
	found := map[string]bool{}
	for _, f := range files {
		if f.test {
			continue
		}
		imported := map[string]string{} // local name -> import path
		for _, imp := range f.ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := names[path]
			if name == "" { // imported by a file another platform builds only
				name = path[strings.LastIndex(path, "/")+1:]
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imported[name] = path
		}
		// qualified is the import path of the package of e when e is
		// pkg.Name or pkg.Name[T...], and e as written.
		qualified := func(e ast.Expr) (path, written string) {
			switch x := e.(type) {
			case *ast.IndexExpr:
				e = x.X
			case *ast.IndexListExpr:
				e = x.X
			}
			if sel, ok := e.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && imported[id.Name] != "" {
					return imported[id.Name], id.Name + "." + sel.Sel.Name
				}
			}
			return "", ""
		}
		report := func(name, decl string) {
			key := f.rel + ": " + name
			found[key] = true
			if !aliasAllowlist[key] {
				t.Errorf("%s: %s: a name lives where it is owned and is imported from there (STYLE.md 13)", key, decl)
			}
		}
		for _, d := range f.ast.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if path, written := qualified(s.Type); path != "" && s.Assign.IsValid() {
						report(s.Name.Name, "type "+s.Name.Name+" = "+written)
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if !n.IsExported() || i >= len(s.Values) {
							continue
						}
						if path, written := qualified(s.Values[i]); strings.HasPrefix(path, mod) {
							report(n.Name, g.Tok.String()+" "+n.Name+" = "+written)
						}
					}
				}
			}
		}
	}
	var stale []string
	for key := range aliasAllowlist {
		if !found[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	for _, key := range stale {
		t.Errorf("aliasAllowlist: %s is no longer an alias: delete its line", key)
	}
}

// packageNames maps the import path of every package the module's
// non-test files import to its package name (which the last element of
// the path need not be: gopkg.in/yaml.v3 is yaml).
func packageNames(t *testing.T) map[string]string {
	t.Helper()
	names := map[string]string{}
	for _, p := range goList(t, "-deps", "./...") {
		names[p.ImportPath] = p.Name
	}
	return names
}

package engine

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine knows nothing of the database or of the rest of Berth: no
// file of the package, tests included, imports a PostgreSQL driver or a
// Berth package (the ledger imports the engine, never the reverse), but
// for the leaves internal/uuid and internal/fault, which import nothing of
// Berth's.
func TestImportsNoDatabase(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/berthd/berth/internal/uuid" || path == "github.com/berthd/berth/internal/fault" {
				continue
			}
			if strings.HasPrefix(path, "github.com/berthd/berth") || strings.Contains(path, "pgx") ||
				strings.Contains(path, "pgconn") || strings.HasPrefix(path, "database/") {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}

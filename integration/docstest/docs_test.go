package docstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// root is the module's root, from this package's directory.
const root = "../.."

// docAddr is the address the documents use for berthd (its default
// --listen); the runner puts its own server's address in its place.
const docAddr = "127.0.0.1:8778"

// errorBodyRE finds an error in Placement's format in a command's output.
var errorBodyRE = regexp.MustCompile(`\{\s*"errors"\s*:\s*\[`)

// TestDocs runs the examples of README.md and docs/*.md as written, each
// file in order against a berthd process of its own (its defaults) on a
// fresh database seeded with `berth demo`, and compares what each command
// prints with what the document shows (see doc.go and docs/examples.md
// for the convention). Files run in parallel; the blocks a document marks
// no-run are listed with their reasons (go test -v).
func TestDocs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	tools := buildTools(t)
	for _, path := range files {
		name, _ := filepath.Rel(root, path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := parseDocument(name, string(raw))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range doc.skipped {
				t.Logf("%s:%d: not run: %s", name, s.line, s.reason)
			}
			if len(doc.steps) > 0 {
				runDocument(t, doc, tools)
			}
		})
	}
}

// runDocument runs a document's steps in order against a berthd of its
// own, in one bash session whose working directory holds bin/ (berth and
// berthd) and the files the document writes.
func runDocument(t *testing.T, doc *document, tools string) {
	base := startBerthd(t, filepath.Join(tools, "berthd"))
	addr := strings.TrimPrefix(base, "http://")
	work := t.TempDir()
	if err := os.Symlink(tools, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	sh := startShell(t, work, []string{
		"PATH=" + tools + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + work,
		"TMPDIR=" + t.TempDir(),
		"LANG=C.UTF-8",
		"BERTH_URL=" + base,
	})
	if !doc.seedsDemo() {
		if r, err := sh.run("berth demo\n"); err != nil || r.status != 0 {
			t.Fatalf("berth demo: %v %s", err, r.output)
		}
	}
	toServer := strings.NewReplacer(docAddr, addr, "localhost:8778", addr)
	for _, st := range doc.steps {
		if st.file != "" {
			if err := os.WriteFile(filepath.Join(work, st.file), []byte(st.body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r, err := sh.run(toServer.Replace(st.script))
		if err != nil {
			t.Fatalf("%s:%d: %s%v", doc.path, st.line, st.script, err)
		}
		got := strings.ReplaceAll(r.output, addr, docAddr)
		switch {
		case st.shown:
			if !outputMatches(got, st.want) {
				t.Errorf("%s:%d: %s\nprinted:\n%s\nthe document shows (line %d):\n%s", doc.path, st.line, st.script, got, st.wantLine, st.want)
			}
		case len(r.failures) > 0 || r.status != 0:
			t.Errorf("%s:%d: %s\nfailed (exit %d): %s\nprinted:\n%s", doc.path, st.line, st.script, r.status, strings.Join(r.failures, "; "), got)
		case errorBodyRE.MatchString(got):
			t.Errorf("%s:%d: %s\nanswered an error the document does not show:\n%s", doc.path, st.line, st.script, got)
		}
	}
}

// buildTools builds berth and berthd into a directory and returns it.
func buildTools(t *testing.T) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	dir := t.TempDir()
	for _, name := range []string{"berth", "berthd"} {
		cmd := exec.Command(goTool, "build", "-o", filepath.Join(dir, name), "github.com/berthd/berth/cmd/"+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return dir
}

package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// docSession is one fenced block of a document: the commands ("$ berth
// ..." lines) and the output shown after each.
type docCommand struct {
	line string // the command line, without "$ "
	want string // the lines shown after it, up to the next "$ "
}

// docSessionBlock returns the commands of the first fenced block after the
// heading in doc whose lines begin with "$ ".
func docSessionBlock(t *testing.T, path, heading string) []docCommand {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("%s: no %q", path, heading)
	}
	doc = doc[i:]
	start := strings.Index(doc, "```")
	doc = doc[start+3:]
	doc = doc[strings.Index(doc, "\n")+1:]
	block := doc[:strings.Index(doc, "```")]
	var cmds []docCommand
	for _, l := range strings.SplitAfter(block, "\n") {
		if strings.HasPrefix(l, "$ ") {
			cmds = append(cmds, docCommand{line: strings.TrimSpace(l[2:])})
			continue
		}
		if len(cmds) > 0 {
			cmds[len(cmds)-1].want += l
		}
	}
	return cmds
}

// TestDemoSession runs, against a fresh berthd, the first session block
// of docs/cli.md: `berth demo` seeds the cloud, and every command must
// print exactly what the document shows ("..." in a document stands for
// output left out). integration/docstest runs every example of every
// document (the README's session and claim among them); this one runs in
// this package's own tests, and checks that a second `berth demo` refuses.
func TestDemoSession(t *testing.T) {
	for _, doc := range []struct{ path, heading string }{
		{"../../docs/cli.md", "## A session"},
	} {
		t.Run(doc.path, func(t *testing.T) {
			base := startBerthd(t)
			env := map[string]string{"BERTH_URL": base}
			cmds := docSessionBlock(t, doc.path, doc.heading)
			if len(cmds) < 4 || cmds[1].line != "berth demo" {
				t.Fatalf("%s: the session must start with export and berth demo: %q", doc.path, cmds)
			}
			lastCode := 0
			for _, c := range cmds {
				switch {
				case strings.HasPrefix(c.line, "export "):
					continue
				case c.line == "echo $?":
					if got := strings.TrimSpace(c.want); got != strconv.Itoa(lastCode) {
						t.Errorf("echo $?: %d, the document shows %s", lastCode, got)
					}
					continue
				case !strings.HasPrefix(c.line, "berth "):
					t.Fatalf("%s: a command this test cannot run: %q", doc.path, c.line)
				}
				args := strings.Fields(strings.TrimPrefix(c.line, "berth "))
				out, errs, code := run(t, env, "", args...)
				lastCode = code
				if !docOutputMatches(out+errs, c.want) {
					t.Errorf("$ %s\ngot:\n%s\nthe document shows:\n%s", c.line, out+errs, c.want)
				}
			}
			if _, errs, code := run(t, env, "", "demo"); code == 0 || !strings.Contains(errs, "already there") {
				t.Errorf("berth demo twice: exit %d: %s", code, errs)
			}
		})
	}
}

// docOutputMatches reports whether got is what a document shows as want:
// the same lines, where a line "..." in want stands for any lines.
func docOutputMatches(got, want string) bool {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	w := strings.Split(strings.TrimRight(want, "\n"), "\n")
	var match func(gi, wi int) bool
	match = func(gi, wi int) bool {
		if wi == len(w) {
			return gi == len(g)
		}
		if w[wi] == "..." {
			for k := gi; k <= len(g); k++ {
				if match(k, wi+1) {
					return true
				}
			}
			return false
		}
		return gi < len(g) && g[gi] == w[wi] && match(gi+1, wi+1)
	}
	return match(0, 0)
}

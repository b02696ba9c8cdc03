package cli

import (
	"encoding/json"
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

// TestDemoSession runs, each against a fresh berthd, the first session
// block of docs/cli.md and the README's short session: `berth demo` seeds
// the cloud, and every command must print exactly what the document shows
// ("..." in a document stands for output left out).
func TestDemoSession(t *testing.T) {
	for _, doc := range []struct{ path, heading string }{
		{"../../docs/cli.md", "## A session"},
		{"../../README.md", "A short session"},
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

// TestREADMEClaimExample posts the README's first POST /claims example,
// as written, to a fresh berthd seeded by `berth demo`: it must claim on
// compute-2, as the README says.
func TestREADMEClaimExample(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "c -X POST 127.0.0.1:8778/claims -d '")
	if i < 0 {
		t.Fatal("README: no POST /claims example")
	}
	body := doc[i+len("c -X POST 127.0.0.1:8778/claims -d '"):]
	body = body[:strings.Index(body, "'")]
	base := startBerthd(t)
	if out, errs, code := run(t, map[string]string{"BERTH_URL": base}, "", "demo"); code != 0 {
		t.Fatalf("berth demo: exit %d: %s%s", code, out, errs)
	}
	c := NewClient(base, "admin", 0)
	var ans struct {
		RootName string `json:"root_provider_name"`
		Steps    []any  `json:"steps"`
	}
	raw2, err := c.JSON(t.Context(), "POST", "/claims", json.RawMessage(body), &ans)
	if err != nil || ans.RootName != "compute-2" {
		t.Fatalf("the README's claim: %v, %s", err, raw2)
	}
	t.Logf("%s", raw2)
}

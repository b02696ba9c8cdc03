package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/client"
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
		{"../../../docs/cli.md", "## A session"},
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
	raw, err := os.ReadFile("../../../README.md")
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
	readmeClaimSequence(t, c, doc[i:])
}

// readmeCommand matches one "c ..." command of the README's claims block:
// its method (none: GET), path and body (-d '...', over several lines).
var readmeCommand = regexp.MustCompile(`(?m)^(?:\$ )?c (?:-X (\w+) )?127\.0\.0\.1:8778(\S+)(?:(?: *\\\n\s*| +)-d '([^']*)')?`)

// readmeClaimSequence runs, in order, the commands that follow the
// README's first claim (doc starts with that claim) up to the paragraph
// on the plain Placement path, and
// checks what the README's comments say of each: the reschedule redoes
// the claim's request (issue 27), a body field overrides it, the move
// too, and a lease is provisional until confirmed.
func readmeClaimSequence(t *testing.T, c *Client, doc string) {
	t.Helper()
	block := doc[:strings.Index(doc, "The plain Placement path")]
	cmds := readmeCommand.FindAllStringSubmatch(block, -1)[1:] // the claim itself ran
	type want struct {
		status int
		code   string // an error's code
		check  func(ans map[string]any) bool
	}
	root := func(name string) func(map[string]any) bool {
		return func(a map[string]any) bool { return a["root_provider_name"] == name }
	}
	wants := []want{
		{409, "berth.no_valid_host", nil},
		{200, "", func(a map[string]any) bool {
			r, _ := a["reused"].(map[string]any)
			return root("compute-1")(a) && r["from"] == "claim" &&
				fmt.Sprint(r["fields"]) == "[resources required name properties]"
		}},
		{200, "", root("compute-2")},
		{200, "", nil},
		{200, "", nil},
		{200, "", func(a map[string]any) bool { return a["state"] == "provisional" && a["lease_expires_at"] != nil }},
		{200, "", func(a map[string]any) bool { return a["state"] == "permanent" && a["lease_expires_at"] == nil }},
		{200, "", nil},
	}
	if len(cmds) != len(wants) {
		t.Fatalf("the README's claims block has %d commands after the claim, this test knows %d", len(cmds), len(wants))
	}
	for i, m := range cmds {
		method, path := m[1], m[2]
		if method == "" {
			method = "GET"
		}
		var in any
		if m[3] != "" {
			in = json.RawMessage(m[3])
		}
		var ans map[string]any
		raw, err := c.JSON(t.Context(), method, path, in, &ans)
		status, code := 200, ""
		var ae *client.Error
		if errors.As(err, &ae) {
			status, code = ae.Status, ae.Code()
		} else if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		w := wants[i]
		if status != w.status || code != w.code || (w.check != nil && !w.check(ans)) {
			t.Fatalf("the README's %s %s: %d %s %s; want %d %s", method, path, status, code, raw, w.status, w.code)
		}
	}
}

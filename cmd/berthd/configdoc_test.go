package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var updateConfigurationDoc = flag.Bool("update", false, "rewrite docs/configuration.md's flag reference from the flag definitions")

// configurationDoc is the page whose flag reference TestConfigurationDoc
// keeps; the lines between its markers are generated, the rest is
// written by hand.
const (
	configurationDoc   = "../../docs/configuration.md"
	configurationBegin = "<!-- BEGIN FLAGS: generated from cmd/berthd/flags.go; go test ./cmd/berthd -run TestConfigurationDoc -update -->"
	configurationEnd   = "<!-- END FLAGS -->"
)

// TestConfigurationDoc: docs/configuration.md's flag reference is what
// berthd's flag definitions say (options() and the flag set's defaults,
// as `berthd --help` prints them), and every page its usage texts name
// exists with the heading they link to. With -update it rewrites the
// reference instead.
func TestConfigurationDoc(t *testing.T) {
	raw, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	head, rest, ok1 := strings.Cut(page, configurationBegin+"\n")
	old, tail, ok2 := strings.Cut(rest, configurationEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s: no %q ... %q block", configurationDoc, configurationBegin, configurationEnd)
	}
	want := renderFlagReference(t)
	if old == want {
		return
	}
	if *updateConfigurationDoc {
		if err := os.WriteFile(configurationDoc, []byte(head+configurationBegin+"\n"+want+configurationEnd+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", configurationDoc)
		return
	}
	t.Errorf("%s's flag reference differs from the flag definitions; run\n"+
		"\tgo test ./cmd/berthd -run TestConfigurationDoc -update\n%s", configurationDoc, lineDiff(old, want))
}

// renderFlagReference renders options() as a Markdown table, between
// blank lines: flag and argument, environment variables, default (the
// flag set's, unless the option hides it) and the usage text, in the
// order of `berthd --help`.
// References to docs/*.md in a usage text become links, which must
// resolve.
func renderFlagReference(t *testing.T) string {
	t.Helper()
	cfg, _, err := loadConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	fs := newFlagSet(&cfg)
	var b strings.Builder
	b.WriteString("\n| Flag | Environment | Default | Meaning |\n| --- | --- | --- | --- |\n")
	for _, o := range options() {
		f := fs.Lookup(o.flag)
		if f == nil {
			t.Fatalf("option --%s has no flag", o.flag)
		}
		name := "--" + o.flag
		if o.arg != "" {
			name += " " + o.arg
		}
		envs := make([]string, len(o.envs))
		for i, e := range o.envs {
			envs[i] = "`$" + e + "`"
		}
		def := "—"
		if !o.noDefault {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, strings.Join(envs, ", "), def, markdownUsage(t, o.help))
	}
	b.WriteString("\n")
	return b.String()
}

// docRefRE finds a reference to a page of docs/ in a usage text.
var docRefRE = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(#[a-z0-9-]+)?`)

// markdownUsage is a usage text as one table cell: its lines joined,
// Markdown's special characters escaped (outside `code`), references to
// docs/*.md made links, each checked to exist.
func markdownUsage(t *testing.T, help string) string {
	t.Helper()
	text := strings.Join(strings.Split(help, "\n"), " ")
	parts := strings.Split(text, "`")
	for i := 0; i < len(parts); i += 2 { // outside backquotes
		parts[i] = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", `\<`, ">", `\>`, "*", `\*`).Replace(parts[i])
		parts[i] = docRefRE.ReplaceAllStringFunc(parts[i], func(ref string) string {
			m := docRefRE.FindStringSubmatch(ref)
			checkDocLink(t, m[1], strings.TrimPrefix(m[2], "#"))
			return "[" + ref + "](" + m[1] + m[2] + ")"
		})
	}
	return strings.Join(parts, "`")
}

// checkDocLink fails the test unless docs/page exists and, for an
// anchor, has a heading whose GitHub anchor it is.
func checkDocLink(t *testing.T, page, anchor string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
	if err != nil {
		t.Errorf("a usage text names docs/%s: %v", page, err)
		return
	}
	if anchor == "" {
		return
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") && headingAnchor(line) == anchor {
			return
		}
	}
	t.Errorf("a usage text links docs/%s#%s: no such heading", page, anchor)
}

// headingAnchor is the anchor GitHub gives a Markdown heading line:
// lower case, punctuation but hyphens and underscores dropped, spaces
// made hyphens.
func headingAnchor(line string) string {
	text := strings.TrimSpace(strings.TrimLeft(line, "#"))
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineDiff lists the lines of want that got lacks (+) and those of got
// that want lacks (-), in order: enough to see which rows drifted.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	in := func(lines []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	inG, inW := in(g), in(w)
	var b strings.Builder
	for _, l := range g {
		if !inW[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range w {
		if !inG[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

package docstest

import (
	"strings"
	"testing"
)

// The runner's reading of Markdown and its comparison of outputs, on
// small documents: what it must run, what it must skip, what it must
// refuse, and that a wildcard stands for no more than it says.

func TestParseDocument(t *testing.T) {
	md := strings.Join([]string{
		"# Title",
		"```sh",
		`c() { curl -s "$@"; }`,
		"```",
		"<!-- no-run: needs Keystone -->",
		"```sh",
		"openstack token issue",
		"```",
		"<!-- file: p.json -->",
		"```json",
		`{"name": "p"}`,
		"```",
		"1. A list item:",
		"   ```console",
		"   $ berth policy create p.json \\",
		"       -o json",
		"   {\"name\": \"p\"}",
		"   $ cat <<'EOF' > x",
		"   it's",
		"   EOF",
		"   $ echo 'a",
		"   b' # it's a comment",
		"   a",
		"   b",
		"   ```",
		"```sh",
		"c 127.0.0.1:8778/x",
		"```",
		"",
		"<!-- output -->",
		"```json",
		"{}",
		"```",
		"```json",
		`{"not": "run"}`,
		"```",
	}, "\n")
	doc, err := parseDocument("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	want := []step{
		{line: 3, script: "c() { curl -s \"$@\"; }\n"},
		{line: 10, file: "p.json", body: "{\"name\": \"p\"}\n"},
		{line: 15, script: "berth policy create p.json \\\n    -o json\n", want: `{"name": "p"}`, shown: true, wantLine: 17},
		{line: 18, script: "cat <<'EOF' > x\nit's\nEOF\n", wantLine: 21},
		{line: 21, script: "echo 'a\nb' # it's a comment\n", want: "a\nb", shown: true, wantLine: 23},
		{line: 27, script: "c 127.0.0.1:8778/x\n", want: "{}", shown: true, wantLine: 31},
	}
	if len(doc.steps) != len(want) {
		t.Fatalf("%d steps, want %d: %+v", len(doc.steps), len(want), doc.steps)
	}
	for i := range want {
		if doc.steps[i] != want[i] {
			t.Errorf("step %d:\n got %+v\nwant %+v", i, doc.steps[i], want[i])
		}
	}
	if len(doc.skipped) != 1 || doc.skipped[0] != (skippedBlock{6, "needs Keystone"}) {
		t.Errorf("skipped %+v", doc.skipped)
	}
	if doc.seedsDemo() {
		t.Error("seedsDemo without berth demo")
	}
}

func TestParseDocumentRefuses(t *testing.T) {
	for name, md := range map[string]string{
		"no-run without a reason": "<!-- no-run -->\n```sh\nx\n```\n",
		"unknown directive":       "<!-- output: x -->\n```json\n{}\n```\n",
		"output first":            "<!-- output -->\n```json\n{}\n```\n",
		"output twice":            "```console\n$ x\ny\n```\n<!-- output -->\n```\nz\n```\n",
		"untagged transcript":     "```\n$ berth providers\n```\n",
		"text before a prompt":    "```console\nhello\n$ x\n```\n",
		"open quote":              "```console\n$ echo 'x\n```\n",
		"open here-document":      "```console\n$ cat <<EOF\nx\n```\n",
		"unclosed block":          "```sh\nx\n",
		"file with a path":        "<!-- file: ../x -->\n```\nx\n```\n",
	} {
		if _, err := parseDocument("x.md", md); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSeedsDemo(t *testing.T) {
	for md, want := range map[string]bool{
		"```console\n$ berth demo\n```\n":         true,
		"```sh\nbin/berth demo\n```\n":            true,
		"```sh\nberth demonstrate\n```\n":         false,
		"```json\n{\"x\": \"berth demo\"}\n```\n": false,
	} {
		doc, err := parseDocument("x.md", md)
		if err != nil {
			t.Fatal(err)
		}
		if doc.seedsDemo() != want {
			t.Errorf("%q: seedsDemo %v", md, !want)
		}
	}
}

func TestOutputMatches(t *testing.T) {
	for _, c := range []struct {
		got, want string
		ok        bool
	}{
		{"a\nb  \n\n", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"a\nb", "a", false},
		{"a\nx\ny\nb", "a\n...\nb", true},
		{"a\nb", "a\n...\nb", true},
		{"a\nb", "a\n…", true},
		{"a\nc", "a\n...\nb", false},
		{"migration 52b8-x:", "migration ...:", true},
		{"migration 52b8-x", "migration ...:", false},
		{"ab", "a...b...c", false},
		{"aba", "ab...ba", false},
		// JSON: layout and order do not matter, values do.
		{`{"b":1,"a":[1,2]}`, "{\n  \"a\": [1, 2],\n  \"b\": 1.0\n}", true},
		{`{"b":1,"a":[1,2]}`, `{"a": [2, 1], "b": 1}`, false},
		{`{"b":1,"a":[1,2]}`, `{"a": [1, 2]}`, false},
		{`{"b":1,"a":[1,2]}`, `{"a": [1, 2], ...}`, true},
		{`{"b":1,"a":[1,2]}`, `{"a": [1, ...], "b": ...}`, true},
		{`{"b":1,"a":[1,2]}`, `{"a": [...], "b": "..."}`, true},
		{`{"a":[1,2]}`, `{"a": [..., 3]}`, false},
		{`{"a":"req-1234"}`, `{"a": "req-..."}`, true},
		{`{"a":"rex-1234"}`, `{"a": "req-..."}`, false},
		{`{"a":5}`, `{"a": "req-..."}`, false},
		{`{"a":"..."}`, `{"a": "…"}`, true},
		{`{"a":null,"b":true}`, `{"a": null, "b": true}`, true},
		{`{"a":null,"b":true}`, `{"a": null, "b": false}`, false},
		{`{"a":1} {"a":1}`, `{"a": 1}`, false},
		{`not json`, `{"a": 1}`, false},
		{`{"a": "x..."}`, `{"a": "x..."}`, true},
	} {
		if outputMatches(c.got, c.want) != c.ok {
			t.Errorf("outputMatches(%q, %q) = %v", c.got, c.want, !c.ok)
		}
	}
}

func TestComplete(t *testing.T) {
	for cmd, want := range map[string]bool{
		"echo hi":                    true,
		"echo 'hi":                   false,
		"echo \"it's\"":              true,
		"echo $'a\\'b'":              true,
		"echo $'a\\'b":               false,
		"echo a \\":                  false,
		"echo a \\\n  b":             true,
		"echo a # it's":              true,
		"echo a#'b'":                 true,
		"cat <<'EOF'\nx":             false,
		"cat <<'EOF'\nx\nEOF":        true,
		"cat <<-EOF > f\n\tx\n\tEOF": true,
		"cat <<< 'x'":                true,
		"curl -d '{\n  \"a\": 1}'":   true,
		"printf 'a' | berth x -":     true,
		"printf 'a' |":               false,
		"printf 'a' |\n  berth x -":  true,
		"true &&  # then":            false,
		"echo '|'":                   true,
		"echo \"a\\\"\"":             true,
		"c -d \"{\\\"a\\\": \\\"b":   false,
	} {
		if got := complete(cmd); got != want {
			t.Errorf("complete(%q) = %v", cmd, got)
		}
	}
}

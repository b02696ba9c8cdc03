package cli

import (
	"context"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

// run runs berth in process with the environment env (nil: empty) and
// returns its output and exit status.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb strings.Builder
	code = Main(context.Background(), args, IO{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] },
	})
	return out.String(), errb.String(), code
}

func TestParseResources(t *testing.T) {
	got, err := ParseResources("VCPU:4, MEMORY_MB=16384,disk_gb:10")
	want := map[string]int64{"VCPU": 4, "MEMORY_MB": 16384, "DISK_GB": 10}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseResources = %v, %v", got, err)
	}
	if s := FormatResources(got); s != "DISK_GB:10,MEMORY_MB:16384,VCPU:4" {
		t.Errorf("FormatResources = %q", s)
	}
	for _, bad := range []string{"", "VCPU", "VCPU:0", "VCPU:-1", "VCPU:x", ":4", "VCPU:1,VCPU:2"} {
		if _, err := ParseResources(bad); err == nil {
			t.Errorf("ParseResources(%q) accepted", bad)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a := fs.String("a", "", "")
	b := fs.Bool("b", false, "")
	pos, err := parseInterspersed(fs, []string{"NAME", "-a", "1", "FILE", "-b", "--", "-c", "x"})
	if err != nil || *a != "1" || !*b || !reflect.DeepEqual(pos, []string{"NAME", "FILE", "-c", "x"}) {
		t.Errorf("pos %q a %q b %v err %v", pos, *a, *b, err)
	}
	if _, err := parseInterspersed(fs, []string{"x", "-nope"}); err == nil {
		t.Error("unknown flag accepted")
	}
}

func TestClaimBody(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var c claimFlags
	c.register(fs, true)
	err := fs.Parse([]string{"--resources", "VCPU:2", "--required", "HW_CPU_X86_AVX2,!CUSTOM_SLOW",
		"--member-of", "in:a,b", "--exclude", "cn1,cn2", "--exclude", "cn3", "--property", "group=web",
		"--property", "n=3", "--key", "rack=0.5:2", "--system-key", "#RAM=0.2", "--name", "web-1",
		"--policy", "spread", "--target", "cn9", "--alternates", "0", "--consumer", "c0ffee00-0000-4000-8000-000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.body(true, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"consumer_uuid": "c0ffee00-0000-4000-8000-000000000000",
		"project_id":    "berth-explain", "user_id": "berth-explain",
		"resources":         map[string]int64{"VCPU": 2},
		"required":          []string{"HW_CPU_X86_AVX2,!CUSTOM_SLOW"},
		"member_of":         []string{"in:a,b"},
		"exclude_providers": []string{"cn1", "cn2", "cn3"},
		"properties":        map[string]any{"group": "web", "n": float64(3)},
		"keys": []map[string]any{
			{"name": "rack", "value": 0.5, "weight": 2.0},
			{"name": "#RAM", "value": 0.2, "system": true},
		},
		"name": "web-1", "policy": "spread", "target": "cn9", "alternates": 0,
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("body\n%#v\nwant\n%#v", b, want)
	}
	if _, err := c.body(true, true); err == nil {
		t.Error("a real claim without --project and --user accepted")
	}
	var empty claimFlags
	empty.generation, empty.alternates = -1, -1
	if _, err := empty.body(true, false); err == nil {
		t.Error("a claim without --resources accepted")
	}
	if b, err := empty.body(false, false); err != nil || len(b["consumer_uuid"].(string)) != 36 {
		t.Errorf("body without resources = %v, %v", b, err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{nil, ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"capacity"}, "--resources is required"},
		{[]string{"capacity", "--resources", "VCPU:zero"}, "amount of VCPU must be a positive integer"},
		{[]string{"capacity", "--resources", "VCPU:1", "extra"}, "unexpected arguments"},
		{[]string{"capacity", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"-o", "yaml", "capacity", "--resources", "VCPU:1"}, "-o must be table or json"},
		{[]string{"claim", "--resources", "VCPU:1"}, "--project and --user are required"},
		{[]string{"scriptlet", "set", "onlyname"}, "missing FILE"},
		{[]string{"scriptlet"}, "Starlark scriptlets"},
		{[]string{"policy", "frob"}, `unknown subcommand "frob"`},
		{[]string{"usage", "--user", "u"}, "need --project"},
		{[]string{"move", "c"}, "--migration is required"},
		{[]string{"bench"}, ""},
	} {
		_, stderr, code := run(t, nil, "", tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("berth %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Every command answers --help with its usage and an example, exit 0,
// without a server.
func TestEveryCommandHasHelpWithExample(t *testing.T) {
	for _, c := range commands() {
		args := append(strings.Fields(c.name), "--help")
		stdout, stderr, code := run(t, nil, "", args...)
		if code != 0 || !strings.Contains(stdout, "Example") || !strings.Contains(stdout, "berth "+c.name) {
			t.Errorf("berth %s --help: exit %d, stdout %q, stderr %q", c.name, code, stdout, stderr)
		}
	}
	for g := range groups {
		stdout, _, code := run(t, nil, "", g, "--help")
		if code != 0 || !strings.Contains(stdout, "Example") {
			t.Errorf("berth %s --help: exit %d, %q", g, code, stdout)
		}
	}
	stdout, _, code := run(t, nil, "", "--help")
	if code != 0 || !strings.Contains(stdout, "Example") {
		t.Errorf("berth --help: exit %d", code)
	}
	stdout, _, code = run(t, nil, "", "help", "capacity")
	if code != 0 || !strings.Contains(stdout, "Usage: berth capacity") {
		t.Errorf("berth help capacity: exit %d, %q", code, stdout)
	}
}

// TestShadowGroupsHaveTheirOwnUsage: "berth scriptlet shadow" and "berth
// policy shadow", listed by berth --help, are groups of their own:
// without a verb they say one is missing and list theirs (exit 2), an
// unknown verb is named, and --help prints their usage (exit 0), not the
// general help.
func TestShadowGroupsHaveTheirOwnUsage(t *testing.T) {
	for _, group := range []string{"scriptlet shadow", "policy shadow"} {
		args := strings.Fields(group)
		verbs := []string{"berth " + group + " start NAME", "berth " + group + " show NAME", "berth " + group + " stop NAME"}

		_, stderr, code := run(t, nil, "", args...)
		if code != 2 || !strings.Contains(stderr, "berth "+group+": missing subcommand: start, show or stop") {
			t.Errorf("berth %s: exit %d\n%s", group, code, stderr)
		}
		for _, v := range verbs {
			if !strings.Contains(stderr, v) {
				t.Errorf("berth %s: usage lacks %q:\n%s", group, v, stderr)
			}
		}
		if strings.Contains(stderr, "set NAME") || strings.Contains(stderr, "unknown subcommand") {
			t.Errorf("berth %s: not its own usage:\n%s", group, stderr)
		}

		_, stderr, code = run(t, nil, "", append(args, "frob")...)
		if code != 2 || !strings.Contains(stderr, `berth `+group+`: unknown subcommand "frob"`) || !strings.Contains(stderr, verbs[1]) {
			t.Errorf("berth %s frob: exit %d\n%s", group, code, stderr)
		}

		for _, help := range []string{"--help", "-h", "help"} {
			stdout, stderr, code := run(t, nil, "", append(args, help)...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "berth "+group+": ") || strings.Contains(stdout, "Global flags") {
				t.Errorf("berth %s %s: exit %d\nstdout %s\nstderr %s", group, help, code, stdout, stderr)
			}
			for _, v := range verbs {
				if !strings.Contains(stdout, v) {
					t.Errorf("berth %s %s: lacks %q:\n%s", group, help, v, stdout)
				}
			}
		}
	}
}

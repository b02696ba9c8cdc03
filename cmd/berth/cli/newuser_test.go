package cli

import (
	"strings"
	"testing"
)

// TestEndToEndNewUser covers what a new user tripped on: --url in curl's
// HOST:PORT form, the exit status of a lookup that finds nothing, a
// provider name with control characters, and config get of a key that
// does not exist.
func TestEndToEndNewUser(t *testing.T) {
	base := startBerthd(t)
	hostPort := strings.TrimPrefix(base, "http://")

	// HOST:PORT, as in the README's curl line; an empty cloud: exit 1.
	for _, env := range []map[string]string{{"BERTH_URL": hostPort}, {}} {
		args := []string{"providers"}
		if len(env) == 0 {
			args = []string{"--url", hostPort, "providers"}
		}
		out, errs, code := run(t, env, "", args...)
		if code != exitNothing || out != "No resource providers.\n" {
			t.Errorf("berth %q (env %v) on an empty cloud: exit %d, %q %q", args, env, code, out, errs)
		}
	}
	out, errs, code := run(t, nil, "", "-o", "json", "--url", hostPort, "providers")
	if code != exitNothing || !strings.Contains(out, `"resource_providers": []`) {
		t.Errorf("providers -o json on an empty cloud: exit %d, %q %q", code, out, errs)
	}
	for _, bad := range []string{"ftp://x", "http://", "://x"} {
		if _, errs, code := run(t, nil, "", "--url", bad, "providers"); code != exitUsage || !strings.Contains(errs, "HOST:PORT") {
			t.Errorf("--url %q: exit %d, %q", bad, code, errs)
		}
	}

	// A name with an escape sequence, a newline and a right-to-left
	// override is shown escaped, in the tree and in an error.
	api(t, base, "POST", "/resource_providers", `{"name": "evil\u001b[2J\nname\u202e", "uuid": "`+e2eRoot+`"}`, 200)
	api(t, base, "PUT", "/resource_providers/"+e2eRoot+"/inventories",
		`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}`, 200)
	env := map[string]string{"BERTH_URL": hostPort}
	out, errs, code = run(t, env, "", "providers")
	if code != exitOK || !strings.Contains(out, `evil\x1b[2J\nname\u202e`) || strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("providers with a control character in a name: exit %d\n%q\n%q", code, out, errs)
	}
	_, errs, code = run(t, env, "", "providers", "state", "evil\x1b[2J")
	if code == exitOK || strings.Contains(errs, "\x1b") {
		t.Errorf("an error that repeats a name: exit %d, %q", code, errs)
	}

	// config get: an unknown key is a usage error naming the keys; a
	// known key that is not set finds nothing.
	_, errs, code = run(t, env, "", "config", "get", "nosuch")
	if code != exitUsage || !strings.Contains(errs, `unknown key "nosuch"`) ||
		!strings.Contains(errs, "scheduler.scriptlet.max_steps") {
		t.Errorf("config get nosuch: exit %d, %q", code, errs)
	}
	_, errs, code = run(t, env, "", "config", "get", "scheduler.scriptlet.max_steps")
	if code != exitNothing || !strings.Contains(errs, "is not set") {
		t.Errorf("config get of an unset key: exit %d, %q", code, errs)
	}
}

// TestPrintable: what a terminal acts on is escaped; the rest is kept.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"cn1":              "cn1",
		"évier 日本":         "évier 日本",
		"a\x1b[31mb":       `a\x1b[31mb`,
		"two\nlines\ttab":  `two\nlines\ttab`,
		"del\x7f c1\u0085": `del\x7f c1\u0085`,
		"rtl\u202eoff":     `rtl\u202eoff`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	var b strings.Builder
	terminalWriter{&b}.Write([]byte("line 1\n\tname \x1b]0;title\x07\n"))
	if got := b.String(); got != "line 1\n\tname \\x1b]0;title\\a\n" {
		t.Errorf("terminalWriter: %q", got)
	}
}

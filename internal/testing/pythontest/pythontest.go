package pythontest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// Python is the system interpreter: the one Debian's python3-placement
// runs on (a pyenv shim on PATH may be another version).
const Python = "/usr/bin/python3"

// Run runs script with Python, with in written to its standard input as
// JSON, and decodes its standard output, JSON, into out. Without Python
// the test is skipped, or fails when CI is set in the environment.
func Run(t testing.TB, script string, in, out any) {
	t.Helper()
	if _, err := os.Stat(Python); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed to check against Python (Debian: python3): %v", Python, err)
		}
		t.Skipf("%s not found: %v", Python, err)
	}
	input, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Python, "-c", script)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", Python, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%s printed no JSON: %v\n%s", Python, err, stdout)
	}
}

// Need checks that Python can import each module (a Debian python3-*
// package); without one the test is skipped, or fails when CI is set in
// the environment.
func Need(t testing.TB, modules ...string) {
	t.Helper()
	for _, m := range modules {
		if err := exec.Command(Python, "-c", "import "+m).Run(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("Python module %s is needed to check against Python: %v", m, err)
			}
			t.Skipf("Python module %s not importable: %v", m, err)
		}
	}
}

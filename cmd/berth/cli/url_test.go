package cli

import (
	"strings"
	"testing"
)

// TestURLWithoutScheme: --url and BERTH_URL take a bare host:port, as an
// http:// endpoint.
func TestURLWithoutScheme(t *testing.T) {
	_, url := newContractServer(t)
	hostPort := strings.TrimPrefix(url, "http://")
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{"BERTH_TOKEN": "tok"}, []string{"--url", hostPort, "capacity", "--resources", "VCPU:1"}},
		{map[string]string{"BERTH_URL": hostPort + "/", "BERTH_TOKEN": "tok"}, []string{"capacity", "--resources", "VCPU:1"}},
	} {
		out, stderr, code := run(t, tc.env, "", tc.args...)
		if code != 0 || !strings.Contains(out, "Total: 7 more of VCPU:1 fit.") {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q", tc.env, tc.args, code, out, stderr)
		}
	}
}

package uuid

import (
	"testing"

	"github.com/berthd/berth/internal/testing/pythontest"
)

// TestValidAsOslo: Valid is oslo's is_uuid_like (Placement's uuid format
// and member_of check) and Canonical is str(uuid.UUID(s)), for every
// spelling in a table of odd ones.
func TestValidAsOslo(t *testing.T) {
	pythontest.Need(t, "oslo_utils")
	const u = "7d2a6c1e-3b4f-4a5e-9c8d-0123456789ab"
	const h = "7d2a6c1e3b4f4a5e9c8d0123456789ab"
	in := []string{
		u, h, "7D2A6C1E-3B4F-4A5E-9C8D-0123456789AB", "{" + u + "}", "{" + h + "}", "{{" + h + "}}", "}" + h + "{",
		"urn:uuid:" + u, "urn:uuid:" + h, "uuid:" + u, "urn:" + u, "URN:UUID:" + u, "urn:urn:" + h, "uuurn:id:" + h,
		"7d2a6c1e-3b4f4a5e-9c8d-0123456789ab", "-" + h + "-", "7-d-2-a" + h[4:], "--" + u, "{-" + h + "-}", "-{" + h + "}-",
		"", "x", u[:35], u + "c", h + " ", " " + h, "0x" + h[2:], "+" + h[1:], h[:16] + "_" + h[17:], "7d2a6c1e-3b4f-4a5e-9c8d-0123456789ag",
		"{" + u, u + "}", "uuid:{" + h + "}", "{uuid:" + h + "}", "\u0663" + h[1:], "urn:uuid:{" + u + "}",
	}
	var want []struct {
		Valid     bool   `json:"valid"`
		Canonical string `json:"canonical"`
	}
	pythontest.Run(t, `
import json, sys, uuid
from oslo_utils import uuidutils
out = []
for s in json.load(sys.stdin):
    ok = uuidutils.is_uuid_like(s)
    out.append({'valid': ok, 'canonical': str(uuid.UUID(s)) if ok else ''})
json.dump(out, sys.stdout)
`, in, &want)
	if len(want) != len(in) {
		t.Fatalf("Python answered %d of %d", len(want), len(in))
	}
	for i, s := range in {
		c, ok := Canonical(s)
		if Valid(s) != want[i].Valid || ok != want[i].Valid || c != want[i].Canonical {
			t.Errorf("%q: Valid %v, Canonical %q %v; oslo %v, %q", s, Valid(s), c, ok, want[i].Valid, want[i].Canonical)
		}
	}
}

package wire

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/testing/pythontest"
)

// pyJSONBodies are bodies that reach each of Python's decoder errors, and
// a few it accepts.
var pyJSONBodies = []string{
	``, ` `, "\n\n  x", `x`, `nul`, `tru`, `fals`, `nulls`, `null`, `NaN`, `Infinity`, `-Infinity`, `-Inf`, `-`, `--1`,
	`{`, `[`, `{"a"`, `{"a":`, `{"a" 1}`, `{"a": 1`, `{"a": 1,}`, `{"a": 1 "b": 2}`, `{1: 2}`, `{'a': 1}`, `{"a": 1}}`,
	`[1,]`, `[1 2]`, `[1,,2]`, `[,]`, `[1]x`, `[1] [2]`, `{} {}`, `"abc`, `"a\`, `"a\x"`, `"a\u12"`, `"a\u12x4"`,
	`"\ud800"`, `"\ud800\udc00"`, `"\ud800\u12x4"`, `"\ud800\u"`, `"\ud800\udc0"`, `"\ud800x\udc00"`, `"\u00e9\u"`,
	"\"a\tb\"", "\"é\n\"", "\"\x1f\"", "\"\x7f\"", "\ufeff{}", "  \ufeff{}",
	`1.`, `1.e5`, `1e`, `1e+`, `1e+5`, `1E-5x`, `01`, `-01`, `0.5.5`, `.5`, `+1`, `1_000`, `0x10`,
	`{"name": "é☃", "x": [1, 2, {"y": tru}]}`, "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n  \"c\": 3\n}",
	`{"é": "☃☃☃" "x"}`, "[\"\U0001F600\" 1]", `{"a": "b"`, `{"a": {"b": {"c": [1, 2, [3, {"d": }]]}}}`,
	strings.Repeat("1", 4300), strings.Repeat("1", 4301), "-" + strings.Repeat("1", 4301), "[" + strings.Repeat("1", 5000) + ".5]",
	`{"resources": {"VCPU": 1}, "name": "x", "uuid": "5a000000-0000-4000-8000-000000000001"}`,
}

// TestPyJSONErrorMatchesPython decodes every body above, and random
// damage done to valid bodies (cut short, a byte dropped, doubled or
// replaced), with json.loads in the system's Python and with pyJSONError,
// and compares the error messages (or that both accept).
func TestPyJSONErrorMatchesPython(t *testing.T) {
	bodies := append([]string{}, pyJSONBodies...)
	valid := []string{
		`{"name": "é☃ x", "uuid": "5a000000-0000-4000-8000-000000000001", "parent_provider_uuid": null}`,
		`{"allocations": {"5a000000-0000-4000-8000-000000000001": {"resources": {"VCPU": 1, "MEMORY_MB": 512}}}, "project_id": "p", "user_id": "u", "consumer_generation": null}`,
		`[1, -2.5e-3, true, false, null, "a\"b\\c\u00e9\ud83d\ude00", {"": []}, [[], {}]]`,
		"{\n  \"inventories\": {\n    \"VCPU\": {\"total\": 8, \"allocation_ratio\": 16.0}\n  },\n  \"resource_provider_generation\": 0\n}",
	}
	r := rand.New(rand.NewSource(16))
	for i := 0; i < 600; i++ {
		v := []rune(valid[i%len(valid)])
		p := r.Intn(len(v))
		var d []rune
		switch i % 4 {
		case 0:
			d = v[:p]
		case 1:
			d = append(append([]rune{}, v[:p]...), v[p+1:]...)
		case 2:
			d = append(append(append([]rune{}, v[:p+1]...), v[p]), v[p+1:]...)
		default:
			d = append(append(append([]rune{}, v[:p]...), []rune(`"{}[],:\ 0e.-xn`)[r.Intn(15)]), v[p+1:]...)
		}
		bodies = append(bodies, string(d))
	}
	var want []string
	pythontest.Run(t, `
import json, sys
out = []
for body in json.load(sys.stdin):
    try:
        json.loads(body)
        out.append("")
    except ValueError as e:
        out.append(str(e))
print(json.dumps(out))
`, bodies, &want)
	refused := 0
	for _, w := range want {
		if w != "" {
			refused++
		}
	}
	if refused < len(bodies)/2 {
		t.Fatalf("python refused only %d of %d bodies", refused, len(bodies))
	}
	t.Logf("python refused %d of %d bodies", refused, len(bodies))
	for i, body := range bodies {
		got := ""
		if err := pyJSONError([]byte(body)); err != nil {
			got = err.Error()
		}
		if got != want[i] {
			t.Errorf("%.120q:\n got %q\nwant %q", body, got, want[i])
		}
	}
}

// FuzzPyJSONError: pyJSONError never panics, and refuses no body that
// encoding/json accepts (Python's decoder accepts a superset of JSON),
// save integers past Python's digit limit.
func FuzzPyJSONError(f *testing.F) {
	for _, b := range pyJSONBodies {
		if len(b) < 1000 {
			f.Add([]byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := pyJSONError(body)
		if err != nil && json.Valid(body) && !strings.Contains(err.Error(), "integer string conversion") {
			t.Fatalf("%q: valid JSON refused: %v", body, err)
		}
	})
}

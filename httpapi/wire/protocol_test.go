package wire

import (
	"fmt"
	"slices"
	"testing"

	"github.com/berthd/berth/internal/jsonschema"
)

func TestAcceptableOffers(t *testing.T) {
	offers := []string{"text/html", "application/json"}
	tests := []struct {
		accept string
		want   []string
	}{
		{"*/*", []string{"text/html", "application/json"}},
		{"application/*", []string{"application/json"}},
		{"text/plain, */*;q=0.1", []string{"text/html", "application/json"}},
		{"text/html, application/json;q=0.5", []string{"text/html", "application/json"}},
		{"*/*;q=0.5, application/json", []string{"application/json", "text/html"}},
		{"application/json;q=0", nil},
		{"application/json; charset=utf-8", nil},
		{"APPLICATION/JSON", []string{"application/json"}},
		{"text/plain", nil},
		{"text/*", []string{"text/html"}},
		{"application/json;q=0.5, text/html;q=0.5", []string{"text/html", "application/json"}},
		// webob takes an invalid header as accepting anything.
		{"garbage", []string{"text/html", "application/json"}},
		{"application/json;q=2", []string{"text/html", "application/json"}},
	}
	for _, tt := range tests {
		if got := AcceptableOffers(tt.accept, offers...); !slices.Equal(got, tt.want) {
			t.Errorf("AcceptableOffers(%q) = %q, want %q", tt.accept, got, tt.want)
		}
	}
}

func TestParseJSONPositions(t *testing.T) {
	for body, want := range map[string]string{
		"":                              "Expecting value: line 1 column 1 (char 0)",
		" ":                             "Expecting value: line 1 column 2 (char 1)",
		"\n\n":                          "Expecting value: line 3 column 1 (char 2)",
		`{"name": "CUSTOM_A"} trailing`: "Extra data: line 1 column 22 (char 21)",
		`{"name": "CUSTOM_B"}{"n": 1}`:  "Extra data: line 1 column 21 (char 20)",
		"{\"name\": \"Ü\"}\n  x":        "Extra data: line 2 column 3 (char 16)",
	} {
		if _, err := parseJSON([]byte(body)); err == nil || err.Error() != want {
			t.Errorf("parseJSON(%q): %v, want %q", body, err, want)
		}
	}
}

func TestPyFloatRepr(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1.0", 16: "16.0", 0: "0.0", 0.1: "0.1", 1.5: "1.5", 100000000.5: "100000000.5",
		1234567: "1234567.0", 1e15: "1000000000000000.0", 1e16: "1e+16", 1e20: "1e+20",
		3.40282e+38: "3.40282e+38", 0.0001: "0.0001", 0.00001: "1e-05", 2.5e-05: "2.5e-05",
		-1.5: "-1.5", 3.3333333: "3.3333333", 0.9999999: "0.9999999",
	} {
		if got := jsonschema.PyFloat(f); got != want {
			t.Errorf("PyFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestCheckQueryUTF8(t *testing.T) {
	for raw, want := range map[string]string{
		"name=cn%201":         "",
		"name=n%C3%BCmero":    "",
		"name=n%FCmero":       "'utf-8' codec can't decode byte 0xfc in position 1: invalid start byte",
		"a=1&n%FF=2":          "'utf-8' codec can't decode byte 0xff in position 1: invalid start byte",
		"name=%zz&x=ok%E2%82": "'utf-8' codec can't decode bytes in position 2-3: unexpected end of data",
	} {
		err := checkQueryUTF8(raw)
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("checkQueryUTF8(%q) = %v, want %q", raw, err, want)
		}
	}
}

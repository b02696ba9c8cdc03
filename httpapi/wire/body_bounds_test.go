package wire

import (
	"strings"
	"testing"
)

// TestCheckUTF8 compares with CPython's bytes.decode('utf-8') errors,
// which Placement answers as "Malformed JSON: ...".
func TestCheckUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"\xff":                 "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
		"a\xe2\x82x":           "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte",
		"\xe2x":                "'utf-8' codec can't decode byte 0xe2 in position 0: invalid continuation byte",
		"ab\xe2\x82":           "'utf-8' codec can't decode bytes in position 2-3: unexpected end of data",
		"\xed\xa0\x80":         "'utf-8' codec can't decode byte 0xed in position 0: invalid continuation byte",
		"\xc0\x80":             "'utf-8' codec can't decode byte 0xc0 in position 0: invalid start byte",
		"\xf0\x90\x80":         "'utf-8' codec can't decode bytes in position 0-2: unexpected end of data",
		"\xf4\x90\x80\x80":     "'utf-8' codec can't decode byte 0xf4 in position 0: invalid continuation byte",
		"\xe0\x80\x80":         "'utf-8' codec can't decode byte 0xe0 in position 0: invalid continuation byte",
		"\xf0\x90\x80\x80\xff": "'utf-8' codec can't decode byte 0xff in position 4: invalid start byte",
		"\xc2":                 "'utf-8' codec can't decode byte 0xc2 in position 0: unexpected end of data",
		"é€𐍈 ok":               "",
	} {
		err := checkUTF8([]byte(in))
		if got := ""; err != nil {
			got = err.Error()
			if got != want {
				t.Errorf("%q: %q, want %q", in, got, want)
			}
		} else if want != "" {
			t.Errorf("%q: valid, want %q", in, want)
		}
	}
}

func TestScanJSON(t *testing.T) {
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	for _, tc := range []struct {
		body, want string
	}{
		{`{"name": "a\u00e9\ud83d\ude00b", "n": [1, 2.5e3, true, null]}`, ""},
		{`{"name": "\ud800"}`, `invalid \ud800 escape at char 10`},
		{`{"name": "x\udc00y"}`, `invalid \udc00 escape`},
		{`{"name": "\ud800\u0041"}`, `invalid \ud800 escape`},
		{`["\\ud800"]`, ""}, // an escaped backslash, not an escape
		{many(maxJSONItems-1, "0"), ""},
		{many(maxJSONItems+1, "0"), "more than 100000 items"},
		{"[" + strings.Repeat(many(1000, "0")+",", 300) + "0]", "more than 250000 values"},
		{`["` + strings.Repeat("a", maxJSONString+1) + `"]`, "a string is longer than"},
		{`["` + strings.Repeat(`\u00e9`, maxJSONString/2) + `"]`, ""},
		// Strings and numbers are copied at each decoding: their bytes in
		// all are bounded too.
		{many(4, `"`+strings.Repeat("a", maxJSONString-1)+`"`), ""},
		{many(5, `"`+strings.Repeat("a", maxJSONString-1)+`"`), "strings and numbers of more than 8388608 bytes"},
		{many(9000, "1"+strings.Repeat("0", 1000)), "strings and numbers of more than 8388608 bytes"},
		// Malformed JSON is the decoder's to word.
		{`{"a": "\u12"}`, ""},
		{`{"a": "unterminated`, ""},
		{`]]]`, ""},
	} {
		err := scanJSON([]byte(tc.body))
		short := tc.body
		if len(short) > 60 {
			short = short[:60] + "..."
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", short, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", short, err, tc.want)
		}
	}
}

package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/fault"
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

// stripTagsByRegexp is webob.exc.strip_tags as webob writes it, with its
// regular expressions: the reference webobStripTags must agree with.
func stripTagsByRegexp(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "\r", "")
	s = regexp.MustCompile(`(?is)<br.*?>`).ReplaceAllString(s, "\n")
	s = regexp.MustCompile(`<!--|-->`).ReplaceAllString(s, "")
	return regexp.MustCompile(`(?s)<.*?>`).ReplaceAllString(s, "")
}

// TestWebobStripTags checks webobStripTags against strip_tags's regular
// expressions on every error template's bodies and on strings made of
// the pieces they match, in every order.
func TestWebobStripTags(t *testing.T) {
	var cases []string
	for status := range webobClasses {
		we := webobError{status: status, detail: "a <b>bold</b>\r\n<!-- c -->d<BR/>e<",
			env: webobEnv{Method: "PUT", Accept: "text/<x>", ContentType: "None"}}
		cases = append(cases, we.body(noEscape), we.body(pyHTMLEscape))
	}
	pieces := []string{"<", ">", "<br", "<BR />", "<bR", "b", "r", "-", "--", "-->", "<!--", "<!-", "!", "\n", "\r", "x", "é", "\xff", " "}
	rng := rand.New(rand.NewPCG(39, 61))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got, want := webobStripTags(s), stripTagsByRegexp(s); got != want {
			t.Fatalf("webobStripTags(%q) = %q, strip_tags gives %q", s, got, want)
		}
	}
}

// FuzzWebobStripTags checks webobStripTags against strip_tags's regular
// expressions on any string.
func FuzzWebobStripTags(f *testing.F) {
	for _, s := range []string{"", "a<br />b", "<!-- x -->", "<a<b>>", "<bR", "--->", "<!-->", "x\r\ny"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := webobStripTags(s), stripTagsByRegexp(s); got != want {
			t.Fatalf("webobStripTags(%q) = %q, strip_tags gives %q", s, got, want)
		}
	})
}

// placementErrorMap is Placement's error body as a map, its members set
// by the rules newPlacementErrorItem follows: the reference its struct
// must encode as.
func placementErrorMap(c echo.Context, e *Error, detail, title, requestID string) map[string]any {
	item := map[string]any{"status": e.Status, "title": title, "detail": detail}
	if requestID != "" {
		item["request_id"] = requestID
	}
	if e.Steps != nil {
		item["steps"] = e.Steps
	}
	if e.Refusal != "" {
		item["refusal"] = e.Refusal
	}
	if e.Domains != nil {
		item["domains"] = e.Domains
	}
	v, negotiated := Negotiated(c)
	if negotiated && v.AtLeast(errorCodeVersion) {
		code := e.Code
		if code == "" {
			code = fault.CodeUndefined
		}
		item["code"] = code
	}
	if !negotiated && e.Status == http.StatusNotAcceptable {
		item["max_version"], item["min_version"] = MaxVersion.String(), MinVersion.String()
	}
	return map[string]any{"errors": []any{item}}
}

// TestPlacementErrorBody checks that Placement's error body encodes as
// the map of its members would, with every member present or not.
func TestPlacementErrorBody(t *testing.T) {
	e := echo.New()
	type step struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	steps := []any{nil, []step(nil), []step{}, []step{{"capacity", 3}}}
	domains := []any{nil, map[string]int{"rack-1": 2}, []string(nil)}
	for _, version := range []*Version{nil, {Major: 1, Minor: 22}, {Major: 1, Minor: 39}} {
		for _, status := range []int{400, 406, 409} {
			for _, st := range steps {
				for _, dom := range domains {
					for _, refusal := range []string{"", "quota <full> & \"more\""} {
						for _, code := range []string{"", fault.CodeUndefined, "placement.concurrent_update"} {
							for _, id := range []string{"", "req-1"} {
								c := e.NewContext(httptest.NewRequest(http.MethodPost, "/claims", nil), httptest.NewRecorder())
								if version != nil {
									SetVersion(c, *version)
								}
								er := &Error{Status: status, Code: code, Msg: "m", Steps: st, Refusal: refusal, Domains: dom}
								var a, b bytes.Buffer
								got, err := encodeJSON(&a, &placementErrors{Errors: [1]placementErrorItem{newPlacementErrorItem(c, er, "d\u00e9tail <x>", "Conflict", id)}})
								if err != nil {
									t.Fatal(err)
								}
								want, err := encodeJSON(&b, placementErrorMap(c, er, "d\u00e9tail <x>", "Conflict", id))
								if err != nil {
									t.Fatal(err)
								}
								if !bytes.Equal(got, want) {
									t.Fatalf("error body %s, want %s", got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestPreferredErrorTypeJSON checks preferredErrorType's shortcut: the
// header application/json prefers JSON among an error's layouts, as
// parsing it says.
func TestPreferredErrorTypeJSON(t *testing.T) {
	if got := AcceptableOffers(echo.MIMEApplicationJSON, "text/html", echo.MIMEApplicationJSON); !slices.Equal(got, []string{echo.MIMEApplicationJSON}) {
		t.Fatalf("Accept %s: offers %v", echo.MIMEApplicationJSON, got)
	}
	if got := preferredErrorType(echo.MIMEApplicationJSON); got != echo.MIMEApplicationJSON {
		t.Fatalf("preferredErrorType(%s) = %s", echo.MIMEApplicationJSON, got)
	}
}

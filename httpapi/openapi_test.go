package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/errors"
)

// The API's description (openapi.go) is checked here: it has every route
// of the table and nothing else; it is a valid OpenAPI 3.1 document for
// a library made for it (pb33f's libopenapi and libopenapi-validator,
// whose JSON Schema is 2020-12, OpenAPI 3.1's); every example in it
// validates against it; and the requests and answers of a real server
// validate against it (openapi_traffic_test.go).

// openAPIDoc is a bare server's description, decoded.
type openAPIDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Examples []json.RawMessage `json:"examples"`
		} `json:"schemas"`
	} `json:"components"`
}

// newOpenAPIValidator parses doc with libopenapi and returns its
// validator, failing t when the document does not build one.
func newOpenAPIValidator(t *testing.T, doc []byte) validator.Validator {
	t.Helper()
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return v
}

// validationErrors renders errs, one per line, with the schema's reasons.
func validationErrors(errs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}

// TestOpenAPIRoutes: the description's operations are the route table's
// and the two public documents, no more, no fewer; GET /openapi.json
// serves it without a token.
func TestOpenAPIRoutes(t *testing.T) {
	s := newBareServer(t)
	var doc openAPIDoc
	if err := json.Unmarshal(s.openapi, &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /", "GET /openapi.json"}
	for _, r := range s.routes() {
		want = append(want, r.method+" "+openAPIPathOf(r.path))
	}
	var got []string
	for path, ops := range doc.Paths {
		for method := range ops {
			got = append(got, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("operations:\n%s\nroutes:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) != 80 {
		t.Errorf("%d routes: does the route table still have its 78 rows?", len(want))
	}

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), s.openapi) ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("GET /openapi.json without a token: %d %s", rec.Code, rec.Header())
	}
}

// TestOpenAPIRouteTableDrift: a description that misses a route, or
// describes one the table lacks, is refused (New fails with it).
func TestOpenAPIRouteTableDrift(t *testing.T) {
	s := newBareServer(t)
	routes := s.routes()
	if _, err := openAPIDocument(routes[1:]); err == nil || !strings.Contains(err.Error(), "not a route") {
		t.Errorf("a table without %s %s: %v", routes[0].method, routes[0].path, err)
	}
	extra := append(slices.Clone(routes), route{method: http.MethodGet, path: "/nowhere", rule: "berth:audit:read"})
	if _, err := openAPIDocument(extra); err == nil || !strings.Contains(err.Error(), "does not describe GET /nowhere") {
		t.Errorf("a table with GET /nowhere: %v", err)
	}
}

// TestOpenAPIDocumentValid: libopenapi reads the document as OpenAPI 3.1
// and finds it valid against the specification's schema.
func TestOpenAPIDocumentValid(t *testing.T) {
	s := newBareServer(t)
	d, err := libopenapi.NewDocument(s.openapi)
	if err != nil {
		t.Fatal(err)
	}
	if v := d.GetVersion(); v != "3.1.0" {
		t.Errorf("version %q", v)
	}
	v := newOpenAPIValidator(t, s.openapi)
	if ok, errs := v.ValidateDocument(); !ok {
		t.Errorf("invalid:%s", validationErrors(errs))
	}
}

// pathValues are the values the examples put in a path's parameters.
var pathValues = strings.NewReplacer(
	"{uuid}", "3b4005be-d64b-456f-ba36-0ffd02718868",
	"{consumer_uuid}", "c0000000-0000-4000-8000-000000000001",
	"{resource_class}", "VCPU", "{name}", "web", "{project_id}", "demo")

// TestOpenAPIExamples: every request example validates as its
// operation's request, and every example of a schema as the answer of
// each operation that answers it; and a body that breaks a schema is
// refused, so that the check can fail.
func TestOpenAPIExamples(t *testing.T) {
	s := newBareServer(t)
	v := newOpenAPIValidator(t, s.openapi)
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Example json.RawMessage `json:"example"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(s.openapi, &doc); err != nil {
		t.Fatal(err)
	}
	var full openAPIDoc
	if err := json.Unmarshal(s.openapi, &full); err != nil {
		t.Fatal(err)
	}
	request := func(method, path, contentType string, body []byte) *http.Request {
		r := httptest.NewRequest(strings.ToUpper(method), pathValues.Replace(path), bytes.NewReader(body))
		r.Header.Set("X-Auth-Token", "admin")
		r.Header.Set("OpenStack-API-Version", "placement latest")
		if body != nil {
			r.Header.Set("Content-Type", contentType)
		}
		return r
	}
	requests, answers := 0, 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for ct, c := range op.RequestBody.Content {
				if c.Example == nil {
					continue
				}
				body := []byte(c.Example)
				if ct == "text/plain" {
					var text string
					if err := json.Unmarshal(c.Example, &text); err != nil {
						t.Fatal(err)
					}
					body = []byte(text)
				}
				requests++
				if ok, errs := v.ValidateHttpRequest(request(method, path, ct, body)); !ok {
					t.Errorf("%s %s: the request example:%s", method, path, validationErrors(errs))
				}
			}
			for status, resp := range op.Responses {
				c, ok := resp.Content["application/json"]
				if !ok || c.Schema.Ref == "" {
					continue
				}
				name := strings.TrimPrefix(c.Schema.Ref, "#/components/schemas/")
				for _, ex := range full.Components.Schemas[name].Examples {
					answers++
					code := 0
					fmt.Sscan(status, &code)
					r := &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
						Body: io.NopCloser(bytes.NewReader(ex))}
					if ok, errs := v.ValidateHttpResponse(request(method, path, "", nil), r); !ok {
						t.Errorf("%s %s: the example of %s as its %s answer:%s", method, path, name, status, validationErrors(errs))
					}
				}
			}
		}
	}
	if requests < 20 || answers < 5 {
		t.Errorf("%d request examples, %d answer examples checked", requests, answers)
	}

	// The check can fail: a claim without its owner, a provider without
	// its generation.
	if ok, _ := v.ValidateHttpRequest(request("post", "/claims", "application/json", []byte(`{"resources": {"VCPU": 1}}`))); ok {
		t.Error("a claim without consumer_uuid, project_id and user_id validates")
	}
	r := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"uuid": "3b4005be-d64b-456f-ba36-0ffd02718868", "name": "x"}`))}
	if ok, _ := v.ValidateHttpResponse(request("get", "/resource_providers/{uuid}", "", nil), r); ok {
		t.Error("a provider without its generation validates")
	}
}

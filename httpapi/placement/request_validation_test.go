package placement_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/apitest/apiserver"
)

// TestRequestValidation covers refusals that happen before the ledger is
// consulted, so it runs without a database.
func TestRequestValidation(t *testing.T) {
	s := apiserver.Bare(t)
	tests := []struct {
		name        string
		method      string
		path        string
		version     string
		contentType string
		accept      string
		body        string
		wantStatus  int
		wantBody    []string
	}{
		{
			name: "parent before 1.14", method: "POST", path: "/resource_providers", version: "1.13",
			body:       `{"name": "child", "parent_provider_uuid": "2290d4af-9e6e-400b-9d65-1ee01376f71a"}`,
			wantStatus: 400, wantBody: []string{"JSON does not validate", "Additional properties are not allowed"},
		},
		{
			name: "bad uuid", method: "POST", path: "/resource_providers", version: "1.20",
			body:       `{"name": "x", "uuid": "this is not a uuid"}`,
			wantStatus: 400, wantBody: []string{"is not a 'uuid'", "Failed validating 'format'"},
		},
		{
			name: "bad parent uuid", method: "POST", path: "/resource_providers", version: "1.20",
			body:       `{"name": "x", "parent_provider_uuid": "nope"}`,
			wantStatus: 400, wantBody: []string{"JSON does not validate"},
		},
		{
			name: "name too long", method: "POST", path: "/resource_providers", version: "1.20",
			body:       `{"name": "` + strings.Repeat("x", 201) + `"}`,
			wantStatus: 400, wantBody: []string{"Failed validating 'maxLength'"},
		},
		{
			name: "name missing", method: "POST", path: "/resource_providers",
			body:       `{"uuid": "2290d4af-9e6e-400b-9d65-1ee01376f71a"}`,
			wantStatus: 400, wantBody: []string{"'name' is a required property"},
		},
		{
			name: "malformed json", method: "POST", path: "/resource_providers",
			body: `{"foo": }`, wantStatus: 400, wantBody: []string{"Malformed JSON:"},
		},
		{
			name: "wrong content type", method: "POST", path: "/resource_providers",
			contentType: "text/plain", body: "please", wantStatus: 415,
		},
		{
			name: "POST ignores Accept", method: "POST", path: "/resource_classes", version: "1.2",
			accept: "text/plain", body: `{"name": "FOO"}`,
			wantStatus: 400, wantBody: []string{"JSON does not validate"},
		},
		{
			name: "GET refuses non-JSON Accept", method: "GET", path: "/resource_providers/x",
			accept: "text/plain", wantStatus: 406, wantBody: []string{"Only application/json is provided"},
		},
		{
			name: "resource classes before 1.2", method: "POST", path: "/resource_classes", version: "1.1",
			contentType: "text/plain", body: "x", wantStatus: 404,
		},
		{
			name: "rename to standard class", method: "PUT", path: "/resource_classes/CUSTOM_A", version: "1.6",
			body: `{"name": "VCPU"}`, wantStatus: 400, wantBody: []string{"Failed validating 'pattern'"},
		},
		{
			name: "put class 1.7 not custom", method: "PUT", path: "/resource_classes/COW", version: "1.7",
			wantStatus: 400, wantBody: []string{"JSON does not validate", "Failed validating 'pattern'"},
		},
		{
			name: "put class 1.7 too long", method: "PUT", path: "/resource_classes/CUSTOM_" + strings.Repeat("S", 250), version: "1.7",
			wantStatus: 400, wantBody: []string{"Failed validating 'maxLength'"},
		},
		{
			name: "put trait not custom", method: "PUT", path: "/traits/TRAIT_X", version: "1.6",
			wantStatus: 400, wantBody: []string{`The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix \"CUSTOM_\"`},
		},
		{
			name: "traits before 1.6", method: "PUT", path: "/traits/CUSTOM_A", version: "1.5", wantStatus: 404,
		},
		{
			name: "trait list bad name", method: "GET", path: "/traits?name=in_abc", version: "1.6",
			wantStatus: 400, wantBody: []string{`Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: \"in_abc\"`},
		},
		{
			name: "trait list bad associated", method: "GET", path: "/traits?associated=xyz", version: "1.6",
			wantStatus: 400, wantBody: []string{`The query parameter \"associated\" only accepts \"true\" or \"false\"`},
		},
		{
			name: "trait list unknown parameter", method: "GET", path: "/traits?invalid=abc", version: "1.6",
			wantStatus: 400, wantBody: []string{"Invalid query string parameters: Additional properties are not allowed"},
		},
		{
			name: "provider traits no generation", method: "PUT", path: "/resource_providers/x/traits", version: "1.6",
			body:       `{"traits": ["CUSTOM_A"]}`,
			wantStatus: 400, wantBody: []string{"'resource_provider_generation' is a required property"},
		},
		{
			name: "provider traits bad generation", method: "PUT", path: "/resource_providers/x/traits", version: "1.6",
			body:       `{"traits": ["CUSTOM_A"], "resource_provider_generation": "invalid_generation"}`,
			wantStatus: 400, wantBody: []string{"'invalid_generation' is not of type 'integer'"},
		},
		{
			name: "provider traits not a list", method: "PUT", path: "/resource_providers/x/traits", version: "1.6",
			body:       `{"traits": "invalid_type", "resource_provider_generation": 1}`,
			wantStatus: 400, wantBody: []string{"'invalid_type' is not of type 'array'"},
		},
		{
			name: "aggregates before 1.1", method: "GET", path: "/resource_providers/x/aggregates", version: "1.0",
			wantStatus: 404,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req *http.Request
			if tt.body != "" {
				req = httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
				ct := tt.contentType
				if ct == "" {
					ct = "application/json"
				}
				req.Header.Set("Content-Type", ct)
			} else {
				req = httptest.NewRequest(tt.method, tt.path, nil)
			}
			req.Header.Set("X-Auth-Token", "admin")
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			v := tt.version
			if v == "" {
				v = "latest"
			}
			req.Header.Set("OpenStack-API-Version", "placement "+v)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body.String())
			}
			for _, want := range tt.wantBody {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("body %s\nlacks %s", rec.Body.String(), want)
				}
			}
		})
	}
}

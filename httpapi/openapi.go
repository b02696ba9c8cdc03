package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/berthapi"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
)

// The API's description: GET /openapi.json, an OpenAPI 3.1 document of
// every route of the table (routes.go), built from the table itself, the
// request schemas its handlers validate bodies and query strings with
// (BodySchemas and QuerySchemas of packages placement and berthapi) and
// the answers of
// openapi_responses.json (a summary, statuses and schemas per route, the
// schemas of the answers, examples). Building it fails when one of them
// names a route the table lacks or the table has a route openapi_responses.json
// does not describe, so New refuses a table the description does not
// match. Like the version document at /, it needs no token: it says what
// the API is, as Placement's published reference does, and a client
// generator fetches it before it has credentials.

// openAPIPath is the description's path.
const openAPIPath = "/openapi.json"

//go:embed openapi_responses.json
var openAPIResponses []byte

// openAPIAnswers is openapi_responses.json.
type openAPIAnswers struct {
	Schemas map[string]any `json:"schemas"`
	Routes  map[string]struct {
		Summary string `json:"summary"`
		// Responses maps a success status to the name of its schema in
		// Schemas, "" for no body, or "text" for text/plain.
		Responses map[string]string `json:"responses"`
		// Example is a request body that the route accepts; Text is a
		// text/plain one.
		Example any    `json:"example"`
		Text    string `json:"text"`
	} `json:"routes"`
}

// optionalBodies are the routes whose JSON body may be left out.
var optionalBodies = map[string]bool{
	"POST /claims/:consumer_uuid/move/confirm": true,
	"POST /claims/:consumer_uuid/move/revert":  true,
	"POST /resource_providers/:uuid/evacuate":  true,
	"PUT /scheduling_policies/:name/shadow":    true,
	"PUT /scriptlets/:name/shadow":             true,
}

// openAPIDocument builds the description of routes, encoded.
func openAPIDocument(routes []route) ([]byte, error) {
	var answers openAPIAnswers
	if err := json.Unmarshal(openAPIResponses, &answers); err != nil {
		return nil, fmt.Errorf("openapi_responses.json: %w", err)
	}
	bodies := map[string]any{}
	for _, b := range slices.Concat(placement.BodySchemas(), berthapi.BodySchemas()) {
		// A route that takes bodies of two kinds (POST /claims: a claim or
		// a gang) validates each against its own schema: either.
		key := b.Method + " " + b.Path
		if prev, ok := bodies[key]; ok {
			bodies[key] = map[string]any{"anyOf": []any{prev, b.Schema.Doc()}}
			continue
		}
		bodies[key] = b.Schema.Doc()
	}
	queries := map[string][]any{}
	for _, q := range slices.Concat(placement.QuerySchemas(), berthapi.QuerySchemas()) {
		key := q.Method + " " + q.Path
		queries[key] = append(queries[key], queryParameters(q.Schema.Doc())...)
	}
	paths := map[string]map[string]any{}
	seen := map[string]bool{}
	for _, r := range routes {
		key := r.method + " " + r.path
		a, ok := answers.Routes[key]
		if !ok {
			return nil, fmt.Errorf("openapi_responses.json does not describe %s", key)
		}
		seen[key] = true
		op, err := openAPIOperation(r, a.Summary, a.Responses, answers.Schemas)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if qs, ok := queries[key]; ok {
			op["parameters"] = append(op["parameters"].([]any), qs...)
			delete(queries, key)
		}
		switch schema, hasSchema := bodies[key]; {
		case hasSchema:
			content := map[string]any{"schema": schema}
			if a.Example != nil {
				content["example"] = a.Example
			}
			op["requestBody"] = map[string]any{"required": !optionalBodies[key],
				"content": map[string]any{"application/json": content}}
			delete(bodies, key)
		case a.Text != "":
			op["requestBody"] = map[string]any{"required": true,
				"content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}, "example": a.Text}}}
		case a.Example != nil:
			return nil, fmt.Errorf("%s: an example, but no body schema", key)
		}
		path := openAPIPathOf(r.path)
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(r.method)] = op
	}
	for key := range answers.Routes {
		if !seen[key] {
			return nil, fmt.Errorf("openapi_responses.json describes %s, which is not a route", key)
		}
	}
	for key := range bodies {
		return nil, fmt.Errorf("a body schema for %s, which is not a route", key)
	}
	for key := range queries {
		return nil, fmt.Errorf("a query schema for %s, which is not a route", key)
	}
	public := func(summary, schema string) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "operationId": "get" + strings.ReplaceAll(schema, "/", "_"),
			"tags": []string{"discovery"}, "security": []any{},
			"responses": map[string]any{"200": map[string]any{"description": "OK",
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}}}}
	}
	paths["/"] = public("The version document (Placement's): the microversions served", "/root")
	paths[openAPIPath] = public("This document", openAPIPath)
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Berth",
			"version": wire.MaxVersion.String(),
			"summary": "OpenStack Placement's API and Berth's claims, capacity, evacuation, limits, audit and scheduling.",
			"description": "Placement's routes answer as OpenStack Placement does at the microversion a request asks for " +
				"(OpenStack-API-Version; without it, 1.0); this document gives their bodies at the latest microversion, " +
				wire.MaxVersion.String() + " (earlier shapes: Placement's API reference). A route outside its microversions " +
				"(x-microversions) answers 404. Berth's own routes are the same at every microversion. Every refusal is an " +
				"Error body. Each operation's x-policy-rule is the policy rule it checks (docs/security.md).",
			"license": map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"security": []any{map[string]any{"token": []any{}}},
		"tags": []any{
			map[string]any{"name": "placement", "description": "OpenStack Placement's API"},
			map[string]any{"name": "berth", "description": "Berth's own routes (docs/claims.md, docs/capacity.md, docs/quotas.md, docs/scheduling.md)"},
			map[string]any{"name": "discovery", "description": "What the server serves; no token needed"},
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": answers.Schemas,
			"securitySchemes": map[string]any{"token": map[string]any{"type": "apiKey", "in": "header", "name": "X-Auth-Token",
				"description": "A Keystone token with --auth keystone; with --auth noauth2, \"admin\" (or any user id) as Placement's noauth2 takes it"}},
			"parameters": map[string]any{"Microversion": map[string]any{
				"name": wire.HeaderAPIVersion, "in": "header", "required": false,
				"description": "The microversion: \"placement 1.N\" or \"placement latest\"; absent: 1.0. Send at least 1.23 to get error codes.",
				"schema":      map[string]any{"type": "string", "pattern": `^placement (latest|1\.[0-9]+)$`},
				"example":     "placement latest",
			}},
			"responses": map[string]any{"Error": map[string]any{
				"description": "A refusal, in Placement's error format",
				"headers": map[string]any{"X-Openstack-Request-Id": map[string]any{"schema": map[string]any{"type": "string"},
					"description": "The request's id, also in the body's request_id and the server's log"}},
				"content": map[string]any{"application/json": map[string]any{"schema": ref("Error")}},
			}},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// openAPIOperation is route r's operation, without its request body.
func openAPIOperation(r route, summary string, statuses map[string]string, schemas map[string]any) (map[string]any, error) {
	tag := "placement"
	if strings.HasPrefix(r.rule, "berth:") {
		tag = "berth"
	}
	params := []any{map[string]any{"$ref": "#/components/parameters/Microversion"}}
	for _, seg := range strings.Split(r.path, "/") {
		if name, ok := strings.CutPrefix(seg, ":"); ok {
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
	}
	responses := map[string]any{"default": map[string]any{"$ref": "#/components/responses/Error"}}
	if len(statuses) == 0 {
		return nil, fmt.Errorf("no success status")
	}
	for status, schema := range statuses {
		code, err := strconv.Atoi(status)
		if err != nil {
			return nil, fmt.Errorf("status %q", status)
		}
		resp := map[string]any{"description": http.StatusText(code)}
		switch schema {
		case "":
		case "text":
			resp["content"] = map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}
		default:
			if schemas[schema] == nil {
				return nil, fmt.Errorf("no schema %q", schema)
			}
			resp["content"] = map[string]any{"application/json": map[string]any{"schema": ref(schema)}}
		}
		responses[status] = resp
	}
	versions := map[string]any{"min": fmt.Sprintf("1.%d", r.versions.first)}
	if r.versions.last > 0 {
		versions["max"] = fmt.Sprintf("1.%d", r.versions.last)
	}
	return map[string]any{
		"summary":         summary,
		"operationId":     operationID(r.method, r.path),
		"tags":            []string{tag},
		"parameters":      params,
		"responses":       responses,
		"x-policy-rule":   r.rule,
		"x-microversions": versions,
	}, nil
}

// queryParameters are the query parameters of a query schema (an object
// schema whose properties are the parameters): one per property, and one
// per patternProperties' key of the form "^name(suffix)?$" (a granular
// request group's), named for its unsuffixed form, in name order.
func queryParameters(doc any) []any {
	schema, _ := doc.(map[string]any)
	required := map[string]bool{}
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			required[fmt.Sprint(r)] = true
		}
	}
	byName := map[string]map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		byName[name] = map[string]any{"name": name, "in": "query", "required": required[name], "schema": p}
	}
	patterns, _ := schema["patternProperties"].(map[string]any)
	for pat, p := range patterns {
		name, suffix, ok := strings.Cut(strings.TrimPrefix(pat, "^"), "(")
		if !ok || byName[name] != nil {
			continue
		}
		byName[name] = map[string]any{"name": name, "in": "query", "required": false, "schema": p,
			"description": fmt.Sprintf("Also %s followed by a suffix (%s): a granular request group's, as in Placement.",
				name, strings.TrimSuffix(suffix, ")?$"))}
	}
	var out []any
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// openAPIPathOf is a route table path as OpenAPI writes it: ":uuid" as
// "{uuid}".
func openAPIPathOf(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

// operationID names an operation by its method and path:
// "get_resource_providers_uuid_inventories".
func operationID(method, path string) string {
	return strings.ToLower(method) + strings.NewReplacer("/", "_", ":", "").Replace(path)
}

func ref(schema string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + schema}
}

// openAPI serves GET /openapi.json.
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.openapi)
}

package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/testing/pythontest"
)

// webobCase is one error and one request: what the error handler renders
// and what webob (with Placement's JSON error formatter) renders for it.
type webobCase struct {
	Status      int    `json:"status"`
	Detail      string `json:"detail"`
	Method      string `json:"method"`
	Accept      string `json:"accept"`
	ContentType string `json:"content_type"`
	// WebobJSON: the error has webob's own JSON formatter, not
	// Placement's (noauth2's 401).
	WebobJSON bool `json:"webob_json"`
}

// webobAnswer is a rendered error: status line, Content-Type, body.
type webobAnswer struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
}

// webobRender renders cases as webob does, in Placement's way: the
// request log middleware's Accept default, the content check's "None"
// content type, Placement's json_error_formatter.
const webobRender = `
import json, sys
import webob, webob.exc
from placement import util

out = []
for c in json.load(sys.stdin):
    headers = {}
    if c['accept']:
        headers['Accept'] = c['accept']
    req = webob.Request.blank('/resource_providers', method=c['method'], headers=headers)
    if c['content_type']:
        req.environ['CONTENT_TYPE'] = c['content_type']
    # placement.requestlog.RequestLog
    accept = req.environ.get('HTTP_ACCEPT')
    if not accept or accept == '*/*':
        req.environ['HTTP_ACCEPT'] = 'application/json'
    # placement.util.require_content
    if c['status'] == 415 and not req.content_type:
        req.content_type = 'None'
    kw = {} if c['webob_json'] else {'json_formatter': util.json_error_formatter}
    exc = webob.exc.status_map[c['status']](c['detail'], **kw)
    resp = req.get_response(exc)
    out.append({'status': resp.status_code, 'content_type': resp.headers.get('Content-Type', ''),
                'body': resp.body.decode('utf-8')})
json.dump(out, sys.stdout)
`

// TestWebobBodies: every error body, in every media type a client's
// Accept header can select (HTML, plain text, JSON), is the one webob
// renders for Placement, byte for byte outside JSON.
func TestWebobBodies(t *testing.T) {
	pythontest.Need(t, "webob", "placement.util")
	details := []string{
		"No resource provider with uuid 5a000000-0000-4000-8000-0000000000ff found",
		"",
		`Conflicting <b>name</b> & 'quotes' "here" > there`,
		"JSON does not validate: 'abc' is not a 'uuid'\n\nFailed validating 'format' in schema['items']:\n    {'format': 'uuid', 'type': 'string'}\n\nOn instance[0]:\n    'abc'",
		"line one\r\nline two<br/>line three<BR >end",
		"<!-- a comment --> and <tag attr=\"x\">text</tag>",
		"non-ASCII: provider ü ☃ 𝄞",
		"template markers ${explanation} $detail ${HTTP_ACCEPT}",
	}
	statuses := []int{400, 401, 403, 404, 405, 406, 409, 413, 415, 429, 500, 501, 503}
	accepts := []string{
		"", "*/*", "application/json", "text/html", "text/plain", "application/xml",
		"text/html, application/json;q=0.5", "text/plain, */*;q=0.1", "application/json;q=0",
		"text/*", "text/html;q=0.5, application/json", "<script>&", "application/json; charset=utf-8",
		"TEXT/HTML", "text/html;level=1", "application/*", "text/html;q=0, */*", "image/png, text/plain;q=0.2",
	}
	var cases []webobCase
	for _, status := range statuses {
		for _, d := range details {
			for _, a := range accepts {
				cases = append(cases, webobCase{Status: status, Detail: d, Method: http.MethodGet, Accept: a})
			}
		}
	}
	// Methods, content types and webob's own JSON, on fewer details.
	for _, status := range []int{400, 401, 405, 406, 415, 501} {
		for _, d := range details[:3] {
			for _, a := range []string{"", "text/html", "text/plain", "<bad>"} {
				for _, m := range []string{http.MethodPut, http.MethodHead, "<PATCH>"} {
					for _, ct := range []string{"", "text/plain; charset=utf-8", "application/<x>"} {
						cases = append(cases, webobCase{Status: status, Detail: d, Method: m, Accept: a, ContentType: ct})
					}
				}
				cases = append(cases, webobCase{Status: status, Detail: d, Method: http.MethodGet, Accept: a, WebobJSON: true})
			}
		}
	}

	var want []webobAnswer
	pythontest.Run(t, webobRender, cases, &want)
	if len(want) != len(cases) {
		t.Fatalf("Python rendered %d cases of %d", len(want), len(cases))
	}
	s, err := build(Config{}, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		name := fmt.Sprintf("%d %s Accept=%q Content-Type=%q detail=%q webob_json=%v",
			tc.Status, tc.Method, tc.Accept, tc.ContentType, tc.Detail, tc.WebobJSON)
		req := httptest.NewRequest(http.MethodGet, "/resource_providers", nil)
		req.Method = tc.Method
		if tc.Accept != "" {
			req.Header.Set("Accept", tc.Accept)
		}
		if tc.ContentType != "" {
			req.Header.Set("Content-Type", tc.ContentType)
		}
		rec := httptest.NewRecorder()
		e := &wire.Error{Status: tc.Status, Msg: tc.Detail}
		if tc.WebobJSON {
			e.Body = wire.WebobBody
		}
		s.errorHandler(e, s.e.NewContext(req, rec))
		got := webobAnswer{Status: rec.Code, ContentType: rec.Header().Get("Content-Type"), Body: rec.Body.String()}
		w := want[i]
		if got.Status != w.Status || got.ContentType != w.ContentType {
			t.Errorf("%s:\nstatus, type %d %q\nwebob         %d %q", name, got.Status, got.ContentType, w.Status, w.ContentType)
			continue
		}
		if w.ContentType == "application/json" {
			var g, ww any
			if err := json.Unmarshal([]byte(got.Body), &g); err != nil {
				t.Errorf("%s: body not JSON: %v\n%s", name, err, got.Body)
				continue
			}
			if err := json.Unmarshal([]byte(w.Body), &ww); err != nil {
				t.Fatalf("%s: webob's body not JSON: %v\n%s", name, err, w.Body)
			}
			if !reflect.DeepEqual(g, ww) {
				t.Errorf("%s:\nbody  %s\nwebob %s", name, got.Body, w.Body)
			}
			continue
		}
		if got.Body != w.Body {
			t.Errorf("%s:\nbody  %q\nwebob %q", name, got.Body, w.Body)
		}
	}
}

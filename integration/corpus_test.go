package integration

// The Placement corpus: request/response pairs recorded from the real
// OpenStack Placement 8.0.0 (on PostgreSQL) and replayed through berthd.
//
//	go test ./integration -run TestPlacementCorpus -record   # needs python3-placement and uwsgi
//	go test ./integration -run TestPlacementCorpus           # replays testdata/placement/*.json
//
// Recording plays each session of corpusSessions (corpus_script_test.go)
// against a fresh Placement on a fresh database and writes every request
// with Placement's answer to testdata/placement/<session>.json. Replay plays
// the same requests, in order, through a fresh berthd per session and
// diffs what a client can notice: the status, the headers clients read
// (Content-Type, OpenStack-API-Version, Vary, Location, Cache-Control, the
// presence of Last-Modified and X-Openstack-Request-Id), and the body: its
// JSON structure with object members AND arrays in order, or its text.
// What differs by nature is normalised first: request ids, uuids the
// server generated, timestamps.
//
// A step whose Placement answer is wrong on PostgreSQL (GET /usages from
// 1.38 answers 500: a GROUP BY bug) is recorded with Berth's answer
// instead and says so in placement_broken; replay checks Berth against it
// like any other step.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/placementtest"
	"github.com/berthd/berth/ledger/ledgertest"
)

var recordCorpus = flag.Bool("record", false, "record testdata/placement from the real OpenStack Placement instead of replaying it")

const corpusDir = "testdata/placement"

// corpusFile is one session as stored.
type corpusFile struct {
	Session   string           `json:"session"`
	About     string           `json:"about"`
	Recorded  string           `json:"recorded"`
	Exchanges []corpusExchange `json:"exchanges"`
}

type corpusExchange struct {
	Name            string         `json:"name"`
	Request         corpusRequest  `json:"request"`
	Response        corpusResponse `json:"response"`
	PlacementBroken string         `json:"placement_broken,omitempty"`
}

type corpusRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

type corpusResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	// JSON is the body when it is JSON (indented, members in the order
	// the server wrote them); Text otherwise.
	JSON json.RawMessage `json:"json,omitempty"`
	Text string          `json:"text,omitempty"`
}

// comparedHeaders are the response headers replay compares by value
// (after normalisation); presenceHeaders only by presence.
var (
	comparedHeaders = []string{"Content-Type", "Openstack-Api-Version", "Vary", "Location", "Cache-Control", "Allow"}
	presenceHeaders = []string{"Last-Modified", "X-Openstack-Request-Id"}
)

// corpusClient sends one step's request as it is, without compression or
// redirects.
var corpusClient = &http.Client{
	Timeout:       requestTimeout,
	Transport:     &http.Transport{DisableCompression: true, DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func doCorpusRequest(t *testing.T, base string, r corpusRequest) corpusResponse {
	t.Helper()
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, base+r.Path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "berth-corpus")
	resp, err := corpusClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s (body %.80q): %v", r.Method, r.Path, r.Body, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.Method, r.Path, err)
	}
	out := corpusResponse{Status: resp.StatusCode, Headers: map[string]string{}}
	for _, h := range append(append([]string{}, comparedHeaders...), presenceHeaders...) {
		if v := resp.Header.Values(h); len(v) > 0 {
			out.Headers[strings.ToLower(h)] = strings.Join(v, ", ")
		}
	}
	if loc, ok := out.Headers["location"]; ok {
		// The host and port are the server's own.
		if u, err := url.Parse(loc); err == nil && u.Host != "" {
			out.Headers["location"] = u.RequestURI()
		}
	}
	if len(raw) > 0 && json.Valid(raw) {
		var buf bytes.Buffer
		_ = json.Indent(&buf, raw, "", "  ")
		out.JSON = buf.Bytes()
	} else {
		out.Text = string(raw)
	}
	return out
}

// stepRequest is the request a script step sends: the admin's token, JSON
// bodies, the step's microversion, then its own headers ("" deletes one).
func stepRequest(s corpusStep) corpusRequest {
	h := map[string]string{"X-Auth-Token": "admin", "Accept": "application/json"}
	if s.version != "" {
		h["OpenStack-API-Version"] = "placement " + s.version
	}
	if s.body != "" {
		h["Content-Type"] = "application/json"
	}
	for k, v := range s.headers {
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	return corpusRequest{Method: s.method, Path: s.path, Headers: h, Body: s.body}
}

func TestPlacementCorpus(t *testing.T) {
	if *recordCorpus {
		recordPlacementCorpus(t)
		return
	}
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s (record it with -record): %v", corpusDir, err)
	}
	bin := buildBerthd(t)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cf corpusFile
		if err := json.Unmarshal(raw, &cf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(cf.Session, func(t *testing.T) {
			b, err := tryStartBerthd(t, bin, ledgertest.NewDB(t))
			if err != nil {
				t.Fatal(err)
			}
			known := requestUUIDs(cf.Exchanges)
			for i, ex := range cf.Exchanges {
				corpusRequestPath = ex.Request.Path
				got := doCorpusRequest(t, b.url, ex.Request)
				for _, d := range diffResponses(normaliseResponse(ex.Response, known), normaliseResponse(got, known)) {
					if knownDifference(cf.Session, ex.Name, d) {
						t.Logf("known difference, step %d %q: %s", i, ex.Name, d)
						continue
					}
					t.Errorf("step %d %q: %s %s: %s", i, ex.Name, ex.Request.Method, ex.Request.Path, d)
				}
			}
		})
	}
}

func recordPlacementCorpus(t *testing.T) {
	if err := placementtest.Available(); err != nil {
		t.Fatal(err)
	}
	bin := buildBerthd(t)
	if err := os.MkdirAll(corpusDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sess := range corpusSessions() {
		t.Run(sess.name, func(t *testing.T) {
			pdb := emptyDatabase(t)
			sqla, err := placementtest.SQLAlchemyURL(pdb)
			if err != nil {
				t.Fatal(err)
			}
			p, err := placementtest.Start(context.Background(), sqla)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			var b *berthd
			cf := corpusFile{Session: sess.name, About: sess.about,
				Recorded: "OpenStack Placement 8.0.0 (python3-placement) on PostgreSQL, " + time.Now().UTC().Format("2006-01-02")}
			for _, s := range sess.steps {
				req := stepRequest(s)
				ex := corpusExchange{Name: s.name, Request: req}
				if s.placementBroken != "" {
					// Placement still gets the request, so that both
					// databases stay alike, but Berth's answer is kept.
					doCorpusRequest(t, p.URL, req)
					if b == nil {
						var err error
						if b, err = tryStartBerthd(t, bin, ledgertest.NewDB(t)); err != nil {
							t.Fatal(err)
						}
						// Bring Berth to the same state by replaying what came before.
						for _, prev := range cf.Exchanges {
							doCorpusRequest(t, b.url, prev.Request)
						}
					}
					ex.Response = doCorpusRequest(t, b.url, req)
					ex.PlacementBroken = s.placementBroken
				} else {
					ex.Response = doCorpusRequest(t, p.URL, req)
					if b != nil {
						doCorpusRequest(t, b.url, req)
					}
				}
				if ex.Response.Status >= 500 && ex.PlacementBroken == "" {
					t.Errorf("%s: Placement answered %d: %s%s\n%s", s.name, ex.Response.Status, ex.Response.JSON, ex.Response.Text, p.Log())
				}
				cf.Exchanges = append(cf.Exchanges, ex)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(cf); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(corpusDir, sess.name+".json"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// emptyDatabase creates an empty database (no Berth schema) on the test
// server for Placement and drops it when the test ends.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	admin := ledgertest.NewDB(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	name := "placement_" + strings.ReplaceAll(strings.TrimPrefix(u.Path, "/"), "-", "_")
	ledgertest.Exec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() { ledgertest.Exec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

var (
	uuidRE      = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	requestIDRE = regexp.MustCompile(`req-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	timeRE      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
)

// requestUUIDs are the uuids the script chose: they must come back as
// they are. Any other uuid in an answer was generated by the server.
func requestUUIDs(exs []corpusExchange) map[string]bool {
	known := map[string]bool{}
	for _, ex := range exs {
		for _, u := range uuidRE.FindAllString(ex.Request.Path+" "+ex.Request.Body, -1) {
			known[strings.ToLower(u)] = true
		}
	}
	return known
}

// normaliseResponse replaces what differs by nature between two servers
// answering the same request: request ids, generated uuids (numbered in
// order of appearance, so that a uuid repeated in one answer stays
// recognisably the same), timestamps, and the value of Last-Modified and
// X-Openstack-Request-Id (only their presence counts).
func normaliseResponse(r corpusResponse, known map[string]bool) corpusResponse {
	seen := map[string]string{}
	norm := func(s string) string {
		s = requestIDRE.ReplaceAllString(s, "req-ID")
		s = uuidRE.ReplaceAllStringFunc(s, func(u string) string {
			if known[strings.ToLower(u)] {
				return u
			}
			if _, ok := seen[u]; !ok {
				seen[u] = fmt.Sprintf("GENERATED-%d", len(seen)+1)
			}
			return seen[u]
		})
		return timeRE.ReplaceAllString(s, "TIME")
	}
	out := corpusResponse{Status: r.Status, Headers: map[string]string{}, Text: norm(r.Text)}
	for k, v := range r.Headers {
		switch k {
		case "last-modified", "x-openstack-request-id":
			v = "(present)"
		default:
			v = norm(v)
		}
		out.Headers[k] = v
	}
	if len(r.JSON) > 0 {
		out.JSON = json.RawMessage(norm(string(r.JSON)))
	}
	return out
}

// diffResponses lists the differences between the recorded answer want
// and berthd's got, both normalised.
func diffResponses(want, got corpusResponse) []string {
	var out []string
	if want.Status != got.Status {
		out = append(out, fmt.Sprintf("status %d, Placement %d", got.Status, want.Status))
	}
	names := map[string]bool{}
	for k := range want.Headers {
		names[k] = true
	}
	for k := range got.Headers {
		names[k] = true
	}
	var keys []string
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, wok := want.Headers[k]
		g, gok := got.Headers[k]
		switch {
		case wok && !gok:
			out = append(out, fmt.Sprintf("header %s missing, Placement %q", k, w))
		case !wok && gok:
			out = append(out, fmt.Sprintf("header %s %q, Placement sends none", k, g))
		case w != g:
			out = append(out, fmt.Sprintf("header %s %q, Placement %q", k, g, w))
		}
	}
	switch {
	case len(want.JSON) > 0 && len(got.JSON) > 0:
		wv, err1 := decodeOrdered(want.JSON)
		gv, err2 := decodeOrdered(got.JSON)
		if err1 != nil || err2 != nil {
			out = append(out, fmt.Sprintf("body does not decode: %v %v", err1, err2))
			break
		}
		for _, d := range diffOrdered("", wv, gv) {
			out = append(out, "body "+d)
		}
	case len(want.JSON) > 0 || len(got.JSON) > 0 || want.Text != got.Text:
		out = append(out, fmt.Sprintf("body %q, Placement %q", string(got.JSON)+got.Text, string(want.JSON)+want.Text))
	}
	return out
}

// member is one member of a JSON object, in document order.
type member struct {
	key   string
	value any
}

// decodeOrdered decodes JSON keeping object members in order: objects
// become []member, arrays []any, numbers json.Number.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return decodeValue(dec)
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := []member{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{k.(string), v})
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return tok, nil
}

// diffOrdered compares two decodeOrdered values: members by name, then
// their order; arrays element by element.
func diffOrdered(path string, want, got any) []string {
	if path == "" {
		path = "$"
	}
	switch w := want.(type) {
	case []member:
		g, ok := got.([]member)
		if !ok {
			return []string{fmt.Sprintf("%s: %s, Placement %s", path, compact(got), compact(want))}
		}
		var out []string
		gi := map[string]int{}
		for i, m := range g {
			gi[m.key] = i
		}
		wi := map[string]bool{}
		for _, m := range w {
			wi[m.key] = true
			j, ok := gi[m.key]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s missing, Placement %s", path, m.key, compact(m.value)))
				continue
			}
			out = append(out, diffOrdered(path+"."+m.key, m.value, g[j].value)...)
		}
		for _, m := range g {
			if !wi[m.key] {
				out = append(out, fmt.Sprintf("%s.%s %s, Placement has no such member", path, m.key, compact(m.value)))
			}
		}
		if len(out) == 0 && len(w) == len(g) && dataKeyed(w) && !unorderedMembers(path) {
			for i := range w {
				if w[i].key != g[i].key {
					out = append(out, fmt.Sprintf("%s: members in order %s, Placement %s", path, keysOf(g), keysOf(w)))
					break
				}
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %s, Placement %s", path, compact(got), compact(want))}
		}
		if len(w) != len(g) {
			return []string{fmt.Sprintf("%s: %d elements %s, Placement %d %s", path, len(g), compact(got), len(w), compact(want))}
		}
		if unorderedArray(path) {
			w, g = sortedByJSON(w), sortedByJSON(g)
		}
		var out []string
		for i := range w {
			out = append(out, diffOrdered(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if fmt.Sprintf("%T %v", want, want) != fmt.Sprintf("%T %v", got, got) {
			return []string{fmt.Sprintf("%s: %s, Placement %s", path, compact(got), compact(want))}
		}
		return nil
	}
}

// unorderedArrays are the arrays whose order Placement does not define:
// its queries have no ORDER BY, so on PostgreSQL they come in the rows'
// physical order, which an UPDATE changes (a provider whose generation
// was bumped moves behind the others). Replay compares them as sets.
var unorderedArrays = []*regexp.Regexp{
	regexp.MustCompile(`^\$\.(resource_providers|traits|resource_classes|aggregates|allocation_requests)$`),
	regexp.MustCompile(`\.traits$`),
	regexp.MustCompile(`^\$\.allocation_requests\[\d+\]\.mappings\.[^.]*$`),
}

// unorderedMemberPaths are the objects keyed by data whose member order
// Placement does not define either: provider summaries (built from sets),
// and a provider's allocations (rows in physical order, which a rewrite
// of a consumer's allocations changes).
var unorderedMemberPaths = []*regexp.Regexp{
	regexp.MustCompile(`^\$\.provider_summaries(\.[^.]+\.resources)?$`),
	regexp.MustCompile(`^\$\.allocations(\.[^.]+\.resources)? on /resource_providers/`),
}

// corpusRequestPath is the request path of the exchange being compared,
// for unorderedMembers. Replay compares one exchange at a time.
var corpusRequestPath string

func unorderedMembers(path string) bool {
	for _, re := range unorderedMemberPaths {
		if re.MatchString(path) || re.MatchString(path+" on "+corpusRequestPath) {
			return true
		}
	}
	return false
}

// dataKeyed reports whether an object's members are named by data (uuids,
// resource classes, traits), not by a fixed layout: only there is the
// member order something a client sees (a Python client iterates the
// dict in document order); a fixed layout's members are read by name.
func dataKeyed(ms []member) bool {
	for _, m := range ms {
		if !uuidRE.MatchString(m.key) && !classNameRE.MatchString(m.key) {
			return false
		}
	}
	return true
}

var classNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func unorderedArray(path string) bool {
	for _, re := range unorderedArrays {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// sortedByJSON sorts values by their JSON with members sorted by name.
func sortedByJSON(vs []any) []any {
	out := append([]any(nil), vs...)
	sort.SliceStable(out, func(i, j int) bool { return compact(canonical(out[i])) < compact(canonical(out[j])) })
	return out
}

func canonical(v any) any {
	switch x := v.(type) {
	case []member:
		ms := make([]member, len(x))
		for i, m := range x {
			ms[i] = member{m.key, canonical(m.value)}
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
		return ms
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	}
	return v
}

func keysOf(ms []member) string {
	ks := make([]string, len(ms))
	for i, m := range ms {
		ks[i] = m.key
	}
	return "[" + strings.Join(ks, " ") + "]"
}

// compact renders a decodeOrdered value as JSON, members in order.
func compact(v any) string {
	switch x := v.(type) {
	case []member:
		parts := make([]string, len(x))
		for i, m := range x {
			k, _ := json.Marshal(m.key)
			parts[i] = string(k) + ":" + compact(m.value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = compact(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

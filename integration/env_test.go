package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berthd/compose"
	"github.com/berthd/berth/cmd/berthd/daemon"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// The fixture's names. Seeds of FuzzAPI refer to them as @root, @child...
const (
	rootUUID     = "11111111-1111-4111-8111-111111111111" // cn1: VCPU, MEMORY_MB; traits; in aggUUID
	childUUID    = "22222222-2222-4222-8222-222222222222" // cn1's child: CUSTOM_GOLD
	root2UUID    = "33333333-3333-4333-8333-333333333333" // cn2: VCPU, DISK_GB; in aggUUID
	emptyUUID    = "44444444-4444-4444-8444-444444444444" // a provider with nothing
	unknownUUID  = "99999999-9999-4999-8999-999999999999" // no such provider or consumer
	aggUUID      = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	consumerUUID = "cccccccc-cccc-4ccc-8ccc-cccccccccccc" // holds resources on cn1 and its child
	customClass  = "CUSTOM_GOLD"
	customTrait  = "CUSTOM_FAST"
	latest       = "placement latest"
)

// fixture is the state every in-process test starts from, built through
// the API at the latest microversion.
var fixture = []struct {
	method, path string
	body         string
	want         int
}{
	{"PUT", "/resource_classes/" + customClass, "", 201},
	{"PUT", "/traits/" + customTrait, "", 201},
	{"POST", "/resource_providers", `{"name": "cn1", "uuid": "` + rootUUID + `"}`, 200},
	{"POST", "/resource_providers", `{"name": "cn1_numa0", "uuid": "` + childUUID + `", "parent_provider_uuid": "` + rootUUID + `"}`, 200},
	{"POST", "/resource_providers", `{"name": "cn2", "uuid": "` + root2UUID + `"}`, 200},
	{"POST", "/resource_providers", `{"name": "empty", "uuid": "` + emptyUUID + `"}`, 200},
	{"PUT", "/resource_providers/" + rootUUID + "/inventories", `{"resource_provider_generation": 0, "inventories": {
		"VCPU": {"total": 8, "allocation_ratio": 2.0}, "MEMORY_MB": {"total": 4096, "max_unit": 4096, "step_size": 256}}}`, 200},
	{"PUT", "/resource_providers/" + childUUID + "/inventories", `{"resource_provider_generation": 0, "inventories": {
		"CUSTOM_GOLD": {"total": 4}}}`, 200},
	{"PUT", "/resource_providers/" + root2UUID + "/inventories", `{"resource_provider_generation": 0, "inventories": {
		"VCPU": {"total": 4}, "DISK_GB": {"total": 100, "reserved": 10}}}`, 200},
	{"PUT", "/resource_providers/" + rootUUID + "/traits", `{"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX", "` + customTrait + `"]}`, 200},
	{"PUT", "/resource_providers/" + rootUUID + "/aggregates", `{"resource_provider_generation": 2, "aggregates": ["` + aggUUID + `"]}`, 200},
	{"PUT", "/resource_providers/" + root2UUID + "/aggregates", `{"resource_provider_generation": 1, "aggregates": ["` + aggUUID + `"]}`, 200},
	{"PUT", "/allocations/" + consumerUUID, `{"allocations": {
		"` + rootUUID + `": {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
		"` + childUUID + `": {"resources": {"CUSTOM_GOLD": 1}}},
		"project_id": "proj", "user_id": "user", "consumer_generation": null, "consumer_type": "INSTANCE"}`, 204},
}

// env is an API server over its own ledger database, served in process.
type env struct {
	dbURL string
	store *ledger.Store
	api   *httpapi.Server
	fp    *ledgertest.Fingerprinter
	ownFP bool // close fp with the env
	log   *errorLog
}

// openEnv opens a store and an API server on the database at dbURL,
// and a fingerprinter unless fp is one already open on it.
func openEnv(ctx context.Context, dbURL string, fp *ledgertest.Fingerprinter) (*env, error) {
	quiet := slog.New(slog.DiscardHandler)
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4, Logger: quiet})
	if err != nil {
		return nil, err
	}
	log := &errorLog{}
	api, _, err := daemon.NewAPI(httpapi.Config{}, compose.Config{Store: store, Logger: slog.New(log)})
	if err != nil {
		store.Close()
		return nil, err
	}
	ownFP := fp == nil
	if ownFP {
		if fp, err = ledgertest.OpenFingerprinter(ctx, dbURL); err != nil {
			store.Close()
			return nil, err
		}
	}
	return &env{dbURL: dbURL, store: store, api: api, fp: fp, ownFP: ownFP, log: log}, nil
}

func (e *env) close() {
	if e == nil {
		return
	}
	if e.ownFP {
		e.fp.Close()
	}
	e.store.Close()
}

// seed builds the fixture.
func (e *env) seed() error {
	for _, step := range fixture {
		var body []byte
		if step.body != "" {
			body = []byte(step.body)
		}
		r := e.do(step.method, step.path, latest, body)
		if r.status != step.want {
			return fmt.Errorf("fixture: %s %s: %d %s", step.method, step.path, r.status, r.body)
		}
	}
	return nil
}

// newEnv gives a test its own database holding the fixture.
func newEnv(t testing.TB) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := openEnv(ctx, ledgertest.NewDB(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	if err := e.seed(); err != nil {
		t.Fatal(err)
	}
	return e
}

// fingerprint reads the database's fingerprint.
func (e *env) fingerprint(t testing.TB) ledgertest.Fingerprint {
	t.Helper()
	return e.fp.MustTake(t)
}

// response is an answer of the API.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request as the admin, at microversion header version
// (none if empty), with a JSON body unless body is nil.
func (e *env) do(method, target, version string, body []byte) response {
	h := http.Header{}
	if version != "" {
		h.Set("OpenStack-API-Version", version)
	}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return e.doHeaders(method, target, h, body)
}

// doHeaders sends one request with these headers; X-Auth-Token (admin)
// and Accept (JSON) unless h sets them (to "" for none).
func (e *env) doHeaders(method, target string, h http.Header, body []byte) response {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if body == nil {
		req = httptest.NewRequest(method, target, nil)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Accept", "application/json")
	for k, vs := range h {
		req.Header.Del(k)
		for _, v := range vs {
			if v != "" {
				req.Header.Add(k, v)
			}
		}
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// checkErrorBody checks that an error response is in Placement's format:
// one error whose status is the response's, with title, detail and the
// request id, and a code from microversion 1.23 on. HEAD answers carry
// no body.
func checkErrorBody(method string, r response) error {
	if method == http.MethodHead {
		if len(r.body) != 0 {
			return fmt.Errorf("HEAD error with a body: %q", r.body)
		}
		return nil
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error Content-Type %q", ct)
	}
	if r.status == http.StatusUnauthorized {
		// Placement's noauth2 middleware refuses in webob's own format.
		var w struct{ Message, Code, Title string }
		if json.Unmarshal(r.body, &w) == nil && w.Code == "401 Unauthorized" && w.Title == "Unauthorized" && w.Message != "" {
			return nil
		}
	}
	var doc struct {
		Errors []map[string]any `json:"errors"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("error body is not JSON: %v: %q", err, r.body)
	}
	if len(doc.Errors) != 1 {
		return fmt.Errorf("error body has %d errors: %s", len(doc.Errors), r.body)
	}
	item := doc.Errors[0]
	if st, _ := item["status"].(json.Number); st.String() != fmt.Sprint(r.status) {
		return fmt.Errorf("error status %v in a %d: %s", item["status"], r.status, r.body)
	}
	if title, _ := item["title"].(string); title != http.StatusText(r.status) {
		return fmt.Errorf("error title %q in a %d", item["title"], r.status)
	}
	if detail, _ := item["detail"].(string); detail == "" {
		return fmt.Errorf("error without detail: %s", r.body)
	}
	if id, _ := item["request_id"].(string); id == "" || id != r.header.Get("X-Openstack-Request-Id") {
		return fmt.Errorf("error request_id %q, header %q", item["request_id"], r.header.Get("X-Openstack-Request-Id"))
	}
	code, hasCode := item["code"].(string)
	wantCode := negotiatedMinor(r) >= 23
	switch {
	case wantCode && (!hasCode || code == ""):
		return fmt.Errorf("error code %v at microversion 1.%d: %s", item["code"], negotiatedMinor(r), r.body)
	case !wantCode && item["code"] != nil:
		return fmt.Errorf("error code %v at microversion 1.%d: %s", item["code"], negotiatedMinor(r), r.body)
	}
	for k := range item {
		switch {
		case k == "status", k == "title", k == "detail", k == "request_id", k == "code":
		case (k == "max_version" || k == "min_version") && r.status == http.StatusNotAcceptable:
			// As Placement: a refused microversion says which exist.
		case k == "steps" && (code == "berth.no_valid_host" || code == "berth.claim_conflict"):
			// Berth's extension: a claim that placed nothing says why.
			if _, ok := item[k].([]any); !ok {
				return fmt.Errorf("error steps are not a list: %s", r.body)
			}
		default:
			return fmt.Errorf("error item has an unknown key %q: %s", k, r.body)
		}
	}
	return nil
}

// negotiatedMinor is the microversion the server answered at.
func negotiatedMinor(r response) int {
	var major, minor int
	if _, err := fmt.Sscanf(r.header.Get("OpenStack-API-Version"), "placement %d.%d", &major, &minor); err != nil {
		return -1
	}
	return minor
}

// errorLog is a slog handler that keeps the messages of error records: the
// server logs every 5xx with its cause.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler               { return l }
func (l *errorLog) WithGroup(string) slog.Handler                    { return l }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, b.String())
	l.mu.Unlock()
	return nil
}

// take returns and forgets the messages logged so far.
func (l *errorLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.msgs
	l.msgs = nil
	return out
}

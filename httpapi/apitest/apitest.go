package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/claims/cloud"
	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/claims/shadow"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/scheduler"
)

// Components are the components an API server serves (the fields of
// httpapi.Config of the same names).
type Components struct {
	Authz   *authz.Enforcer
	Limits  quota.Source
	Cloud   *cloud.View
	Catalog *catalog.Catalog
	Claimer *claims.Claimer
}

// Wire builds the components over store as cmd/berthd/compose.Build
// wires them: sched is the --scheduler-policy fallback (nil for none),
// az the policy enforcer (nil: the admin rule set), cc the claimer's
// configuration, log the components' log (nil: slog's default).
func Wire(store *ledger.Store, sched *scheduler.Policy, az *authz.Enforcer, cc claims.Config, log *slog.Logger) (Components, error) {
	clog := log // the components' log: lines logged with a request's context carry its id
	if clog == nil {
		clog = slog.Default()
	}
	clog = slog.New(instrument.LogHandler(clog.Handler()))
	c := Components{Authz: az}
	if c.Authz == nil {
		var err error
		if c.Authz, err = authz.New(authz.SetAdmin, nil); err != nil {
			return c, err
		}
	}
	c.Limits, c.Cloud = quota.Stored{Store: store}, cloud.New(store)
	// The shadows judge every claim, however slow the machine (no budget).
	shadows := shadow.New(shadow.Options{Store: store, Cloud: c.Cloud, Logger: clog, Budget: 1})
	c.Catalog = catalog.New(catalog.Options{Store: store, Logger: clog, Fallback: sched, Shadows: shadows})
	var err error
	c.Claimer, err = claims.New(claims.Deps{Store: store, Policies: c.Catalog, Policy: sched,
		Cloud: c.Cloud, Limits: c.Limits, Logger: clog, Shadows: shadows}, cc)
	return c, err
}

// Call sends a JSON request as token at the latest microversion and
// returns the status and the body decoded as JSON (failing t when it is
// not JSON).
func Call(t *testing.T, s http.Handler, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, rec.Code, rec.Body.String())
	}
	return rec.Code, out
}

// ErrorDetail returns the code and detail of an error body as Call
// decodes it.
func ErrorDetail(body map[string]any) (code, detail string) {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return "", ""
	}
	e := errs[0].(map[string]any)
	code, _ = e["code"].(string)
	detail, _ = e["detail"].(string)
	return code, detail
}

// Get serves one unauthenticated GET without an OpenStack-API-Version
// header, as a probe or a Prometheus scraper sends it.
func Get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

// Post sends a body of contentType as admin at the latest microversion.
func Post(t *testing.T, s http.Handler, path, contentType string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("OpenStack-API-Version", "placement latest")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// Detail is the detail of the one error of Placement's error body rec
// holds, failing t when it holds none.
func Detail(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var doc struct {
		Errors []struct {
			Detail string `json:"detail"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Errors) != 1 {
		t.Fatalf("%d %s: not Placement's error format (%v)", rec.Code, rec.Body.String(), err)
	}
	return doc.Errors[0].Detail
}

// CheckPlacementError checks that resp, with body, is Placement's JSON
// error of status whose detail contains detail, and names no Go type.
func CheckPlacementError(t *testing.T, resp *http.Response, body []byte, status int, detail string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var doc struct {
		Errors []struct {
			Status    int    `json:"status"`
			Title     string `json:"title"`
			Detail    string `json:"detail"`
			Code      string `json:"code"`
			RequestID string `json:"request_id"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) != 1 {
		t.Fatalf("not a Placement error body (%v): %s", err, body)
	}
	e := doc.Errors[0]
	if e.Status != status || e.Title != http.StatusText(status) || e.Code != "placement.undefined_code" ||
		!strings.HasPrefix(e.RequestID, "req-") || !strings.Contains(e.Detail, detail) {
		t.Errorf("error %+v, want status %d and a detail with %q", e, status, detail)
	}
	for _, goWords := range []string{"json:", "Go ", "struct", "int64", "strconv", "http:"} {
		if strings.Contains(e.Detail, goWords) {
			t.Errorf("detail %q has Go's words %q", e.Detail, goWords)
		}
	}
}

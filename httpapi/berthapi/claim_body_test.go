package berthapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
)

// claimOwner is the fields a claim must name: its consumer and owner.
const claimOwner = `"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p", "user_id": "u"`

// claimRefusals are bodies of POST /claims refused before the claimer is
// called, with the whole 400 each gets: one for every way the body can
// be malformed, fail the claim schema, not fit the claim's typed body,
// or hold a selection or lease the claim refuses.
var claimRefusals = []string{
	`{`,
	`{"consumer_uuid": }`,
	`{` + claimOwner + `,}`,
	`{` + claimOwner + `} x`,
	`[]`,
	`null`,
	`{}`,
	`{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "user_id": "u"}`,
	`{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p"}`,
	`{"consumer_uuid": "nope", "project_id": "p", "user_id": "u"}`,
	`{"consumer_uuid": 7, "project_id": "p", "user_id": "u"}`,
	`{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "", "user_id": "u"}`,
	`{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": null, "user_id": "u"}`,
	`{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p", "user_id": "` + string(bytes.Repeat([]byte("u"), 256)) + `"}`,
	`{` + claimOwner + `, "name": 1}`,
	`{` + claimOwner + `, "consumer_type": "lower"}`,
	`{` + claimOwner + `, "consumer_type": ""}`,
	`{` + claimOwner + `, "consumer_generation": "1"}`,
	`{` + claimOwner + `, "consumer_generation": 1.5}`,
	`{` + claimOwner + `, "consumer_generation": 99999999999999999999}`,
	`{` + claimOwner + `, "resources": {}}`,
	`{` + claimOwner + `, "resources": {"VCPU": "1"}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1.5}}`,
	`{` + claimOwner + `, "resources": []}`,
	`{` + claimOwner + `, "resources": {"VCPU": -1}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "required": "A"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "required": [""]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "member_of": [1]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "in_tree": ""}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "root_required": [null]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "same_subtree": {}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "group_policy": "all"}`,
	`{` + claimOwner + `, "groups": {"a b": {}}}`,
	`{` + claimOwner + `, "groups": {"a": {"x": 1}}}`,
	`{` + claimOwner + `, "groups": {"a": []}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "exclude_providers": [""]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "target": 5}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "policy": ""}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "reason": "reschedule2"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "properties": []}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "instance": {"ephemeral": 1}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "keys": [{"name": "k"}]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "keys": [{"name": "k", "value": 1, "x": 2}]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "alternates": -1}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "alternates": 1001}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "alternates": 2.0}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "max_attempts": 0}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "dry_run": "yes"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "priority": 1e3}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "preemptible": null}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "lease_seconds": "60"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "lease_seconds": 1.5}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "colour": "red"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "migration_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa"}`,
	`{` + claimOwner + `, "resources": {"VCPU": NaN}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "properties": {"x": Infinity}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "alternates": 99999999999999999999}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "max_attempts": 51}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "priority": 1000000001}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "priority": -1000000001}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "lease_seconds": {}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "lease_seconds": 99999999999999999999}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "lease_seconds": true}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1, "VCPU": "x"}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "dry_run": true, "dry_run": 1}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "name": "` + string(bytes.Repeat([]byte("é"), 256)) + `"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "project_id": "\u00e9` + string(bytes.Repeat([]byte("p"), 255)) + `"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "consumer_type": "A\n"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "consumer_type": "` + string(bytes.Repeat([]byte("A"), 256)) + `"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "consumer_uuid": "c0a8e4e61d7b4b0e9c395f4b4fd1c1a"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "user_id": "\ud800"}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "properties": {"a": 1e400}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "keys": [{"name": "k", "value": "1"}]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "instance": {"config": {"a": 1}}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 01}}`,
	`{` + claimOwner + `, "resources": {"VCPU": -}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "dry_run": tru}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "exclude_providers": ["a", 1]}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "groups": {"` + string(bytes.Repeat([]byte("g"), 65)) + `": {}}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "groups": {"g": {"resources": {"VCPU": 1.0}}}}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "groups": {"g": {"in_tree": 1}}}`,
	` {` + claimOwner + `, "resources": {"VCPU": 1}, "target": ""} `,
	"{" + claimOwner + ",\t\"resources\": {\"VCPU\": 1},\r\n\"reason\": null}",
	`{"consumer_uuid": "C0A8E4E6-1D7B-4B0E-9C39-5F4B4FD1C1AA", "project_id": "p", "user_id": "u", "resources": {"VCPU": 1}, "in_tree": null}`,
}

// TestClaimBodyRefusals: each refused body of POST /claims gets its 400
// with exactly the words of testdata/claim_refusals.json, however the body
// is decoded.
func TestClaimBodyRefusals(t *testing.T) {
	raw, err := os.ReadFile("testdata/claim_refusals.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []claimRefusal
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(claimRefusals) {
		t.Fatalf("%d answers for %d bodies", len(want), len(claimRefusals))
	}
	h := &Claims{Bodies: wire.NewBodies(1<<20, admission.NewBodyBudget(0)), Query: placement.CandidateQuery{Max: engine.DefaultMaxCandidates}}
	for i, body := range claimRefusals {
		if got := createRefusal(t, h, body); got != want[i] || got.Status != http.StatusBadRequest {
			t.Errorf("%s:\ngot  %+v\nwant %+v", body, got, want[i])
		}
	}
}

// claimRefusal is the 400 a body of claimRefusals gets.
type claimRefusal struct {
	Body   string `json:"body"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Msg    string `json:"msg"`
}

// createRefusal is what Claims.Create answers body with, before any claim.
func createRefusal(t *testing.T, h *Claims, body string) claimRefusal {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/claims", bytes.NewReader([]byte(body)))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	err := h.Create(echo.New().NewContext(req, httptest.NewRecorder()))
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("%s: %v, want a refusal", body, err)
	}
	return claimRefusal{Body: body, Status: we.Status, Code: we.Code, Msg: we.Msg}
}

// claimBodies are valid claims, and bodies near them, that
// decodeClaimBody must decode as wire does or leave to it.
var claimBodies = []string{
	`{` + claimOwner + `}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 0}, "alternates": 0, "consumer_generation": null}`,
	`{` + claimOwner + `, "resources": {"VCPU": 1}, "consumer_type": "MIGRATION_2", "consumer_generation": 3, "name": ""}`,
	`{` + claimOwner + `, "resources": {"VCPU": -0}, "consumer_generation": -9223372036854775808}`,
	`{` + claimOwner + `, "resources": {"VCPU": 999999999999999999}, "consumer_generation": 9223372036854775807}`,
	`{` + claimOwner + `, "resources": {"": 1}, "required": [], "member_of": ["in:a,b"], "in_tree": "t", "root_required": ["!A"], "same_subtree": []}`,
	`{` + claimOwner + `, "groups": {}, "group_policy": "isolate", "exclude_providers": ["a", "b"], "target": "t", "policy": "p", "reason": "new"}`,
	`{` + claimOwner + `, "groups": {"b": {}, "a-_1": {"resources": {"VCPU": 1}, "required": ["X"], "member_of": [], "in_tree": "x"}}}`,
	`{` + claimOwner + `, "groups": {"b": {"resources": {"VCPU": 1}, "resources": {"DISK_GB": 1}}}}`,
	`{` + claimOwner + `, "groups": {"b": {}, "b": {"required": ["X"]}}}`,
	`{` + claimOwner + `, "properties": {}, "instance": {}}`,
	`{` + claimOwner + `, "properties": {"a": [1, 2.5, -3e2, 1E-2, true, false, null, "s", {"x": []}], "b": {"c": {"d": {}}}}}`,
	`{` + claimOwner + `, "properties": {"a": 1, "a": 2}}`,
	`{` + claimOwner + `, "properties": {"a": "\u00e9"}}`,
	`{` + claimOwner + `, "instance": {"name": "vm", "type": "container", "config": {"limits.cpu": "4"}, "devices": {"root": {"path": "/"}},
		"profiles": ["default"], "source": {"type": "image", "n": 1}, "ephemeral": true, "stateful": false, "start": true, "x-kept": [1, {"a": null}]}}`,
	`{` + claimOwner + `, "instance": {"config": {"limits.cpu": 4}}}`,
	`{` + claimOwner + `, "instance": {"devices": {"root": "disk"}}}`,
	`{` + claimOwner + `, "instance": {"profiles": [1]}}`,
	`{` + claimOwner + `, "instance": {"name": null}}`,
	`{` + claimOwner + `, "max_attempts": 50, "dry_run": false, "priority": -1000000000, "preemptible": true, "lease_seconds": 3600}`,
	`{` + claimOwner + `, "lease_seconds": null}`,
	`{` + claimOwner + `, "lease_seconds": [1, {"a": "b"}]}`,
	`{` + claimOwner + `, "lease_seconds": 1e2}`,
	`{` + claimOwner + `, "keys": [{"name": "k", "value": 1, "weight": 2, "system": true}]}`,
	`{` + claimOwner + `, "alternates": 1000, "alternates": 1}`,
	`{` + claimOwner + `, "name": "a\"b"}`,
	`{` + claimOwner + `, "name": "tab	in"}`,
	`{` + claimOwner + `, "name": "` + string(bytes.Repeat([]byte("n"), 255)) + `"}`,
	`{` + claimOwner + `, "consumer_uuid": "{c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa}"}`,
	`{` + claimOwner + `, "consumer_uuid": "urn:uuid:c0a8e4e61d7b4b0e9c395f4b4fd1c1aa"}`,
	"\n\t{" + claimOwner + "}\r\n ",
	`{"user_id": "u", "project_id": "p", "consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "resources": {"VCPU": 1}}`,
	`{` + claimOwner + `, "Resources": {"VCPU": 1}}`,
}

// TestClaimBodyDecodedAsBefore: for every body, valid or not, that
// decodeClaimBody takes, wire's path (parse, schema, encoding/json)
// accepts it and decodes the same claim.
func TestClaimBodyDecodedAsBefore(t *testing.T) {
	taken := 0
	for _, body := range append(append(slices.Clone(claimBodies), claimRefusals...), claimSelectionBodies...) {
		if checkClaimBody(t, []byte(body)) {
			taken++
		}
	}
	// Most valid bodies take the one pass (the rest are left to wire on
	// purpose: escapes, "keys", repeated members, floats where an
	// integer goes).
	if taken < len(claimBodies)/2+len(claimSelectionBodies)/2 {
		t.Errorf("only %d bodies decoded in one pass", taken)
	}
}

// checkClaimBody fails t if decodeClaimBody takes body and wire's path
// refuses it or decodes another claim; it reports whether it took it.
func checkClaimBody(t *testing.T, body []byte) bool {
	t.Helper()
	got, ok := decodeClaimBody(body)
	if !ok {
		return false
	}
	if err := wire.CheckJSON(body); err != nil {
		return false // refused before decoding
	}
	var want claimBody
	if err := wire.DecodeJSON(body, claimSchema, &want); err != nil {
		t.Fatalf("%s: decoded in one pass, but wire refuses it: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\none pass %#v\nwire     %#v", body, got, want)
	}
	return true
}

// FuzzClaimBody: decodeClaimBody takes only what wire's path accepts,
// and decodes it the same.
func FuzzClaimBody(f *testing.F) {
	for _, b := range append(append(slices.Clone(claimBodies), claimRefusals...), claimSelectionBodies...) {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkClaimBody(t, body)
	})
}

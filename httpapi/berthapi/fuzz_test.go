package berthapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
)

// This file holds the fuzz target for the bodies of the claim routes:
// each through the decoding its handler does before it calls the
// claimer. `go test` replays its seeds in testdata/fuzz as regression
// tests; run it for longer with
//
//	go test ./httpapi/berthapi -run '^$' -fuzz FuzzDecodeClaim -fuzztime 60s -parallel 1
//
// The bodies of Placement's routes have theirs in package placement; the
// end-to-end target, FuzzAPI, is in package integration.

// bodyTarget is one request body parser: the schema and the decoding a
// handler does before it calls the claimer.
type bodyTarget struct {
	name  string
	parse func(body []byte) error
}

// bodyTargets lists every claim body the API parses, each with the
// parsing its handler does. Append new ones: the seed corpus refers to
// them by index.
func bodyTargets() []bodyTarget {
	var targets []bodyTarget
	for _, cs := range []struct {
		name   string
		schema *jsonschema.Schema
		kind   int
	}{{"claims POST", claimSchema, claimKind}, {"claims reschedule", rescheduleSchema, rescheduleKind}, {"claims move", moveSchema, moveKind}} {
		targets = append(targets, bodyTarget{cs.name, func(body []byte) error {
			h := &Claims{Bodies: wire.NewBodies(32<<20, admission.NewBodyBudget(0)), Query: placement.CandidateQuery{Max: engine.DefaultMaxCandidates}}
			req := httptest.NewRequest(http.MethodPost, "/claims", bytes.NewReader(body))
			req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
			c := echo.New().NewContext(req, httptest.NewRecorder())
			c.SetParamNames("consumer_uuid")
			c.SetParamValues("c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa")
			_, _, err := h.params(c, cs.schema, cs.kind)
			return err
		}})
	}
	targets = append(targets, bodyTarget{"claims move confirm/revert", func(body []byte) error {
		var b struct {
			MigrationUUID string `json:"migration_uuid"`
		}
		return wire.DecodeJSON(body, moveEndSchema, &b)
	}})
	return targets
}

// checkBadRequest fails t unless err is nil or a *wire.Error with status
// 400 and a message, which is all the decoding may return.
func checkBadRequest(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e, ok := err.(*wire.Error)
	if !ok {
		t.Fatalf("%s: error %T %v, want *Error", what, err, err)
	}
	if e.Status != http.StatusBadRequest || e.Msg == "" {
		t.Fatalf("%s: error %d %q, want a 400 with a message", what, e.Status, e.Msg)
	}
}

// FuzzDecodeClaim feeds arbitrary bytes to every claim body parser (the
// schema, the decoding into the handler's type, and what the handler
// makes of it before calling the claimer): none may panic, and each must
// accept the body or refuse it with a 400 whose message encodes as JSON.
// The first input picks the parser (bodyTargets, by index).
func FuzzDecodeClaim(f *testing.F) {
	targets := bodyTargets()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		target := targets[int(which)%len(targets)]
		err := target.parse(body)
		checkBadRequest(t, target.name, err)
		if err != nil {
			// The message is rendered into a JSON error body.
			if _, merr := json.Marshal(err.Error()); merr != nil {
				t.Fatalf("%s: message does not encode: %v", target.name, merr)
			}
		}
	})
}

package berthapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
)

// BenchmarkClaimDecode measures what POST /claims costs before the
// claimer is called: the body read and bounded (wire), decoded, and read
// into claims.Params, its selection checked as GET /allocation_candidates
// checks its query (placement).
func BenchmarkClaimDecode(b *testing.B) {
	body := []byte(`{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p", "user_id": "u",
		"resources": {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 40}, "required": ["HW_CPU_X86_AVX2", "!CUSTOM_SLOW"],
		"member_of": ["in:` + aggA + `,` + aggB + `"],
		"groups": {"nic": {"resources": {"SRIOV_NET_VF": 1}, "required": ["CUSTOM_PHYSNET_A"]}}, "group_policy": "none",
		"name": "vm-1", "lease_seconds": 3600, "instance": {"name": "vm-1", "type": "container", "config": {"limits.cpu": "4"}}}`)
	h := &Claims{Bodies: wire.NewBodies(32<<20, admission.NewBodyBudget(0)), Query: placement.CandidateQuery{Max: engine.DefaultMaxCandidates}}
	e := echo.New()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/claims", bytes.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c := e.NewContext(req, httptest.NewRecorder())
		body, err := h.Bodies.Read(c)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := h.paramsFrom("", body, claimSchema, claimKind); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimDecodeLoad is BenchmarkClaimDecode for the body the load
// tool (berth bench) sends: the owner, a new consumer and three classes.
func BenchmarkClaimDecodeLoad(b *testing.B) {
	body := []byte(`{"consumer_uuid":"c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa","project_id":"bench-project","user_id":"bench-user",` +
		`"consumer_generation":null,"resources":{"DISK_GB":10,"MEMORY_MB":2048,"VCPU":2}}`)
	h := &Claims{Bodies: wire.NewBodies(32<<20, admission.NewBodyBudget(0)), Query: placement.CandidateQuery{Max: engine.DefaultMaxCandidates}}
	e := echo.New()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/claims", bytes.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c := e.NewContext(req, httptest.NewRecorder())
		body, err := h.Bodies.Read(c)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := h.paramsFrom("", body, claimSchema, claimKind); err != nil {
			b.Fatal(err)
		}
	}
}

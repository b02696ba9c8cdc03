package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/ledger/ledgertest"
)

// TestOpenAPITraffic: a scheduler's and an operator's calls, sent with
// the public client to a server over a real database; every request and
// every answer (refusals included) validates against the description.
func TestOpenAPITraffic(t *testing.T) {
	s, err := build(Config{}, ledgertest.NewStore(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := newOpenAPIValidator(t, s.openapi)
	var mu sync.Mutex
	checked := map[string]int{} // status class -> exchanges validated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())

		req := r.Clone(context.Background())
		req.Body = io.NopCloser(bytes.NewReader(body))
		resp := rec.Result()
		// A refused request need not match the description: only its
		// answer must.
		validate := v.ValidateHttpRequestResponse
		if rec.Code >= 400 {
			validate = v.ValidateHttpResponse
		}
		if ok, errs := validate(req, resp); !ok {
			t.Errorf("%s %s -> %d %s:%s", r.Method, r.URL, rec.Code, rec.Body.String(), validationErrors(errs))
		}
		mu.Lock()
		checked[resp.Status[:1]+"xx"]++
		mu.Unlock()
	}))
	defer srv.Close()

	ctx := context.Background()
	c := client.New(client.Config{URL: srv.URL, Token: "admin"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var hosts []string
	var gen int64 // compute-1's generation
	for _, name := range []string{"compute-1", "compute-2"} {
		p, err := c.CreateProvider(ctx, name, "", "")
		must(err)
		inv, err := c.SetInventories(ctx, p.UUID, client.Inventories{ResourceProviderGeneration: p.Generation,
			Inventories: map[string]client.Inventory{"VCPU": {Total: 16, AllocationRatio: 2}, "MEMORY_MB": {Total: 65536}}})
		must(err)
		if hosts = append(hosts, p.UUID); len(hosts) == 1 {
			gen = inv.ResourceProviderGeneration
		}
	}
	_, err = c.JSON(ctx, http.MethodPut, "/resource_providers/"+hosts[0]+"/traits",
		map[string]any{"traits": []string{"HW_CPU_X86_AVX2"}, "resource_provider_generation": gen}, nil)
	must(err)
	_, err = c.Providers(ctx, nil)
	must(err)
	_, err = c.Provider(ctx, hosts[0])
	must(err)
	_, err = c.Inventories(ctx, hosts[0])
	must(err)
	_, err = c.AllocationCandidates(ctx, url.Values{"resources": {"VCPU:2,MEMORY_MB:1024"}, "required": {"HW_CPU_X86_AVX2"}})
	must(err)

	consumer := "c0000000-0000-4000-8000-000000000001"
	lease := int64(300)
	_, err = c.Claim(ctx, client.ClaimRequest{ConsumerUUID: consumer, ProjectID: "demo", UserID: "alice", Name: "web-1",
		Resources: map[string]int64{"VCPU": 2, "MEMORY_MB": 4096}, LeaseSeconds: &lease})
	must(err)
	_, err = c.StoredClaim(ctx, consumer)
	must(err)
	_, err = c.RenewLease(ctx, consumer, 600)
	must(err)
	_, err = c.ConfirmLease(ctx, consumer)
	must(err)
	_, err = c.Claim(ctx, client.ClaimRequest{ConsumerUUID: "c0000000-0000-4000-8000-000000000002", ProjectID: "demo",
		UserID: "alice", Resources: map[string]int64{"VCPU": 1}, DryRun: true})
	must(err)
	_, err = c.Reschedule(ctx, consumer, client.ClaimRequest{})
	must(err)
	_, err = c.Move(ctx, consumer, client.ClaimRequest{MigrationUUID: "d0000000-0000-4000-8000-000000000001", Reason: "relocation"})
	must(err)
	_, err = c.ConfirmMove(ctx, consumer, "")
	must(err)
	_, err = c.Allocations(ctx, consumer)
	must(err)
	_, err = c.ProviderUsages(ctx, hosts[0])
	must(err)
	_, err = c.ProjectUsages(ctx, "demo", "")
	must(err)
	_, err = c.JSON(ctx, http.MethodGet, "/resource_providers/"+hosts[0]+"/allocations", nil, nil)
	must(err)
	_, err = c.Capacity(ctx, url.Values{"resources": {"VCPU:4"}})
	must(err)

	must(c.Admin().SetLimits(ctx, "demo", map[string]int64{"VCPU": 64}))
	_, err = c.Admin().Limits(ctx, "demo")
	must(err)
	_, err = c.Admin().AllLimits(ctx)
	must(err)
	must(c.Admin().SetRegisteredLimits(ctx, map[string]int64{"VCPU": 32}))
	_, err = c.Admin().RegisteredLimits(ctx)
	must(err)
	must(c.Admin().DeleteLimits(ctx, "demo"))
	_, err = c.Admin().Audit(ctx, client.AuditParams{Limit: 10})
	must(err)
	_, err = c.Admin().Policies(ctx)
	must(err)
	_, err = c.JSON(ctx, http.MethodGet, "/policy_units", nil, nil)
	must(err)
	must(c.Admin().PutScriptlet(ctx, "prefer", "def instance_placement(request, candidate_members):\n    return None\n"))
	_, err = c.Admin().Scriptlets(ctx)
	must(err)
	_, err = c.Admin().ScriptletSource(ctx, "prefer")
	must(err)
	_, err = c.JSON(ctx, http.MethodPost, "/scriptlets/prefer/test", map[string]any{"resources": map[string]int{"VCPU": 1}}, nil)
	must(err)
	_, err = c.Evacuate(ctx, hosts[1], client.EvacuateRequest{DryRun: true})
	must(err)
	_, err = c.Evacuate(ctx, hosts[1], client.EvacuateRequest{Confirm: true})
	must(err)
	_, err = c.Restore(ctx, hosts[1])
	must(err)
	_, err = c.JSON(ctx, http.MethodGet, "/config", nil, nil)
	must(err)
	_, err = c.Do(ctx, http.MethodGet, "/openapi.json", nil, "")
	must(err)

	// A gang in one aggregate, a dry run first; then one too large for it.
	const agg = "4ac00000-0000-4000-8000-000000000001"
	for _, h := range hosts {
		p, err := c.Provider(ctx, h)
		must(err)
		_, err = c.JSON(ctx, http.MethodPut, "/resource_providers/"+h+"/aggregates",
			map[string]any{"aggregates": []string{agg}, "resource_provider_generation": p.Generation}, nil)
		must(err)
	}
	gang := client.GangRequest{ProjectID: "demo", UserID: "alice", Spread: "hosts",
		Domain: &client.GangDomainRequest{MemberOf: []string{agg}}, DryRun: true,
		Members: []client.GangMember{
			{ConsumerUUID: "6a000000-0000-4000-8000-000000000001", Resources: map[string]int64{"VCPU": 1}},
			{ConsumerUUID: "6a000000-0000-4000-8000-000000000002", Resources: map[string]int64{"VCPU": 1}}}}
	_, err = c.ClaimGang(ctx, gang)
	must(err)
	gang.DryRun = false
	placed, err := c.ClaimGang(ctx, gang)
	must(err)
	if len(placed.Members) != 2 || placed.Domain == nil || placed.Domain.MemberOf != agg {
		t.Errorf("gang placed as %+v", placed)
	}
	_, err = c.StoredClaim(ctx, gang.Members[0].ConsumerUUID)
	must(err)
	gang.Members = append(gang.Members, client.GangMember{ConsumerUUID: "6a000000-0000-4000-8000-000000000003",
		Resources: map[string]int64{"VCPU": 1}})
	for i := range gang.Members {
		gang.Members[i].ConsumerUUID = strings.Replace(gang.Members[i].ConsumerUUID, "6a", "6b", 1)
	}
	if _, err := c.ClaimGang(ctx, gang); !client.IsStatus(err, 409) {
		t.Errorf("a gang of three on two hosts, spread: %v", err)
	}

	// Spot claims on both hosts, then a claim of higher priority that
	// displaces one of them; the victim's stored claim and the feed.
	for i, u := range []string{"5b000000-0000-4000-8000-000000000001", "5b000000-0000-4000-8000-000000000002"} {
		_, err = c.Claim(ctx, client.ClaimRequest{ConsumerUUID: u, ProjectID: "spot", UserID: "batch",
			Resources: map[string]int64{"MEMORY_MB": 60000}, Preemptible: true, Priority: int64(-i)})
		must(err)
	}
	won, err := c.Claim(ctx, client.ClaimRequest{ConsumerUUID: "0d000000-0000-4000-8000-000000000001", ProjectID: "demo",
		UserID: "alice", Resources: map[string]int64{"MEMORY_MB": 30000}, Priority: 10})
	must(err)
	if len(won.Preempted) != 1 {
		t.Fatalf("preempted %+v, want one victim", won.Preempted)
	}
	victim, err := c.StoredClaim(ctx, won.Preempted[0].ConsumerUUID)
	must(err)
	if victim.State != "preempted" || victim.PreemptedBy == nil {
		t.Errorf("victim's stored claim %+v", victim)
	}
	feed, err := c.Preemptions(ctx, time.Time{}, 0, 10)
	must(err)
	if len(feed.Preemptions) != 1 {
		t.Errorf("feed %+v", feed)
	}

	// Refusals: each is an Error body.
	if _, err := c.Provider(ctx, "3b4005be-d64b-456f-ba36-0ffd02718868"); !client.IsStatus(err, 404) {
		t.Errorf("an unknown provider: %v", err)
	}
	if _, err := c.Claim(ctx, client.ClaimRequest{ConsumerUUID: "c0000000-0000-4000-8000-000000000003", ProjectID: "demo",
		UserID: "alice", Resources: map[string]int64{"VCPU": 512}}); !client.IsStatus(err, 409) {
		t.Errorf("a claim too large: %v", err)
	}
	if _, err := c.JSON(ctx, http.MethodPost, "/claims", map[string]any{"x": 1}, nil); !client.IsStatus(err, 400) {
		t.Errorf("a junk claim: %v", err)
	}
	must(c.DeleteAllocations(ctx, consumer))

	if checked["2xx"] < 40 || checked["4xx"] < 3 {
		t.Errorf("validated %v", checked)
	}
}

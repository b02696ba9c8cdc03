package resources_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// TestClaimWritesInEveryExecMode writes the same claims, with names,
// properties, retry records and stored claims, through each of the fast
// path's statements (a claim alone, several claims' statements in one
// pipeline, the batch statement with and without its limit check) and
// the general path over
// a store whose database URL sets each of pgx's query modes. pgx knows
// a parameter's type only from a statement it described (the default
// cache_statement, cache_describe, describe_exec); with exec, and with
// simple_protocol (what PgBouncer in transaction mode needs), it encodes
// every argument as text of no type. Every mode writes every claim, its
// values read back as sent, and leaves the database as the default mode
// does.
func TestClaimWritesInEveryExecMode(t *testing.T) {
	ledgertest.SameInEveryExecMode(t, "wrote", func(t *testing.T, dbURL string) string {
		return writeClaimsEveryWay(t, newFixtureOn(t, dbURL))
	})
}

// modeClaim is a claim of writeClaimsEveryWay, as sent.
type modeClaim struct {
	consumer, name string
	copySticky     bool
	properties     map[string]any
	request        *claimrecords.ClaimRequest
	state          *claimrecords.ClaimStateWrite
	limits         quotas.Limits // nil: none given
}

// writeClaimsEveryWay writes claims through each fast statement of f's
// store, checks that every one was written with what it was sent, and
// returns the database's claims, allocations, usage counters and
// providers as text, provider uuids replaced by their names.
func writeClaimsEveryWay(t *testing.T, f *fixture) string {
	t.Helper()
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("MEMORY_MB", 4096))
	other := f.Provider("other", ledgertest.Inv("VCPU", 64))
	f.Exec(`INSERT INTO provider_placement_keys (resource_provider_id, name, value, sticky)
		SELECT id, 'zone', 7, true FROM resource_providers WHERE uuid = $1::uuid`, rp)
	var claims []modeClaim
	var last resources.ClaimWriteParams // the last claim's write, as the general path takes it
	claim := func(full bool, limits quotas.Limits) resources.FastClaim {
		t.Helper()
		i := len(claims)
		c := modeClaim{consumer: fmt.Sprintf("e0000000-0000-4000-8000-%012d", i), limits: limits}
		w := ledgertest.NewClaim(c.consumer, rp, ledgertest.Res("VCPU", 1), ledgertest.Res("MEMORY_MB", int64(i+1)))
		w.Allocations = append(w.Allocations, w.Allocations[0])
		w.Allocations[1].ProviderUUID, w.Allocations[1].Resources = other, w.Allocations[0].Resources[:1]
		c.copySticky = i%2 == 0
		w.CopyStickyKeys = c.copySticky
		var p resources.ClaimWriteParams
		if full {
			// Text that array literals quote and escape.
			c.name = fmt.Sprintf(`vm "%d" \ {a,b} NULL é`, i)
			c.properties = map[string]any{"group": `g"1\`, "n": float64(i), "list": []any{"x,y", "{}"}}
			c.request = &claimrecords.ClaimRequest{ConsumerUUID: c.consumer, Op: "claim",
				Fingerprint: []byte{0, 1, '\\', '"', ',', '{', 0xff, byte(i)},
				Request:     []byte(fmt.Sprintf(`{"name": "vm \"%d\" \\ {}", "n": [1, 2]}`, i)),
				Result:      []byte(`{"allocations": {"x": null}, "ok": true}`), Generation: 1}
			c.state = &claimrecords.ClaimStateWrite{Op: "claim", Request: []byte(`{"priority": -3, "s": "a\"b"}`),
				RootUUID: rp, LeaseSeconds: int64(60 * (i % 2))}
			w.Name, w.Properties = c.name, c.properties
			p = resources.ClaimWriteParams{Request: c.request, State: c.state}
		}
		w.ProjectID, w.UserID = "proj", "user"
		claims = append(claims, c)
		p.Consumers = []resources.ConsumerAllocations{w}
		last = p
		fc, ok := resources.FastClaimOf(p.Consumers)
		if !ok {
			t.Fatalf("claim %d is not a fast claim", i)
		}
		fc = resources.WithRecords(fc, p)
		if limits != nil {
			fc = resources.WithQuota(fc, &quotas.Quota{Given: map[string]quotas.Limits{"proj": limits}})
		} else if i%2 == 1 {
			fc = resources.WithQuota(fc, &quotas.Quota{Given: map[string]quotas.Limits{}}) // none given
		}
		return fc
	}
	// A claim alone, then one with limits given (which the project's
	// usage counters, created by the first, are checked against).
	for _, limits := range []quotas.Limits{nil, {"VCPU": 1000, "consumers": 50}} {
		if w, err := resources.SendFast(f.Ctx, f.Store.Allocations, claim(true, limits)); err != nil || w == nil {
			t.Fatalf("claim alone: %v, %v; want it written", w, err)
		}
	}
	// Claims' statements in one pipeline.
	if ws, err := resources.SendWrites(f.Ctx, f.Store.Allocations, []resources.FastClaim{claim(true, nil), claim(false, nil),
		claim(true, quotas.Limits{"MEMORY_MB": 100000})}); err != nil || len(ws) != 3 || ws[0] == nil || ws[1] == nil || ws[2] == nil {
		t.Fatalf("claims in one pipeline: %v, %v; want all three written", ws, err)
	}
	// The batch statement, with its limit check.
	batch := []resources.FastClaim{claim(true, quotas.Limits{"VCPU": 1000}), claim(false, nil), claim(true, nil), claim(true, nil)}
	if ws, first, err := resources.SendBatchWrite(f.Ctx, f.Store.Allocations, batch); err != nil || first != len(batch) || len(ws) != len(batch) {
		t.Fatalf("batch with limits: %v, first %d, %v; want all %d written", ws, first, err, len(batch))
	}
	// And without: no claim has limits, given or stored.
	batch = []resources.FastClaim{claim(true, quotas.Limits{}), claim(false, quotas.Limits{}), claim(true, quotas.Limits{})}
	if ws, first, err := resources.SendBatchWrite(f.Ctx, f.Store.Allocations, batch); err != nil || first != len(batch) || len(ws) != len(batch) {
		t.Fatalf("batch without limits: %v, first %d, %v; want all %d written", ws, first, err, len(batch))
	}
	// The general path: a write that does not check the consumer's
	// generation.
	claim(true, nil)
	last.Consumers[0].CheckGeneration = false
	if err := f.Store.Allocations.ClaimWrite(f.Ctx, last); err != nil {
		t.Fatalf("claim by the general path: %v", err)
	}
	for _, c := range claims {
		checkModeClaim(t, f, c)
	}
	var dump string
	if err := f.DB.QueryRow(f.Ctx, `SELECT string_agg(x, E'\n' ORDER BY x) FROM (
		SELECT row(c.uuid, c.name, c.properties, c.generation, p.external_id, u.external_id, t.name,
		           (SELECT string_agg(rp.name || ' ' || rc.name || ' ' || a.used, ', ' ORDER BY a.id) FROM allocations a
		            JOIN resource_providers rp ON rp.id = a.resource_provider_id
		            JOIN resource_classes rc ON rc.id = a.resource_class_id WHERE a.consumer_id = c.id),
		           (SELECT string_agg(k.name || ' ' || k.value, ', ' ORDER BY k.name) FROM consumer_placement_keys k
		            WHERE k.consumer_id = c.id),
		           r.op, r.fingerprint, r.request::text, r.result::text, r.generation,
		           s.op, s.request, root.name, s.state, s.lease_seconds, s.lease_expires_at IS NOT NULL)::text
		FROM consumers c JOIN projects p ON p.id = c.project_id JOIN users u ON u.id = c.user_id
		LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
		LEFT JOIN claim_requests r ON r.consumer_uuid = c.uuid
		LEFT JOIN claim_state s ON s.consumer_uuid = c.uuid
		LEFT JOIN resource_providers root ON root.uuid = s.root_uuid
		UNION ALL
		SELECT row('usage', p.external_id, u.resource, u.used)::text FROM project_usages u JOIN projects p ON p.id = u.project_id
		UNION ALL
		SELECT row('provider', name, generation)::text FROM resource_providers
	) d(x)`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	return dump
}

// checkModeClaim checks that c was written with its values as sent.
func checkModeClaim(t *testing.T, f *fixture, c modeClaim) {
	t.Helper()
	var name *string
	var properties, fingerprint, request, result, stateRequest []byte
	var root *string
	var lease *int32
	var allocs, keys int
	if err := f.DB.QueryRow(f.Ctx, `SELECT c.name, c.properties::text, r.fingerprint, r.request::text, r.result::text,
		       s.request::text, s.root_uuid::text, s.lease_seconds, (SELECT count(*) FROM allocations a WHERE a.consumer_id = c.id),
		       (SELECT count(*) FROM consumer_placement_keys k WHERE k.consumer_id = c.id)
		FROM consumers c LEFT JOIN claim_requests r ON r.consumer_uuid = c.uuid LEFT JOIN claim_state s ON s.consumer_uuid = c.uuid
		WHERE c.uuid = $1::uuid`, c.consumer).Scan(&name, &properties, &fingerprint, &request, &result,
		&stateRequest, &root, &lease, &allocs, &keys); err != nil {
		t.Fatalf("claim %s: %v", c.consumer, err)
	}
	if allocs != 3 {
		t.Errorf("claim %s holds %d allocations, want 3", c.consumer, allocs)
	}
	if want := map[bool]int{true: 1}[c.copySticky]; keys != want {
		t.Errorf("claim %s (copying sticky keys: %t) holds %d placement keys, want %d", c.consumer, c.copySticky, keys, want)
	}
	if c.request == nil {
		if name != nil || properties != nil || fingerprint != nil || stateRequest != nil {
			t.Errorf("claim %s without name or records: name %v, properties %s, fingerprint %x, stored claim %s; want all NULL",
				c.consumer, name, properties, fingerprint, stateRequest)
		}
		return
	}
	if name == nil || *name != c.name {
		t.Errorf("claim %s: name %v, want %q", c.consumer, name, c.name)
	}
	if !bytes.Equal(fingerprint, c.request.Fingerprint) {
		t.Errorf("claim %s: fingerprint %x, want %x", c.consumer, fingerprint, c.request.Fingerprint)
	}
	for _, j := range []struct {
		what      string
		got, want []byte
	}{{"properties", properties, nil}, {"request", request, c.request.Request}, {"result", result, c.request.Result},
		{"stored request", stateRequest, c.state.Request}} {
		var got, want any
		if err := json.Unmarshal(j.got, &got); err != nil {
			t.Errorf("claim %s: %s %q: %v", c.consumer, j.what, j.got, err)
			continue
		}
		want = c.properties
		if j.want != nil {
			if err := json.Unmarshal(j.want, &want); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("claim %s: %s %s, want %v", c.consumer, j.what, j.got, want)
		}
	}
	if root == nil || *root != c.state.RootUUID {
		t.Errorf("claim %s: stored root %v, want %s", c.consumer, root, c.state.RootUUID)
	}
	if (lease != nil) != (c.state.LeaseSeconds > 0) || lease != nil && int64(*lease) != c.state.LeaseSeconds {
		t.Errorf("claim %s: lease %v, want %d seconds (0: none)", c.consumer, lease, c.state.LeaseSeconds)
	}
}

package placementdiff

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fake serves a tiny Placement: one provider holding one consumer's
// allocation; traits is its trait list, ratio its VCPU allocation ratio.
func fake(t *testing.T, traits string, ratio string) *httptest.Server {
	const rp = "11111111-1111-4111-8111-111111111111"
	const c = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
	answers := map[string]string{
		"/resource_providers":                        `{"resource_providers": [{"uuid": "` + rp + `", "name": "cn1", "generation": 3}]}`,
		"/resource_classes":                          `{"resource_classes": [{"name": "VCPU"}, {"name": "DISK_GB"}]}`,
		"/traits":                                    `{"traits": [` + traits + `]}`,
		"/resource_providers/" + rp:                  `{"uuid": "` + rp + `", "name": "cn1", "generation": 3}`,
		"/resource_providers/" + rp + "/inventories": `{"resource_provider_generation": 3, "inventories": {"VCPU": {"total": 8, "allocation_ratio": ` + ratio + `}}}`,
		"/resource_providers/" + rp + "/usages":      `{"resource_provider_generation": 3, "usages": {"VCPU": 2}}`,
		"/resource_providers/" + rp + "/traits":      `{"resource_provider_generation": 3, "traits": [` + traits + `]}`,
		"/resource_providers/" + rp + "/aggregates":  `{"resource_provider_generation": 3, "aggregates": []}`,
		"/resource_providers/" + rp + "/allocations": `{"resource_provider_generation": 3, "allocations": {"` + c + `": {"resources": {"VCPU": 2}}}}`,
		"/allocations/" + c:                          `{"allocations": {"` + rp + `": {"generation": 3, "resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u", "consumer_generation": 1}`,
		"/usages?project_id=p":                       `{"usages": {"VCPU": 2}}`,
		"/usages?project_id=p&user_id=u":             `{"usages": {"VCPU": 2}}`,
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("OpenStack-API-Version") != "placement 1.39" {
			t.Errorf("%s: version %q", r.URL, r.Header.Get("OpenStack-API-Version"))
		}
		a, ok := answers[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(a))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestCompare(t *testing.T) {
	a := fake(t, `"HW_CPU_X86_AVX2", "CUSTOM_A"`, "1.1")
	b := fake(t, `"CUSTOM_A", "HW_CPU_X86_AVX2"`, "1.1")
	res, err := Compare(context.Background(), Params{Old: Endpoint{Name: "placement", URL: a.URL}, New: Endpoint{Name: "berth", URL: b.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Differences) != 0 || res.Reads != 12 {
		t.Fatalf("same answers, lists in another order: %d reads, differences %v", res.Reads, res.Differences)
	}
	c := fake(t, `"CUSTOM_A"`, "1.100000023841858")
	res, err = Compare(context.Background(), Params{Old: Endpoint{Name: "placement", URL: a.URL}, New: Endpoint{Name: "berth", URL: c.URL}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(res.Differences, "\n")
	for _, want := range []string{
		`GET /resource_providers/11111111-1111-4111-8111-111111111111/inventories: $.inventories.VCPU.allocation_ratio: placement 1.1, berth 1.100000023841858`,
		`GET /traits: $.traits: placement ["CUSTOM_A","HW_CPU_X86_AVX2"], berth ["CUSTOM_A"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	res, err = Compare(context.Background(), Params{Old: Endpoint{Name: "placement", URL: a.URL}, New: Endpoint{Name: "berth", URL: b.URL}, Sample: 1})
	if err != nil || res.Reads != 12 {
		t.Errorf("a sample of the only provider: %v, %+v", err, res)
	}
	if _, err := Compare(context.Background(), Params{Old: Endpoint{Name: "placement", URL: "http://127.0.0.1:1"}, New: Endpoint{Name: "berth", URL: c.URL}}); err == nil {
		t.Error("an unreachable side is not an error")
	}
}

package integration

import (
	"fmt"
	"strings"
)

// withHeaders returns s with extra request headers ("" removes a default).
func withHeaders(s corpusStep, kv ...string) corpusStep {
	h := map[string]string{}
	for k, v := range s.headers {
		h[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	s.headers = h
	return s
}

// corpusRoute is one route of Placement's API as the protocol session
// walks it: the version it appeared in, a path that exists in the
// session's state, and the methods Placement routes for it.
type corpusRoute struct {
	path    string
	since   string
	methods []string
}

// protocolSession walks the protocol itself: every route just before and
// at the microversion that brought it, with no header, at "latest"; the
// OpenStack-API-Version header's malformed forms; methods each route does
// not have (405 and its Allow header), HEAD and OPTIONS; trailing
// slashes and the /placement prefix; Accept and Content-Type variants;
// empty and odd bodies; and the headers that change with the version
// (Location, Last-Modified, Cache-Control, 201 versus 200 on create).
func protocolSession() corpusSession {
	steps := []corpusStep{
		st("setup cn1", "POST", "/resource_providers", "1.39", j(`{"name": "cn1", "uuid": "`+cpCN1+`"}`)),
		st("setup inventory", "PUT", rp(cpCN1)+"/inventories", "1.39", j(`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}}`)),
		st("setup class", "PUT", "/resource_classes/CUSTOM_PROTO", "1.39", ""),
		st("setup trait", "PUT", "/traits/CUSTOM_PROTO", "1.39", ""),
		st("setup provider traits", "PUT", rp(cpCN1)+"/traits", "1.39", j(`{"resource_provider_generation": 1, "traits": ["CUSTOM_PROTO"]}`)),
		st("setup aggregates", "PUT", rp(cpCN1)+"/aggregates", "1.39", j(`{"resource_provider_generation": 2, "aggregates": ["`+cpAgg1+`"]}`)),
		st("setup allocation", "PUT", "/allocations/"+cpInst1, "1.39", j(`{"allocations": {"`+cpCN1+`": {"resources": {"VCPU": 1, "MEMORY_MB": 256}}},
			"project_id": "`+cpProj+`", "user_id": "`+cpUser+`", "consumer_generation": null, "consumer_type": "INSTANCE"}`)),
	}

	// Every GET route before and at the version that brought it, and at
	// the versions that changed its answer.
	routes := []struct {
		path     string
		versions []string
	}{
		{"/", []string{"", "1.0", "1.39"}},
		{"/resource_providers", []string{"", "1.0", "1.13", "1.14", "1.15", "latest"}},
		{rp(cpCN1), []string{"1.0", "1.10", "1.11", "1.13", "1.14", "1.15"}},
		{rp(cpCN1) + "/inventories", []string{"1.0", "1.14", "1.15"}},
		{rp(cpCN1) + "/inventories/VCPU", []string{"1.0", "1.15"}},
		{rp(cpCN1) + "/usages", []string{"1.0", "1.15"}},
		{rp(cpCN1) + "/aggregates", []string{"1.0", "1.1", "1.15", "1.18", "1.19"}},
		{rp(cpCN1) + "/allocations", []string{"1.0", "1.15"}},
		{rp(cpCN1) + "/traits", []string{"1.5", "1.6", "1.15"}},
		{"/resource_classes", []string{"1.1", "1.2", "1.15"}},
		{"/resource_classes/CUSTOM_PROTO", []string{"1.1", "1.2", "1.15"}},
		{"/resource_classes/VCPU", []string{"1.2", "1.15"}},
		{"/traits", []string{"1.5", "1.6", "1.15"}},
		{"/traits/CUSTOM_PROTO", []string{"1.5", "1.6", "1.15"}},
		{"/allocations/" + cpInst1, []string{"1.0", "1.11", "1.12", "1.15", "1.27", "1.28", "1.37", "1.38"}},
		{"/usages?project_id=" + cpProj, []string{"1.8", "1.9", "1.15"}},
		{"/allocation_candidates?resources=VCPU:1", []string{"1.9", "1.10", "1.11", "1.12", "1.13", "1.14", "1.15", "1.16", "1.26", "1.27", "1.28", "1.29", "1.33", "1.34"}},
	}
	for _, r := range routes {
		for _, v := range r.versions {
			s := st(fmt.Sprintf("GET %s at %s", r.path, orNone(v)), "GET", r.path, v, "")
			if v == "latest" {
				s = withHeaders(st(fmt.Sprintf("GET %s at latest", r.path), "GET", r.path, "", ""), "OpenStack-API-Version", "placement latest")
			}
			steps = append(steps, s)
		}
	}

	// The version header's forms.
	for _, hv := range []string{
		"placement 1.5", "compute 1.5", "Placement 1.5", "PLACEMENT 1.5", "placement  1.5", "placement 1.05",
		"placement 1.", "placement 1", "placement 2.0", "placement 0.9", "placement 1.40", "placement 1.-1",
		"placement ", "placement", "placement latest", "placement LATEST", "compute 2.1, placement 1.20",
		"placement 1.20, compute 2.1", "placement 1.20,placement 1.30", "placement 1.2.3", "placement v1.5",
		"placement 1.5 ", " placement 1.5", "placement 1.0",
	} {
		steps = append(steps, withHeaders(st("version header "+fmt.Sprintf("%q", hv), "GET", "/resource_providers", "", ""), "OpenStack-API-Version", hv))
	}
	steps = append(steps,
		withHeaders(st("version header on root, malformed", "GET", "/", "", ""), "OpenStack-API-Version", "placement abc"),
		withHeaders(st("version header on root, too new", "GET", "/", "", ""), "OpenStack-API-Version", "placement 1.99"),
		withHeaders(st("version header on unknown path, too new", "GET", "/nothing", "", ""), "OpenStack-API-Version", "placement 1.99"),
		withHeaders(st("version header, too new, on a POST", "POST", "/resource_providers", "1.99", j(`{"name": "x"}`))),
	)

	// Methods each route does not have; HEAD and OPTIONS.
	allRoutes := []corpusRoute{
		{"/", "1.0", []string{"GET"}},
		{"/resource_providers", "1.0", []string{"GET", "POST"}},
		{rp(cpCN1), "1.0", []string{"GET", "PUT", "DELETE"}},
		{rp(cpCN1) + "/inventories", "1.0", []string{"GET", "POST", "PUT", "DELETE"}},
		{rp(cpCN1) + "/inventories/VCPU", "1.0", []string{"GET", "PUT", "DELETE"}},
		{rp(cpCN1) + "/usages", "1.0", []string{"GET"}},
		{rp(cpCN1) + "/aggregates", "1.1", []string{"GET", "PUT"}},
		{rp(cpCN1) + "/allocations", "1.0", []string{"GET"}},
		{rp(cpCN1) + "/traits", "1.6", []string{"GET", "PUT", "DELETE"}},
		{"/resource_classes", "1.2", []string{"GET", "POST"}},
		{"/resource_classes/CUSTOM_PROTO", "1.2", []string{"GET", "PUT", "DELETE"}},
		{"/traits", "1.6", []string{"GET"}},
		{"/traits/CUSTOM_PROTO", "1.6", []string{"GET", "PUT", "DELETE"}},
		{"/allocations", "1.13", []string{"POST"}},
		{"/allocations/" + cpInst1, "1.0", []string{"GET", "PUT", "DELETE"}},
		{"/allocation_candidates", "1.10", []string{"GET"}},
		{"/usages", "1.9", []string{"GET"}},
		{"/reshaper", "1.30", []string{"POST"}},
	}
	for _, r := range allRoutes {
		has := map[string]bool{}
		for _, m := range r.methods {
			has[m] = true
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if !has[m] {
				steps = append(steps, st(fmt.Sprintf("%s %s not routed", m, r.path), m, r.path, "1.39", ""))
			}
		}
		steps = append(steps, st("HEAD "+r.path, "HEAD", r.path, "1.39", ""))
		steps = append(steps, st("OPTIONS "+r.path, "OPTIONS", r.path, "1.39", ""))
	}
	steps = append(steps,
		st("405 on a route older than the version", "PATCH", "/traits", "1.5", ""),
		st("405 with no version header", "PATCH", "/resource_providers", "", ""),
		st("POST /reshaper before 1.30", "POST", "/reshaper", "1.29", `{}`),
		st("POST /allocations before 1.13", "POST", "/allocations", "1.12", `{}`),
		st("DELETE inventories before 1.5", "DELETE", rp(cpCN1)+"/inventories", "1.4", ""),
		st("PUT aggregates before 1.1", "PUT", rp(cpCN1)+"/aggregates", "1.0", `[]`),
		st("DELETE provider traits before 1.6", "DELETE", rp(cpCN1)+"/traits", "1.5", ""),
		st("PUT trait before 1.6", "PUT", "/traits/CUSTOM_X", "1.5", ""),
		st("POST class before 1.2", "POST", "/resource_classes", "1.1", j(`{"name": "CUSTOM_X"}`)),
	)

	// Trailing slashes, the /placement prefix, odd paths.
	for _, p := range []string{
		"/resource_providers/", rp(cpCN1) + "/", rp(cpCN1) + "/inventories/", "/traits/", "/resource_classes/",
		"/placement", "/placement/", "/placement/resource_providers", "//resource_providers",
		"/resource_providers/" + strings.ToUpper(cpCN1), "/resource_providers/" + strings.ReplaceAll(cpCN1, "-", ""),
		"/resource_providers/" + cpCN1 + "/inventories/vcpu", "/resource_providers/" + cpCN1 + "/nothing",
		"/allocations/", "/allocations/abc", "/allocations/" + strings.ToUpper(cpInst1), "/allocations/" + strings.ReplaceAll(cpInst1, "-", ""),
		"/traits/custom_proto", "/resource_classes/custom_proto", "/usages/", "/allocation_candidates/",
		"/resource_providers?", "/traits?name=", "/traits?associated=", "/traits?associated=yes", "/traits?associated=false",
	} {
		steps = append(steps, st("path "+p, "GET", p, "1.39", ""))
	}

	// Query strings: unknown, repeated, empty.
	for _, q := range []string{
		"/resource_providers?name=cn1&name=cn2", "/resource_providers?uuid=" + cpCN1 + "&uuid=" + cpCN2,
		"/resource_providers?name=", "/resource_providers?uuid=", "/resource_providers?uuid=abc",
		"/resource_providers?member_of=", "/resource_providers?resources=", "/resource_providers?required=",
		"/resource_providers?in_tree=", "/resource_providers?limit=1", "/resource_providers?name=cn1&color=blue",
		"/resource_classes?color=blue", "/traits?color=blue", "/traits?name=in:", "/traits?name=foo:BAR",
		rp(cpCN1) + "/inventories?color=blue", rp(cpCN1) + "/usages?color=blue", "/allocations/" + cpInst1 + "?color=blue",
		"/allocation_candidates?resources=VCPU:1&resources=MEMORY_MB:1", "/allocation_candidates?resources=VCPU:1&limit=1&limit=2",
		"/allocation_candidates?resources=VCPU:1&limit=abc", "/allocation_candidates?resources=VCPU:1&limit=-1",
		"/allocation_candidates?resources=", "/allocation_candidates?resources=VCPU:0", "/allocation_candidates?resources=VCPU:-1",
		"/allocation_candidates?resources=VCPU:1,VCPU:2", "/allocation_candidates?resources=vcpu:1",
		"/allocation_candidates?resources=VCPU:1&required=", "/allocation_candidates?resources=VCPU:1&member_of=",
		"/allocation_candidates?resources=VCPU:1&in_tree=", "/allocation_candidates?resources=VCPU:1&group_policy=none",
		"/allocation_candidates?resources=VCPU:1&root_required=", "/allocation_candidates?resources=VCPU:1&same_subtree=",
		"/allocation_candidates?resources1=VCPU:1", "/allocation_candidates?resources1=VCPU:1&resources2=MEMORY_MB:1",
		"/allocation_candidates?resources_=VCPU:1", "/allocation_candidates?resourcesX=VCPU:1", "/allocation_candidates?resources_ABC_DEF=VCPU:1",
		"/allocation_candidates?resources=VCPU:1&required1=CUSTOM_PROTO", "/allocation_candidates?resources=VCPU%3A1%2CMEMORY_MB%3A1",
		"/allocation_candidates?resources=VCPU:1+", "/allocation_candidates?resources=VCPU:1.5", "/allocation_candidates?resources=+VCPU:1",
	} {
		steps = append(steps, st("query "+q, "GET", q, "1.39", ""))
	}
	// GET /usages from 1.38 is broken on PostgreSQL (a GROUP BY error)
	// wherever it finds allocations; before 1.38 it is not.
	for _, q := range []string{
		"/usages?project_id=" + cpProj + "&project_id=" + cpNone, "/usages?project_id=", "/usages?user_id=" + cpUser,
		"/usages?project_id=" + cpProj + "&color=blue", "/usages?project_id=" + cpProj + "&consumer_type=INSTANCE",
	} {
		steps = append(steps, st("query "+q+" at 1.37", "GET", q, "1.37", ""))
	}
	steps = append(steps, corpusStep{name: "query usages with consumer_type at 1.38", method: "GET", path: "/usages?project_id=" + cpProj + "&consumer_type=INSTANCE", version: "1.38",
		placementBroken: brokenUsages})
	// The same queries at the versions where their parameters were not yet known.
	for _, q := range []struct{ path, version string }{
		{"/resource_providers?member_of=" + cpAgg1, "1.2"},
		{"/resource_providers?resources=VCPU:1", "1.3"},
		{"/resource_providers?in_tree=" + cpCN1, "1.13"},
		{"/resource_providers?required=CUSTOM_PROTO", "1.17"},
		{"/resource_providers?required=!CUSTOM_PROTO", "1.21"},
		{"/resource_providers?member_of=" + cpAgg1 + "&member_of=" + cpAgg2, "1.23"},
		{"/resource_providers?member_of=" + cpAgg1 + "&member_of=" + cpAgg2, "1.24"},
		{"/resource_providers?member_of=!" + cpAgg1, "1.31"},
		{"/resource_providers?member_of=!" + cpAgg2, "1.32"},
		{"/resource_providers?required=in:CUSTOM_PROTO,HW_CPU_X86_AVX", "1.38"},
		{"/resource_providers?required=in:CUSTOM_PROTO,HW_CPU_X86_AVX", "1.39"},
		{"/allocation_candidates?resources=VCPU:1&limit=1", "1.15"},
		{"/allocation_candidates?resources=VCPU:1&limit=1", "1.16"},
		{"/allocation_candidates?resources=VCPU:1&required=CUSTOM_PROTO", "1.16"},
		{"/allocation_candidates?resources=VCPU:1&member_of=" + cpAgg1, "1.20"},
		{"/allocation_candidates?resources=VCPU:1&member_of=" + cpAgg1, "1.21"},
		{"/allocation_candidates?resources=VCPU:1&required=!CUSTOM_PROTO", "1.21"},
		{"/allocation_candidates?resources1=VCPU:1", "1.24"},
		{"/allocation_candidates?resources1=VCPU:1", "1.25"},
		{"/allocation_candidates?resources=VCPU:1&in_tree=" + cpCN1, "1.30"},
		{"/allocation_candidates?resources=VCPU:1&in_tree=" + cpCN1, "1.31"},
		{"/allocation_candidates?resources_X=VCPU:1", "1.32"},
		{"/allocation_candidates?resources_X=VCPU:1", "1.33"},
		{"/allocation_candidates?resources=VCPU:1&root_required=CUSTOM_PROTO", "1.34"},
		{"/allocation_candidates?resources=VCPU:1&root_required=CUSTOM_PROTO", "1.35"},
		{"/allocation_candidates?resources_X=VCPU:1&same_subtree=_X", "1.35"},
		{"/allocation_candidates?resources_X=VCPU:1&same_subtree=_X", "1.36"},
		{"/allocation_candidates?resources=VCPU:1&required=in:CUSTOM_PROTO,HW_CPU_X86_AVX", "1.38"},
		{"/allocation_candidates?resources=VCPU:1&required=in:CUSTOM_PROTO,HW_CPU_X86_AVX", "1.39"},
		{"/usages?project_id=" + cpProj + "&consumer_type=INSTANCE", "1.37"},
		{"/traits?name=in:CUSTOM_PROTO", "1.6"},
	} {
		steps = append(steps, st(fmt.Sprintf("query %s at %s", q.path, q.version), "GET", q.path, q.version, ""))
	}

	// Accept and Content-Type.
	for _, a := range []string{"text/html", "*/*", "application/*", "application/json;q=0", "application/json; charset=utf-8",
		"text/html, application/json;q=0.5", "application/xml", "", "APPLICATION/JSON", "text/plain, */*;q=0.1"} {
		steps = append(steps,
			withHeaders(st(fmt.Sprintf("accept %q on a list", a), "GET", "/resource_providers", "1.39", ""), "Accept", a),
			withHeaders(st(fmt.Sprintf("accept %q on a 404", a), "GET", rp(cpNone), "1.39", ""), "Accept", a),
		)
	}
	for _, ct := range []string{"application/json; charset=utf-8", "application/json;charset=UTF-8", "APPLICATION/JSON",
		"text/json", "application/x-www-form-urlencoded", "application/json-patch+json", "multipart/form-data", ""} {
		steps = append(steps, withHeaders(st(fmt.Sprintf("content-type %q on create", ct), "POST", "/resource_classes", "1.39",
			j(`{"name": "CUSTOM_CT_`+fmt.Sprint(len(steps))+`"}`)), "Content-Type", ct))
	}
	steps = append(steps,
		withHeaders(st("content-type text/plain on a PUT without body", "PUT", "/traits/CUSTOM_CT", "1.39", ""), "Content-Type", "text/plain"),
		withHeaders(st("content-type text/plain on a DELETE", "DELETE", "/traits/CUSTOM_CT", "1.39", ""), "Content-Type", "text/plain"),
		withHeaders(st("content-type on a GET", "GET", "/resource_providers", "1.39", ""), "Content-Type", "text/plain"),
	)

	// Bodies.
	for i, b := range []string{"", " ", "null", "[]", "{}", `"x"`, "1", `{"name": "CUSTOM_A"} trailing`, `{"name": "CUSTOM_B"}{"name": "CUSTOM_C"}`,
		`{"name": "CUSTOM_DUP", "name": "CUSTOM_DUP2"}`, `{"name": null}`, `{"name": 1}`, `{"name": ""}`, `{"name": "CUSTOM_` + strings.Repeat("A", 250) + `"}`,
		`{"name": "CUSTOM_Ü"}`, `{"name": "CUSTOM_A-B"}`, `{"name": "CUSTOM_"}`, `{"name": "VCPU"}`, `{"name": "CUSTOM_PROTO"}`,
		`{"name": "CUSTOM_\u0041"}`} {
		s := withHeaders(st(fmt.Sprintf("class create body %d %.40q", i, b), "POST", "/resource_classes", "1.39", b), "Content-Type", "application/json")
		steps = append(steps, s)
	}
	for i, b := range []string{"", "{}", `{"name": "p"}`, `{"name": "p", "uuid": null}`, `{"name": "p2", "uuid": "` + strings.ToUpper(cpCN2) + `"}`,
		`{"name": "p3", "uuid": "` + strings.ReplaceAll(cpCN3, "-", "") + `"}`, `{"name": "p4", "parent_provider_uuid": null}`,
		`{"name": " spaced "}`, `{"name": "ünïcode"}`, `{"name": "p5", "generation": 1}`} {
		s := withHeaders(st(fmt.Sprintf("provider create body %d %.40q", i, b), "POST", "/resource_providers", "1.39", b), "Content-Type", "application/json")
		steps = append(steps, s)
	}

	// Creates at the versions that changed their answers: 201 and
	// Location, then 200 with a body (1.20); PUT class and trait.
	steps = append(steps,
		st("provider create 1.0", "POST", "/resource_providers", "1.0", j(`{"name": "v10", "uuid": "`+cpCN2[:34]+`10"}`)),
		st("provider create 1.19", "POST", "/resource_providers", "1.19", j(`{"name": "v119", "uuid": "`+cpCN2[:34]+`19"}`)),
		st("provider create 1.20", "POST", "/resource_providers", "1.20", j(`{"name": "v120", "uuid": "`+cpCN2[:34]+`20"}`)),
		st("provider create 1.13 with parent", "POST", "/resource_providers", "1.13", j(`{"name": "v113", "parent_provider_uuid": "`+cpCN1+`"}`)),
		st("provider update 1.0", "PUT", rp(cpCN2[:34]+"10"), "1.0", j(`{"name": "v10-renamed"}`)),
		st("provider update 1.13 with parent", "PUT", rp(cpCN2[:34]+"10"), "1.13", j(`{"name": "v10", "parent_provider_uuid": "`+cpCN1+`"}`)),
		st("provider update 1.14 with parent", "PUT", rp(cpCN2[:34]+"10"), "1.14", j(`{"name": "v10", "parent_provider_uuid": "`+cpCN1+`"}`)),
		st("provider update same name", "PUT", rp(cpCN2[:34]+"10"), "1.14", j(`{"name": "v10", "parent_provider_uuid": "`+cpCN1+`"}`)),
		st("provider update other's name", "PUT", rp(cpCN2[:34]+"10"), "1.14", j(`{"name": "v119", "parent_provider_uuid": "`+cpCN1+`"}`)),
		st("provider update 1.36 reparent", "PUT", rp(cpCN2[:34]+"10"), "1.36", j(`{"name": "v10", "parent_provider_uuid": "`+cpCN2[:34]+`19"}`)),
		st("provider update 1.37 reparent", "PUT", rp(cpCN2[:34]+"10"), "1.37", j(`{"name": "v10", "parent_provider_uuid": "`+cpCN2[:34]+`19"}`)),
		st("provider update 1.37 unparent", "PUT", rp(cpCN2[:34]+"10"), "1.37", j(`{"name": "v10", "parent_provider_uuid": null}`)),
		st("provider update no body", "PUT", rp(cpCN2[:34]+"10"), "1.37", ""),
		st("provider update uuid in body", "PUT", rp(cpCN2[:34]+"10"), "1.37", j(`{"name": "v10", "uuid": "`+cpCN2[:34]+`10"}`)),
		st("provider delete 1.0", "DELETE", rp(cpCN2[:34]+"10"), "1.0", ""),
		st("provider delete twice", "DELETE", rp(cpCN2[:34]+"10"), "1.39", ""),
		st("class create POST 1.2", "POST", "/resource_classes", "1.2", j(`{"name": "CUSTOM_V12"}`)),
		st("class update PUT 1.2 rename", "PUT", "/resource_classes/CUSTOM_V12", "1.2", j(`{"name": "CUSTOM_V12_RENAMED"}`)),
		st("class show renamed", "GET", "/resource_classes/CUSTOM_V12_RENAMED", "1.2", ""),
		st("class update PUT 1.6 no body", "PUT", "/resource_classes/CUSTOM_V16", "1.6", ""),
		st("class create PUT 1.7", "PUT", "/resource_classes/CUSTOM_V17", "1.7", ""),
		st("class create PUT 1.7 exists", "PUT", "/resource_classes/CUSTOM_V17", "1.7", ""),
		st("class create PUT 1.7 standard", "PUT", "/resource_classes/VCPU", "1.7", ""),
		st("class create PUT 1.7 lowercase", "PUT", "/resource_classes/CUSTOM_lower", "1.7", ""),
		st("class create PUT 1.7 with body", "PUT", "/resource_classes/CUSTOM_V17B", "1.7", j(`{"name": "CUSTOM_OTHER"}`)),
		st("class create PUT 1.15", "PUT", "/resource_classes/CUSTOM_V115", "1.15", ""),
		st("class create POST 1.15", "POST", "/resource_classes", "1.15", j(`{"name": "CUSTOM_V115P"}`)),
		st("class delete 1.2", "DELETE", "/resource_classes/CUSTOM_V115P", "1.2", ""),
		st("trait create 1.6", "PUT", "/traits/CUSTOM_T16", "1.6", ""),
		st("trait create 1.15", "PUT", "/traits/CUSTOM_T115", "1.15", ""),
		st("trait create 1.15 exists", "PUT", "/traits/CUSTOM_T115", "1.15", ""),
		st("trait create with body", "PUT", "/traits/CUSTOM_TB", "1.39", j(`{"name": "CUSTOM_TB"}`)),
		st("trait create not custom", "PUT", "/traits/HW_NEW_THING", "1.39", ""),
		st("trait create standard", "PUT", "/traits/HW_CPU_X86_AVX", "1.39", ""),
		st("trait delete 1.6", "DELETE", "/traits/CUSTOM_T16", "1.6", ""),
		st("trait delete missing", "DELETE", "/traits/CUSTOM_T16", "1.39", ""),
		st("inventory POST 1.0", "POST", rp(cpCN1)+"/inventories", "1.0", j(`{"resource_class": "DISK_GB", "total": 100, "resource_provider_generation": 4}`)),
		st("inventory POST exists", "POST", rp(cpCN1)+"/inventories", "1.0", j(`{"resource_class": "DISK_GB", "total": 100, "resource_provider_generation": 5}`)),
		st("inventory POST 1.15", "POST", rp(cpCN1)+"/inventories", "1.15", j(`{"resource_class": "CUSTOM_PROTO", "total": 10, "resource_provider_generation": 5}`)),
		st("inventory POST unknown class", "POST", rp(cpCN1)+"/inventories", "1.39", j(`{"resource_class": "CUSTOM_NOPE", "total": 10, "resource_provider_generation": 6}`)),
		st("inventory POST stale", "POST", rp(cpCN1)+"/inventories", "1.39", j(`{"resource_class": "VGPU", "total": 10, "resource_provider_generation": 1}`)),
		st("inventory PUT one 1.0", "PUT", rp(cpCN1)+"/inventories/CUSTOM_PROTO", "1.0", j(`{"total": 20, "resource_provider_generation": 6}`)),
		st("inventory PUT one absent", "PUT", rp(cpCN1)+"/inventories/VGPU", "1.39", j(`{"total": 20, "resource_provider_generation": 7}`)),
		st("inventory PUT one class in body", "PUT", rp(cpCN1)+"/inventories/CUSTOM_PROTO", "1.39", j(`{"total": 20, "resource_class": "CUSTOM_PROTO", "resource_provider_generation": 7}`)),
		st("inventory PUT one reserved equal total 1.25", "PUT", rp(cpCN1)+"/inventories/CUSTOM_PROTO", "1.25", j(`{"total": 20, "reserved": 20, "resource_provider_generation": 7}`)),
		st("inventory PUT one reserved equal total 1.26", "PUT", rp(cpCN1)+"/inventories/CUSTOM_PROTO", "1.26", j(`{"total": 20, "reserved": 20, "resource_provider_generation": 7}`)),
		st("inventory PUT all reserved equal total 1.25", "PUT", rp(cpCN1)+"/inventories", "1.25", j(`{"resource_provider_generation": 8, "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}, "DISK_GB": {"total": 100, "reserved": 100}}}`)),
		st("inventory PUT all reserved equal total 1.26", "PUT", rp(cpCN1)+"/inventories", "1.26", j(`{"resource_provider_generation": 8, "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}, "DISK_GB": {"total": 100, "reserved": 100}}}`)),
		st("inventory show after", "GET", rp(cpCN1)+"/inventories", "1.39", ""),
		st("inventory DELETE one 1.0", "DELETE", rp(cpCN1)+"/inventories/DISK_GB", "1.0", ""),
		st("inventory DELETE all 1.5", "DELETE", rp(cpCN2[:34]+"19")+"/inventories", "1.5", ""),
		st("inventory DELETE all twice", "DELETE", rp(cpCN2[:34]+"19")+"/inventories", "1.39", ""),
		st("provider traits DELETE 1.6", "DELETE", rp(cpCN2[:34]+"19")+"/traits", "1.6", ""),
		st("provider show after trait delete", "GET", rp(cpCN2[:34]+"19"), "1.39", ""),
		st("aggregates PUT 1.1 list", "PUT", rp(cpCN2[:34]+"19")+"/aggregates", "1.1", j(`["`+cpAgg1+`", "`+cpAgg1+`"]`)),
		st("aggregates PUT 1.1 object", "PUT", rp(cpCN2[:34]+"19")+"/aggregates", "1.1", j(`{"aggregates": ["`+cpAgg1+`"]}`)),
		st("aggregates PUT 1.19 list", "PUT", rp(cpCN2[:34]+"19")+"/aggregates", "1.19", j(`["`+cpAgg1+`"]`)),
		st("aggregates PUT 1.19 duplicates", "PUT", rp(cpCN2[:34]+"19")+"/aggregates", "1.19", j(`{"resource_provider_generation": 1, "aggregates": ["`+cpAgg1+`", "`+cpAgg1+`"]}`)),
		st("aggregates PUT 1.19 no generation", "PUT", rp(cpCN2[:34]+"19")+"/aggregates", "1.19", j(`{"aggregates": ["`+cpAgg1+`"]}`)),
		st("aggregates GET 1.19 after", "GET", rp(cpCN2[:34]+"19")+"/aggregates", "1.19", ""),
		st("allocation DELETE 1.0", "DELETE", "/allocations/"+cpInst1, "1.0", ""),
		st("allocation GET after delete 1.0", "GET", "/allocations/"+cpInst1, "1.0", ""),
		st("allocation GET after delete 1.28", "GET", "/allocations/"+cpInst1, "1.28", ""),
		st("allocation GET after delete 1.38", "GET", "/allocations/"+cpInst1, "1.38", ""),
	)
	return corpusSession{name: "protocol", about: "microversion boundaries, methods, paths, headers and bodies on every route", steps: steps}
}

func orNone(v string) string {
	if v == "" {
		return "no version"
	}
	return v
}

package integration

import "strings"

const (
	ceRP1 = "5f100000-0000-4000-8000-000000000001"
	ceRP2 = "5f100000-0000-4000-8000-000000000002"
	ceRP3 = "5f100000-0000-4000-8000-000000000003"
	ceAgg = "5f100000-0000-4000-8000-0000000000a1"
)

// encodingSession is about how query strings and names are read: spaces
// and plus signs, percent escapes (valid, invalid, UTF-8), unicode and
// quotes in names, upper-case uuids in filters, and the same parameter
// spelled twice.
func encodingSession() corpusSession {
	steps := []corpusStep{
		st("create spaced", "POST", "/resource_providers", "1.39", j(`{"name": "cn 1", "uuid": "`+ceRP1+`"}`)),
		st("create plus", "POST", "/resource_providers", "1.39", j(`{"name": "cn+1", "uuid": "`+ceRP2+`"}`)),
		st("create unicode", "POST", "/resource_providers", "1.39", `{"name": "n\u00fcmero \"uno\" & <b>", "uuid": "`+ceRP3+`"}`),
		st("aggregate on rp1", "PUT", rp(ceRP1)+"/aggregates", "1.39", j(`{"resource_provider_generation": 0, "aggregates": ["`+ceAgg+`"]}`)),
		st("aggregate upper-case uuid", "PUT", rp(ceRP2)+"/aggregates", "1.39", j(`{"resource_provider_generation": 0, "aggregates": ["`+strings.ToUpper(ceAgg)+`"]}`)),
		st("aggregates of rp2", "GET", rp(ceRP2)+"/aggregates", "1.39", ""),
		st("inventory rp1", "PUT", rp(ceRP1)+"/inventories", "1.39", j(`{"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4}}}`)),
		st("show unicode", "GET", rp(ceRP3), "1.39", ""),
		st("list all", "GET", "/resource_providers", "1.39", ""),
	}
	for _, q := range []string{
		"name=cn%201", "name=cn+1", "name=cn%2B1", "name=n%C3%BCmero%20%22uno%22%20%26%20%3Cb%3E",
		"name=n%FCmero", "name=%zz", "name=cn%2", "name=CN+1", "name=cn",
		"uuid=" + strings.ToUpper(ceRP1), "uuid=" + strings.ReplaceAll(ceRP1, "-", ""), "uuid=%20" + ceRP1,
		"member_of=" + strings.ToUpper(ceAgg), "member_of=in:" + ceAgg + "," + strings.ToUpper(ceAgg), "member_of=in:" + ceAgg + "%2C" + cpNone,
		"member_of=" + ceAgg + "&member_of=" + ceAgg, "in_tree=" + strings.ToUpper(ceRP1),
		"resources=VCPU%3A1", "resources=VCPU:1%2CMEMORY_MB:0", "resources=VCPU:%201", "resources=%20VCPU:1", "resources=VCPU:01",
		"required=HW_CPU_X86_AVX%2CHW_CPU_X86_AVX2", "required=!HW_CPU_X86_AVX", "required=%21HW_CPU_X86_AVX",
		"required=in:HW_CPU_X86_AVX,", "required=,HW_CPU_X86_AVX", "required=HW_CPU_X86_AVX,,HW_CPU_X86_AVX2",
		"name=cn+1&name=cn%201", "name=&name=cn+1",
	} {
		steps = append(steps, st("providers "+q, "GET", "/resource_providers?"+q, "1.39", ""))
	}
	for _, q := range []string{
		"resources=VCPU:1&member_of=" + strings.ToUpper(ceAgg), "resources=VCPU:1&in_tree=" + strings.ToUpper(ceRP1),
		"resources=VCPU:1&required=%21HW_CPU_X86_AVX,HW_CPU_X86_AVX", "resources=VCPU:1&limit=01", "resources=VCPU:1&limit=1.0",
		"resources=VCPU:1&group_policy=NONE", "resources1=VCPU:1&group_policy=none&group_policy=isolate",
		"resources=VCPU:1&resources=VCPU:2",
	} {
		steps = append(steps, st("candidates "+q, "GET", "/allocation_candidates?"+q, "1.39", ""))
	}
	for _, q := range []string{"name=in:CUSTOM_A%2CCUSTOM_B", "name=startswith:HW%5FCPU%5FX86%5FAVX5", "name=in:HW_CPU_X86_AVX,HW_CPU_X86_AVX2&associated=yes"} {
		steps = append(steps, st("traits "+q, "GET", "/traits?"+q, "1.39", ""))
	}
	steps = append(steps,
		st("usages project with space", "GET", "/usages?project_id=a%20b", "1.9", ""),
		st("usages project with plus", "GET", "/usages?project_id=a+b", "1.9", ""),
		st("allocation with odd project", "PUT", "/allocations/"+cpInst1, "1.39", j(`{"allocations": {"`+ceRP1+`": {"resources": {"VCPU": 1}}},
			"project_id": "a b", "user_id": "ü", "consumer_generation": null, "consumer_type": "INSTANCE"}`)),
		st("usages project with space after", "GET", "/usages?project_id=a%20b", "1.9", ""),
		st("usages project with plus after", "GET", "/usages?project_id=a+b&user_id=%C3%BC", "1.9", ""),
		st("allocation shown", "GET", "/allocations/"+cpInst1, "1.39", ""),
		st("rename to unicode", "PUT", rp(ceRP2), "1.39", `{"name": "\u00e9t\u00e9"}`),
		st("list by unicode name", "GET", "/resource_providers?name=%C3%A9t%C3%A9", "1.39", ""),
		st("rename to 200 characters", "PUT", rp(ceRP2), "1.39", `{"name": "`+strings.Repeat("é", 200)+`"}`),
		st("rename to 201 characters", "PUT", rp(ceRP2), "1.39", `{"name": "`+strings.Repeat("é", 201)+`"}`),
		st("rename to empty", "PUT", rp(ceRP2), "1.39", `{"name": ""}`),
		withHeaders(st("content type with a bare charset", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_CT1"}`)), "Content-Type", "application/json; charset"),
		withHeaders(st("content type latin-1", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_CT2"}`)), "Content-Type", "application/json; charset=latin-1"),
		withHeaders(st("content type utf-16", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_CT3"}`)), "Content-Type", "application/json; charset=utf-16"),
		withHeaders(st("content type with a bad parameter", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_CT4"}`)), "Content-Type", "application/json; ;;"),
		withHeaders(st("content type with a space before", "POST", "/resource_classes", "1.39", j(`{"name": "CUSTOM_CT5"}`)), "Content-Type", " application/json"),
	)
	return corpusSession{name: "encoding", about: "query strings, escapes, names and uuid spellings", steps: steps}
}

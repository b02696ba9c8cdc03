package scriptlet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// The scenarios of LXD's and Incus's instance placement scriptlet
// specification, documentation and test suite
// (test/suites/clustering_instance_placement_scriptlet.sh), with
// scriptlets written for this suite in their API: each must run on
// Berth unchanged with the outcome LXD or Incus gives (target, refusal,
// fallback to the built-in choice).

// lxdInstance is the instance of the suite's first scenario: limits set
// on the instance (lxc init testimage c1 -c limits.memory=512MiB -c
// limits.cpu=1 -d root,size=200MiB).
func lxdInstance() map[string]any {
	return map[string]any{
		"name": "c1", "project": "default", "type": "container",
		"config": map[string]any{"limits.memory": "512MiB", "limits.cpu": "1"},
		"devices": map[string]any{
			"root": map[string]any{"type": "disk", "path": "/", "pool": "default", "size": "200MiB"},
			"eth0": map[string]any{"type": "nic", "network": "lxdbr0"},
		},
		"profiles": []any{"default"},
		"source":   map[string]any{"type": "image", "alias": "testimage"},
	}
}

// lxdCands are three cluster members node1, node2, node3 as candidates
// (node1's uuid is "uuid-1").
func lxdCands() []*scheduler.Candidate { return threeCands() }

// runLXD ranks lxdCands for a request carrying inst under the default
// limits (a runtime error refuses, as in LXD).
func runLXD(t *testing.T, src string, req *scheduler.Request) (*scheduler.Ranking, error) {
	t.Helper()
	if req.Data == nil {
		req.Data = fixData()
	}
	return rankWith(t, `{}`, src, Limits{}, req, lxdCands())
}

func TestLXDSuiteStaticTarget(t *testing.T) {
	// The suite's first scriptlet, which checks the request and the
	// instance resources, calls every member function, and targets the
	// second member. Two spellings: LXD's (candidate_members[1]) and
	// Incus's (the second name in sorted order).
	for name, target := range map[string]string{
		"lxd":   "set_target(candidate_members[1].server_name)",
		"incus": "candidate_names = sorted([candidate.server_name for candidate in candidate_members])\n        set_target(candidate_names[1])",
	} {
		src := `
def instance_placement(request, candidate_members):
        instance_resources = get_instance_resources()
        log_info("instance placement started: ", request, ", ", instance_resources)

        if request.reason != "new":
                return "Expecting reason new"

        if request.project != "default":
                return "Expecting project default"

        if request.config["limits.memory"] != "512MiB":
                return "Expecting config limits.memory of 512MiB"

        if instance_resources.cpu_cores != 1:
                return "Expecting cpu_cores of 1"

        if instance_resources.memory_size != 536870912:
                return "Expecting memory_size of 536870912"

        if instance_resources.root_disk_size != 209715200:
                return "Expecting root_disk_size of 209715200"

        # Log info, state and resources for each candidate member.
        for member in candidate_members:
                log_info("instance placement member: ", member)
                log_info("instance placement member resources: ", get_cluster_member_resources(member.server_name))
                log_info("instance placement member state: ", get_cluster_member_state(member.server_name))

        ` + target + `

        return # No error.
`
		data := fixData()
		data.members = append(data.members, &scheduler.ProviderView{Provider: engine.Provider{UUID: "node3", Name: "node3"}})
		req := &scheduler.Request{ProjectID: "keystone-project", Reason: "new", Instance: lxdInstance(), Data: data,
			Resources: map[string]int64{"VCPU": 1, "MEMORY_MB": 512}}
		r, err := runLXD(t, src, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if roots(r) != "node2,uuid-1,node3" || !r.Chosen || r.Target != "node2" {
			t.Errorf("%s: ranked %s chosen %v target %s", name, roots(r), r.Chosen, r.Target)
		}
		if len(r.Log) != 10 || !strings.HasPrefix(r.Log[0].Message, "instance placement started: InstancePlacement(") {
			t.Errorf("%s: log %v", name, r.Log)
		}
	}
}

func TestLXDSuiteRefusals(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		// fail() prevents the instance's creation.
		{"fail", `
def instance_placement(request, candidate_members):
        log_error("instance placement not allowed") # Log placement error.

        fail("Instance not allowed") # Fail to prevent instance creation.
`, "Failed instance placement scriptlet: Instance not allowed"},
		// A runtime error prevents it too.
		{"runtime error", `
def instance_placement(request, candidate_members):
        log_info("Accessing invalid field ", candidate_members[4])

        return
`, "index 4 out of range"},
		// Returning a value refuses with the value.
		{"return value", `
def instance_placement(request, candidate_members):
        if request.reason != "evacuation":
                return "Expecting reason evacuation"
`, "Failed instance placement scriptlet: Expecting reason evacuation"},
		// The documentation's example, for an instance named foo.
		{"doc example", lxdDocExample, "Failed instance placement scriptlet: Invalid name"},
		// A limits.memory LXD cannot parse: get_instance_resources
		// fails with LXD's words, and the run with it.
		{"percentage", `
def instance_placement(request, candidate_members):
        r = get_instance_resources()
`, "Failed parsing instance resources limits.memory: Invalid value: 50%"},
	}
	for _, tt := range tests {
		inst := lxdInstance()
		inst["name"] = "foo"
		inst["config"] = map[string]any{"limits.memory": "50%"}
		_, err := runLXD(t, tt.src, &scheduler.Request{Reason: "new", Instance: inst})
		var refused *scheduler.RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a refusal with %q", tt.name, err, tt.want)
		}
	}
}

// lxdDocExample is the example of LXD's documentation (Instance
// placement scriptlet).
const lxdDocExample = `
def instance_placement(request, candidate_members):
    # Example of logging info, this will appear in LXD's log.
    log_info("instance placement started: ", request)

    # Example of applying logic based on the instance request.
    if request.name == "foo":
        # Example of logging an error, this will appear in LXD's log.
        log_error("Invalid name supplied: ", request.name)

        fail("Invalid name") # Exit with an error to reject instance placement.

    # Place the instance on the first candidate server provided.
    set_target(candidate_members[0].server_name)

    return # Return empty to allow instance placement to proceed.
`

func TestLXDDocExampleTargets(t *testing.T) {
	r, err := runLXD(t, lxdDocExample, &scheduler.Request{Reason: "new", Instance: map[string]any{"name": "c2"}})
	if err != nil || !r.Chosen || r.Target != "uuid-1" {
		t.Fatalf("%v %+v", err, r)
	}
}

// invalidTargetScriptlet is the suites' scriptlet that sets a target
// that is no member.
const invalidTargetScriptlet = `
def instance_placement(request, candidate_members):
        # Set invalid member target.
        result = set_target("foo")
        log_warn("Setting invalid member target result: ", result)

        return
`

func TestLXDSuiteInvalidTargetFallsBack(t *testing.T) {
	// LXD: "Check that instance placement uses LXD's built in logic
	// instead (as if setTarget hadn't been called at all)".
	r, err := runLXD(t, invalidTargetScriptlet, &scheduler.Request{Reason: "new", Instance: map[string]any{"config": map[string]any{"cluster.evacuate": "migrate"}}})
	if err != nil || r.Chosen || roots(r) != "uuid-1,node2,node3" {
		t.Fatalf("%v %+v", err, r)
	}
	if len(r.Log) != 2 || r.Log[1].Message != "Setting invalid member target result: Invalid member name" || r.Log[0].Level != "warn" {
		t.Errorf("log %v", r.Log)
	}
}

func TestLXDSuiteEvacuation(t *testing.T) {
	// The evacuated member (node1) is not a candidate: the third member
	// is the second entry.
	src := `
def instance_placement(request, candidate_members):
        log_info("instance placement started: ", request)

        if request.reason != "evacuation":
                return "Expecting reason evacuation"

        # Log info, state and resources for each candidate member.
        for member in candidate_members:
                log_info("instance placement member: ", member)

        set_target(candidate_members[1].server_name)

        return # No error.
`
	cands := lxdCands()[1:]
	r, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{Reason: "evacuation", Data: fixData()}, cands)
	if err != nil || r.Target != "node3" {
		t.Fatalf("%v %+v", err, r)
	}
}

func TestIssueExampleBothAccessStyles(t *testing.T) {
	// The issue's LXD example, in the dict style of early LXD scriptlets
	// and the attribute style of later ones: the candidate with the most
	// free memory.
	for _, src := range []string{`
def instance_placement(request, candidate_members):
    best, most = None, -1
    for candidate in candidate_members:
        server = candidate["server_name"]
        free = get_cluster_member_state(server)["sysinfo"]["free_ram"]
        if free > most:
            best, most = server, free
    set_target(best)
`, `
def instance_placement(request, candidate_members):
    best, most = None, -1
    for candidate in candidate_members:
        free = get_cluster_member_state(candidate.server_name).sysinfo.free_ram
        if free > most:
            best, most = candidate.server_name, free
    set_target(best)
`} {
		data := fixData()
		data.members = append(data.members, &scheduler.ProviderView{Provider: engine.Provider{UUID: "node3", Name: "node3"},
			State: &engine.ProviderState{MemoryFreeMB: 4096, ReportedAt: time.Now()}})
		r, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{Data: data}, threeCands())
		if err != nil || r.Target != "node3" {
			t.Errorf("%v %+v", err, r)
		}
	}
}

func TestIncusFunctions(t *testing.T) {
	// Incus's later functions: project limits from get_project and
	// get_instances_count, members of a group, instances of a member.
	src := `
def instance_placement(request, candidate_members):
    project = get_project(request.project)
    limit = int(project.config.get("limits.instances", "2"))
    count = get_instances_count(project=request.project, pending=True)
    log_info(project.name, len(project.used_by), project.used_by[0], count)
    if count >= limit:
        fail("project %s is at its limit of %d instances" % (request.project, limit))
    members = [m.server_name for m in get_cluster_members("default")]
    in_group = [m.server_name for m in get_cluster_members(group="agg-a")]
    on_node1 = [i.name for i in get_instances(location="node1", project=request.project)]
    log_info(members, in_group, on_node1, get_instances()[0]["location"])
`
	data := fixData()
	data.members[0].State.ReportedAt = time.Now() // online
	r, err := runLXD(t, src, &scheduler.Request{ProjectID: "p2", Reason: "new", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	want := `p2 1 /allocations/i2 1|["node1", "node2"] ["node1"] ["web2"] node1`
	if got := logText(r); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
	_, err = runLXD(t, src, &scheduler.Request{Instance: map[string]any{"project": "p1"}})
	if err == nil || !strings.Contains(err.Error(), "project p1 is at its limit of 2 instances") {
		t.Errorf("p1: %v", err)
	}
}

// logText is a ranking's log messages, "|"-joined.
func logText(r *scheduler.Ranking) string {
	var lines []string
	for _, l := range r.Log {
		lines = append(lines, l.Message)
	}
	return strings.Join(lines, "|")
}

func TestLXDMembers(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	cands := threeCands()
	cands[0].RootProvider().Traits = []string{"HW_ARCH_X86_64", "CUSTOM_FAILURE_DOMAIN_RACK1"}
	cands[1].RootProvider().Traits = []string{"HW_ARCH_AARCH64"}
	data := &fakeData{members: []*scheduler.ProviderView{
		{Provider: engine.Provider{UUID: "uuid-1", Name: "node1"}, State: &engine.ProviderState{Load1: 1, ReportedAt: time.Now()}},
		{Provider: engine.Provider{UUID: "node2", Name: "node2"}, State: &engine.ProviderState{ReportedAt: old}},
		{Provider: engine.Provider{UUID: "node9", Name: "node9"}, Evacuated: true},
	}}
	src := `
def instance_placement(request, candidate_members):
    for m in candidate_members:
        log_info(m.server_name, m["status"], m.message.split(" (")[0], m.architecture, m.failure_domain, m.groups,
                 m["url"], m.database, m.roles, m.config, m.description, "status" in m, m.get("nope", "-"))
    log_info([m.server_name for m in get_cluster_members()], [m.server_name for m in get_cluster_members(all=True)])
    e = [m for m in get_cluster_members(all=True) if m.server_name == "node9"][0]
    log_info(e.status, e.message)
`
	r, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{Data: data}, cands)
	if err != nil {
		t.Fatal(err)
	}
	want := `node1 Online Fully operational x86_64 rack1 ["default", "agg-a"] False [] {} True -|` +
		`node2 Offline No state reported for 1h0m0s aarch64 default ["default"] False [] {} True -|` +
		`node3 Online Fully operational default ["default"] False [] {} True -|` +
		`["node1"] ["node1", "node2", "node9"]|` +
		`Evacuated Unavailable due to maintenance`
	if got := logText(r); got != want {
		t.Errorf("log\n%s\nwant\n%s", got, want)
	}
	// The candidates' states were read once, for all of them.
	if n := data.calls.Load(); n != 1 {
		t.Errorf("%d States calls, want 1", n)
	}
}

func TestLXDMemberResources(t *testing.T) {
	// CPU pinning: a set of cores needs a member with as many threads.
	src := `
def instance_placement(request, candidate_members):
    cores = get_instance_resources().cpu_cores
    for m in candidate_members:
        res = get_cluster_member_resources(m.server_name)
        log_info(m.server_name, res.cpu.total, res["cpu"]["architecture"], res.memory.total, res.memory.used,
                 res["VCPU"].free, [k for k in res], res.gpu.total)
        if res.cpu.total >= cores:
            set_target(m.server_name)
            return
    fail("no member has %d threads" % cores)
`
	data := fixData()
	data.members[0].Traits = []string{"HW_ARCH_X86_64"}
	data.members[0].Resources = scheduler.ResourcesOf(map[string]engine.InventoryUsage{"VCPU": {Inventory: engine.Inventory{Total: 4}, Capacity: 16, Used: 4},
		"MEMORY_MB": {Inventory: engine.Inventory{Total: 2048}, Capacity: 2048, Used: 1024}})
	r, err := runLXD(t, src, &scheduler.Request{Data: data, Instance: map[string]any{"config": map[string]any{"limits.cpu": "0-3,8"}}})
	if err != nil || r.Target != "node2" {
		t.Fatalf("%v %+v", err, r)
	}
	want := `node1 4 x86_64 2147483648 1073741824 12 ["MEMORY_MB", "VCPU"] 0|node2 10 0 0 5 ["VCPU"] 0`
	if got := logText(r); got != want {
		t.Errorf("log\n%s\nwant\n%s", got, want)
	}
}

func TestLXDRequestFields(t *testing.T) {
	src := `
def instance_placement(request, candidate_members):
    log_info(request.name, request.project, request.type, request["architecture"], request.profiles, request.ephemeral,
             request.stateful, request.description, request.source.type, request.source["alias"], request.source.fingerprint)
    log_info(request.devices["root"]["size"], request.instance_type, request.start, request.custom_field, request.instance["name"])
    log_info(request.consumer_uuid, request.user, "config" in request, request.get("nope"), request.resources["VCPU"])
`
	inst := lxdInstance()
	inst["custom_field"] = []any{"kept", float64(2)}
	r, err := runLXD(t, src, &scheduler.Request{ConsumerUUID: "c-uuid", Name: "berth-name", ProjectID: "p", UserID: "u",
		Resources: map[string]int64{"VCPU": 1}, Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	want := `c1 default container ["default"] False False image testimage |` +
		`200MiB False ["kept", 2] c1|c-uuid u True None 1`
	if got := logText(r); got != want {
		t.Errorf("log\n%s\nwant\n%s", got, want)
	}
	// Without an instance: LXD's fields at their zero values, name and
	// project the claim's.
	src = `
def instance_placement(request, candidate_members):
    log_info(request.name, request.project, request.type, request.config, request.devices, request.instance)
`
	r, err = runLXD(t, src, &scheduler.Request{Name: "vm1", ProjectID: "p1"})
	if err != nil || logText(r) != "vm1 p1 container {} {} None" {
		t.Errorf("no instance: %v %q", err, logText(r))
	}
}

func TestInstanceResources(t *testing.T) {
	tests := []struct {
		name      string
		inst      map[string]any
		resources map[string]int64
		want      InstanceResources
		err       string
	}{
		{"from limits", lxdInstance(), map[string]int64{"VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 20},
			InstanceResources{1, 512 * mib, 200 * mib}, ""},
		{"from the claim", map[string]any{"name": "x"}, map[string]int64{"VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 20},
			InstanceResources{4, 1024 * mib, 20 * gib}, ""},
		{"nothing: a container is 0", nil, nil, InstanceResources{}, ""},
		{"nothing: a VM has LXD's defaults", map[string]any{"type": "virtual-machine",
			"devices": map[string]any{"root": map[string]any{"type": "disk", "path": "/", "pool": "p"}}}, nil,
			InstanceResources{1, gib, 10 * gib}, ""},
		{"VM without a root disk", map[string]any{"type": "virtual-machine"}, nil, InstanceResources{1, gib, 0}, ""},
		{"cpu set", map[string]any{"config": map[string]any{"limits.cpu": "0-3,8,10-11"}}, nil, InstanceResources{CPUCores: 7}, ""},
		{"cpu set, reversed range", map[string]any{"config": map[string]any{"limits.cpu": "3-1"}}, nil, InstanceResources{}, ""},
		{"huge cpu range", map[string]any{"config": map[string]any{"limits.cpu": "0-9223372036854775806"}}, nil,
			InstanceResources{CPUCores: 1<<31 - 1}, ""},
		{"decimal units", map[string]any{"config": map[string]any{"limits.memory": "2GB"}}, nil, InstanceResources{MemorySize: 2e9}, ""},
		{"bytes", map[string]any{"config": map[string]any{"limits.memory": "4096"}}, nil, InstanceResources{MemorySize: 4096}, ""},
		{"two root disks: none", map[string]any{"devices": map[string]any{
			"a": map[string]any{"type": "disk", "path": "/", "size": "1GiB"}, "b": map[string]any{"type": "disk", "path": "/", "size": "2GiB"}}},
			map[string]int64{"DISK_GB": 3}, InstanceResources{RootDiskSize: 3 * gib}, ""},
		{"bad cpu", map[string]any{"config": map[string]any{"limits.cpu": "two"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Invalid cpuset value "two": Invalid CPU/NUMA set value: strconv.ParseInt: parsing "two": invalid syntax`},
		{"open range", map[string]any{"config": map[string]any{"limits.cpu": "1-"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Invalid cpuset value "1-": Invalid CPU/NUMA set value: strconv.ParseInt: parsing "": invalid syntax`},
		// Incus: a virtual machine's limits.cpu may be a topology.
		{"VM topology", map[string]any{"type": "virtual-machine", "config": map[string]any{"limits.cpu": "sockets=2, cores=4,threads=2"}},
			nil, InstanceResources{16, gib, 0}, ""},
		{"VM topology, defaults", map[string]any{"type": "virtual-machine", "config": map[string]any{"limits.cpu": "cores=3"}},
			nil, InstanceResources{3, gib, 0}, ""},
		{"container: a topology is a bad set", map[string]any{"config": map[string]any{"limits.cpu": "cores=3"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Invalid cpuset value "cores=3": Invalid CPU/NUMA set value: strconv.ParseInt: parsing "cores=3": invalid syntax`},
		{"VM topology, unknown", map[string]any{"type": "virtual-machine", "config": map[string]any{"limits.cpu": "dies=2"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Unknown CPU topology entry: "dies"`},
		{"VM topology, twice", map[string]any{"type": "virtual-machine", "config": map[string]any{"limits.cpu": "cores=2,cores=3"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Duplicate CPU topology entry: "cores"`},
		{"VM topology, zero", map[string]any{"type": "virtual-machine", "config": map[string]any{"limits.cpu": "cores=0"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Invalid CPU topology value for "cores": "0"`},
		{"VM topology, no value", map[string]any{"type": "virtual-machine", "config": map[string]any{"limits.cpu": "cores=2,threads"}}, nil, InstanceResources{},
			`Failed parsing instance resources limits.cpu: Invalid CPU topology entry: "threads"`},
		{"bad memory", map[string]any{"config": map[string]any{"limits.memory": "1.5GiB"}}, nil, InstanceResources{},
			"Failed parsing instance resources limits.memory: Invalid value: 1.5GiB"},
		{"memory overflow", map[string]any{"config": map[string]any{"limits.memory": "9999999999EiB"}}, nil, InstanceResources{},
			"Failed parsing instance resources limits.memory: Overflow multiplying 9999999999 with 1152921504606846976"},
		{"integer overflow", map[string]any{"config": map[string]any{"limits.memory": "99999999999999999999"}}, nil, InstanceResources{},
			"Failed parsing instance resources limits.memory: Invalid integer: 99999999999999999999"},
		{"bad disk", map[string]any{"devices": map[string]any{"root": map[string]any{"type": "disk", "path": "/", "size": "big"}}}, nil,
			InstanceResources{}, "Failed parsing instance resources root disk size: Invalid value: big"},
	}
	for _, tt := range tests {
		got, err := instanceResources(&scheduler.Request{Instance: tt.inst, Resources: tt.resources})
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v %v, want %+v", tt.name, got, err, tt.want)
		}
	}
	for in, want := range map[string]int64{"1": 1, "1B": 1, "1 bytes": 1, "1kB": 1000, "1KiB": 1024, "3MiB": 3 * mib, "1EiB": 1 << 60, "0GiB": 0} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d %v, want %d", in, got, err, want)
		}
	}
	if _, err := parseByteSize("5 GiB"); err == nil || fmt.Sprint(err) != "Invalid value: 5 GiB" {
		t.Errorf("space: %v", err)
	}
}

func TestLogLineJoins(t *testing.T) {
	// LXD concatenates log_info's arguments; its scriptlets put the
	// separators in. Berth joins with a space where none is there.
	src := `
def instance_placement(request, candidate_members):
    log_info("instance placement member: ", candidate_members[0].server_name)
    log_info("free", 3, "of", 4.5)
    log_warn("a\n", "b", " c", "", "d")
    log_error(candidate_members[0], level="ignored")
`
	r, err := runLXD(t, src, &scheduler.Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := "instance placement member: node1|free 3 of 4.5|a\nb c d|candidate_member(\"node1\")"
	if got := logText(r); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}

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

// The fields of LXD's and Incus's Go structs as their scriptlets see
// them (StarlarkMarshal: every exported field, by its JSON name, embedded
// structs' fields inline), from shared/api of LXD (before its scriptlets
// were removed) and of Incus. Each must be there on Berth's objects,
// read both ways.
var upstreamFields = map[string][]string{
	// api.ClusterMember with ClusterMemberPut.
	"member": {"server_name", "url", "database", "status", "message", "architecture",
		"roles", "failure_domain", "description", "config", "groups"},
	// scriptlet.InstancePlacement: api.InstancesPost with InstancePut
	// (Incus's disk_only), reason and project.
	"request": {"architecture", "config", "devices", "ephemeral", "profiles", "restore", "disk_only", "stateful",
		"description", "name", "source", "instance_type", "type", "start", "reason", "project"},
	// api.InstanceSource, LXD's and Incus's fields.
	"request.source": {"type", "certificate", "alias", "fingerprint", "properties", "server", "secret", "protocol",
		"base-image", "mode", "operation", "secrets", "source", "live", "instance_only", "container_only", "refresh",
		"refresh_exclude_older", "project", "allow_inconsistent", "source_disk_size", "conversion_options",
		"override_snapshot_profiles"},
	// api.ClusterMemberState and ClusterMemberSysInfo (LXD's
	// logical_cpus).
	"state":         {"sysinfo", "storage_pools"},
	"state.sysinfo": {"uptime", "load_averages", "total_ram", "free_ram", "shared_ram", "buffered_ram", "total_swap", "free_swap", "processes", "logical_cpus"},
	// api.Resources (Incus's load and serial) and its sections.
	"resources":         {"cpu", "memory", "gpu", "network", "storage", "usb", "pci", "system", "load", "serial"},
	"resources.cpu":     {"architecture", "sockets", "total"},
	"resources.memory":  {"nodes", "hugepages_total", "hugepages_used", "hugepages_size", "used", "total"},
	"resources.gpu":     {"cards", "total"},
	"resources.network": {"cards", "total"},
	"resources.storage": {"disks", "total"},
	"resources.usb":     {"devices", "total"},
	"resources.pci":     {"devices", "total"},
	"resources.serial":  {"devices", "total"},
	"resources.system":  {"uuid", "vendor", "product", "family", "version", "sku", "serial", "type", "firmware", "chassis", "motherboard"},
	"resources.load":    {"Average1Min", "Average5Min", "Average10Min", "Processes"},
	// scriptlet.InstanceResources.
	"instance_resources": {"cpu_cores", "memory_size", "root_disk_size"},
	// Incus's api.Instance with InstancePut.
	"instance": {"architecture", "config", "devices", "ephemeral", "profiles", "restore", "disk_only", "stateful", "description",
		"created_at", "expanded_config", "expanded_devices", "name", "status", "status_code", "last_used_at", "location", "type", "project"},
	// Incus's api.Project with ProjectPut.
	"project": {"config", "description", "name", "used_by"},
}

func TestLXDObjectFields(t *testing.T) {
	src := `
def instance_placement(request, candidate_members):
    m = candidate_members[0]
    state = get_cluster_member_state(m.server_name)
    res = get_cluster_member_resources(m.server_name)
    objects = {
        "member": m, "request": request, "request.source": request.source,
        "state": state, "state.sysinfo": state.sysinfo,
        "resources": res, "resources.cpu": res.cpu, "resources.memory": res.memory, "resources.gpu": res.gpu,
        "resources.network": res.network, "resources.storage": res.storage, "resources.usb": res.usb,
        "resources.pci": res.pci, "resources.serial": res.serial, "resources.system": res.system, "resources.load": getattr(res, "load"),  # load is a keyword: res.load does not parse
        "instance_resources": get_instance_resources(), "instance": get_instances()[0], "project": get_project("p1"),
    }
    for name, o in objects.items():
        for f in FIELDS[name]:
            if not hasattr(o, f) or f not in o or getattr(o, f) != o[f]:
                log_error(name, "lacks", f)
        log_info(name, "ok")
`
	var b strings.Builder
	b.WriteString("FIELDS = {\n")
	for name, fields := range upstreamFields {
		b.WriteString("    \"" + name + "\": [\"" + strings.Join(fields, "\", \"") + "\"],\n")
	}
	b.WriteString("}\n")
	if testing.Verbose() {
		t.Log(b.String() + src)
	}
	r, err := runLXD(t, b.String()+src, &scheduler.Request{Instance: lxdInstance()})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Log) != len(upstreamFields) {
		t.Errorf("log %q", logText(r))
	}
	for _, l := range r.Log {
		if l.Level != "info" {
			t.Error(l.Message)
		}
	}
}

func TestIncusDialect(t *testing.T) {
	// Incus's test suite: set_target of a member that is not a
	// candidate is a placement error; LXD's falls back (see
	// TestLXDSuiteInvalidTargetFallsBack).
	incus := Limits{Dialect: DialectIncus}
	_, err := rankWith(t, `{}`, invalidTargetScriptlet, incus, &scheduler.Request{Data: fixData()}, lxdCands())
	var refused *scheduler.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "set_target: Invalid member name: foo") {
		t.Errorf("incus set_target: %v", err)
	}
	// A member the lookups do not know: LXD answers a string, Incus
	// fails.
	src := `
def instance_placement(request, candidate_members):
    log_info(get_cluster_member_state("nope"), "|", get_cluster_member_resources("nope"))
`
	r, err := rankWith(t, `{}`, src, Limits{}, &scheduler.Request{Data: fixData()}, lxdCands())
	if err != nil || logText(r) != "Invalid member name | Invalid member name" {
		t.Errorf("lxd lookups: %v %q", err, logText(r))
	}
	_, err = rankWith(t, `{}`, src, incus, &scheduler.Request{Data: fixData()}, lxdCands())
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "get_cluster_member_state: Invalid member name: nope") {
		t.Errorf("incus lookups: %v", err)
	}
	if err := (Limits{Dialect: "openstack"}).Validate(); err == nil {
		t.Error("dialect openstack validated")
	}
}

func TestLXDArgumentsAreTheScriptletsOwn(t *testing.T) {
	// LXD and Incus hand instance_placement a list and a request of its
	// own: a scriptlet may drop candidates from the list and change the
	// request's config as it goes.
	src := `
def instance_placement(request, candidate_members):
    first = candidate_members.pop(0)
    candidate_members.append(first)
    request.config["seen"] = "yes"
    request.devices["root"]["size"] = "1GiB"
    request.profiles.append("extra")
    log_info([m.server_name for m in candidate_members], request.config["seen"], request.devices["root"]["size"], request.profiles)
    set_target(candidate_members[0].server_name)
`
	r, err := runLXD(t, src, &scheduler.Request{Instance: lxdInstance()})
	if err != nil || r.Target != "node2" {
		t.Fatalf("%v %+v", err, r)
	}
	if got, want := logText(r), `["node2", "node3", "node1"] yes 1GiB ["default", "extra"]`; got != want {
		t.Errorf("log %q, want %q", got, want)
	}
	// A filter's request is shared by the calls of one Rank: frozen.
	_, err = rankWith(t, `{"filters": [{"name": "starlark:s"}]}`,
		"def filter(request, candidate):\n    request.config[\"x\"] = 1\n    return True\n\ndef instance_placement(request, candidate_members):\n    pass\n",
		Limits{}, &scheduler.Request{Instance: lxdInstance()}, lxdCands())
	if err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("filter: %v", err)
	}
}

func TestIncusInstances(t *testing.T) {
	// get_instances answers Incus's api.Instance from the consumer's
	// stored instance document, positionally in Incus's order
	// (project, location).
	data := fixData()
	data.instances[0].Instance = map[string]any{"name": "web1", "type": "virtual-machine",
		"config": map[string]any{"limits.cpu": "2", "user.zone": "a"}, "profiles": []any{"default"}}
	data.instances[0].CreatedAt = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	src := `
def instance_placement(request, candidate_members):
    i = get_instances("p1", "node1")[0]
    log_info(i.name, i.type, i.config["user.zone"], i.expanded_config["limits.cpu"], i.profiles, i.status, i.status_code,
             i.location, i.project, i.created_at, i["uuid"], i.devices)
    j = get_instances(location="node2")[0]
    log_info(j.name, j.type, j.config, j.profiles, get_instances_count("p1"), get_instances_count("p1", "node2", True))
    get_instances()[0].config["changed"] = "fine"
`
	r, err := runLXD(t, src, &scheduler.Request{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	want := `web1 virtual-machine a 2 ["default"] Running 103 node1 p1 2026-11-20T08:00:00Z i1 {}|db1 container {} [] 2 1`
	if got := logText(r); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}

func TestIncusClusterMembersOrder(t *testing.T) {
	// Incus's get_cluster_members: online, not evacuated, the fewest
	// instances first.
	now := time.Now()
	data := &fakeData{members: []*scheduler.ProviderView{
		{Provider: engine.Provider{UUID: "u1", Name: "a"}, Consumers: 3, State: &engine.ProviderState{ReportedAt: now}},
		{Provider: engine.Provider{UUID: "u2", Name: "b"}, Consumers: 1},
		{Provider: engine.Provider{UUID: "u3", Name: "c"}, Consumers: 0, Evacuated: true},
		{Provider: engine.Provider{UUID: "u4", Name: "d"}, Consumers: 0, State: &engine.ProviderState{ReportedAt: now.Add(-time.Hour)}},
		{Provider: engine.Provider{UUID: "u5", Name: "e"}, Consumers: 1},
	}}
	r, err := runLXD(t, "def instance_placement(request, candidate_members):\n    log_info([m.server_name for m in get_cluster_members()])\n",
		&scheduler.Request{Data: data})
	if err != nil || logText(r) != `["b", "e", "a"]` {
		t.Errorf("%v %q", err, logText(r))
	}
}

func TestGetInstancesBounded(t *testing.T) {
	// A cloud with more instances than a scriptlet's memory budget
	// holds: get_instances is refused for its size, having read no more
	// than the budget's worth (plus one); get_instances_count counts
	// them all without listing them.
	data := &fakeData{}
	for i := range 5000 {
		data.instances = append(data.instances, scheduler.Instance{UUID: fmt.Sprintf("i%05d", i), Location: "node1", ProjectID: "p"})
	}
	limits := Limits{MaxAlloc: 1 << 20, Timeout: time.Minute} // room for 2,048
	src := "def instance_placement(request, candidate_members):\n    log_info(get_instances_count(), get_instances_count(\"p\", \"node2\"))\n"
	r, err := rankWith(t, `{}`, src, limits, &scheduler.Request{Data: data}, lxdCands())
	if err != nil || logText(r) != "5000 0" {
		t.Fatalf("count: %v %q", err, logText(r))
	}
	src = "def instance_placement(request, candidate_members):\n    log_info(len(get_instances()))\n"
	_, err = rankWith(t, `{}`, src, limits, &scheduler.Request{Data: data}, lxdCands())
	var refused *scheduler.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "get_instances(): needs") {
		t.Errorf("get_instances: %v", err)
	}
	if n := data.listed.Load(); n > (1<<20)/instanceSize+2 {
		t.Errorf("read %d instances for a budget of %d", n, (1<<20)/instanceSize)
	}
	// With room, every one is listed (a deadline that a loaded machine
	// cannot reach: the test is about memory).
	r, err = rankWith(t, `{}`, src, Limits{Timeout: time.Minute}, &scheduler.Request{Data: data}, lxdCands())
	if err != nil || logText(r) != "5000" {
		t.Errorf("roomy: %v %q", err, logText(r))
	}
}

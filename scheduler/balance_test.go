package scheduler

import (
	"fmt"
	"testing"

	"github.com/berthd/berth/ledger/engine"
)

func member(name string, vcpuCap, vcpuUsed, memCap, memUsed int64) *ProviderView {
	return &ProviderView{Provider: engine.Provider{UUID: "uuid-" + name, Name: name}, Resources: ResourcesOf(map[string]engine.InventoryUsage{
		"VCPU": {Capacity: vcpuCap, Used: vcpuUsed}, "MEMORY_MB": {Capacity: memCap, Used: memUsed}})}
}

func inst(uuid, location string, vcpu, mem int64) Instance {
	return Instance{UUID: uuid, Location: location, Resources: map[string]int64{"VCPU": vcpu, "MEMORY_MB": mem}}
}

func TestBalance(t *testing.T) {
	tests := []struct {
		name      string
		cfg       BalancerConfig
		members   []*ProviderView
		instances []Instance
		want      string // "consumer source->dest1,dest2" or "none"
	}{
		{"even: nothing above high", BalancerConfig{Mode: BalanceEven},
			[]*ProviderView{member("a", 10, 7, 100, 10), member("b", 10, 0, 100, 0)},
			[]Instance{inst("i1", "a", 7, 10)}, "none"},
		{"even: smallest consumer that is enough, least utilised destination first", BalancerConfig{Mode: BalanceEven},
			[]*ProviderView{member("hot", 10, 9, 100, 10), member("half", 10, 5, 100, 10), member("idle", 10, 0, 100, 0), member("full", 10, 8, 100, 80)},
			[]Instance{inst("tiny", "hot", 1, 2), inst("small", "hot", 2, 4), inst("big", "hot", 6, 4), inst("x", "half", 5, 10)},
			"tiny hot->idle,half"},
		{"even: none enough, largest first; destinations must stay under high", BalancerConfig{Mode: BalanceEven, High: 0.5},
			[]*ProviderView{member("hot", 10, 10, 100, 10), member("roomy", 10, 0, 100, 0), member("tight", 10, 3, 100, 0)},
			[]Instance{inst("a", "hot", 3, 5), inst("b", "hot", 3, 5), inst("c", "uuid-hot", 4, 0)},
			"c hot->roomy"},
		{"even: no destination fits", BalancerConfig{Mode: BalanceEven},
			[]*ProviderView{member("hot", 10, 10, 100, 10), member("b", 10, 8, 100, 10)},
			[]Instance{inst("a", "hot", 5, 5), inst("b", "hot", 5, 5)}, "none"},
		{"power_saving: empty the least utilised", BalancerConfig{Mode: BalancePowerSaving},
			[]*ProviderView{member("low", 10, 1, 100, 5), member("lower", 10, 0, 100, 1), member("busy", 10, 6, 100, 50),
				member("busier", 10, 7, 100, 50), member("empty", 10, 0, 100, 0)},
			[]Instance{inst("l1", "low", 1, 5), inst("l2", "lower", 0, 1), inst("b1", "busy", 6, 50), inst("b2", "busier", 7, 50)},
			"l2 lower->busier,busy"},
		{"power_saving: destinations stay under high", BalancerConfig{Mode: BalancePowerSaving, High: 0.75},
			[]*ProviderView{member("low", 10, 1, 100, 5), member("busy", 10, 6, 100, 50), member("busier", 10, 7, 100, 50)},
			[]Instance{inst("l1", "low", 1, 5), inst("b1", "busy", 6, 50), inst("b2", "busier", 7, 50)},
			"l1 low->busy"},
		{"power_saving: nothing below low", BalancerConfig{Mode: BalancePowerSaving},
			[]*ProviderView{member("a", 10, 5, 100, 5), member("b", 10, 6, 100, 50)},
			[]Instance{inst("a1", "a", 5, 5), inst("b1", "b", 6, 50)}, "none"},
		{"bad config", BalancerConfig{Mode: "chaos"}, []*ProviderView{member("a", 10, 10, 10, 10)}, []Instance{inst("a", "a", 1, 1)}, "none"},
	}
	for _, tt := range tests {
		s := Balance(tt.cfg, tt.members, tt.instances)
		got := "none"
		if s != nil {
			got = s.ConsumerUUID + " " + s.Source.Name + "->"
			for i, d := range s.Destinations {
				if i > 0 {
					got += ","
				}
				got += d.Name
			}
			if s.Mode != tt.cfg.Mode || s.Reason == "" || s.Source.UUID != "uuid-"+s.Source.Name {
				t.Errorf("%s: %+v", tt.name, s)
			}
		}
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	s := Balance(BalancerConfig{Mode: BalanceEven}, []*ProviderView{member("hot", 10, 9, 100, 0), member("idle", 10, 0, 100, 0)},
		[]Instance{inst("a", "hot", 2, 0)})
	if s == nil || fmt.Sprintf("%.2f %.2f", s.Source.Utilisation, s.Destinations[0].Utilisation) != "0.90 0.20" {
		t.Errorf("utilisations %+v", s)
	}
}

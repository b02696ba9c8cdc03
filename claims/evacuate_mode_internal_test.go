package claims

import "testing"

func TestEvacuateModeOfInstance(t *testing.T) {
	stop := []byte(`{"name": "c1", "config": {"cluster.evacuate": "stop"}}`)
	force := []byte(`{"config": {"cluster.evacuate": "force-stop"}}`)
	migrate := []byte(`{"config": {"cluster.evacuate": "migrate"}}`)
	for _, tt := range []struct {
		mode  string
		doc   []byte
		stays bool
	}{
		{EvacuateAuto, stop, true}, {EvacuateAuto, force, true}, {EvacuateAuto, migrate, false},
		{EvacuateAuto, nil, false}, {EvacuateAuto, []byte(`{"config": "not an object"}`), false},
		{EvacuateMigrate, stop, false}, {EvacuateStop, migrate, true}, {EvacuateStop, nil, true},
	} {
		if got := stays(tt.mode, tt.doc) != ""; got != tt.stays {
			t.Errorf("%s %s: stays %v", tt.mode, tt.doc, got)
		}
	}
	for mode, ok := range map[string]bool{"": true, "auto": true, "migrate": true, "live-migrate": true, "stop": true, "heal": false, "STOP": false} {
		p := EvacuateParams{Mode: mode}
		if err := p.check(); (err == nil) != ok {
			t.Errorf("mode %q: %v", mode, err)
		}
	}
}

package daemon

import (
	"errors"
	"io"
	"log/slog"
	"testing"
)

func TestApplyMemoryLimit(t *testing.T) {
	const v2, v1 = "/v2/memory.max", "/v1/memory.limit_in_bytes"
	tests := []struct {
		name  string
		env   string
		files map[string]string
		want  int64 // limit returned
		set   bool  // whether a limit was set
	}{
		{"v2 limit", "", map[string]string{v2: "1000000000\n"}, 900000000, true},
		{"v2 max", "", map[string]string{v2: "max\n", v1: "1000"}, 0, false},
		{"v1 limit", "", map[string]string{v1: "2000000000\n"}, 1800000000, true},
		{"v1 unlimited", "", map[string]string{v1: "9223372036854771712\n"}, 0, false},
		{"no cgroup", "", map[string]string{}, 0, false},
		{"garbage", "", map[string]string{v2: "lots"}, 0, false},
		{"GOMEMLIMIT wins", "300MiB", map[string]string{v2: "1000000000"}, 314572800, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var setTo int64 = -2
			got := ApplyMemoryLimit(MemoryLimitParams{
				Getenv: func(k string) string {
					if k == "GOMEMLIMIT" {
						return tt.env
					}
					return ""
				},
				ReadFile: func(f string) ([]byte, error) {
					if s, ok := tt.files[f]; ok {
						return []byte(s), nil
					}
					return nil, errors.New("no such file")
				},
				Files: []string{v2, v1},
				Set: func(n int64) int64 {
					if n < 0 {
						return 314572800 // what the runtime parsed from GOMEMLIMIT
					}
					setTo = n
					return 0
				},
			}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if got != tt.want {
				t.Errorf("limit %d, want %d", got, tt.want)
			}
			if tt.set != (setTo >= 0) || (tt.set && setTo != tt.want) {
				t.Errorf("set to %d, want set=%v to %d", setTo, tt.set, tt.want)
			}
		})
	}
}

package placement

import "testing"

func TestAppendCapacity(t *testing.T) {
	for _, tt := range []struct {
		total, reserved int64
		ratio           float64
		want            string
	}{
		{7, 1, 3.3333333, "19"},
		{7, 1, 1e20, "600000000000000000000"},
		{1000, 0, 1e20, "99999999999999991611392"},
		{7, 1, 3.40282e+38, "2041692000000000085152435605657836584960"},
		{10, 0, 0.0001, "0"},
	} {
		if got := string(appendCapacity(nil, tt.total, tt.reserved, tt.ratio)); got != tt.want {
			t.Errorf("capacity(%d, %d, %v) = %s, want %s", tt.total, tt.reserved, tt.ratio, got, tt.want)
		}
	}
}

package admission

import "testing"

// TestPlacementServerErrorLeavesAnswers checks that the listener leaves
// a handler's answer alone, even one that starts like net/http's own.
func TestPlacementServerErrorLeavesAnswers(t *testing.T) {
	for _, b := range []string{
		"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nX-Openstack-Request-Id: req-1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nok",
		"{\"a\": 1}",
		"HTTP/1.1 ",
	} {
		if _, ok := placementServerError([]byte(b)); ok {
			t.Errorf("%q rewritten", b)
		}
	}
}

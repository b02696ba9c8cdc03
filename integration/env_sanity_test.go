package integration

import "testing"

func TestFixture(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/resource_providers/"+rootUUID+"/usages", latest, nil)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	t.Logf("%s", r.body)
	r = e.do("GET", "/resource_providers/"+unknownUUID, "placement 1.23", nil)
	if err := checkErrorBody("GET", r); r.status != 404 || err != nil {
		t.Fatalf("%d %s: %v", r.status, r.body, err)
	}
}

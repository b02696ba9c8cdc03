package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/berthd/berth/httpapi/client"
)

// A scheduler claims room for an instance: Berth ranks the hosts and
// writes the allocations of the best one in one request.
func Example() {
	url, stop := exampleBerth() // a Berth server with hosts compute-1 (16 VCPU) and compute-2 (2 VCPU)
	defer stop()

	c := client.New(client.Config{URL: url, Token: "admin"})
	claim, err := c.Claim(context.Background(), client.ClaimRequest{
		ConsumerUUID: "c0000000-0000-4000-8000-000000000001",
		ProjectID:    "demo",
		UserID:       "alice",
		Resources:    map[string]int64{"VCPU": 4, "MEMORY_MB": 8192},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(claim.RootProviderName, claim.Allocations[claim.RootProviderUUID].Resources)
	// Output: compute-1 map[MEMORY_MB:8192 VCPU:4]
}

// A claim nothing can hold is refused with Placement's error body; its
// code says why.
func ExampleError() {
	url, stop := exampleBerth()
	defer stop()

	c := client.New(client.Config{URL: url, Token: "admin"})
	_, err := c.Claim(context.Background(), client.ClaimRequest{
		ConsumerUUID: "c0000000-0000-4000-8000-000000000002",
		ProjectID:    "demo",
		UserID:       "alice",
		Resources:    map[string]int64{"VCPU": 64},
	})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code())
	}
	// Output: 409 berth.no_valid_host
}

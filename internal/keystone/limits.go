package keystone

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/limits"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/registeredlimits"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"
)

// Keystone's unified limits, read as oslo.limit reads them for a service
// (docs/quotas.md): the registered limits (every project's defaults) and
// the project limits of one service, optionally of one region, with a
// system-scoped token of Berth's service user, which needs the reader role
// on the system (as Nova's unified-limits guide asks of nova's user).

// Limit is one of Keystone's limits: a resource name and its limit (-1:
// unlimited), and its project ("" for a registered limit) and region.
type Limit struct {
	Project  string
	Resource string
	Limit    int64
	Region   string
}

// ErrNoService: no service of the name LimitsReader was given (nor of
// that type) is in Keystone's catalog.
var ErrNoService = errors.New("no such service")

// LimitsReader reads the unified limits of one service. Its methods are
// safe for concurrent use; every error wraps ErrUnavailable, ErrNoService
// or ErrCredentials.
type LimitsReader struct {
	c       *Client
	service string
	region  string

	mu        sync.Mutex
	sc        *gophercloud.ServiceClient // system-scoped; nil until the first login
	serviceID string
}

// LimitsReader returns a reader of the unified limits of the service
// named service (or, failing that, of that type), of region when it is
// not empty. It logs in on first use. An application credential cannot
// hold a system-scoped token: with one, it is an error.
func (c *Client) LimitsReader(service, region string) (*LimitsReader, error) {
	if c.cfg.ApplicationCredentialID != "" {
		return nil, errors.New("keystone: limits are read with a system-scoped token, which an application credential " +
			"cannot get: give Berth's service user a username and password")
	}
	if service == "" {
		return nil, errors.New("keystone: the limits' service name is empty")
	}
	return &LimitsReader{c: c, service: service, region: region}, nil
}

// session returns the system-scoped client and the service's id, logging
// in and looking the service up on first use.
func (r *LimitsReader) session(ctx context.Context) (*gophercloud.ServiceClient, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sc == nil {
		pc, err := openstack.NewClient(r.c.cfg.AuthURL)
		if err != nil {
			return nil, "", err
		}
		pc.HTTPClient = http.Client{Transport: r.c.pc.HTTPClient.Transport, Timeout: r.c.cfg.Timeout}
		pc.UserAgent.Prepend("berthd")
		opts := gophercloud.AuthOptions{IdentityEndpoint: r.c.cfg.AuthURL, AllowReauth: true,
			Username: r.c.cfg.Username, Password: r.c.cfg.Password, DomainName: r.c.cfg.UserDomainName,
			Scope: &gophercloud.AuthScope{System: true}}
		if err := openstack.AuthenticateV3(ctx, pc, &opts, gophercloud.EndpointOpts{}); err != nil {
			var code gophercloud.ErrUnexpectedResponseCode
			if errors.As(err, &code) && code.Actual >= 400 && code.Actual < 500 {
				return nil, "", fmt.Errorf("keystone: %w: a system-scoped token for %s answered %d (does the user hold the reader role on the system?)",
					ErrCredentials, r.c.cfg.Username, code.Actual)
			}
			return nil, "", fmt.Errorf("%w: log in (system scope) at %s: %v", ErrUnavailable, r.c.cfg.AuthURL, err)
		}
		sc, err := openstack.NewIdentityV3(pc, gophercloud.EndpointOpts{})
		if err != nil {
			return nil, "", err
		}
		r.sc = sc
	}
	if r.serviceID == "" {
		id, err := r.lookupService(ctx)
		if err != nil {
			return nil, "", err
		}
		r.serviceID = id
	}
	return r.sc, r.serviceID, nil
}

// lookupService finds the service's id by name, else by type.
func (r *LimitsReader) lookupService(ctx context.Context) (string, error) {
	for _, opts := range []services.ListOpts{{Name: r.service}, {ServiceType: r.service}} {
		pages, err := services.List(r.sc, opts).AllPages(ctx)
		if err != nil {
			return "", unavailable("list services", err)
		}
		found, err := services.ExtractServices(pages)
		if err != nil {
			return "", unavailable("list services", err)
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0].ID, nil
		default:
			return "", fmt.Errorf("keystone: %w: %d services match %q; name one", ErrNoService, len(found), r.service)
		}
	}
	return "", fmt.Errorf("keystone: %w: no service named %q (nor of that type) in the catalog", ErrNoService, r.service)
}

// unavailable wraps a failed request to Keystone.
func unavailable(what string, err error) error {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) && (code.Actual == http.StatusForbidden || code.Actual == http.StatusUnauthorized) {
		return fmt.Errorf("keystone: %w: %s: answered %d (does Berth's user hold the reader role on the system?)",
			ErrCredentials, what, code.Actual)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
}

// Registered returns the service's registered limits.
func (r *LimitsReader) Registered(ctx context.Context) ([]Limit, error) {
	sc, id, err := r.session(ctx)
	if err != nil {
		return nil, err
	}
	pages, err := registeredlimits.List(sc, registeredlimits.ListOpts{ServiceID: id, RegionID: r.region}).AllPages(ctx)
	if err != nil {
		return nil, unavailable("list registered limits", err)
	}
	found, err := registeredlimits.ExtractRegisteredLimits(pages)
	if err != nil {
		return nil, unavailable("list registered limits", err)
	}
	out := make([]Limit, len(found))
	for i, l := range found {
		out[i] = Limit{Resource: l.ResourceName, Limit: int64(l.DefaultLimit), Region: l.RegionID}
	}
	return out, nil
}

// Projects returns the service's project limits: of project, or of every
// project when project is "".
func (r *LimitsReader) Projects(ctx context.Context, project string) ([]Limit, error) {
	sc, id, err := r.session(ctx)
	if err != nil {
		return nil, err
	}
	pages, err := limits.List(sc, limits.ListOpts{ServiceID: id, RegionID: r.region, ProjectID: project}).AllPages(ctx)
	if err != nil {
		return nil, unavailable("list project limits", err)
	}
	found, err := limits.ExtractLimits(pages)
	if err != nil {
		return nil, unavailable("list project limits", err)
	}
	out := make([]Limit, 0, len(found))
	for _, l := range found {
		if l.ProjectID == "" {
			continue // a domain's limit
		}
		out = append(out, Limit{Project: l.ProjectID, Resource: l.ResourceName, Limit: int64(l.ResourceLimit), Region: l.RegionID})
	}
	return out, nil
}

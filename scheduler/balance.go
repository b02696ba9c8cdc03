package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Balancer modes.
const (
	BalanceEven        = "even"
	BalancePowerSaving = "power_saving"
)

// Balancer threshold defaults.
const (
	DefaultBalanceHigh = 0.8
	DefaultBalanceLow  = 0.2
)

// BalancerConfig is a policy's balancer: which rebalancing it suggests.
// High and Low are utilisations in [0, 1]; 0 means the default.
type BalancerConfig struct {
	Mode string  `json:"mode"`
	High float64 `json:"high"`
	Low  float64 `json:"low"`
}

// Validate checks the mode and thresholds (after defaults).
func (c BalancerConfig) Validate() error {
	c = c.WithDefaults()
	if c.Mode != BalanceEven && c.Mode != BalancePowerSaving {
		return fmt.Errorf("balancer: mode must be %q or %q", BalanceEven, BalancePowerSaving)
	}
	if !(c.Low >= 0 && c.Low < c.High && c.High <= 1) {
		return errors.New("balancer: want 0 <= low < high <= 1")
	}
	return nil
}

// WithDefaults is c with the thresholds it leaves out (0) set to
// DefaultBalanceHigh and DefaultBalanceLow.
func (c BalancerConfig) WithDefaults() BalancerConfig {
	if c.High == 0 {
		c.High = DefaultBalanceHigh
	}
	if c.Low == 0 {
		c.Low = DefaultBalanceLow
	}
	return c
}

// MemberUtilisation is a provider in a suggestion, with its utilisation
// (before the suggested move for the source; after it for a destination).
type MemberUtilisation struct {
	UUID        string  `json:"uuid"`
	Name        string  `json:"name"`
	Utilisation float64 `json:"utilisation"`
}

// Suggestion is one consumer to move and where it could go, best first.
type Suggestion struct {
	Mode         string              `json:"mode"`
	ConsumerUUID string              `json:"consumer_uuid"`
	Source       MemberUtilisation   `json:"source"`
	Destinations []MemberUtilisation `json:"destinations"`
	Reason       string              `json:"reason"`
}

// Balance suggests one move for cfg over members (root providers, their
// Resources being capacity and usage) and instances (consumers, located
// by root provider name or uuid). Utilisation is a provider's largest
// used/capacity over its classes. It never moves anything and returns
// nil when there is nothing to suggest.
//
//   - even: the most utilised member above High sheds one consumer: the
//     smallest (by its dominant share of the member) whose departure
//     brings it to High or below, else the largest, to members that stay at or below High with it, least
//     utilised first.
//   - power_saving: the least utilised member that holds consumers and is
//     below Low sheds its smallest consumer to another member holding
//     consumers that stays at or below High with it, most utilised first,
//     so the source can be emptied and powered off.
//
// A consumer with no destination is passed over for the next one.
func Balance(cfg BalancerConfig, members []*ProviderView, instances []Instance) *Suggestion {
	cfg = cfg.WithDefaults()
	if cfg.Validate() != nil {
		return nil
	}
	type member struct {
		p    *ProviderView
		util float64
		on   []Instance
	}
	ms := make([]*member, 0, len(members))
	for _, p := range members {
		m := &member{p: p, util: Utilisation(p)}
		for _, in := range instances {
			if in.Location != "" && p.Matches(in.Location) {
				m.on = append(m.on, in)
			}
		}
		ms = append(ms, m)
	}
	var sources []*member
	for _, m := range ms {
		switch {
		case len(m.on) == 0:
		case cfg.Mode == BalanceEven && m.util > cfg.High:
			sources = append(sources, m)
		case cfg.Mode == BalancePowerSaving && m.util < cfg.Low:
			sources = append(sources, m)
		}
	}
	if cfg.Mode == BalanceEven {
		slices.SortStableFunc(sources, func(a, b *member) int { return cmp.Compare(b.util, a.util) })
	} else {
		slices.SortStableFunc(sources, func(a, b *member) int { return cmp.Compare(a.util, b.util) })
	}
	for _, src := range sources {
		// A consumer's size is its dominant share of the source.
		size := func(in Instance) float64 {
			s := 0.0
			for class, n := range in.Resources {
				if inv := src.p.Resources.Of(class); inv.Capacity > 0 {
					s = max(s, float64(n)/float64(inv.Capacity))
				}
			}
			return s
		}
		order := slices.Clone(src.on)
		slices.SortStableFunc(order, func(a, b Instance) int { return cmp.Compare(size(a), size(b)) })
		if cfg.Mode == BalanceEven {
			// The smallest consumer whose departure is enough, then the
			// rest largest first.
			enough := slices.IndexFunc(order, func(in Instance) bool { return utilAfter(src.p, in, -1) <= cfg.High })
			rest := slices.Clone(order)
			slices.Reverse(rest)
			if enough >= 0 {
				rest = slices.DeleteFunc(rest, func(in Instance) bool { return in.UUID == order[enough].UUID })
				order = append([]Instance{order[enough]}, rest...)
			} else {
				order = rest
			}
		}
		for _, in := range order {
			var dests []MemberUtilisation
			for _, m := range ms {
				if m == src || (cfg.Mode == BalancePowerSaving && (len(m.on) == 0 || m.util < cfg.Low)) {
					continue
				}
				if !fits(m.p, in) {
					continue
				}
				if u := utilAfter(m.p, in, 1); u <= cfg.High {
					dests = append(dests, MemberUtilisation{UUID: m.p.UUID, Name: m.p.Name, Utilisation: u})
				}
			}
			if len(dests) == 0 {
				continue
			}
			if cfg.Mode == BalanceEven {
				slices.SortStableFunc(dests, func(a, b MemberUtilisation) int { return cmp.Compare(a.Utilisation, b.Utilisation) })
			} else {
				slices.SortStableFunc(dests, func(a, b MemberUtilisation) int { return cmp.Compare(b.Utilisation, a.Utilisation) })
			}
			s := &Suggestion{Mode: cfg.Mode, ConsumerUUID: in.UUID, Destinations: dests,
				Source: MemberUtilisation{UUID: src.p.UUID, Name: src.p.Name, Utilisation: src.util}}
			if cfg.Mode == BalanceEven {
				s.Reason = fmt.Sprintf("%s is %.0f%% utilised, above the high threshold of %.0f%%", src.p.Name, 100*src.util, 100*cfg.High)
			} else {
				s.Reason = fmt.Sprintf("%s is %.0f%% utilised, below the low threshold of %.0f%%: empty it to power it off",
					src.p.Name, 100*src.util, 100*cfg.Low)
			}
			return s
		}
	}
	return nil
}

// fits reports whether p has every class in holds, with room for it.
func fits(p *ProviderView, in Instance) bool {
	for class, n := range in.Resources {
		inv, ok := p.Resources.Get(class)
		if !ok || inv.Used+n > inv.Capacity {
			return false
		}
	}
	return true
}

// utilAfter is p's utilisation after adding (sign 1) or removing (-1)
// the instance's resources.
func utilAfter(p *ProviderView, in Instance, sign int64) float64 {
	u := 0.0
	for _, inv := range p.Resources {
		if inv.Capacity > 0 {
			u = max(u, float64(inv.Used+sign*in.Resources[inv.ResourceClass])/float64(inv.Capacity))
		}
	}
	return u
}

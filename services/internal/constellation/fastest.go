package constellation

import (
	"math"
	"sync"
)

// Delays is what routing needs of positions to take, of the fewest-hop paths,
// the fastest: the propagation delay (ns) of the ISL a-b at scenario time tNs.
// *linkemu.Model implements it.
type Delays interface {
	PropagationNs(a, b uint32, tNs int64) (float64, error)
}

// WithDelays is g routing as orbit_model's routing tables do (IslNetwork
// .routing_table, which the engine prices faults on): of the fewest-hop paths
// the fastest at the table's time, ties to the lowest-indexed satellite. The
// table's time is the engine's: the start of the schedule's snapshot holding
// the message's time, or 0 without a schedule (the topology never changes,
// and the engine keeps one table). Without delays (or at a time d does not
// cover) a relay takes the lowest-indexed neighbour one hop closer, which is
// on a fewest-hop path but often a longer one than the engine's. Hop counts,
// and so every count, are the same either way.
func (g *Grid) WithDelays(d Delays) *Grid {
	c := *g
	c.delays = d
	c.fast = &fastTrees{trees: map[fastKey][]uint32{}}
	return &c
}

type fastKey struct {
	dest  uint32
	table int64
}

// fastTrees caches, per destination and table time, each satellite's next hop.
type fastTrees struct {
	mu    sync.Mutex
	trees map[fastKey][]uint32
}

// maxFastTrees bounds the cache (a tree is T next hops; without a schedule
// there are T trees in all).
const maxFastTrees = 4096

// tableTime is the time of the engine's routing table in force at tNs.
func (g *Grid) tableTime(tNs int64) int64 {
	if g.timed == nil {
		return 0
	}
	return tNs / g.timed.step * g.timed.step
}

// fastNext is the next hop from a towards b on the fastest fewest-hop path
// (false: no delays at that time).
func (g *Grid) fastNext(a, b uint32, tNs int64) (uint32, bool) {
	key := fastKey{b, g.tableTime(tNs)}
	g.fast.mu.Lock()
	tree := g.fast.trees[key]
	g.fast.mu.Unlock()
	if tree == nil {
		var ok bool
		if tree, ok = g.fastTree(b, tNs, key.table); !ok {
			return 0, false
		}
		g.fast.mu.Lock()
		if len(g.fast.trees) >= maxFastTrees {
			clear(g.fast.trees)
		}
		g.fast.trees[key] = tree
		g.fast.mu.Unlock()
	}
	return tree[a], true
}

// fastTree is every satellite's next hop towards b, orbit_model's
// _routing_rows rooted at b: the fastest fewest-hop delay from b to each
// satellite, layer by layer of hop count, and as next hop the lowest-indexed
// neighbour one hop closer on such a path (within 1e-3 ns, the engine's 1e-9 ms).
func (g *Grid) fastTree(b uint32, tNs, table int64) ([]uint32, bool) {
	if _, err := g.delays.PropagationNs(b, b, table); err != nil {
		return nil, false // positions do not cover the table's time: asked again per call, so before any work
	}
	dist, err := g.distTo(b, tNs)
	if err != nil {
		return nil, false
	}
	t := len(dist)
	byHops := make([][]uint32, 0, 16)
	for v, d := range dist {
		if d == Unreachable || d == 0 {
			continue
		}
		for int(d) > len(byHops) {
			byHops = append(byHops, nil)
		}
		byHops[d-1] = append(byHops[d-1], uint32(v))
	}
	delay := make([]float64, t)
	next := make([]uint32, t)
	for v := range next {
		next[v] = uint32(v)
	}
	for _, layer := range byHops {
		for _, v := range layer {
			best, hop := math.Inf(1), v
			for _, u := range g.Neighbors(v, tNs) {
				if dist[u] != dist[v]-1 {
					continue
				}
				w, err := g.delays.PropagationNs(u, v, table)
				if err != nil {
					return nil, false
				}
				if c := delay[u] + w; c < best-1e-3 { // ascending: a tie keeps the lower index
					best, hop = c, u
				}
			}
			delay[v], next[v] = best, hop
		}
	}
	return next, true
}

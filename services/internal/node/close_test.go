package node_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/leakcheck"
	"github.com/satpage/satpage/services/internal/node"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/store"
)

// Close stops and waits for everything Start runs: the detector's re-probing
// (and a probe it has in flight), the replicas' upkeep; nothing of the node
// outlives it, although the context Start was given never ends.
func TestCloseJoinsTheNodesBackgroundWork(t *testing.T) {
	spec, err := constellation.ParseSpec("walker-star:15/1/0:500:87")
	if err != nil {
		t.Fatal(err)
	}
	grid, err := constellation.NewGrid(spec)
	if err != nil {
		t.Fatal(err)
	}
	before := leakcheck.Snapshot()
	// Every peer refuses (nothing listens at port 1): the node restores from nobody.
	pool := peers.NewPool(func(uint32) string { return "127.0.0.1:1" },
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	n, err := node.New(node.Options{Index: 3, Grid: grid, Store: store.NewMemory(), Peers: pool, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.Faults().Suspect(context.Background(), 2) // dead: re-probed by the detector's loop from now on
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool's connections are the pool's, not the node's: a dial the node's
	// probe started may still run in gRPC's goroutine (our dialer on its stack)
	// until the pool closes, and ends on gRPC's schedule after that. A loop of
	// the node's own would still run after the grace.
	pool.Close()
	leakcheck.Check(t, before, 2*time.Second)
}

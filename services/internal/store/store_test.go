package store_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

func TestMemoryConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.PageStore { return store.NewMemory() })
}

func TestRedisConforms(t *testing.T) {
	sock := storetest.RedisServer(t)
	storetest.Run(t, func(t *testing.T) store.PageStore {
		r, err := store.NewRedis(context.Background(), sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

// The cache runs the suite in front of both stores, roomy (everything held)
// and tight (a few entries and frames: eviction runs throughout), the Redis
// one against a real redis-server; and again with every session's frame pages
// indexed (IndexFrames: a page absent there is answered from memory).
var cacheBudgets = map[string][2]int{"roomy": {1 << 20, 64 << 20}, "tight": {3, 3 * 1024}}

func TestCachedConforms(t *testing.T) {
	for name, b := range cacheBudgets {
		for _, indexed := range []bool{false, true} {
			cached := func(back store.PageStore) store.PageStore {
				c := store.NewCached(back, b[0], b[1])
				if indexed {
					c.IndexFrames("Test") // the suite's session names start with the test's name
				}
				return c
			}
			if indexed {
				name += " indexed"
			}
			t.Run(name+" memory", func(t *testing.T) {
				storetest.Run(t, func(t *testing.T) store.PageStore { return cached(store.NewMemory()) })
			})
			t.Run(name+" redis", func(t *testing.T) {
				sock := storetest.RedisServer(t)
				storetest.Run(t, func(t *testing.T) store.PageStore {
					r, err := store.NewRedis(context.Background(), sock)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { r.Close() })
					return cached(r)
				})
			})
		}
	}
}

func TestCachedSnapshotConforms(t *testing.T) {
	storetest.RunSnapshot(t, func(t *testing.T) store.PageStore {
		return store.NewCached(store.NewMemory(), 1<<20, 64<<20)
	})
	storetest.RunSnapshot(t, func(t *testing.T) store.PageStore {
		r, err := store.NewRedis(context.Background(), storetest.RedisServer(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return store.NewCached(r, 3, 3*1024)
	})
}

func TestRedisAtAWrongAddressFailsAtStart(t *testing.T) {
	_, err := store.NewRedis(context.Background(), "/nonexistent/redis.sock")
	if err == nil {
		t.Fatal("got nil error, want unavailable")
	}
}

func TestMemorySnapshotConforms(t *testing.T) {
	storetest.RunSnapshot(t, func(t *testing.T) store.PageStore { return store.NewMemory() })
}

func TestRedisSnapshotConforms(t *testing.T) {
	storetest.RunSnapshot(t, func(t *testing.T) store.PageStore {
		r, err := store.NewRedis(context.Background(), storetest.RedisServer(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

// go-redis does not peek at a pooled connection before each command (the
// store hides the socket from it: one syscall less per call); a connection the
// server closed meanwhile fails with EOF and the command goes again on a new one.
func TestRedisServesTheNextCommandAfterTheServerClosedItsConnections(t *testing.T) {
	ctx := context.Background()
	sock := storetest.RedisServer(t)
	r, err := store.NewRedis(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.PutFrames(ctx, "s", []store.Frame{{Page: 1, Data: []byte("one")}}); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Protocol: 2})
	defer admin.Close()
	killed, err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result()
	if err != nil || killed < 1 {
		t.Fatalf("CLIENT KILL: %d killed, %v; want the store's connection(s)", killed, err)
	}
	for range 3 { // more than one pooled connection may have been closed
		f, err := r.GetFrames(ctx, "s", []uint32{1})
		if err != nil || string(f[0].Data) != "one" {
			t.Fatalf("GetFrames after the server closed the connections: got %v, %v", f, err)
		}
	}
}

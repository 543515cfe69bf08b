package store_test

import (
	"context"
	"testing"

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
// one against a real redis-server.
var cacheBudgets = map[string][2]int{"roomy": {1 << 20, 64 << 20}, "tight": {3, 3 * 1024}}

func TestCachedConforms(t *testing.T) {
	for name, b := range cacheBudgets {
		t.Run(name+" memory", func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.PageStore { return store.NewCached(store.NewMemory(), b[0], b[1]) })
		})
		t.Run(name+" redis", func(t *testing.T) {
			sock := storetest.RedisServer(t)
			storetest.Run(t, func(t *testing.T) store.PageStore {
				r, err := store.NewRedis(context.Background(), sock)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return store.NewCached(r, b[0], b[1])
			})
		})
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

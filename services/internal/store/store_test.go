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

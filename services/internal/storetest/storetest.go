// Package storetest is the conformance suite every store.PageStore runs, and
// a helper that starts a real redis-server for tests.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// Run runs the conformance suite; open returns a fresh, empty store (each
// sub-test gets its own session names, so one backend may be shared).
func Run(t *testing.T, open func(t *testing.T) store.PageStore) {
	ctx := context.Background()
	n := 0
	session := func() string { n++; return fmt.Sprintf("%s-%d", t.Name(), n) }

	t.Run("an unknown session has no table", func(t *testing.T) {
		s, sid := open(t), session()
		if _, err := s.GetTable(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("GetTable: got %v, want ErrUnknownSession", err)
		}
		if _, err := s.TableSize(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("TableSize: got %v, want ErrUnknownSession", err)
		}
		if _, err := s.Owners(ctx, sid, []uint32{3}); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("Owners: got %v, want ErrUnknownSession", err)
		}
		if err := s.SetOwner(ctx, sid, []uint32{3}, 1); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("SetOwner: got %v, want ErrUnknownSession", err)
		}
		if err := s.DeleteTable(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("DeleteTable: got %v, want ErrUnknownSession", err)
		}
	})

	t.Run("an opened table is empty and opens once", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if err := s.OpenTable(ctx, sid); !errors.Is(err, errs.ErrSessionExists) {
			t.Errorf("second OpenTable: got %v, want ErrSessionExists", err)
		}
		tab, err := s.GetTable(ctx, sid)
		if err != nil || len(tab) != 0 {
			t.Errorf("GetTable: got %v, %v, want empty table", tab, err)
		}
		if n, err := s.TableSize(ctx, sid); n != 0 || err != nil {
			t.Errorf("TableSize: got %d, %v, want 0", n, err)
		}
		if o, err := s.Owners(ctx, sid, []uint32{0}); len(o) != 0 || err != nil {
			t.Errorf("Owners of a never-created page: got %v, %v, want no entry", o, err)
		}
	})

	t.Run("owners set are owners read", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOwner(ctx, sid, []uint32{0, 7, 4294967295}, 42); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOwner(ctx, sid, []uint32{7}, 3); err != nil {
			t.Fatal(err)
		}
		want := store.Table{0: 42, 7: 3, 4294967295: 42}
		got, err := s.GetTable(ctx, sid)
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("GetTable: got %v, %v, want %v", got, err, want)
		}
		// Pages asked for twice, absent and present, in one lookup.
		o, err := s.Owners(ctx, sid, []uint32{7, 1, 4294967295, 7})
		if want := (store.Table{7: 3, 4294967295: 42}); err != nil || !maps.Equal(o, want) {
			t.Errorf("Owners(7, 1, max, 7): got %v, %v, want %v", o, err, want)
		}
		if o, err := s.Owners(ctx, sid, nil); len(o) != 0 || err != nil {
			t.Errorf("Owners of no pages: got %v, %v, want empty", o, err)
		}
		if n, _ := s.TableSize(ctx, sid); n != 3 {
			t.Errorf("TableSize: got %d, want 3", n)
		}
	})

	t.Run("a put table replaces the old one and is a copy", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.PutTable(ctx, sid, store.Table{1: 1, 2: 2}); err != nil {
			t.Fatal(err)
		}
		in := store.Table{5: 9}
		if err := s.PutTable(ctx, sid, in); err != nil {
			t.Fatal(err)
		}
		in[6] = 9 // the store must not retain the caller's map
		got, err := s.GetTable(ctx, sid)
		if want := (store.Table{5: 9}); err != nil || !maps.Equal(got, want) {
			t.Errorf("GetTable: got %v, %v, want %v", got, err, want)
		}
		if err := s.PutTable(ctx, sid, store.Table{}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.TableSize(ctx, sid); n != 0 || err != nil {
			t.Errorf("an empty put table: got %d, %v, want 0, nil", n, err)
		}
		if err := s.DeleteTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetTable(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("after DeleteTable: got %v, want ErrUnknownSession", err)
		}
	})

	t.Run("frames put are frames got, byte for byte", func(t *testing.T) {
		s, sid := open(t), session()
		big := bytes.Repeat([]byte{0, 1, 2, 255}, 1024)
		in := []store.Frame{{Page: 1, Data: big}, {Page: 2, Data: []byte{}}, {Page: 3, Data: []byte("x\x00y")}}
		if err := s.PutFrames(ctx, sid, in); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetFrames(ctx, sid, []uint32{3, 1, 2})
		if err != nil {
			t.Fatal(err)
		}
		wantPages := []uint32{3, 1, 2}
		wantData := [][]byte{[]byte("x\x00y"), bytes.Repeat([]byte{0, 1, 2, 255}, 1024), {}}
		for i := range got {
			if got[i].Page != wantPages[i] || !bytes.Equal(got[i].Data, wantData[i]) {
				t.Errorf("frame %d: got page %d (%d bytes), want page %d (%d bytes)",
					i, got[i].Page, len(got[i].Data), wantPages[i], len(wantData[i]))
			}
		}
		if n, err := s.CountFrames(ctx, sid); n != 3 || err != nil {
			t.Errorf("CountFrames: got %d, %v, want 3", n, err)
		}
	})

	t.Run("a missing frame is ErrNotFound naming the page", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.PutFrames(ctx, sid, []store.Frame{{Page: 1, Data: []byte("a")}}); err != nil {
			t.Fatal(err)
		}
		_, err := s.GetFrames(ctx, sid, []uint32{1, 812})
		if !errors.Is(err, errs.ErrNotFound) || !bytes.Contains([]byte(err.Error()), []byte("812")) {
			t.Errorf("GetFrames: got %v, want ErrNotFound naming page 812", err)
		}
	})

	t.Run("frames delete once and drop per session", func(t *testing.T) {
		s, sid, other := open(t), session(), session()
		fr := []store.Frame{{Page: 1}, {Page: 2}, {Page: 3}}
		if err := s.PutFrames(ctx, sid, fr); err != nil {
			t.Fatal(err)
		}
		if err := s.PutFrames(ctx, other, fr[:1]); err != nil {
			t.Fatal(err)
		}
		if n, err := s.DeleteFrames(ctx, sid, []uint32{1, 9}); n != 1 || err != nil {
			t.Errorf("DeleteFrames: got %d, %v, want 1", n, err)
		}
		if n, _ := s.DeleteFrames(ctx, sid, []uint32{1}); n != 0 {
			t.Errorf("second DeleteFrames: got %d, want 0", n)
		}
		if n, err := s.DropFrames(ctx, sid); n != 2 || err != nil {
			t.Errorf("DropFrames: got %d, %v, want 2", n, err)
		}
		if n, _ := s.CountFrames(ctx, sid); n != 0 {
			t.Errorf("CountFrames after drop: got %d, want 0", n)
		}
		if n, _ := s.CountFrames(ctx, other); n != 1 {
			t.Errorf("another session's frames: got %d, want 1", n)
		}
	})

	t.Run("frames and tables of one session are independent", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.PutFrames(ctx, sid, []store.Frame{{Page: 4}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetTable(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("a frame does not make a table: got %v", err)
		}
		if err := s.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.CountFrames(ctx, sid); n != 1 {
			t.Errorf("deleting the table kept frames: got %d, want 1", n)
		}
	})

	t.Run("adopted frames come with their owner, and need a table", func(t *testing.T) {
		s, sid := open(t), session()
		err := s.AdoptFrames(ctx, sid, []store.Frame{{Page: 1, Data: []byte("a")}}, 4)
		if !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("AdoptFrames without a table: got %v, want ErrUnknownSession", err)
		}
		if n, _ := s.CountFrames(ctx, sid); n != 0 {
			t.Errorf("frames stored without a table: got %d, want 0", n)
		}
		// A satellite that no longer serves the session still owns frames of it
		// (until they are fetched and released): a refused adoption leaves them
		// as they were, and makes no table.
		held := []store.Frame{{Page: 1, Data: []byte("old")}, {Page: 5, Data: []byte("kept")}}
		if err := s.PutFrames(ctx, sid, held); err != nil {
			t.Fatal(err)
		}
		err = s.AdoptFrames(ctx, sid, []store.Frame{{Page: 1, Data: []byte("a")}, {Page: 2, Data: []byte("b")}}, 4)
		if !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("AdoptFrames without a table, frames held: got %v, want ErrUnknownSession", err)
		}
		if got, err := s.GetFrames(ctx, sid, []uint32{1, 5}); err != nil || string(got[0].Data) != "old" || string(got[1].Data) != "kept" {
			t.Errorf("frames held after a refused adoption: got %v, %v, want old and kept", got, err)
		}
		if n, _ := s.CountFrames(ctx, sid); n != 2 {
			t.Errorf("frames after a refused adoption: got %d, want 2", n)
		}
		if _, err := s.TableSize(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("table after a refused adoption: got %v, want ErrUnknownSession", err)
		}
		if _, err := s.DropFrames(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if err := s.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		in := []store.Frame{{Page: 1, Data: []byte("a")}, {Page: 9, Data: bytes.Repeat([]byte{7}, 4096)}}
		if err := s.AdoptFrames(ctx, sid, in, 4); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetFrames(ctx, sid, []uint32{9, 1})
		if err != nil || len(got[0].Data) != 4096 || string(got[1].Data) != "a" {
			t.Errorf("GetFrames after AdoptFrames: got %v, %v", got, err)
		}
		tab, _ := s.GetTable(ctx, sid)
		if want := (store.Table{1: 4, 9: 4}); !maps.Equal(tab, want) {
			t.Errorf("table after AdoptFrames: got %v, want %v", tab, want)
		}
	})

	t.Run("an answer is kept with the adopted frames, or neither without a table", func(t *testing.T) {
		s, sid := open(t), session()
		answers := "\x00answers:" + sid
		answer := store.Frame{Page: 17, Data: []byte("rid\x00reply")}
		err := s.AdoptAnswered(ctx, sid, []store.Frame{{Page: 1, Data: []byte("a")}}, 4, answers, answer)
		if !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("AdoptAnswered without a table: got %v, want ErrUnknownSession", err)
		}
		if n, _ := s.CountFrames(ctx, answers); n != 0 {
			t.Errorf("answers kept without a table: got %d, want 0", n)
		}
		// Answers kept before (the session moved on): a refused adoption keeps them.
		if err := s.PutFrames(ctx, answers, []store.Frame{{Page: 17, Data: []byte("earlier")}}); err != nil {
			t.Fatal(err)
		}
		err = s.AdoptAnswered(ctx, sid, nil, 4, answers, answer)
		if !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("AdoptAnswered without a table, answers held: got %v, want ErrUnknownSession", err)
		}
		if got, err := s.GetFrames(ctx, answers, []uint32{17}); err != nil || string(got[0].Data) != "earlier" {
			t.Errorf("answers after a refused adoption: got %v, %v, want earlier", got, err)
		}
		if _, err := s.TableSize(ctx, sid); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("table after a refused adoption: got %v, want ErrUnknownSession", err)
		}
		if err := s.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if err := s.AdoptAnswered(ctx, sid, []store.Frame{{Page: 1, Data: []byte("a")}, {Page: 2, Data: []byte{}}}, 4, answers, answer); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetFrames(ctx, answers, []uint32{17})
		if err != nil || string(got[0].Data) != "rid\x00reply" {
			t.Errorf("answer kept: got %v, %v, want rid\\x00reply", got, err)
		}
		tab, _ := s.GetTable(ctx, sid)
		if want := (store.Table{1: 4, 2: 4}); !maps.Equal(tab, want) {
			t.Errorf("table after AdoptAnswered: got %v, want %v", tab, want)
		}
		// No frame: only the answer (a local read), replacing the slot's old one.
		if err := s.AdoptAnswered(ctx, sid, nil, 4, answers, store.Frame{Page: 17, Data: []byte("next")}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetFrames(ctx, answers, []uint32{17}); err != nil || string(got[0].Data) != "next" {
			t.Errorf("answer replaced: got %v, %v, want next", got, err)
		}
		if n, _ := s.CountFrames(ctx, sid); n != 2 {
			t.Errorf("frames of the session: got %d, want 2 (answers kept apart)", n)
		}
	})

	t.Run("a release never deletes pages the local table says are owned here", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.PutFrames(ctx, sid, []store.Frame{{Page: 1}, {Page: 2}, {Page: 3}}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.ReleaseFrames(ctx, sid, []uint32{1, 5}, 7); n != 1 || err != nil {
			t.Errorf("ReleaseFrames with no table here: got %d, %v, want 1, nil", n, err)
		}
		if err := s.PutTable(ctx, sid, store.Table{2: 7, 3: 8}); err != nil {
			t.Fatal(err)
		}
		_, err := s.ReleaseFrames(ctx, sid, []uint32{3, 2}, 7)
		if !errors.Is(err, errs.ErrStillOwned) || !strings.Contains(err.Error(), "page 2") {
			t.Errorf("ReleaseFrames of a page owned here: got %v, want ErrStillOwned naming page 2", err)
		}
		if n, _ := s.CountFrames(ctx, sid); n != 2 {
			t.Errorf("frames after a refused release: got %d, want 2 (nothing deleted)", n)
		}
		if n, err := s.ReleaseFrames(ctx, sid, []uint32{3}, 7); n != 1 || err != nil {
			t.Errorf("ReleaseFrames of a page owned elsewhere: got %d, %v, want 1, nil", n, err)
		}
	})

	t.Run("a cancelled context fails the call", func(t *testing.T) {
		s, sid := open(t), session()
		c, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.PutFrames(c, sid, []store.Frame{{Page: 1}}); !errors.Is(err, context.Canceled) {
			t.Errorf("PutFrames: got %v, want context.Canceled", err)
		}
	})

	t.Run("concurrent moves of distinct pages lose nothing", func(t *testing.T) {
		s, sid := open(t), session()
		if err := s.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 25 {
					p := uint32(w*25 + i)
					if err := s.PutFrames(ctx, sid, []store.Frame{{Page: p, Data: []byte{byte(p)}}}); err != nil {
						t.Error(err)
					}
					if err := s.SetOwner(ctx, sid, []uint32{p}, uint32(w)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if n, _ := s.CountFrames(ctx, sid); n != 200 {
			t.Errorf("CountFrames: got %d, want 200", n)
		}
		tab, _ := s.GetTable(ctx, sid)
		if got := slices.Sorted(maps.Keys(tab)); len(got) != 200 {
			t.Errorf("table entries: got %d, want 200", len(got))
		}
	})
}

// RedisServer starts a private redis-server on a Unix socket in t.TempDir()
// (no persistence, small maxmemory) and returns the socket path; it is killed
// at cleanup. The test skips when redis-server is not installed, and under
// -short: the unit tier (make test-unit) starts no process, and every Go test
// that needs one gets its redis-server here.
func RedisServer(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the unit tier starts no redis-server")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (scripts/setup.sh installs it)")
	}
	dir, err := os.MkdirTemp("", "satpage-redis-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "redis.sock") // short path: sun_path is 108 bytes
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--maxmemory", "64mb", "--maxmemory-policy", "noeviction",
		"--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not create %s within 10 s", sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Sleep pauses ms milliseconds (tests that wait for a refresh interval).
func Sleep(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }

package linkemu

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
)

// cut is the vectors' ephemeris with only its first knots knots (a shorter
// horizon), and epoch in place of its own when not empty.
func cut(t *testing.T, raw []byte, knots int, epoch string) []byte {
	t.Helper()
	nl := bytes.IndexByte(raw, '\n')
	var h map[string]any
	if err := json.Unmarshal(raw[:nl], &h); err != nil {
		t.Fatal(err)
	}
	sats := int(h["satellites"].(float64))
	h["knots"] = knots
	if epoch != "" {
		h["epoch"] = epoch
	}
	head, _ := json.Marshal(h)
	return append(append(head, '\n'), raw[nl+1:nl+1+knots*sats*12]...)
}

// A link ephemeris rewritten in place (a live refresher's longer horizon, a
// replaced ConfigMap) is read again, and the model times messages past the old
// horizon; an unchanged file is not read again; a file whose epoch moved is
// refused and the positions stay.
func TestFileReadsAChangedEphemerisAgain(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/live_ephemeris.bin")
	if err != nil {
		t.Fatal(err)
	}
	s, err := constellation.ParseSpec("walker-star:150/10/1:500:87")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "link-ephemeris.bin")
	write := func(b []byte, at time.Time) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write(cut(t, raw, 31, ""), t0) // 30 minutes
	m, f, err := Open(path, s, DefaultCapacityGbps)
	if err != nil {
		t.Fatal(err)
	}
	later := int64(45 * time.Minute)
	if _, err := m.PropagationNs(0, 1, later); !errors.Is(err, errs.ErrOutOfRange) {
		t.Fatalf("45 min into a 30 min file: got %v, want ErrOutOfRange", err)
	}
	if ok, err := f.Reload(); ok || err != nil {
		t.Fatalf("unchanged file: got read again %v, %v; want false, nil", ok, err)
	}
	write(raw, t0.Add(time.Second)) // the hour
	if ok, err := f.Reload(); !ok || err != nil {
		t.Fatalf("longer file: got read again %v, %v; want true, nil", ok, err)
	}
	if d, err := m.PropagationNs(0, 1, later); err != nil || !(d > 1e6 && d < 2e7) {
		t.Fatalf("45 min into the hour: got %v ns, %v; want an ISL's 1-20 ms", d, err)
	}
	write(cut(t, raw, 61, "2026-01-02T00:00:00.000000Z"), t0.Add(2*time.Second))
	if ok, err := f.Reload(); ok || !errors.Is(err, errs.ErrInvalid) {
		t.Fatalf("moved epoch: got read again %v, %v; want false, ErrInvalid", ok, err)
	}
	if f.Ephemeris().Epoch != "2026-01-01T00:00:00.000000Z" || f.Ephemeris().Knots != 61 {
		t.Fatalf("positions after a refused file: epoch %s, %d knots; want the hour's", f.Ephemeris().Epoch, f.Ephemeris().Knots)
	}
}

package lincheck

import (
	"strings"
	"testing"
)

func op(client int, kind, value string, call, ret int64, ok bool) Op {
	return Op{Client: client, Key: "s/1", Kind: kind, Value: value, CallNs: call, ReturnNs: ret, OK: ok}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want bool
	}{
		{"a read after a write sees it", []Op{op(0, "write", "a", 0, 10, true), op(1, "read", "a", 20, 30, true)}, true},
		{"a never-written page reads empty", []Op{op(0, "read", "", 0, 1, true)}, true},
		{"a stale read after an acknowledged write is caught", []Op{
			op(0, "write", "a", 0, 10, true), op(0, "write", "b", 20, 30, true), op(1, "read", "a", 40, 50, true)}, false},
		{"a lost acknowledged write is caught", []Op{op(0, "write", "a", 0, 10, true), op(1, "read", "", 20, 30, true)}, false},
		{"a read concurrent with a write may see either", []Op{
			op(0, "write", "a", 0, 10, true), op(0, "write", "b", 20, 40, true), op(1, "read", "a", 25, 30, true)}, true},
		{"a failed write may have happened", []Op{
			op(0, "write", "a", 0, 10, true), op(0, "write", "b", 20, 25, false), op(1, "read", "b", 40, 50, true)}, true},
		{"a failed read is left out", []Op{op(0, "write", "a", 0, 10, true), op(1, "read", "zzz", 20, 30, false)}, true},
		{"reads cannot go back in time", []Op{
			op(0, "write", "a", 0, 10, true), op(0, "write", "b", 20, 60, true),
			op(1, "read", "b", 30, 35, true), op(1, "read", "a", 40, 45, true)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(History{Format: Format, Ops: tt.ops}, 0)
			if got.Linearizable != tt.want {
				t.Errorf("Linearizable = %v, want %v (%+v)", got.Linearizable, tt.want, got)
			}
			if !tt.want && (len(got.Illegal) != 1 || got.Illegal[0] != "s/1") {
				t.Errorf("illegal keys %v, want [s/1]", got.Illegal)
			}
		})
	}
}

func TestReadNamesWhatIsWrong(t *testing.T) {
	for _, bad := range []string{`{"format":"other/1","ops":[]}`, `{"format":"satpage-history/1","ops":[{"kind":"cas"}]}`, `not json`} {
		if _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("Read(%s): no error", bad)
		}
	}
}

// Package lincheck checks a recorded history of page reads and writes for
// linearizability with Porcupine (github.com/anishathalye/porcupine): each
// page is a register (a never-written page reads empty), checked on its own.
// `satpage cluster chaos` records the history; cmd/satcheck runs this on it.
package lincheck

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/satpage/satpage/services/internal/errs"
)

// Format names the history file format.
const Format = "satpage-history/1"

// Op is one operation as a client saw it. Times are a monotonic clock's
// nanoseconds. A write that failed may still have taken effect (the reply was
// lost): it is checked as one that may take effect at any time after its
// call. A read that failed returned nothing and is left out.
type Op struct {
	Client   int    `json:"client"`
	Key      string `json:"key"`  // session/page
	Kind     string `json:"kind"` // "read" or "write"
	Value    string `json:"value"`
	CallNs   int64  `json:"call_ns"`
	ReturnNs int64  `json:"return_ns"`
	OK       bool   `json:"ok"`
}

// History is the file `satpage cluster chaos` writes.
type History struct {
	Format string `json:"format"`
	Ops    []Op   `json:"ops"`
}

// Read decodes and checks a history.
func Read(r io.Reader) (History, error) {
	var h History
	dec := json.NewDecoder(r)
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("not a history: %v: %w", err, errs.ErrInvalid)
	}
	if h.Format != Format {
		return h, fmt.Errorf("format %q, want %q: %w", h.Format, Format, errs.ErrInvalid)
	}
	for i, o := range h.Ops {
		if o.Kind != "read" && o.Kind != "write" {
			return h, fmt.Errorf("op %d: kind %q is not read or write: %w", i, o.Kind, errs.ErrInvalid)
		}
		if o.OK && o.ReturnNs < o.CallNs {
			return h, fmt.Errorf("op %d: returns at %d ns, before its call at %d ns: %w", i, o.ReturnNs, o.CallNs, errs.ErrInvalid)
		}
	}
	return h, nil
}

// Result of a check.
type Result struct {
	Linearizable  bool     `json:"linearizable"`
	Operations    int      `json:"operations"`    // checked (failed reads left out)
	Indeterminate int      `json:"indeterminate"` // failed writes, which may or may not have happened
	Keys          int      `json:"keys"`
	Illegal       []string `json:"illegal_keys"` // pages with no linearization
	Unknown       []string `json:"unknown_keys"` // pages the checker gave up on within the timeout
}

type input struct {
	write bool
	value string
}

// register is the model of one page: its state is the last value written.
var register = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, in, out any) (bool, any) {
		i := in.(input)
		if i.write {
			return true, i.value
		}
		return out.(string) == state.(string), state
	},
	DescribeOperation: func(in, out any) string {
		i := in.(input)
		if i.write {
			return fmt.Sprintf("write(%q)", i.value)
		}
		return fmt.Sprintf("read() -> %q", out)
	},
}

// Check runs Porcupine on every page of h, each within timeout (0: none).
func Check(h History, timeout time.Duration) Result {
	byKey := map[string][]porcupine.Operation{}
	var res Result
	for _, o := range h.Ops {
		switch {
		case o.Kind == "read" && !o.OK:
			continue
		case o.Kind == "write" && !o.OK:
			res.Indeterminate++
			byKey[o.Key] = append(byKey[o.Key], porcupine.Operation{ClientId: o.Client, Input: input{true, o.Value},
				Call: o.CallNs, Return: math.MaxInt64})
		default:
			byKey[o.Key] = append(byKey[o.Key], porcupine.Operation{ClientId: o.Client, Input: input{o.Kind == "write", o.Value},
				Call: o.CallNs, Output: o.Value, Return: o.ReturnNs})
		}
		res.Operations++
	}
	res.Keys = len(byKey)
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	res.Illegal, res.Unknown = []string{}, []string{}
	for _, k := range keys {
		switch porcupine.CheckOperationsTimeout(register, byKey[k], timeout) {
		case porcupine.Illegal:
			res.Illegal = append(res.Illegal, k)
		case porcupine.Unknown:
			res.Unknown = append(res.Unknown, k)
		}
	}
	res.Linearizable = len(res.Illegal) == 0 && len(res.Unknown) == 0
	return res
}

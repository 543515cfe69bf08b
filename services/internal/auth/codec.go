package auth

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
)

// Codec is the servers' protobuf codec. gRPC turns a decoding error into
// INTERNAL before any interceptor runs; this codec instead remembers what was
// wrong with a satpage request (naming the field) and lets the handler chain
// start, and Interceptor answers INVALID_ARGUMENT before the handler sees it.
// It also refuses what protobuf-go accepts silently: a varint that does not
// fit a 32-bit field (page -1 sent as int64 would otherwise become 4294967295).
type Codec struct{ base encoding.CodecV2 }

// NewCodec wraps gRPC's registered proto codec.
func NewCodec() Codec { return Codec{base: encoding.GetCodecV2("proto")} }

// Name is "proto": it replaces the default codec on the server it is given to.
func (c Codec) Name() string { return "proto" }

// Marshal is the standard one.
func (c Codec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

// malformed holds the decoding error of a request message until Interceptor takes it.
var malformed sync.Map // proto.Message -> error

// Unmarshal decodes data into v. For satpage.v1 messages a decoding error is
// recorded (see Take) and v left empty.
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	md := m.ProtoReflect().Descriptor()
	pl := plans[md]
	if pl == nil { // not a satpage.v1 message
		return c.base.Unmarshal(data, v)
	}
	// One buffer (a small request) is read where it lies; more are joined in
	// a pooled one. proto.Unmarshal copies what it keeps, so both go back.
	b := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer b.Free()
	buf := b.ReadOnlyData()
	err := proto.Unmarshal(buf, m)
	if werr := checkWire(buf, pl, 0); werr != nil {
		err = werr
	} else if err != nil {
		err = fmt.Errorf("request: %v: %w", err, errs.ErrInvalid)
	}
	if err != nil {
		proto.Reset(m)
		malformed.Store(m, err)
		recorded.Add(1)
	}
	return nil
}

// recorded counts the errors ever put in malformed: while it is 0 (no
// malformed request yet), Take has nothing to look up.
var recorded atomic.Int64

// Take returns (and forgets) the decoding error recorded for req, if any.
func Take(req any) error {
	if req == nil || recorded.Load() == 0 {
		return nil
	}
	if err, ok := malformed.LoadAndDelete(req); ok {
		return err.(error)
	}
	return nil
}

const maxDepth = 16

// plan is what checkWire needs of one satpage.v1 message, read once from its
// descriptor: the descriptor lookups (field by number, its name and kind) cost
// more than the walk itself on every request of the fault path.
type plan struct {
	name   protoreflect.Name
	fields map[protowire.Number]*fieldPlan
}

type fieldPlan struct {
	name protoreflect.Name
	kind protoreflect.Kind
	msg  *plan // MessageKind: the nested message's plan
}

// plans holds a plan for every message of satpage.v1 (nested ones included),
// keyed by descriptor; built once, read-only after.
var plans = func() map[protoreflect.MessageDescriptor]*plan {
	out := map[protoreflect.MessageDescriptor]*plan{}
	var planOf func(md protoreflect.MessageDescriptor) *plan
	planOf = func(md protoreflect.MessageDescriptor) *plan {
		if p, ok := out[md]; ok {
			return p
		}
		p := &plan{name: md.Name(), fields: map[protowire.Number]*fieldPlan{}}
		out[md] = p
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			f := &fieldPlan{name: fd.Name(), kind: fd.Kind()}
			if fd.Kind() == protoreflect.MessageKind {
				f.msg = planOf(fd.Message())
			}
			p.fields[fd.Number()] = f
		}
		return p
	}
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			planOf(ms.Get(i))
			walk(ms.Get(i).Messages())
		}
	}
	walk(satpagev1.File_satpage_v1_satpage_proto.Messages())
	return out
}()

// checkWire walks the wire format of one message and names the first field
// that is malformed, does not fit its type, or holds invalid UTF-8.
func checkWire(b []byte, md *plan, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: nested more than %d deep: %w", md.name, maxDepth, errs.ErrInvalid)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%s: malformed field tag: %w", md.name, errs.ErrInvalid)
		}
		b = b[n:]
		fd := md.fields[num]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			// The name is built only here: every request passes this loop
			// once per field, and a Sprintf each was 1.4 % of a fault's CPU
			// (BenchmarkOneHopFaultInProcess).
			name := fmt.Sprintf("field %d", num)
			if fd != nil {
				name = string(fd.name)
			}
			return fmt.Errorf("%s: malformed value (wire type %d): %w", name, typ, errs.ErrInvalid)
		}
		val := b[:n]
		b = b[n:]
		if fd == nil {
			continue // unknown fields are kept by protobuf; nothing reads them
		}
		if err := checkField(fd, typ, val, depth); err != nil {
			return err
		}
	}
	return nil
}

// fits reports whether v, a varint of a field of kind k, fits the field.
func fits(k protoreflect.Kind, v uint64) bool {
	if k == protoreflect.Uint32Kind {
		return v <= math.MaxUint32
	}
	s := int64(v)
	return s >= math.MinInt32 && s <= math.MaxInt32
}

func checkField(fd *fieldPlan, typ protowire.Type, val []byte, depth int) error {
	name := fd.name
	switch fd.kind {
	case protoreflect.Uint32Kind, protoreflect.Int32Kind, protoreflect.EnumKind:
		tooBig := func(v uint64) error {
			return fmt.Errorf("%s: value %d (as int64) does not fit in %s: %w", name, int64(v), fd.kind, errs.ErrInvalid)
		}
		switch typ {
		case protowire.VarintType:
			if v, _ := protowire.ConsumeVarint(val); !fits(fd.kind, v) {
				return tooBig(v)
			}
		case protowire.BytesType: // packed repeated
			p, _ := protowire.ConsumeBytes(val)
			for len(p) > 0 {
				v, n := protowire.ConsumeVarint(p)
				if n < 0 {
					return fmt.Errorf("%s: malformed packed value: %w", name, errs.ErrInvalid)
				}
				if !fits(fd.kind, v) {
					return tooBig(v)
				}
				p = p[n:]
			}
		default:
			return fmt.Errorf("%s: wire type %d, want a varint: %w", name, typ, errs.ErrInvalid)
		}
	case protoreflect.StringKind:
		s, _ := protowire.ConsumeBytes(val)
		if typ != protowire.BytesType {
			return fmt.Errorf("%s: wire type %d, want length-delimited: %w", name, typ, errs.ErrInvalid)
		}
		if !utf8.Valid(s) {
			return fmt.Errorf("%s: not valid UTF-8: %w", name, errs.ErrInvalid)
		}
	case protoreflect.MessageKind:
		if typ != protowire.BytesType {
			return fmt.Errorf("%s: wire type %d, want length-delimited: %w", name, typ, errs.ErrInvalid)
		}
		s, _ := protowire.ConsumeBytes(val)
		if err := checkWire(s, fd.msg, depth+1); err != nil {
			return fmt.Errorf("%s.%w", name, err)
		}
	}
	return nil
}

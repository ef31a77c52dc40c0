package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/resource/composite"
	"github.com/crossplane/function-sdk-go/response"
)

// The function converts between protobuf Structs and its typed objects
// directly. The SDK's helpers go through JSON both ways for every object
// (protojson, then encoding/json; or the API machinery's reflection, then
// structpb), which costs more than all the rest of a run.

const (
	errJSONFmt      = "invalid JSON at byte %d"
	errNotAnObject  = "not a JSON object"
	errTrailingData = "data after the JSON value"
)

// observedComposite reads the observed XR straight from its protobuf Struct:
// the Struct's own conversion makes the same JSON-typed values (float64
// numbers, map[string]any objects) as the SDK's JSON round trip.
func observedComposite(req *fnv1.RunFunctionRequest) *resource.Composite {
	xr := &resource.Composite{
		Resource:          composite.New(),
		ConnectionDetails: req.GetObserved().GetComposite().GetConnectionDetails(),
	}
	if s := req.GetObserved().GetComposite().GetResource(); s != nil {
		xr.Resource.Object = s.AsMap()
	}
	if xr.ConnectionDetails == nil {
		xr.ConnectionDetails = make(resource.ConnectionDetails)
	}
	return xr
}

// observedComposed reads the observed composed resources that the function
// composes (route, proxy Services, ReferenceGrants) straight from their
// Structs; the others are none of its business.
func observedComposed(req *fnv1.RunFunctionRequest) map[resource.Name]resource.ObservedComposed {
	out := make(map[resource.Name]resource.ObservedComposed, len(req.GetObserved().GetResources()))
	for name, r := range req.GetObserved().GetResources() {
		if !composedByUs(resource.Name(name)) {
			continue
		}
		u := composed.New()
		if s := r.GetResource(); s != nil {
			u.Object = s.AsMap()
		}
		out[resource.Name(name)] = resource.ObservedComposed{Resource: u, ConnectionDetails: r.GetConnectionDetails()}
	}
	return out
}

// newResponse is response.To with a desired state of the response's own:
// response.To shares the request's, so writing the response would write the
// request too, and a run that fails halfway would leave its traces in it.
func newResponse(req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	rsp := response.To(req, response.DefaultTTL)
	d := req.GetDesired()
	rsp.Desired = &fnv1.State{Resources: maps.Clone(d.GetResources())}
	if c := d.GetComposite(); c != nil {
		rsp.Desired.Composite = proto.CloneOf(c)
	}
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = map[string]*fnv1.Resource{}
	}
	return rsp
}

// desiredResource is a composed resource for the response.
func desiredResource(s *structpb.Struct, ready bool) *fnv1.Resource {
	r := &fnv1.Resource{Resource: s, Ready: fnv1.Ready_READY_FALSE}
	if ready {
		r.Ready = fnv1.Ready_READY_TRUE
	}
	return r
}

// structOf converts a typed object to a Struct: its JSON, as encoding/json
// writes it (the tags' names and omitempty, the types' own marshallers),
// parsed straight into Struct values.
func structOf(v any) (*structpb.Struct, error) {
	val, err := valueOf(v)
	if err != nil {
		return nil, err
	}
	s := val.GetStructValue()
	if s == nil {
		return nil, errors.New(errNotAnObject)
	}
	return s, nil
}

// valueOf converts a typed value to a Struct value through its JSON.
func valueOf(v any) (*structpb.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	p := newJSONParser(b)
	val, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.b) {
		return nil, errors.New(errTrailingData)
	}
	return val, nil
}

// jsonParser parses the JSON that encoding/json writes (compact, valid)
// into Struct values in one pass.
//
// A composed object is a tree of a few hundred small Values that all live
// and die with the response, so the parser allocates them in slabs, and
// strings without escapes are slices of one copy of the input: a Value is
// one of a few allocations per slab, not two of its own.
type jsonParser struct {
	b       []byte
	s       string // b as a string, for substrings that allocate nothing.
	i       int
	values  slab[structpb.Value]
	strings slab[structpb.Value_StringValue]
	numbers slab[structpb.Value_NumberValue]
	structs slab[structpb.Value_StructValue]
}

func newJSONParser(b []byte) jsonParser { return jsonParser{b: b, s: string(b)} }

// A slab starts small and doubles up to maxSlab, so that a small object
// (a ReferenceGrant) takes little memory and a large one few allocations.
const (
	minSlab = 8
	maxSlab = 256
)

// slab hands out pointers to elements of arrays it allocates. The elements
// are never copied, only pointed to, as protobuf messages must be.
type slab[T any] struct {
	free []T
	size int
}

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, minSlab), maxSlab)
		s.free = make([]T, s.size)
	}
	t := &s.free[0]
	s.free = s.free[1:]
	return t
}

func (p *jsonParser) stringValue(v string) *structpb.Value {
	k := p.strings.next()
	k.StringValue = v
	val := p.values.next()
	val.Kind = k
	return val
}

func (p *jsonParser) numberValue(v float64) *structpb.Value {
	k := p.numbers.next()
	k.NumberValue = v
	val := p.values.next()
	val.Kind = k
	return val
}

func (p *jsonParser) structValue(v *structpb.Struct) *structpb.Value {
	k := p.structs.next()
	k.StructValue = v
	val := p.values.next()
	val.Kind = k
	return val
}

func (p *jsonParser) fail() error { return errors.Errorf(errJSONFmt, p.i) }

func (p *jsonParser) value() (*structpb.Value, error) {
	if p.i >= len(p.b) {
		return nil, p.fail()
	}
	switch c := p.b[p.i]; {
	case c == '{':
		s, err := p.object()
		if err != nil {
			return nil, err
		}
		return p.structValue(s), nil
	case c == '[':
		return p.list()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.stringValue(s), nil
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return structpb.NewBoolValue(true), nil
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return structpb.NewBoolValue(false), nil
	case bytes.HasPrefix(p.b[p.i:], []byte("null")):
		p.i += 4
		return structpb.NewNullValue(), nil
	default:
		return p.number()
	}
}

func (p *jsonParser) object() (*structpb.Struct, error) {
	p.i++ // {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return s, nil
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail()
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail()
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		s.Fields[k] = v
		if p.i >= len(p.b) {
			return nil, p.fail()
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return s, nil
		default:
			return nil, p.fail()
		}
	}
}

func (p *jsonParser) list() (*structpb.Value, error) {
	p.i++ // [
	l := &structpb.ListValue{}
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return structpb.NewListValue(l), nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		l.Values = append(l.Values, v)
		if p.i >= len(p.b) {
			return nil, p.fail()
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return structpb.NewListValue(l), nil
		default:
			return nil, p.fail()
		}
	}
}

func (p *jsonParser) str() (string, error) {
	start := p.i
	p.i++ // "
	escaped := false
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '\\':
			escaped = true
			p.i += 2
			continue
		case '"':
			p.i++
			if !escaped {
				return p.s[start+1 : p.i-1], nil
			}
			// encoding/json escapes only what Go's quoting also reads
			// (\", \\, \n, \r, \t, \uXXXX); anything else goes to the JSON
			// decoder.
			if s, err := strconv.Unquote(string(p.b[start:p.i])); err == nil {
				return s, nil
			}
			var s string
			if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
				return "", err
			}
			return s, nil
		}
		p.i++
	}
	return "", p.fail()
}

func (p *jsonParser) number() (*structpb.Value, error) {
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			p.i++
			continue
		}
		break
	}
	f, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil || start == p.i {
		p.i = start
		return nil, p.fail()
	}
	return p.numberValue(f), nil
}

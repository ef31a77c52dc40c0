// Package memo keeps the results of pure functions of JSON values (a
// CanaryRoute's spec, the function's Input) for the next run that reads the
// same value.
//
// Crossplane calls the function with the same spec and Input on every
// reconcile, and a few times per reconcile until the function's
// requirements are answered: decoding and checking them again is most of a
// run's work (see docs/performance.md). A value is keyed by a 128-bit hash
// of its content with seeds drawn when the process starts, so that no
// author can build two specs that share a key; results are kept within a
// number of entries and an estimate of their bytes, the least recently
// used evicted first.
package memo

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync"

	"google.golang.org/protobuf/types/known/structpb"
)

// Key identifies a JSON value by its content.
type Key [2]uint64

// seeds are the process's hash seeds: two, for 128 bits.
var seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// Of returns the key of a JSON value as the API machinery decodes one
// (map[string]any, []any, string, float64, int64, bool, nil) and an
// estimate of the bytes it holds. ok is false for a value of another type,
// which is then not kept.
func Of(v any) (key Key, bytes uint64, ok bool) {
	var w walker
	key, ok = w.hash(v)
	return key, w.bytes, ok
}

// walker hashes a value with both seeds in one walk, and counts its bytes.
type walker struct {
	bytes uint64
	buf   [8]byte
}

// Type tags keep values of different types apart.
const (
	tagNil uint64 = iota + 1
	tagFalse
	tagTrue
	tagString
	tagFloat
	tagInt
	tagList
	tagObject
)

// hash hashes a value. Every leaf is hashed with the process's seeds, and
// lists and objects combine their items' hashes: a list in order, an
// object's members by their sum, so that their order, which Go's maps do
// not keep, does not matter and nothing is sorted.
func (w *walker) hash(v any) (Key, bool) {
	switch v := v.(type) {
	case nil:
		w.bytes += 8
		return w.tag(tagNil), true
	case bool:
		w.bytes += 8
		if v {
			return w.tag(tagTrue), true
		}
		return w.tag(tagFalse), true
	case string:
		w.bytes += 16 + uint64(len(v))
		return w.mix(w.tag(tagString), Key{maphash.String(seeds[0], v), maphash.String(seeds[1], v)}), true
	case float64:
		return w.number(tagFloat, math.Float64bits(v)), true
	case int64:
		return w.number(tagInt, uint64(v)), true //nolint:gosec // The bits, not the number.
	case []any:
		w.bytes += 24
		h := w.tag(tagList)
		for _, item := range v {
			ih, ok := w.hash(item)
			if !ok {
				return Key{}, false
			}
			h = w.mix(h, ih)
		}
		return w.mix(h, w.number(tagList, uint64(len(v)))), true
	case map[string]any:
		w.bytes += 48
		var sum Key
		for k, item := range v {
			w.bytes += 16 + uint64(len(k))
			ih, ok := w.hash(item)
			if !ok {
				return Key{}, false
			}
			member := w.mix(Key{maphash.String(seeds[0], k), maphash.String(seeds[1], k)}, ih)
			sum[0] += member[0]
			sum[1] += member[1]
		}
		return w.mix(w.tag(tagObject), sum), true
	default:
		return Key{}, false
	}
}

// tagKeys are the hashes of the type tags, computed once: every node of a
// value hashes its tag.
var tagKeys = func() [tagObject + 1]Key {
	var keys [tagObject + 1]Key
	var w walker
	for t := tagNil; t <= tagObject; t++ {
		keys[t] = w.number(t, t)
	}
	return keys
}()

// tag is the hash of a type's tag.
func (w *walker) tag(t uint64) Key {
	w.bytes += 8
	return tagKeys[t]
}

// number hashes a number's bits, seeded.
func (w *walker) number(tag, bits uint64) Key {
	w.bytes += 8
	binary.LittleEndian.PutUint64(w.buf[:], bits^tag<<56)
	return Key{maphash.Bytes(seeds[0], w.buf[:]), maphash.Bytes(seeds[1], w.buf[:])}
}

// mix combines two hashes, in order.
func (w *walker) mix(a, b Key) Key {
	return Key{fmix(a[0]*31 ^ fmix(b[0])), fmix(a[1]*31 ^ fmix(b[1]))}
}

// fmix is MurmurHash3's 64-bit finalizer: every bit of x moves every bit
// of the result.
func fmix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// A Cache keeps values by key, within a number of entries and of bytes. It
// is safe for concurrent use. What it keeps is shared by every run that
// finds it: callers never modify a value they got from it. Its keys are
// mostly a Key of a JSON value, or a text (package expr keeps its compiled
// expressions and patterns in caches of their own); a key that holds a
// pointer keeps what it points to alive until the entry is evicted, so
// that no other value can take its address. It is the function's one LRU.
type Cache[K comparable, V any] struct {
	maxEntries int
	maxBytes   uint64

	mu      sync.Mutex
	order   *list.List // of *entry[K, V], most recently used first
	entries map[K]*list.Element
	bytes   uint64
}

type entry[K comparable, V any] struct {
	key   K
	value V
	bytes uint64
}

// Unbounded is a bound of bytes that never evicts: a cache of values not
// worth estimating (CEL programs, whose number bounds them) passes it to
// New, adds its values with 0 bytes, and is bounded by its entries alone.
const Unbounded = math.MaxUint64

// New returns a cache of at most entries values and bytes bytes.
func New[K comparable, V any](entries int, bytes uint64) *Cache[K, V] {
	return &Cache[K, V]{maxEntries: entries, maxBytes: bytes, order: list.New(), entries: map[K]*list.Element{}}
}

// Get returns the value kept for key.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).value, true //nolint:forcetypeassert // Only *entry[K, V] is stored.
}

// Add keeps a value of about bytes bytes, unless it would take more than an
// eighth of the cache, and evicts the least recently used values until the
// cache is within its bounds.
func (c *Cache[K, V]) Add(key K, value V, bytes uint64) {
	c.Keep(key, value, bytes)
}

// Keep is Add that returns the value kept for key: the one another caller
// added first when two computed it at once, else value. Callers whose
// value names other entries (a parsed spec names the routes built on it)
// use the one kept, so that the next run finds what they add under it.
func (c *Cache[K, V]) Keep(key K, value V, bytes uint64) V {
	if bytes > c.maxBytes/8 {
		return value
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[K, V]).value //nolint:forcetypeassert // Only *entry[K, V] is stored.
	}
	c.add(key, value, bytes)
	return value
}

// Len is how many values the cache keeps, and their bytes.
func (c *Cache[K, V]) Len() (int, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.bytes
}

// OfProto returns the key of a JSON value in its protobuf form, as the
// function's requests and responses carry it: the key that Of gives the
// value that v.AsInterface() returns (numbers are float64), without
// converting it. A nil value is JSON's null.
func OfProto(v *structpb.Value) Key {
	var w walker
	return w.hashProto(v)
}

// OfProtoObject is OfProto of an object without its member omit: what an
// object says beside one field that changes whenever anything else does (a
// counter of its versions).
func OfProtoObject(fields map[string]*structpb.Value, omit string) Key {
	var w walker
	return w.object(fields, omit)
}

// hashProto hashes a value in its protobuf form as hash hashes it decoded.
func (w *walker) hashProto(v *structpb.Value) Key {
	switch k := v.GetKind().(type) {
	case *structpb.Value_BoolValue:
		if k.BoolValue {
			return w.tag(tagTrue)
		}
		return w.tag(tagFalse)
	case *structpb.Value_StringValue:
		return w.mix(w.tag(tagString), Key{maphash.String(seeds[0], k.StringValue), maphash.String(seeds[1], k.StringValue)})
	case *structpb.Value_NumberValue:
		return w.number(tagFloat, math.Float64bits(k.NumberValue))
	case *structpb.Value_ListValue:
		h := w.tag(tagList)
		for _, item := range k.ListValue.GetValues() {
			h = w.mix(h, w.hashProto(item))
		}
		return w.mix(h, w.number(tagList, uint64(len(k.ListValue.GetValues()))))
	case *structpb.Value_StructValue:
		return w.object(k.StructValue.GetFields(), "")
	default:
		// NullValue, and a Value without a kind, which AsInterface reads
		// as nil too.
		return w.tag(tagNil)
	}
}

// object hashes an object's members, but omit, as hash hashes a
// map[string]any.
func (w *walker) object(fields map[string]*structpb.Value, omit string) Key {
	var sum Key
	for k, item := range fields {
		if k == omit && omit != "" {
			continue
		}
		member := w.mix(Key{maphash.String(seeds[0], k), maphash.String(seeds[1], k)}, w.hashProto(item))
		sum[0] += member[0]
		sum[1] += member[1]
	}
	return w.mix(w.tag(tagObject), sum)
}

// Put keeps a value of about bytes bytes under key in place of the one
// kept, when replace says so of it (or none is kept), and evicts the least
// recently used values until the cache is within its bounds. A value of
// more than an eighth of the cache is not kept, and takes the old one
// away: what the key names has moved past it. It reports whether value is
// kept.
func (c *Cache[K, V]) Put(key K, value V, bytes uint64, replace func(old V) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		old := e.Value.(*entry[K, V]) //nolint:forcetypeassert // Only *entry[K, V] is stored.
		if !replace(old.value) {
			c.order.MoveToFront(e)
			return false
		}
		c.order.Remove(e)
		delete(c.entries, key)
		c.bytes -= old.bytes
	}
	if bytes > c.maxBytes/8 {
		return false
	}
	c.add(key, value, bytes)
	return true
}

// add keeps a value that no other one is kept under, then evicts the least
// recently used values until the cache is within its bounds. c.mu is held.
func (c *Cache[K, V]) add(key K, value V, bytes uint64) {
	c.entries[key] = c.order.PushFront(&entry[K, V]{key: key, value: value, bytes: bytes})
	c.bytes += bytes
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		oldest := c.order.Remove(c.order.Back()).(*entry[K, V]) //nolint:forcetypeassert // Only *entry[K, V] is stored.
		delete(c.entries, oldest.key)
		c.bytes -= oldest.bytes
	}
}

// Bytes estimates the memory a JSON object in its protobuf form holds (a
// structpb node is a message of about 64 bytes beside what it points to),
// without allocating: what caches of such objects are bounded by.
func Bytes(s *structpb.Struct) uint64 {
	n := uint64(64)
	for k, v := range s.GetFields() {
		n += 48 + uint64(len(k)) + valueBytes(v)
	}
	return n
}

func valueBytes(v *structpb.Value) uint64 {
	const node = 64
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return node + 16 + uint64(len(k.StringValue))
	case *structpb.Value_ListValue:
		n := uint64(node + 24 + 8*len(k.ListValue.GetValues()))
		for _, item := range k.ListValue.GetValues() {
			n += valueBytes(item)
		}
		return n
	case *structpb.Value_StructValue:
		return node + Bytes(k.StructValue)
	default:
		return node
	}
}

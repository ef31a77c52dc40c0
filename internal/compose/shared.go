package compose

import (
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane-contrib/function-canary-route/internal/memo"
	"github.com/crossplane-contrib/function-canary-route/internal/route"
	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// sharedBuilds keeps the routes that runs built and found valid, with their
// wire form once a run encoded one, for the next runs that build the same
// route. Crossplane runs the function with the same spec, weight and step
// on every reconcile; building, checking and encoding a route of 16 rules
// was half of such a run (docs/performance.md). Routes that fail a check
// are not kept: a run that finds one fails, and is rare. See sharedBytes
// for what an entry counts. The bounds keep the routes of a few hundred
// CanaryRoutes at their current weights.
var sharedBuilds = memo.New[sharedKey, build](512, 16<<20)

// sharedBytes is what a route kept counts in sharedBuilds: four times the
// estimate of its unstructured form (the typed route, its wire form and
// their headers measure up to 3.75 times it, for a route whose sides'
// filters repeat in every rule) and the parsed spec that its key keeps
// alive. Not the spec's estimate alone: a small spec can make a large route.
// It is computed once per route kept, when it is built.
func sharedBytes(k sharedKey, obj runtime.Object) (uint64, bool) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return 0, false
	}
	_, bytes, ok := memo.Of(u)
	return 4*bytes + k.spec.Bytes(), ok
}

// A sharedKey names a route by everything it is built from: the parsed
// spec (xr.SpecID: its rules, matches, filters, parents, hostnames, sides
// and steps, the Input's default parents included), what the XR adds to
// it (the route's name and namespace, which also name the proxy Services
// it sends to), the version the plan composes, and the step, weight and
// activity of the rollout. route.Params holds nothing else; the canary's
// revision, which names the affinity cookie, is in the spec.
type sharedKey struct {
	spec xr.SpecID
	// base is the CanaryRoute's route name, which names the proxy
	// Services; name is the route's (<base>-<entry> with spec.routes).
	base      string
	name      string
	namespace string
	version   string
	build     buildKey
}

// sharedKey is the key of a route this plan builds, and false when the plan
// builds no route that another run can share: its spec was parsed for this
// run alone.
func (p *Plan) sharedKey(k buildKey) (sharedKey, bool) {
	id := p.CR.SpecID()
	if id.IsZero() {
		return sharedKey{}, false
	}
	return sharedKey{spec: id, base: p.CR.RouteName, name: p.Route.Name, namespace: p.Route.Namespace, version: string(p.Route.Version), build: k}, true
}

// VerifyShared is set by tests: a run then builds every route again when
// it finds it kept, and encodes every wire form again when one is asked for, and
// panics when they differ: every test then proves that a sharedKey names
// all a route is built from, and that no one changes a route or a wire form
// that runs share.
var VerifyShared = false //nolint:gochecknoglobals // A switch for tests.

// fresh builds a route and checks it.
func fresh(params route.Params) build {
	var b build
	b.obj, b.buildErrs = route.Build(params)
	b.admitErrs = route.Admit(params, b.obj)
	return b
}

// verify panics unless a kept build is the one built now. Not
// equality.Semantic: it takes a nil list for an empty one, which encode
// differently.
func verify(k sharedKey, kept, now build) {
	if !reflect.DeepEqual(kept.obj, now.obj) || len(now.buildErrs)+len(now.admitErrs) > 0 {
		panic(fmt.Sprintf("compose: the route kept for %+v is not the route built from its plan", k))
	}
}

// A Wire is a composed object's wire form, encoded once by the first run
// that sends it and then sent, read only, by every run that composes the
// same object. Protocol buffers marshal concurrently from a message that
// no one changes.
type Wire struct {
	once   sync.Once
	object runtime.Object
	s      *structpb.Struct
	err    error
}

// Encode is the object's wire form: its Wire's, else by encode.
func (o Object) Encode(encode func(runtime.Object) (*structpb.Struct, error)) (*structpb.Struct, error) {
	if o.Wire == nil {
		return encode(o.Object)
	}
	return o.Wire.Encode(encode)
}

// Encode is the object's wire form, by encode the first time it is asked
// for.
func (w *Wire) Encode(encode func(runtime.Object) (*structpb.Struct, error)) (*structpb.Struct, error) {
	w.once.Do(func() { w.s, w.err = encode(w.object) })
	if VerifyShared && w.err == nil {
		if s, err := encode(w.object); err != nil || !proto.Equal(s, w.s) {
			panic(fmt.Sprintf("compose: the wire form kept for a %T is not its encoding", w.object))
		}
	}
	return w.s, w.err
}

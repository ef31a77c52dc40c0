package admission

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// admit runs the admission check that matches the type of obj.
func admit(obj any) field.ErrorList {
	switch o := obj.(type) {
	case *gwv1.HTTPRoute:
		return HTTPRoute(o)
	case *gwv1.GRPCRoute:
		return GRPCRoute(o)
	case *gwv1.TLSRoute:
		return TLSRoute(o)
	case *gwv1.TCPRoute:
		return TCPRoute(o)
	case *gwv1alpha2.TLSRoute:
		return TLSRouteV1Alpha2(o)
	case *gwv1alpha2.TCPRoute:
		return TCPRouteV1Alpha2(o)
	case *gwv1.UDPRoute:
		return UDPRoute(o)
	case *gwv1alpha2.UDPRoute:
		return UDPRouteV1Alpha2(o)
	case *gwv1.BackendTLSPolicy:
		return BackendTLSPolicy(o)
	case *gwv1alpha3.BackendTLSPolicy:
		return BackendTLSPolicyV1Alpha3(o)
	case *gwv1.ReferenceGrant:
		return ReferenceGrant(o)
	case *gwv1beta1.ReferenceGrant:
		return ReferenceGrantV1Beta1(o)
	default:
		panic(fmt.Sprintf("no admission check for %T", obj))
	}
}

// channels are the channels that serve the version of obj: the function's
// objects must pass all of them.
func channels(obj any) []crdschema.Channel {
	switch obj.(type) {
	case *gwv1alpha2.TLSRoute, *gwv1alpha2.TCPRoute, *gwv1alpha2.UDPRoute, *gwv1alpha3.BackendTLSPolicy:
		return []crdschema.Channel{crdschema.Experimental}
	default:
		return crdschema.Channels
	}
}

// verdict is the outcome of both validators for one object.
type verdict struct {
	admission field.ErrorList
	crd       map[crdschema.Channel]field.ErrorList
}

func (v verdict) crdAccepts() bool {
	for _, errs := range v.crd {
		if len(errs) > 0 {
			return false
		}
	}
	return true
}

func (v verdict) agree() bool { return (len(v.admission) == 0) == v.crdAccepts() }

func judge(tb testing.TB, obj any) verdict {
	tb.Helper()
	v := verdict{admission: admit(obj), crd: map[crdschema.Channel]field.ErrorList{}}
	for _, c := range channels(obj) {
		v.crd[c] = crdschema.GatewayAPI(tb, c).Validate(obj)
	}
	return v
}

// agrees is judge(tb, obj).agree(), cheaper: when admission refuses obj,
// one refusing channel is enough.
func agrees(tb testing.TB, obj any) bool {
	tb.Helper()
	if len(admit(obj)) == 0 {
		return judge(tb, obj).crdAccepts()
	}
	for _, c := range channels(obj) {
		if len(crdschema.GatewayAPI(tb, c).Validate(obj)) > 0 {
			return true
		}
	}
	return false
}

// report prints a disagreement so that it can be reproduced: the object as
// YAML and both validators' errors.
func report(name string, obj any, v verdict) string {
	b, err := yaml.Marshal(obj)
	if err != nil {
		b = []byte(err.Error())
	}
	var s strings.Builder
	fmt.Fprintf(&s, "%s: admission and the CRDs disagree\n--- object:\n%s--- admission (%d errors):\n", name, b, len(v.admission))
	for _, e := range v.admission {
		fmt.Fprintf(&s, "  %s\n", e)
	}
	for _, c := range crdschema.Channels {
		if errs, ok := v.crd[c]; ok {
			fmt.Fprintf(&s, "--- %s CRDs (%d errors):\n", c, len(errs))
			for _, e := range errs {
				fmt.Fprintf(&s, "  %s\n", e)
			}
		}
	}
	return s.String()
}

// defaultCorpusSeed is the seed of the generated corpus. It is fixed so that
// a failure reproduces; set ADMISSION_CORPUS_SEED to explore other objects.
const defaultCorpusSeed = 20260527

func corpusSeed(t *testing.T) uint64 {
	t.Helper()
	s := os.Getenv("ADMISSION_CORPUS_SEED")
	if s == "" {
		return defaultCorpusSeed
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("ADMISSION_CORPUS_SEED: %v", err)
	}
	return seed
}

// corpusSize is the number of generated objects of each kind, sized so the
// test takes well under 20 s on 2 cores: the CRD validator costs about a
// millisecond per object and channel.
var corpusSize = map[string]int{
	"HTTPRoute":        1000,
	"GRPCRoute":        350,
	"TLSRoute":         150,
	"TCPRoute":         100,
	"TLSRouteV1Alpha2": 100,
	"TCPRouteV1Alpha2": 60,
	"UDPRoute":         100,
	"UDPRouteV1Alpha2": 60,
	"ReferenceGrant":   120,
	"BackendTLSPolicy": 400,
}

// corpus is every hand-written test case plus the generated objects.
func corpus(t *testing.T) []namedCase {
	t.Helper()
	out := allCases()
	seed := corpusSeed(t)
	t.Logf("generated corpus: seed %d (ADMISSION_CORPUS_SEED)", seed)
	g := newGen(seed)
	gens := generators()
	// In a fixed order, so that the seed alone fixes the corpus.
	for _, kind := range slices.Sorted(maps.Keys(gens)) {
		for i := range corpusSize[kind] {
			out = append(out, namedCase{name: fmt.Sprintf("generated/%s/%d", kind, i), obj: gens[kind](g)})
		}
	}
	return out
}

// TestDifferential asserts that admission accepts exactly the objects that
// the Gateway API CRDs of every channel serving them accept.
func TestDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("the differential test runs the CRD validator thousands of times")
	}
	entries := corpus(t)
	// Warm the CRD sets before the workers share them.
	for _, c := range crdschema.Channels {
		crdschema.GatewayAPI(t, c)
	}
	const workers = 2
	var (
		mu               sync.Mutex
		accepted, failed int
		wg               sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(entries); i += workers {
				e := entries[i]
				v := judge(t, e.obj)
				mu.Lock()
				if v.crdAccepts() {
					accepted++
				}
				if !v.agree() {
					failed++
					if failed <= 20 {
						t.Error(report(e.name, e.obj, v))
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d objects: %d accepted by the CRDs, %d refused, %d disagreements", len(entries), accepted, len(entries)-accepted, failed)
}

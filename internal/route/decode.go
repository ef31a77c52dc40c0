package route

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane-contrib/function-canary-route/internal/decode"
)

// Decode reads an observed route into its Gateway API type, at the version
// it was observed at, as the function composes it: its identity and its
// spec, without its status or the metadata that Crossplane, the API server
// and other controllers own, so that re-emitting it claims no field the
// function never wrote. A value that does not fit its typed field (a
// weight beyond int32) is refused, never wrapped: what the function
// re-emits of an observed route must be what was observed.
func Decode(obj map[string]any) (runtime.Object, error) {
	return decode.Typed(decode.AsComposed(obj), New)
}

// New is an empty route of a kind and version the function composes; nil
// for any other.
func New(gvk schema.GroupVersionKind) runtime.Object {
	k, ok := kinds[gvk]
	if !ok {
		return nil
	}
	return k.new()
}

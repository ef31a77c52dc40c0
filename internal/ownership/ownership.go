// Package ownership refuses to compose over objects that a CanaryRoute did
// not compose. Crossplane's server-side apply adopts an existing object of
// the same name, rewrites it, and deletes it with the XR: another team's
// route, Service or ReferenceGrant could be taken over by naming it.
package ownership

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/crossplane-contrib/function-canary-route/internal/fielderr"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
)

const (
	errNotOursFmt = "%s exists and was not composed by this CanaryRoute: refusing to take it over (give the CanaryRoute another routeName, or label the object %s=%s to hand it over)"
	errTakeover   = "cannot compose over objects that other owners manage"
)

// LabelComposite is the label Crossplane sets on every object an XR
// composes, naming the XR.
const LabelComposite = "crossplane.io/composite"

// Composite identifies the XR that composes.
type Composite struct {
	Name string
	UID  string
}

// Check refuses to compose a target over an existing object that this XR
// did not compose. existing holds the objects that Crossplane fetched for
// each target's key; a target whose key Crossplane has not answered yet
// passes, since the response of that call is never applied: its
// requirements send Crossplane back for the objects and a second call.
func Check(xr Composite, targets []names.Target, existing func(names.Key) []metav1.Object) error {
	var problems []string
	for _, t := range targets {
		for _, obj := range existing(t.Key) {
			// Guards against a requirement that Crossplane resolved to
			// another object than the one asked for. An object without a
			// namespace is the target, of a cluster-scoped kind (an
			// analysis template may be one): Crossplane fetches it by name
			// whatever namespace it was asked for.
			ns := obj.GetNamespace()
			if obj.GetName() != t.Name || (ns != t.Namespace && ns != "") || OwnedBy(obj, xr) {
				continue
			}
			problems = append(problems, fmt.Sprintf(errNotOursFmt, t, LabelComposite, xr.Name))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	// Bounded like every Fatal: a route with many grants names at most
	// fielderr.MaxErrors objects, then how many more.
	msg := strings.Join(problems[:min(len(problems), fielderr.MaxErrors)], "; ")
	if more := len(problems) - fielderr.MaxErrors; more > 0 {
		msg += fmt.Sprintf(" (and %d more objects)", more)
	}
	return errors.Wrap(errors.New(msg), errTakeover)
}

// OwnedBy reports whether an object's metadata says the XR composed it:
// Crossplane labels what an XR composes with the XR's name, and makes the XR
// its controller. The controller's UID settles two XRs of the same name (a
// namespaced one and a cluster-scoped one).
func OwnedBy(obj metav1.Object, xr Composite) bool {
	if obj.GetLabels()[LabelComposite] != xr.Name {
		return false
	}
	if xr.UID == "" {
		return true
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && string(ref.UID) != xr.UID {
			return false
		}
	}
	return true
}

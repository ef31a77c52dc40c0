package xr

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-canary-route/internal/xr/xrtest"
)

// baseXR is a valid cluster-scoped CanaryRoute without a claim: the Flagger
// scenario of docs/reference.md. Each case patches a fresh copy.
const baseXR = `
apiVersion: platform.example.org/v1alpha1
kind: XCanaryRoute
metadata:
  name: podinfo
spec:
  namespace: test
  parentRefs:
    - name: gateway
      namespace: istio-ingress
  hostnames: [www.example.com]
  port: 9898
  primary:
    service:
      selector: {app: podinfo}
  canary:
    backendRef:
      name: canary-proxy
      namespace: monitoring
      port: 3456
  traffic:
    weight: 20
`

// fromYAML decodes YAML into the JSON types that Crossplane hands the
// function.
var fromYAML = xrtest.FromYAML

// A patch changes the XR under test: set sets a field at a dotted path to
// a YAML value, del deletes one.
type patch = xrtest.Patch

var (
	set = xrtest.Set
	del = xrtest.Del
)

// xrWith returns the base XR with the patches applied.
func xrWith(t testing.TB, patches ...patch) map[string]any {
	t.Helper()
	obj, _ := fromYAML(t, baseXR).(map[string]any)
	for _, p := range patches {
		p(t, obj)
	}
	return obj
}

// list returns a YAML flow list of n copies of item.
func list(n int, item string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

// listf returns a YAML flow list of n items, item i formatted with i.
func listf(n int, format string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(format, i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// selectorOf returns a YAML flow map of n labels, key i formatted with i.
func selectorOf(n int, keyFormat string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("%q: v", fmt.Sprintf(keyFormat, i))
	}
	return "{" + strings.Join(items, ",") + "}"
}

// Shorthands for wanted errors.
type fieldErr = xrtest.FieldErr

var (
	invalid      = xrtest.Invalid
	required     = xrtest.Required
	forbidden    = xrtest.Forbidden
	tooMany      = xrtest.TooMany
	notSupported = xrtest.NotSupported
)

func fieldErrors(t testing.TB, err error) []*field.Error {
	t.Helper()
	return xrtest.FieldErrors(t, err)
}

func diffErrs(_ testing.TB, want []fieldErr, errs []*field.Error) string {
	return xrtest.Diff(want, errs)
}

package xr

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/decode"
)

// The raw* types mirror the XR's JSON. Kind-specific fragments (matches and
// filters) stay raw until the route kind is known, then decode into the
// Gateway API type of that kind.

type rawSpec struct {
	Namespace       string                 `json:"namespace,omitempty"`
	RouteName       string                 `json:"routeName,omitempty"`
	Kind            RouteKind              `json:"kind,omitempty"`
	ParentRefs      []gwv1.ParentReference `json:"parentRefs,omitempty"`
	Hostnames       []gwv1.Hostname        `json:"hostnames,omitempty"`
	Port            *int32                 `json:"port,omitempty"`
	Rules           []rawRule              `json:"rules,omitempty"`
	Primary         *rawSide               `json:"primary,omitempty"`
	Canary          *rawSide               `json:"canary,omitempty"`
	Traffic         *rawTraffic            `json:"traffic,omitempty"`
	ReferenceGrants GrantMode              `json:"referenceGrants,omitempty"`
}

type rawRule struct {
	Name        *gwv1.SectionName       `json:"name,omitempty"`
	Matches     json.RawMessage         `json:"matches,omitempty"`
	Filters     json.RawMessage         `json:"filters,omitempty"`
	BackendRefs json.RawMessage         `json:"backendRefs,omitempty"`
	Timeouts    *gwv1.HTTPRouteTimeouts `json:"timeouts,omitempty"`
	Retry       *gwv1.HTTPRouteRetry    `json:"retry,omitempty"`
}

type rawSide struct {
	Service      *rawService                  `json:"service,omitempty"`
	ExternalName *string                      `json:"externalName,omitempty"`
	BackendRef   *gwv1.BackendObjectReference `json:"backendRef,omitempty"`
	Filters      json.RawMessage              `json:"filters,omitempty"`
	TLS          json.RawMessage              `json:"tls,omitempty"`
	Revision     *string                      `json:"revision,omitempty"`
}

type rawService struct {
	Selector    map[string]string   `json:"selector,omitempty"`
	TargetPort  *intstr.IntOrString `json:"targetPort,omitempty"`
	AppProtocol *string             `json:"appProtocol,omitempty"`
}

type rawTraffic struct {
	Weight               *int32                 `json:"weight,omitempty"`
	Steps                []rawStep              `json:"steps,omitempty"`
	Paused               bool                   `json:"paused,omitempty"`
	Abort                bool                   `json:"abort,omitempty"`
	Matches              json.RawMessage        `json:"matches,omitempty"`
	Mirror               *rawMirror             `json:"mirror,omitempty"`
	SessionAffinity      *rawAffinity           `json:"sessionAffinity,omitempty"`
	Gates                []rawGate              `json:"gates,omitempty"`
	RequireAcceptedRoute *bool                  `json:"requireAcceptedRoute,omitempty"`
	ProgressDeadline     *string                `json:"progressDeadline,omitempty"`
	Approval             *rawApproval           `json:"approval,omitempty"`
	Promote              *rawPromote            `json:"promote,omitempty"`
	Retry                *string                `json:"retry,omitempty"`
	Analysis             map[string]rawAnalysis `json:"analysis,omitempty"`
}

type rawStep struct {
	Weight   *int32          `json:"weight,omitempty"`
	Pause    *string         `json:"pause,omitempty"`
	Analysis []string        `json:"analysis,omitempty"`
	Approval bool            `json:"approval,omitempty"`
	Matches  json.RawMessage `json:"matches,omitempty"`
	Mirror   *rawMirror      `json:"mirror,omitempty"`
}

type rawMirror struct {
	Percent *int32          `json:"percent,omitempty"`
	Matches json.RawMessage `json:"matches,omitempty"`
}

type rawApproval struct {
	Revision string `json:"revision,omitempty"`
	Step     *int32 `json:"step,omitempty"`
}

type rawPromote struct {
	Revision string `json:"revision,omitempty"`
}

type rawAnalysis struct {
	Template    map[string]any `json:"template,omitempty"`
	SuccessWhen string         `json:"successWhen,omitempty"`
	FailWhen    string         `json:"failWhen,omitempty"`
}

type rawAffinity struct {
	CookieName        string         `json:"cookieName,omitempty"`
	PrimaryCookieName string         `json:"primaryCookieName,omitempty"`
	MaxAge            *string        `json:"maxAge,omitempty"`
	Attributes        *rawAttributes `json:"attributes,omitempty"`
	Mode              AffinityMode   `json:"mode,omitempty"`
}

type rawAttributes struct {
	Path     *string `json:"path,omitempty"`
	Domain   string  `json:"domain,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	SameSite string  `json:"sameSite,omitempty"`
}

type rawGate struct {
	APIVersion    string  `json:"apiVersion,omitempty"`
	Kind          string  `json:"kind,omitempty"`
	Name          string  `json:"name,omitempty"`
	ConditionType string  `json:"conditionType,omitempty"`
	SuccessWhen   string  `json:"successWhen,omitempty"`
	FailWhen      string  `json:"failWhen,omitempty"`
	FailAfter     *string `json:"failAfter,omitempty"`
}

// specKeys are the spec fields that the function reads, by JSON name. Other
// spec fields (Crossplane's own, such as spec.crossplane or
// spec.compositionRef, or a platform team's additions for other functions in
// the pipeline) are none of its business and are ignored.
var specKeys = jsonNames(reflect.TypeFor[rawSpec]())

// sortedSpecKeys are the keys of specKeys, sorted.
var sortedSpecKeys = slices.Sorted(maps.Keys(specKeys))

func jsonNames(t reflect.Type) map[string]int {
	names := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = i
	}
	return names
}

// decodeSpec decodes the spec fields the function reads, strictly: an
// unknown or duplicate field inside them, or a value of the wrong type, is an
// error naming the field, so a typo never silently turns into a default.
func decodeSpec(path *field.Path, spec map[string]any) (*rawSpec, field.ErrorList) {
	out := &rawSpec{}
	v := reflect.ValueOf(out).Elem()
	var errs field.ErrorList
	// In a stable order, and only the fields the function reads: a spec
	// may hold any number of others.
	for _, k := range sortedSpecKeys {
		raw, ok := spec[k]
		if !ok {
			continue
		}
		i := specKeys[k]
		b, err := json.Marshal(raw)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child(k), field.OmitValueType{}, err.Error()))
			continue
		}
		errs = append(errs, decode.Strict(path.Child(k), b, v.Field(i).Addr().Interface())...)
	}
	return out, errs
}

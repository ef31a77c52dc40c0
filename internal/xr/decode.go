package xr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsjson "sigs.k8s.io/json"
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
	Name     *gwv1.SectionName       `json:"name,omitempty"`
	Matches  json.RawMessage         `json:"matches,omitempty"`
	Filters  json.RawMessage         `json:"filters,omitempty"`
	Timeouts *gwv1.HTTPRouteTimeouts `json:"timeouts,omitempty"`
}

type rawSide struct {
	Service      *rawService                  `json:"service,omitempty"`
	ExternalName *string                      `json:"externalName,omitempty"`
	BackendRef   *gwv1.BackendObjectReference `json:"backendRef,omitempty"`
	Filters      json.RawMessage              `json:"filters,omitempty"`
	Revision     *string                      `json:"revision,omitempty"`
}

type rawService struct {
	Selector    map[string]string   `json:"selector,omitempty"`
	TargetPort  *intstr.IntOrString `json:"targetPort,omitempty"`
	AppProtocol *string             `json:"appProtocol,omitempty"`
}

type rawTraffic struct {
	Weight               *int32          `json:"weight,omitempty"`
	Steps                []rawStep       `json:"steps,omitempty"`
	Paused               bool            `json:"paused,omitempty"`
	Abort                bool            `json:"abort,omitempty"`
	Matches              json.RawMessage `json:"matches,omitempty"`
	Mirror               *rawMirror      `json:"mirror,omitempty"`
	SessionAffinity      *rawAffinity    `json:"sessionAffinity,omitempty"`
	Gates                []rawGate       `json:"gates,omitempty"`
	RequireAcceptedRoute *bool           `json:"requireAcceptedRoute,omitempty"`
	ProgressDeadline     *string         `json:"progressDeadline,omitempty"`
}

type rawStep struct {
	Weight *int32  `json:"weight,omitempty"`
	Pause  *string `json:"pause,omitempty"`
}

type rawMirror struct {
	Percent *int32 `json:"percent,omitempty"`
}

type rawAffinity struct {
	CookieName string  `json:"cookieName,omitempty"`
	MaxAge     *string `json:"maxAge,omitempty"`
}

type rawGate struct {
	APIVersion    string  `json:"apiVersion,omitempty"`
	Kind          string  `json:"kind,omitempty"`
	Name          string  `json:"name,omitempty"`
	ConditionType string  `json:"conditionType,omitempty"`
	FailAfter     *string `json:"failAfter,omitempty"`
}

// specKeys are the spec fields that the function reads, by JSON name. Other
// spec fields (Crossplane's own, such as spec.crossplane or
// spec.compositionRef, or a platform team's additions for other functions in
// the pipeline) are none of its business and are ignored.
var specKeys = jsonNames(reflect.TypeFor[rawSpec]())

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
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys) // Errors come out in a stable order.

	var errs field.ErrorList
	for _, k := range keys {
		i, ok := specKeys[k]
		if !ok {
			continue
		}
		b, err := json.Marshal(spec[k])
		if err != nil {
			errs = append(errs, field.Invalid(path.Child(k), field.OmitValueType{}, err.Error()))
			continue
		}
		errs = append(errs, decodeStrict(path.Child(k), b, v.Field(i).Addr().Interface())...)
	}
	return out, errs
}

// decodeStrict decodes JSON into a typed value, rejecting unknown and
// duplicate fields. Each error names the offending field below path (such as
// spec.traffic.steps[1].weight), so that the user finds the typo or the
// value of the wrong type without reading the whole object back.
func decodeStrict(path *field.Path, data []byte, into any) field.ErrorList {
	strict, err := sigsjson.UnmarshalStrict(data, into)
	if err != nil {
		return field.ErrorList{decodeError(path, data, err)}
	}
	errs := make(field.ErrorList, 0, len(strict))
	for _, e := range strict {
		var fe sigsjson.FieldError
		if !errors.As(e, &fe) {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, e.Error()))
			continue
		}
		what, _, _ := strings.Cut(e.Error(), " \"") // "unknown field" or "duplicate field"
		errs = append(errs, field.Invalid(appendJSONPath(path, fe.FieldPath()), field.OmitValueType{}, what))
	}
	return errs
}

// decodeError turns a decoding error into one that names the field whose
// value has the wrong type, and says which type it needs in JSON terms.
func decodeError(path *field.Path, data []byte, err error) *field.Error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return field.Invalid(path, field.OmitValueType{}, strings.TrimPrefix(err.Error(), "json: "))
	}
	// The decoder names the field without list indexes (nothing at all for
	// an element of a top-level list); the offset of the error finds the
	// element too, when it agrees. The decoder's field path stops at a map;
	// the value's own path goes on with the map key.
	at := appendJSONPath(path, te.Field)
	if p, names, ok := jsonPathAt(data, te.Offset); ok && (names == te.Field || strings.HasPrefix(names, te.Field+".") || te.Field == "") {
		at = appendJSONPath(path, p)
	}
	return field.Invalid(at, field.OmitValueType{}, fmt.Sprintf("must be %s, not %s", jsonKind(te.Type), te.Value))
}

// jsonKind names the JSON kind of value that a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "of type " + t.String()
	}
}

// appendJSONPath appends a decoder's field path ("steps[0].pause",
// "[1].path.type") to path.
func appendJSONPath(path *field.Path, jsonPath string) *field.Path {
	for jsonPath != "" {
		if strings.HasPrefix(jsonPath, "[") {
			end := strings.IndexByte(jsonPath, ']')
			if i, err := strconv.Atoi(jsonPath[1:max(end, 1)]); end > 0 && err == nil {
				path = path.Index(i)
				jsonPath = strings.TrimPrefix(jsonPath[end+1:], ".")
				continue
			}
		}
		end := strings.IndexAny(jsonPath[1:], ".[") + 1
		if end == 0 {
			end = len(jsonPath)
		}
		path = path.Child(jsonPath[:end])
		jsonPath = strings.TrimPrefix(jsonPath[end:], ".")
	}
	return path
}

// jsonPathAt returns the path of the JSON value that ends at or after
// offset (how the decoder reports where a type error is), with list indexes
// ("steps[1].weight"), and the same path without indexes ("steps.weight"),
// as the decoder names the field.
func jsonPathAt(data []byte, offset int64) (string, string, bool) {
	type frame struct {
		list      bool
		index     int
		key       string
		expectKey bool
	}
	var stack []frame
	next := func() { // A value ended: advance the container.
		if n := len(stack); n > 0 {
			if stack[n-1].list {
				stack[n-1].index++
			} else {
				stack[n-1].expectKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		n := len(stack)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:n-1]
			next()
			continue
		}
		if n > 0 && !stack[n-1].list && stack[n-1].expectKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].expectKey = false
			continue
		}
		if dec.InputOffset() >= offset {
			var full, names strings.Builder
			for _, f := range stack {
				if f.list {
					fmt.Fprintf(&full, "[%d]", f.index)
					continue
				}
				if names.Len() > 0 {
					names.WriteByte('.')
				}
				names.WriteString(f.key)
				if full.Len() > 0 {
					full.WriteByte('.')
				}
				full.WriteString(f.key)
			}
			return full.String(), names.String(), true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{list: true})
		default:
			next()
		}
	}
}

// Package crdschema validates objects against CustomResourceDefinitions the
// way the Kubernetes API server does, so that tests can prove that what the
// function composes would be accepted by a real cluster.
//
// It is test support: only _test.go files import it. It pulls in
// k8s.io/apiextensions-apiserver and the CEL runtime, which the function
// itself must not carry (see internal/admission for the runtime checks).
//
// For every object, Validate runs the steps that the API server runs when a
// custom resource is created, in the same order:
//
//  1. pick the CRD version by apiVersion and kind; a version that is not
//     served is refused,
//  2. drop status (composed objects never carry one; XRD sets keep it, see
//     LoadXRDs), prune unknown fields and non-nullable nulls, apply the
//     schema's defaults (structural defaulting),
//  3. validate metadata.name (a DNS-1123 subdomain), metadata.namespace (a
//     DNS-1123 label), labels and annotations,
//  4. run the OpenAPI schema validator,
//  5. check the uniqueness of x-kubernetes-list-type set and map items
//     (listtype.ValidateListSetsAndMaps), which `crossplane beta validate`
//     skips,
//  6. run the x-kubernetes-validations CEL rules with the API server's
//     per-call cost limit and per-object cost budget, unless an earlier
//     error blocks them, as the API server does.
//
// Unlike the API server, a missing metadata.name or metadata.namespace is not
// an error: Crossplane names composed resources and puts them in the XR's
// namespace when the function leaves these empty.
package crdschema

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

const (
	errReadFile          = "cannot read %s"
	errDecodeDocument    = "cannot decode document %d of %s"
	errDecodeCRD         = "cannot decode CustomResourceDefinition %s"
	errConvertCRD        = "cannot convert CustomResourceDefinition %s to the internal version"
	errSchemaForVersion  = "cannot get the schema of CustomResourceDefinition %s version %s"
	errNoSchema          = "CustomResourceDefinition %s version %s has no schema"
	errStructural        = "schema of CustomResourceDefinition %s version %s is not structural"
	errPruneDefaults     = "cannot prune the defaults of CustomResourceDefinition %s version %s"
	errSchemaValidator   = "cannot build the schema validator of CustomResourceDefinition %s version %s"
	errDuplicateVersion  = "%s is defined twice"
	errNoCRDs            = "no CustomResourceDefinition found in %s"
	errEncodeObject      = "cannot encode object: %v"
	errNotAnObject       = "must be an object"
	errNoKind            = "apiVersion and kind are required"
	errFmtUnknownKind    = "no CustomResourceDefinition in this set defines %s"
	errFmtNotServed      = "version %s of %s is not served by this set of CustomResourceDefinitions"
	errFmtUnknownVersion = "version %s of %s is not defined by this set of CustomResourceDefinitions"
)

const kindCRD = "CustomResourceDefinition"

// A Set is a set of CustomResourceDefinitions, ready to validate objects of
// the kinds they define. A Set is safe for concurrent use.
type Set struct {
	versions map[schema.GroupVersionKind]*version
	kinds    map[schema.GroupKind]bool
}

// version is one version of one CRD with everything needed to validate an
// object of it, built once because building the CEL programs is costly.
type version struct {
	gvk        schema.GroupVersionKind
	served     bool
	namespaced bool
	keepStatus bool
	structural *structuralschema.Structural
	schema     apiextensionsvalidation.SchemaValidator

	// The CEL programs are compiled on first use: a Set holds every CRD of
	// a channel, and a test validates only a few kinds.
	celOnce sync.Once
	cel     *cel.Validator
}

// celValidator returns the CEL validator, compiled once. The API server
// also compiles the rules once per CRD version, with this per-call limit.
func (v *version) celValidator() *cel.Validator {
	v.celOnce.Do(func() { v.cel = cel.NewValidator(v.structural, true, celconfig.PerCallLimit) })
	return v.cel
}

func newSet() *Set {
	return &Set{versions: map[schema.GroupVersionKind]*version{}, kinds: map[schema.GroupKind]bool{}}
}

// LoadFiles reads CustomResourceDefinitions (apiextensions.k8s.io/v1) from
// YAML files, each of which may hold several documents; documents of other
// kinds are skipped.
func LoadFiles(paths ...string) (*Set, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		b, err := os.ReadFile(p) //nolint:gosec // Test support reads the files its caller names.
		if err != nil {
			return nil, fmt.Errorf(errReadFile+": %w", p, err)
		}
		docs, err := decodeCRDs(p, b)
		if err != nil {
			return nil, err
		}
		crds = append(crds, docs...)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf(errNoCRDs, strings.Join(paths, ", "))
	}
	return LoadCRDs(crds...)
}

// LoadDir loads every CustomResourceDefinition in the *.yaml files of dir.
func LoadDir(dir string) (*Set, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return LoadFiles(paths...)
}

// LoadCRDs builds a Set from CustomResourceDefinitions. Objects of these
// CRDs are validated without their status.
func LoadCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) (*Set, error) {
	s := newSet()
	for _, crd := range crds {
		if err := s.add(crd, false); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func decodeCRDs(name string, b []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf(errDecodeDocument+": %w", i, name, err)
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf(errDecodeDocument+": %w", i, name, err)
		}
		if tm.Kind != kindCRD || tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf(errDecodeCRD+" in %s: %w", crd.GetName(), name, err)
		}
		crds = append(crds, crd)
	}
}

// add converts crd to the internal version, as the API server does, and
// prepares the validators of each of its versions.
func (s *Set) add(crd *apiextensionsv1.CustomResourceDefinition, keepStatus bool) error {
	crd = crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return fmt.Errorf(errConvertCRD+": %w", crd.GetName(), err)
	}
	gk := schema.GroupKind{Group: internal.Spec.Group, Kind: internal.Spec.Names.Kind}
	for _, v := range internal.Spec.Versions {
		gvk := gk.WithVersion(v.Name)
		if _, ok := s.versions[gvk]; ok {
			return fmt.Errorf(errDuplicateVersion, gvk)
		}
		// After conversion, a schema shared by all versions sits in
		// spec.validation rather than in each version: GetSchemaForVersion
		// looks in both places.
		val, err := apiextensions.GetSchemaForVersion(internal, v.Name)
		if err != nil {
			return fmt.Errorf(errSchemaForVersion+": %w", crd.GetName(), v.Name, err)
		}
		if val == nil || val.OpenAPIV3Schema == nil {
			return fmt.Errorf(errNoSchema, crd.GetName(), v.Name)
		}
		ss, err := structuralschema.NewStructural(val.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf(errStructural+": %w", crd.GetName(), v.Name, err)
		}
		ss = ss.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(ss); err != nil {
			return fmt.Errorf(errPruneDefaults+": %w", crd.GetName(), v.Name, err)
		}
		sv, _, err := apiextensionsvalidation.NewSchemaValidator(val.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf(errSchemaValidator+": %w", crd.GetName(), v.Name, err)
		}
		s.versions[gvk] = &version{
			gvk:        gvk,
			served:     v.Served,
			namespaced: internal.Spec.Scope == apiextensions.NamespaceScoped,
			keepStatus: keepStatus,
			structural: ss,
			schema:     sv,
		}
		s.kinds[gk] = true
	}
	return nil
}

// Validate validates obj, an object of a kind defined by the Set, as the API
// server would on create. obj is a map[string]any, an
// *unstructured.Unstructured, or any value that encodes to a JSON object
// (such as a typed Gateway API route); it is never modified. An apiVersion
// and kind that the Set does not serve is an error at path apiVersion or
// kind.
func (s *Set) Validate(obj any) field.ErrorList {
	return s.ValidateUpdate(nil, obj)
}

// ValidateUpdate validates obj as an update of old, as the API server would:
// CEL transition rules (those that read oldSelf, such as immutable fields)
// compare the two. A nil old is a create, like Validate.
func (s *Set) ValidateUpdate(old, obj any) field.ErrorList {
	var oldMap map[string]any
	if old != nil {
		var err error
		if oldMap, err = toMap(old); err != nil {
			return field.ErrorList{field.Invalid(nil, nil, err.Error())}
		}
	}
	u, err := toMap(obj)
	if err != nil {
		return field.ErrorList{field.Invalid(nil, nil, err.Error())}
	}
	apiVersion, _, _ := unstructured.NestedString(u, "apiVersion")
	kind, _, _ := unstructured.NestedString(u, "kind")
	if apiVersion == "" || kind == "" {
		return field.ErrorList{field.Required(field.NewPath("kind"), errNoKind)}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), apiVersion, err.Error())}
	}
	gvk := gv.WithKind(kind)
	if !s.kinds[gvk.GroupKind()] {
		return field.ErrorList{field.Invalid(field.NewPath("kind"), kind, fmt.Sprintf(errFmtUnknownKind, gvk.GroupKind()))}
	}
	v, ok := s.versions[gvk]
	if !ok {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), apiVersion, fmt.Sprintf(errFmtUnknownVersion, gv.Version, gvk.GroupKind()))}
	}
	if !v.served {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), apiVersion, fmt.Sprintf(errFmtNotServed, gv.Version, gvk.GroupKind()))}
	}
	return v.validate(u, oldMap)
}

func (v *version) validate(u, old map[string]any) field.ErrorList {
	if !v.keepStatus {
		delete(u, "status")
		delete(old, "status")
	}
	if old != nil {
		structuralpruning.Prune(old, v.structural, true)
		structuraldefaulting.Default(old, v.structural)
	}
	// The API server decodes, prunes and defaults before it validates.
	structuralpruning.Prune(u, v.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, v.structural)
	structuraldefaulting.Default(u, v.structural)

	errs := validateMetadata(&unstructured.Unstructured{Object: u}, v.namespaced)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u, v.schema)...)
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, u, v.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, u)...)
	celValidator := v.celValidator()
	if celValidator == nil {
		return errs
	}
	if blocked := blockingError(errs); blocked != nil {
		return append(errs, blocked)
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := celValidator.Validate(context.Background(), nil, v.structural, u, oldObj, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// validateMetadata validates metadata as the API server does for custom
// resources, except that an empty name or namespace is accepted: Crossplane
// fills both in for composed resources.
func validateMetadata(u *unstructured.Unstructured, namespaced bool) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaAccessor(u, namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	out := errs[:0]
	for _, e := range errs {
		if e.Type == field.ErrorTypeRequired && (e.Field == "metadata.name" || e.Field == "metadata.namespace") {
			continue
		}
		out = append(out, e)
	}
	return out
}

// blockingError mirrors the API server, which skips CEL rules when the
// object has errors that could make them fail to evaluate.
func blockingError(errs field.ErrorList) *field.Error {
	for _, e := range errs {
		switch e.Type { //nolint:exhaustive // Only these types block CEL rules.
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// toMap returns a deep copy of obj as JSON-compatible map, with integers as
// int64 as the API server decodes them.
func toMap(obj any) (map[string]any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		obj = o.Object
	case unstructured.Unstructured:
		obj = o.Object
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf(errEncodeObject, err)
	}
	var out any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf(errEncodeObject, err)
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, errors.New(errNotAnObject)
	}
	return m, nil
}

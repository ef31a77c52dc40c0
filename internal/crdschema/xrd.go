package crdschema

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	errFmtNoXRDs     = "no CompositeResourceDefinition found in %s"
	errFmtXRDScope   = "CompositeResourceDefinition %s has unknown scope %q"
	errFmtXRDNoSpec  = "CompositeResourceDefinition %s version %s has no schema"
	errFmtDecodeXRD  = "cannot decode CompositeResourceDefinition in %s"
	errFmtXRDToCRD   = "cannot build the CRD of CompositeResourceDefinition %s"
	kindXRD          = "CompositeResourceDefinition"
	groupCrossplane  = "apiextensions.crossplane.io"
	maxXRNameLength  = 63 // Crossplane uses the XR name as a label value.
	scopeNamespaced  = "Namespaced"
	scopeCluster     = "Cluster"
	scopeLegacy      = "LegacyCluster"
	typeObject       = "object"
	typeArray        = "array"
	typeString       = "string"
	errFmtCRDFromXRD = "cannot load the CRD of CompositeResourceDefinition %s"
)

// xrd holds the fields of a Crossplane CompositeResourceDefinition
// (apiextensions.crossplane.io/v1 or v2) that shape the XR's CRD. Crossplane
// itself is not a dependency of this module, so this mirrors only them.
type xrd struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Group    string                                        `json:"group"`
		Names    apiextensionsv1.CustomResourceDefinitionNames `json:"names"`
		Scope    string                                        `json:"scope,omitempty"`
		Versions []struct {
			Name          string `json:"name"`
			Served        bool   `json:"served"`
			Referenceable bool   `json:"referenceable"`
			Schema        *struct {
				OpenAPIV3Schema apiextensionsv1.JSONSchemaProps `json:"openAPIV3Schema"`
			} `json:"schema,omitempty"`
		} `json:"versions"`
	} `json:"spec"`
}

// LoadXRDs reads Crossplane CompositeResourceDefinitions from YAML files and
// returns a Set that validates their composite resources (XRs), status
// included, so tests can check what the function writes to the XR's status.
//
// Each XRD becomes a CRD the way Crossplane builds one: the XRD's spec and
// status schemas, its CEL rules at every level, metadata.name of at most 63
// characters, and the fields that Crossplane adds to every XR (spec.crossplane,
// spec.claimRef, spec.compositionRef, status.conditions, ...). Those added
// fields are accepted as they come (x-kubernetes-preserve-unknown-fields):
// Crossplane, not the function, owns them.
func LoadXRDs(paths ...string) (*Set, error) {
	s := newSet()
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p) //nolint:gosec // Test support reads the files its caller names.
		if err != nil {
			return nil, fmt.Errorf(errReadFile+": %w", p, err)
		}
		xrds, err := decodeXRDs(p, b)
		if err != nil {
			return nil, err
		}
		for _, x := range xrds {
			crd, err := crdForXRD(x)
			if err != nil {
				return nil, fmt.Errorf(errFmtXRDToCRD+": %w", x.Metadata.Name, err)
			}
			if err := s.add(crd, true); err != nil {
				return nil, fmt.Errorf(errFmtCRDFromXRD+": %w", x.Metadata.Name, err)
			}
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf(errFmtNoXRDs, strings.Join(paths, ", "))
	}
	return s, nil
}

// XRDs is LoadXRDs for tests: it fails the test on error.
func XRDs(t testing.TB, paths ...string) *Set {
	t.Helper()
	s, err := LoadXRDs(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func decodeXRDs(name string, b []byte) ([]*xrd, error) {
	var out []*xrd
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf(errDecodeDocument+": %w", i, name, err)
		}
		x := &xrd{}
		if err := yaml.Unmarshal(doc, x); err != nil {
			return nil, fmt.Errorf(errFmtDecodeXRD+": %w", name, err)
		}
		if x.Kind != kindXRD || !hasGroup(x.APIVersion, groupCrossplane) {
			continue
		}
		out = append(out, x)
	}
}

func hasGroup(apiVersion, group string) bool {
	return len(apiVersion) > len(group) && apiVersion[:len(group)] == group && apiVersion[len(group)] == '/'
}

// crdForXRD builds the CRD of an XRD's composite resource, after
// Crossplane's internal/xcrd.ForCompositeResource.
func crdForXRD(x *xrd) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.SetName(x.Metadata.Name)
	crd.Spec.Group = x.Spec.Group
	crd.Spec.Names = x.Spec.Names
	if crd.Spec.Names.ListKind == "" {
		crd.Spec.Names.ListKind = crd.Spec.Names.Kind + "List"
	}
	switch x.Spec.Scope {
	case scopeNamespaced:
		crd.Spec.Scope = apiextensionsv1.NamespaceScoped
	case scopeCluster, scopeLegacy, "":
		// v1 XRDs have no scope: their XRs are cluster scoped.
		crd.Spec.Scope = apiextensionsv1.ClusterScoped
	default:
		return nil, fmt.Errorf(errFmtXRDScope, x.Metadata.Name, x.Spec.Scope)
	}
	for _, v := range x.Spec.Versions {
		if v.Schema == nil {
			return nil, fmt.Errorf(errFmtXRDNoSpec, x.Metadata.Name, v.Name)
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name:    v.Name,
			Served:  v.Served,
			Storage: v.Referenceable,
			Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: xrSchema(&v.Schema.OpenAPIV3Schema)},
			Subresources: &apiextensionsv1.CustomResourceSubresources{
				Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
			},
		})
	}
	return crd, nil
}

// xrSchema wraps the schema of an XRD version into the root schema of the XR.
func xrSchema(in *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	maxName := int64(maxXRNameLength)
	if n := in.Properties["metadata"].Properties["name"].MaxLength; n != nil && *n < maxName {
		maxName = *n
	}
	spec := in.Properties["spec"]
	spec.Type = typeObject
	spec.Properties = maps.Clone(spec.Properties)
	if spec.Properties == nil {
		spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	for _, p := range []string{"crossplane", "compositionRef", "compositionSelector", "compositionRevisionRef", "compositionRevisionSelector", "claimRef", "writeConnectionSecretToRef"} {
		spec.Properties[p] = anyObject()
	}
	spec.Properties["compositionUpdatePolicy"] = apiextensionsv1.JSONSchemaProps{Type: typeString}
	spec.Properties["resourceRefs"] = anyObjects()

	status := in.Properties["status"]
	status.Type = typeObject
	status.Properties = maps.Clone(status.Properties)
	if status.Properties == nil {
		status.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	status.Properties["conditions"] = anyObjects()
	status.Properties["connectionDetails"] = anyObject()
	status.Properties["claimConditionTypes"] = apiextensionsv1.JSONSchemaProps{
		Type:  typeArray,
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: typeString}},
	}

	return &apiextensionsv1.JSONSchemaProps{
		Type:         typeObject,
		Required:     []string{"spec"},
		XValidations: in.XValidations,
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: typeString},
			"kind":       {Type: typeString},
			"metadata": {
				Type:       typeObject,
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: typeString, MaxLength: &maxName}},
			},
			"spec":   spec,
			"status": status,
		},
	}
}

func anyObject() apiextensionsv1.JSONSchemaProps {
	t := true
	return apiextensionsv1.JSONSchemaProps{Type: typeObject, XPreserveUnknownFields: &t}
}

func anyObjects() apiextensionsv1.JSONSchemaProps {
	o := anyObject()
	return apiextensionsv1.JSONSchemaProps{Type: typeArray, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &o}}
}

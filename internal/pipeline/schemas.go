package pipeline

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/served"
)

// errNoRequiredResources is the Fatal of a caller that advertises its
// capabilities, but not required resources.
const errNoRequiredResources = "the caller advertises its capabilities but not CAPABILITY_REQUIRED_RESOURCES, which the function needs: it reads the objects it is about to compose (never to compose over another owner's), the gate objects and the claim through required resources. Run it under Crossplane v2.0 or later"

// CheckCapabilities refuses a caller that advertises its capabilities
// without one the function needs. A caller that advertises none predates
// capability advertisement (Crossplane before v2.0): it may still answer
// required resources, as Crossplane v1.15 and later do, so it is not
// refused.
func CheckCapabilities(req *fnv1.RunFunctionRequest) error {
	if request.AdvertisesCapabilities(req) && !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES) {
		return errors.New(errNoRequiredResources)
	}
	return nil
}

// Schemas are the sources the run can choose the versions from that the
// request holds: whether Crossplane offers schemas and advertises its
// capabilities, and the schemas it handed, for the kinds a run needs (see
// served.NewSchemas). The caller adds what status and the observed objects
// say.
func Schemas(req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, need served.Need) served.Sources {
	s := served.Sources{
		HandsSchemas:           request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS),
		AdvertisesCapabilities: request.AdvertisesCapabilities(req),
	}
	if !s.HandsSchemas {
		return s
	}
	s.Schemas = served.NewSchemas(self, need, func(name string) (map[string]any, bool) {
		schema, ok := request.GetRequiredSchema(req, name)
		if !ok || schema == nil {
			return nil, ok
		}
		return schema.AsMap(), true
	})
	return s
}

// RequireSchemas asks Crossplane for the schemas of the kinds the run
// composes, at every version the function composes, and for the XR's own,
// where Crossplane offers them and the run does not reuse the versions an
// earlier run read (from status). Once asked, they are asked on every call
// of the reconcile, so that the requirements settle.
func RequireSchemas(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, need served.Need, source served.Source) {
	if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) || source == served.SourceStatus {
		return
	}
	for name, gvk := range served.Requirements(self, need) {
		apiVersion, kind := gvk.ToAPIVersionAndKind()
		response.RequireSchema(rsp, name, apiVersion, kind)
	}
}

// SchemasPending reports whether the run waits for the schemas it asks
// for: Crossplane offers them, no earlier run's versions are reused (the
// versions come from the defaults), and this call has not had them yet (the
// first call of a reconcile). Such a call asks for the schemas alone.
// Crossplane fetches required resources before schemas and fails the
// reconcile on a kind and version the cluster does not serve, so asking for
// the objects about to be composed at the default versions would stop the
// reconcile, on a cluster that serves other versions, before the schemas
// that tell the versions are ever handed. The call's response is never
// applied: its requirements send Crossplane back for another call.
func SchemasPending(req *fnv1.RunFunctionRequest, source served.Source) bool {
	if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) || source != served.SourceDefaults {
		return false
	}
	_, answered := request.GetRequiredSchema(req, served.SelfKey)
	return !answered
}

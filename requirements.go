package main

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
)

// errNoRequiredResources is the Fatal of a caller that advertises its
// capabilities, but not required resources.
const errNoRequiredResources = "the caller advertises its capabilities but not CAPABILITY_REQUIRED_RESOURCES, which the function needs: it reads the objects it is about to compose (never to compose over another owner's), the gate objects and the claim through required resources. Run it under Crossplane v2.0 or later"

// checkCapabilities refuses a caller that advertises its capabilities
// without one the function needs. A caller that advertises none predates
// capability advertisement (Crossplane before v2.0): it may still answer
// required resources, as Crossplane v1.15 and later do, so it is not
// refused.
func checkCapabilities(req *fnv1.RunFunctionRequest) error {
	if request.AdvertisesCapabilities(req) && !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES) {
		return errors.New(errNoRequiredResources)
	}
	return nil
}

// versionSources are what the run can choose the versions from: the
// schemas Crossplane handed, where it offers them; the versions an earlier
// run recorded in status.route, and the observed composed objects that bear
// them out.
func versionSources(req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, r *compose.Resolved, observed map[names.Key]map[string]any, now time.Time) served.Sources {
	s := served.Sources{
		HandsSchemas:           request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS),
		AdvertisesCapabilities: request.AdvertisesCapabilities(req),
		Recorded:               compose.Recorded(r.CR.Status.Route),
		Now:                    now,
	}
	if !s.HandsSchemas {
		return s
	}
	s.Schemas = served.NewSchemas(self, r.Need, func(name string) (map[string]any, bool) {
		schema, ok := request.GetRequiredSchema(req, name)
		if !ok || schema == nil {
			return nil, ok
		}
		return schema.AsMap(), true
	})
	apiVersions := make(map[names.Key]string, len(observed))
	for k, o := range observed {
		apiVersions[k], _ = o["apiVersion"].(string)
	}
	s.Observed = r.ObservedVersions(apiVersions)
	return s
}

// requireSchemas asks Crossplane for the schemas of the kinds the run
// composes, at every version the function composes, and for the XR's own,
// where Crossplane offers them and the run does not reuse the versions an
// earlier run read. Once asked, they are asked on every call of the
// reconcile, so that the requirements settle.
func requireSchemas(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, plan *compose.Plan) {
	if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) || plan.Versions.Source == served.SourceStatus {
		return
	}
	for name, gvk := range served.Requirements(self, plan.Need) {
		apiVersion, kind := gvk.ToAPIVersionAndKind()
		response.RequireSchema(rsp, name, apiVersion, kind)
	}
}

// schemasPending reports whether the run waits for the schemas it asks
// for: Crossplane offers them, no earlier run's versions are reused, and
// this call has not had them yet (the first call of a reconcile). Such a
// call asks for the schemas alone. Crossplane fetches required resources
// before schemas and fails the reconcile on a kind and version the cluster
// does not serve, so asking for the objects about to be composed at the
// default versions would stop the reconcile, on a cluster that serves other
// versions, before the schemas that tell the versions are ever handed. The
// call's response is never applied: its requirements send Crossplane back
// for another call.
func schemasPending(req *fnv1.RunFunctionRequest, plan *compose.Plan) bool {
	if !request.HasCapability(req, fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS) || plan.Versions.Source != served.SourceDefaults {
		return false
	}
	_, answered := request.GetRequiredSchema(req, served.SelfKey)
	return !answered
}

package main

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/compose"
	"github.com/crossplane-contrib/function-canary-route/internal/names"
	"github.com/crossplane-contrib/function-canary-route/internal/pipeline"
	"github.com/crossplane-contrib/function-canary-route/internal/served"
)

// versionSources are what the run can choose the versions from: the
// schemas Crossplane handed, where it offers them; the versions an earlier
// run recorded in status.route, and the observed composed objects that bear
// them out.
func versionSources(req *fnv1.RunFunctionRequest, self schema.GroupVersionKind, r *compose.Resolved, observed map[names.Key]map[string]any, now time.Time) served.Sources {
	s := pipeline.Schemas(req, self, r.Need)
	s.Recorded, s.Now = compose.Recorded(r.RecordedStatus()), now
	if !s.HandsSchemas {
		return s
	}
	apiVersions := make(map[names.Key]string, len(observed))
	for k, o := range observed {
		apiVersions[k], _ = o["apiVersion"].(string)
	}
	s.Observed = r.ObservedVersions(apiVersions)
	return s
}

package xr

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/crossplane-contrib/function-canary-route/internal/percent"
)

// metricsReleaseCase is a TestParseMetricsRelease case, shaped as a
// TestParseSpec case.
type metricsReleaseCase = specCase

// metricsReleaseCases are the cases of the spec's analysis and release
// fields: traffic.metrics, traffic.bake, release and
// traffic.rollbackWindow.
func metricsReleaseCases() map[string]metricsReleaseCase {
	type args = specArgs
	type want = specWant
	// progressive turns the base XR into a rollout through steps 10, 50 and
	// 100 (indexes 0 to 2), with more patches.
	progressive := func(more ...patch) []patch {
		return append([]patch{
			del("spec.traffic.weight"),
			set("spec.traffic.steps", `[{weight: 10}, {weight: 50}, {weight: 100}]`),
			set("spec.canary.revision", "v2"),
		}, more...)
	}
	// metric is a valid metric with the fields of extra (a YAML flow map's
	// entries) added or overriding.
	metric := func(extra string) string {
		m := `name: error-rate, provider: prometheus, query: "sum(rate(errors[{{interval}}]))", successWhen: "result <= 0.01"`
		if extra != "" {
			m += ", " + extra
		}
		return "{" + m + "}"
	}
	metrics := func(ms ...string) patch { return set("spec.traffic.metrics", "["+strings.Join(ms, ", ")+"]") }
	withMetric := func(extra string) []patch { return progressive(metrics(metric(extra))) }
	// defaultMetric is what metric("") parses to.
	defaultMetric := Metric{
		Name: "error-rate", Provider: "prometheus", Query: "sum(rate(errors[{{interval}}]))", SuccessWhen: "result <= 0.01",
		Interval: time.Minute, FailureLimit: 1, NoData: NoDataHold,
	}
	pickMetrics := func(cr *CanaryRoute) any { return cr.Spec.Traffic.Metrics }
	pickBake := func(cr *CanaryRoute) any { return cr.Spec.Traffic.Bake }
	mp := "spec.traffic.metrics[0]"

	// release turns the base XR into a release of podinfo at revision v2
	// (the primary and the canary's backendRef removed), with more patches.
	release := func(more ...patch) []patch {
		return progressive(append([]patch{
			del("spec.primary"),
			set("spec.canary", `{revision: v2}`),
			set("spec.release", `{selector: {app: podinfo}, revisionLabel: version}`),
		}, more...)...)
	}
	setRelease := func(field, v string) patch { return set("spec.release."+field, v) }
	pickPrimary := func(cr *CanaryRoute) any { return cr.Spec.Primary }
	pickCanary := func(cr *CanaryRoute) any { return cr.Spec.Canary }
	pickRelease := func(cr *CanaryRoute) any { return cr.Spec.Release }
	pickWindow := func(cr *CanaryRoute) any { return cr.Spec.Traffic.RollbackWindow }
	serviceSide := func(revision string) Side {
		return Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo", "version": revision}}}
	}
	duplicate := func(path, value string) fieldErr {
		return fieldErr{Field: path, Type: field.ErrorTypeDuplicate, Phrase: value}
	}
	tooLong := func(path string, limit string) fieldErr {
		return fieldErr{Field: path, Type: field.ErrorTypeTooLong, Phrase: limit}
	}

	return map[string]metricsReleaseCase{
		// traffic.metrics
		"MetricDefaults": {
			reason: "A metric without interval, failureLimit, noData, compareTo and steps is measured every minute, fails on the first failure, holds without data, compares with nothing and counts in every step with traffic (Steps nil).",
			args:   args{patches: withMetric(""), pick: pickMetrics},
			want:   want{value: []Metric{defaultMetric}},
		},
		"MetricAllFields": {
			reason: "Every field of a metric is kept as written.",
			args: args{
				patches: withMetric(`interval: 30s, compareTo: primary, failureLimit: 3, noData: Fail, steps: [0, 1], dryRun: true`),
				pick:    pickMetrics,
			},
			want: want{value: []Metric{{
				Name: "error-rate", Provider: "prometheus", Query: "sum(rate(errors[{{interval}}]))", SuccessWhen: "result <= 0.01",
				Interval: 30 * time.Second, CompareToPrimary: true, FailureLimit: 3, NoData: NoDataFail, Steps: []int32{0, 1}, DryRun: true,
			}}},
		},
		"MetricNoDataPass": {
			reason: "noData Pass is kept.",
			args:   args{patches: withMetric(`noData: Pass`), pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Metrics[0].NoData }},
			want:   want{value: NoDataPass},
		},
		"MetricIntervalTruncated": {
			reason: "An interval is kept to the second: measurements are due on whole seconds.",
			args:   args{patches: withMetric(`interval: 1m30.5s`), pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Metrics[0].Interval }},
			want:   want{value: 90 * time.Second},
		},
		"MetricIntervalBounds": {
			reason: "5s and 1h are the bounds of an interval, both allowed.",
			args: args{
				patches: progressive(metrics(metric(`interval: 5s`), `{name: latency, provider: prometheus, query: q, successWhen: "result < 1", interval: 1h}`)),
				pick: func(cr *CanaryRoute) any {
					return []time.Duration{cr.Spec.Traffic.Metrics[0].Interval, cr.Spec.Traffic.Metrics[1].Interval}
				},
			},
			want: want{value: []time.Duration{5 * time.Second, time.Hour}},
		},
		"MetricsOrder": {
			reason: "Metrics keep the order they are written in.",
			args: args{
				patches: progressive(metrics(metric(""), `{name: latency, provider: thanos, query: q, successWhen: "result < 1"}`)),
				pick: func(cr *CanaryRoute) any {
					return []string{cr.Spec.Traffic.Metrics[0].Name, cr.Spec.Traffic.Metrics[1].Name + "@" + cr.Spec.Traffic.Metrics[1].Provider}
				},
			},
			want: want{value: []string{"error-rate", "latency@thanos"}},
		},
		"MetricsMax": {
			reason: "10 metrics are allowed.",
			args: args{
				patches: progressive(set("spec.traffic.metrics", listf(10, `{name: m%d, provider: p, query: q, successWhen: "result < 1"}`))),
				pick:    func(cr *CanaryRoute) any { return len(cr.Spec.Traffic.Metrics) },
			},
			want: want{value: 10},
		},
		"MetricsEmpty": {
			reason: "An empty list of metrics is no metrics.",
			args:   args{patches: progressive(set("spec.traffic.metrics", `[]`)), pick: pickMetrics},
			want:   want{value: []Metric(nil)},
		},
		"MetricCompareToPrimaryDefaultStepsWithFullStep": {
			reason: "A compareTo: primary metric without steps is valid beside a step at weight 100: it just does not count there (see TestMetricCountsIn).",
			args:   args{patches: withMetric(`compareTo: primary`), pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Metrics[0].Steps }},
			want:   want{value: []int32(nil)},
		},
		"MetricFullStepWithoutCompareTo": {
			reason: "A metric without compareTo may name the step at weight 100: the canary's own traffic is measured there.",
			args:   args{patches: withMetric(`steps: [2]`), pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Metrics[0].Steps }},
			want:   want{value: []int32{2}},
		},
		"MetricsNeedSteps": {
			reason: "Metrics judge the steps of a progressive rollout: with a manual weight they are refused.",
			args:   args{patches: []patch{metrics(metric(""))}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.metrics", "they need traffic.steps")}},
		},
		"MetricsTooMany": {
			reason: "At most 10 metrics.",
			args:   args{patches: progressive(set("spec.traffic.metrics", listf(11, `{name: m%d, provider: p, query: q, successWhen: "result < 1"}`)))},
			want:   want{errs: []fieldErr{tooMany("spec.traffic.metrics", 10)}},
		},
		"MetricNameNotALabel": {
			reason: "A metric's name is a DNS-1123 label.",
			args:   args{patches: withMetric(`name: Error_Rate`)},
			want:   want{errs: []fieldErr{invalid(mp+".name", "RFC 1123 label must consist of lower case")}},
		},
		"MetricNameTooLong": {
			reason: "A metric's name has at most 32 characters.",
			args:   args{patches: withMetric(`name: ` + strings.Repeat("m", 33))},
			want:   want{errs: []fieldErr{tooLong(mp+".name", "32")}},
		},
		"MetricNameEmpty": {
			reason: "A metric needs a name: an empty one is no DNS-1123 label.",
			args:   args{patches: withMetric(`name: ""`)},
			want:   want{errs: []fieldErr{invalid(mp+".name", "must be a DNS label")}},
		},
		"MetricNameDuplicate": {
			reason: "Metrics are a map keyed by name (status.rollout.metrics records each by name): a name twice is refused, at the second.",
			args:   args{patches: progressive(metrics(metric(""), metric(`provider: thanos`)))},
			want:   want{errs: []fieldErr{duplicate("spec.traffic.metrics[1].name", "error-rate")}},
		},
		"MetricProviderInvalid": {
			reason: "A metric's provider names one of the Input's providers, a DNS-1123 label.",
			args:   args{patches: withMetric(`provider: Prom.Main`)},
			want:   want{errs: []fieldErr{invalid(mp+".provider", "RFC 1123 label must consist of lower case")}},
		},
		"MetricProviderMissing": {
			reason: "A metric without a provider is refused at provider.",
			args:   args{patches: withMetric(`provider: ""`)},
			want:   want{errs: []fieldErr{invalid(mp+".provider", "must name a provider")}},
		},
		"MetricQueryRequired": {
			reason: "A metric measures the answer of a query: an empty one is required.",
			args:   args{patches: withMetric(`query: ""`)},
			want:   want{errs: []fieldErr{required(mp+".query", "PromQL query")}},
		},
		"MetricSuccessWhenRequired": {
			reason: "A metric passes when successWhen is true: an empty one is required.",
			args:   args{patches: withMetric(`successWhen: ""`)},
			want:   want{errs: []fieldErr{required(mp+".successWhen", "a measurement passes when")}},
		},
		"MetricQueryAndSuccessWhenMissing": {
			reason: "A metric without query and successWhen names both.",
			args:   args{patches: progressive(metrics(`{name: error-rate, provider: prometheus}`))},
			want: want{errs: []fieldErr{
				required(mp+".query", "PromQL query"),
				required(mp+".successWhen", "a measurement passes when"),
			}},
		},
		"MetricIntervalTooShort": {
			reason: "An interval below 5s would query the provider too often.",
			args:   args{patches: withMetric(`interval: 4s`)},
			want:   want{errs: []fieldErr{invalid(mp+".interval", "must be between 5s and 1h")}},
		},
		"MetricIntervalTooLong": {
			reason: "An interval above 1h is refused.",
			args:   args{patches: withMetric(`interval: 61m`)},
			want:   want{errs: []fieldErr{invalid(mp+".interval", "must be between 5s and 1h")}},
		},
		"MetricIntervalNotADuration": {
			reason: "An interval is a duration such as 30s.",
			args:   args{patches: withMetric(`interval: often`)},
			want:   want{errs: []fieldErr{invalid(mp+".interval", "must be a duration")}},
		},
		"MetricIntervalNegative": {
			reason: "A negative interval is refused as negative, not as out of bounds twice.",
			args:   args{patches: withMetric(`interval: -1m`)},
			want:   want{errs: []fieldErr{invalid(mp+".interval", "must not be negative")}},
		},
		"MetricCompareToUnknown": {
			reason: "compareTo is an enum of primary only.",
			args:   args{patches: withMetric(`compareTo: canary`)},
			want:   want{errs: []fieldErr{notSupported(mp+".compareTo", "canary")}},
		},
		"MetricFailureLimitZero": {
			reason: "failureLimit is at least 1.",
			args:   args{patches: withMetric(`failureLimit: 0`)},
			want:   want{errs: []fieldErr{invalid(mp+".failureLimit", "must be between 1 and 10")}},
		},
		"MetricFailureLimitTooHigh": {
			reason: "failureLimit is at most 10.",
			args:   args{patches: withMetric(`failureLimit: 11`)},
			want:   want{errs: []fieldErr{invalid(mp+".failureLimit", "must be between 1 and 10")}},
		},
		"MetricFailureLimitMax": {
			reason: "failureLimit 10 is allowed.",
			args:   args{patches: withMetric(`failureLimit: 10`), pick: func(cr *CanaryRoute) any { return cr.Spec.Traffic.Metrics[0].FailureLimit }},
			want:   want{value: int32(10)},
		},
		"MetricNoDataUnknown": {
			reason: "noData is an enum of Hold, Pass and Fail, case-sensitive.",
			args:   args{patches: withMetric(`noData: hold`)},
			want:   want{errs: []fieldErr{notSupported(mp+".noData", "hold")}},
		},
		"MetricStepOutOfRange": {
			reason: "A metric's steps are indexes of traffic.steps: 3 of three steps is none, and the error names the index.",
			args:   args{patches: withMetric(`steps: [0, 3]`)},
			want:   want{errs: []fieldErr{invalid(mp+".steps[1]", "must be the index of one of traffic.steps (0 to 2)")}},
		},
		"MetricStepNegative": {
			reason: "A negative step index is none of traffic.steps.",
			args:   args{patches: withMetric(`steps: [-1]`)},
			want:   want{errs: []fieldErr{invalid(mp+".steps[0]", "must be the index of one of traffic.steps")}},
		},
		"MetricCompareToPrimaryFullStep": {
			reason: "A compareTo: primary metric naming the step at weight 100 is refused: the primary gets no traffic there, so there is no baseline and the step would hold until its deadline.",
			args:   args{patches: withMetric(`compareTo: primary, steps: [1, 2]`)},
			want:   want{errs: []fieldErr{invalid(mp+".steps[1]", "step 2 sends the primary no traffic")}},
		},
		"MetricStepDuplicate": {
			reason: "A metric's steps are a set (listType=set in the XRD): an index twice is refused at the second, as a step's analysis names are.",
			args:   args{patches: withMetric(`steps: [1, 1]`)},
			want:   want{errs: []fieldErr{duplicate(mp+".steps[1]", "1")}},
		},
		"MetricStepsEmpty": {
			reason: "An empty steps list would count the metric nowhere, never measured: refused (minItems 1 in the XRD); leave it out for the default.",
			args:   args{patches: withMetric(`steps: []`)},
			want:   want{errs: []fieldErr{required(mp+".steps", "at least one step")}},
		},
		"MetricErrorsOfEachMetric": {
			reason: "Each metric's errors name its own index.",
			args:   args{patches: progressive(metrics(metric(""), `{name: latency, provider: prometheus, query: q, successWhen: "result < 1", noData: Maybe}`))},
			want:   want{errs: []fieldErr{notSupported("spec.traffic.metrics[1].noData", "Maybe")}},
		},

		// traffic.bake
		"BakeDefault": {
			reason: "Without bake, the rollout succeeds right after the last step.",
			args:   args{patches: withMetric(""), pick: pickBake},
			want:   want{value: time.Duration(0)},
		},
		"Bake": {
			reason: "bake is kept as a duration.",
			args:   args{patches: progressive(metrics(metric("")), set("spec.traffic.bake", "10m")), pick: pickBake},
			want:   want{value: 10 * time.Minute},
		},
		"BakeMax": {
			reason: "bake may be 24h.",
			args:   args{patches: progressive(set("spec.traffic.bake", "24h")), pick: pickBake},
			want:   want{value: 24 * time.Hour},
		},
		"BakeTruncated": {
			reason: "bake is kept to the second.",
			args:   args{patches: progressive(set("spec.traffic.bake", "1m0.9s")), pick: pickBake},
			want:   want{value: time.Minute},
		},
		"BakeTooLong": {
			reason: "bake is at most 24h.",
			args:   args{patches: progressive(set("spec.traffic.bake", "24h1s"))},
			want:   want{errs: []fieldErr{invalid("spec.traffic.bake", "must be at most 24h")}},
		},
		"BakeNotADuration": {
			reason: "bake is a duration such as 10m.",
			args:   args{patches: progressive(set("spec.traffic.bake", "a while"))},
			want:   want{errs: []fieldErr{invalid("spec.traffic.bake", "must be a duration")}},
		},
		"BakeNeedsSteps": {
			reason: "bake keeps measuring after the last step: with a manual weight there is none.",
			args:   args{patches: []patch{set("spec.traffic.bake", "10m")}},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.bake", "it needs traffic.steps")}},
		},

		// release
		"ReleasePrimary": {
			reason: "Without a stable revision yet, the primary is a proxy Service selecting the selector and the canary's revision.",
			args:   args{patches: release(), pick: pickPrimary},
			want:   want{value: serviceSide("v2")},
		},
		"ReleaseCanary": {
			reason: "The canary is a proxy Service selecting the selector and revisionLabel at canary.revision, and keeps its revision.",
			args:   args{patches: release(), pick: pickCanary},
			want: want{value: Side{
				Service:  &ServiceSource{Selector: map[string]string{"app": "podinfo", "version": "v2"}},
				Revision: "v2",
			}},
		},
		"ReleasePrimaryStable": {
			reason: "With status.release.stable, the primary selects the stable revision while the canary selects its own.",
			args: args{
				patches: release(set("status.release", `{stable: {revision: v1, since: "2026-01-01T00:00:00Z"}}`)),
				pick:    func(cr *CanaryRoute) any { return []Side{cr.Spec.Primary, cr.Spec.Canary} },
			},
			want: want{value: []Side{serviceSide("v1"), {Service: serviceSide("v2").Service, Revision: "v2"}}},
		},
		"ReleaseEmptyStable": {
			reason: "A stable revision that is empty is none: the primary selects the canary's revision.",
			args: args{
				patches: release(set("status.release", `{stable: {revision: "", since: "2026-01-01T00:00:00Z"}}`)),
				pick:    pickPrimary,
			},
			want: want{value: serviceSide("v2")},
		},
		"ReleasePortAndProtocol": {
			reason: "release's targetPort and appProtocol are carried to both sides' proxy Services.",
			args: args{
				patches: release(setRelease("targetPort", "http"), setRelease("appProtocol", "kubernetes.io/h2c")),
				pick:    func(cr *CanaryRoute) any { return []*ServiceSource{cr.Spec.Primary.Service, cr.Spec.Canary.Service} },
			},
			want: want{value: []*ServiceSource{
				{Selector: map[string]string{"app": "podinfo", "version": "v2"}, TargetPort: ptr.To(intstr.FromString("http")), AppProtocol: "kubernetes.io/h2c"},
				{Selector: map[string]string{"app": "podinfo", "version": "v2"}, TargetPort: ptr.To(intstr.FromString("http")), AppProtocol: "kubernetes.io/h2c"},
			}},
		},
		"ReleaseCanaryFilters": {
			reason: "The canary keeps what else it wrote, such as its filters.",
			args: args{
				patches: release(set("spec.canary", `{revision: v2, filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-canary, value: "true"}]}}]}`)),
				pick:    func(cr *CanaryRoute) any { return cr.Spec.Canary.HTTPFilters },
			},
			want: want{value: []gwv1.HTTPRouteFilter{{
				Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-canary", Value: "true"}}},
			}}},
		},
		"ReleaseDefaults": {
			reason: "A release runs 1 replica per revision, keeps a retired revision's replicas 30s, and has no workload unless it names one.",
			args:   args{patches: release(), pick: pickRelease},
			want: want{value: &Release{
				Selector: map[string]string{"app": "podinfo"}, RevisionLabel: "version",
				Replicas: 1, ScaleDownDelay: 30 * time.Second,
			}},
		},
		"ReleaseWorkloadDefaults": {
			reason: "A workload's apiVersion and kind default to apps/v1 Deployment.",
			args:   args{patches: release(setRelease("workload", `{name: "podinfo-{{revision}}"}`)), pick: func(cr *CanaryRoute) any { return cr.Spec.Release.Workload }},
			want:   want{value: &Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo-{{revision}}"}},
		},
		"ReleaseAllFields": {
			reason: "Every field of a release is kept as written.",
			args: args{
				patches: release(
					setRelease("replicas", "4"),
					setRelease("scaleDownDelay", "2m"),
					setRelease("workload", `{apiVersion: apps/v1, kind: StatefulSet, name: "podinfo-{{revision}}"}`),
					setRelease("targetPort", "8080"),
					setRelease("appProtocol", "kubernetes.io/h2c"),
				),
				pick: pickRelease,
			},
			want: want{value: &Release{
				Selector: map[string]string{"app": "podinfo"}, RevisionLabel: "version", Replicas: 4,
				Workload:       &Workload{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "podinfo-{{revision}}"},
				ScaleDownDelay: 2 * time.Minute, TargetPort: ptr.To(intstr.FromInt32(8080)), AppProtocol: "kubernetes.io/h2c",
			}},
		},
		"ReleaseBounds": {
			reason: "replicas 1000 and scaleDownDelay 0s and 24h are allowed.",
			args: args{
				patches: release(setRelease("replicas", "1000"), setRelease("scaleDownDelay", "24h")),
				pick:    func(cr *CanaryRoute) any { return []any{cr.Spec.Release.Replicas, cr.Spec.Release.ScaleDownDelay} },
			},
			want: want{value: []any{int32(1000), 24 * time.Hour}},
		},
		"ReleaseScaleDownDelayZero": {
			reason: "scaleDownDelay 0s retires a revision at once.",
			args:   args{patches: release(setRelease("scaleDownDelay", "0s")), pick: func(cr *CanaryRoute) any { return cr.Spec.Release.ScaleDownDelay }},
			want:   want{value: time.Duration(0)},
		},
		"ReleaseWithPrimary": {
			reason: "With release the primary is the stable revision: a primary written too is refused.",
			args:   args{patches: release(set("spec.primary", `{service: {selector: {app: podinfo}}}`))},
			want:   want{errs: []fieldErr{forbidden("spec.primary", "set either release or primary")}},
		},
		"ReleaseCanaryService": {
			reason: "With release the canary is a revision: a canary service is refused.",
			args:   args{patches: release(set("spec.canary", `{revision: v2, service: {selector: {app: podinfo}}}`))},
			want:   want{errs: []fieldErr{forbidden("spec.canary", "it names no service, externalName or backendRef")}},
		},
		"ReleaseCanaryExternalName": {
			reason: "With release a canary externalName is refused.",
			args:   args{patches: release(set("spec.canary", `{revision: v2, externalName: podinfo.example.com}`))},
			want:   want{errs: []fieldErr{forbidden("spec.canary", "it names no service, externalName or backendRef")}},
		},
		"ReleaseCanaryBackendRef": {
			reason: "With release a canary backendRef is refused.",
			args:   args{patches: release(set("spec.canary", `{revision: v2, backendRef: {name: canary-proxy, port: 3456}}`))},
			want:   want{errs: []fieldErr{forbidden("spec.canary", "it names no service, externalName or backendRef")}},
		},
		"ReleaseNoSteps": {
			reason: "A release rolls each revision out through steps: a manual weight is refused at traffic.steps.",
			args:   args{patches: release(del("spec.traffic.steps"), set("spec.traffic.weight", "20"))},
			want:   want{errs: []fieldErr{required("spec.traffic.steps", "a release rolls each revision out through steps")}},
		},
		"ReleaseNoTraffic": {
			reason: "A release without traffic is refused at traffic.steps.",
			args:   args{patches: release(del("spec.traffic"))},
			want:   want{errs: []fieldErr{required("spec.traffic.steps", "a release rolls each revision out through steps")}},
		},
		"ReleaseNoPort": {
			reason: "A release's proxy Services serve spec.port: without it the release is refused.",
			args:   args{patches: release(del("spec.port"))},
			want:   want{errs: []fieldErr{required("spec.port", "a release's proxy Services serve spec.port")}},
		},
		"ReleaseNoSelector": {
			reason: "A release's Services select pods: a release without a selector is refused at its selector, never a panic.",
			args:   args{patches: release(set("spec.release", `{revisionLabel: version}`))},
			want:   want{errs: []fieldErr{required("spec.release.selector", "selects the pods")}},
		},
		"ReleaseSelectorEmpty": {
			reason: "An empty selector is no selector.",
			args:   args{patches: release(setRelease("selector", `{}`))},
			want:   want{errs: []fieldErr{required("spec.release.selector", "selects the pods")}},
		},
		"ReleaseRevisionLabelInSelector": {
			reason: "The revision label must not be one of selector's keys, else every revision's Service would select the same pods.",
			args:   args{patches: release(setRelease("revisionLabel", "app"))},
			want:   want{errs: []fieldErr{invalid("spec.release.revisionLabel", "must not be one of selector's labels")}},
		},
		"ReleaseRevisionLabelInvalid": {
			reason: "The revision label is a label key.",
			args:   args{patches: release(setRelease("revisionLabel", "-version"))},
			want:   want{errs: []fieldErr{invalid("spec.release.revisionLabel", "name part must consist of")}},
		},
		"ReleaseRevisionLabelMissing": {
			reason: "A release without a revision label is refused at revisionLabel.",
			args:   args{patches: release(set("spec.release", `{selector: {app: podinfo}}`))},
			want: want{errs: []fieldErr{
				invalid("spec.release.revisionLabel", "name part must be non-empty"),
				invalid("spec.release.revisionLabel", "name part must consist of"),
			}},
		},
		"ReleaseRevisionNotALabelValue": {
			reason: "A release's revision is a label value: v2. matches canary.revision's pattern but ends with a dot, which no label value does.",
			args:   args{patches: release(set("spec.canary.revision", "v2."))},
			want:   want{errs: []fieldErr{invalid("spec.canary.revision", "a release's revision is the value of its revision label")}},
		},
		"ReleaseRevisionLabelValueWithoutRelease": {
			reason: "Without release, canary.revision only follows its own pattern: v2. is valid.",
			args:   args{patches: progressive(set("spec.canary.revision", "v2.")), pick: func(cr *CanaryRoute) any { return cr.Spec.Canary.Revision }},
			want:   want{value: "v2."},
		},
		"ReleaseReplicasZero": {
			reason: "replicas is at least 1.",
			args:   args{patches: release(setRelease("replicas", "0"))},
			want:   want{errs: []fieldErr{invalid("spec.release.replicas", "must be between 1 and 1000")}},
		},
		"ReleaseReplicasTooMany": {
			reason: "replicas is at most 1000.",
			args:   args{patches: release(setRelease("replicas", "1001"))},
			want:   want{errs: []fieldErr{invalid("spec.release.replicas", "must be between 1 and 1000")}},
		},
		"ReleaseScaleDownDelayTooLong": {
			reason: "scaleDownDelay is at most 24h.",
			args:   args{patches: release(setRelease("scaleDownDelay", "25h"))},
			want:   want{errs: []fieldErr{invalid("spec.release.scaleDownDelay", "must be at most 24h")}},
		},
		"ReleaseScaleDownDelayNotADuration": {
			reason: "scaleDownDelay is a duration.",
			args:   args{patches: release(setRelease("scaleDownDelay", "later"))},
			want:   want{errs: []fieldErr{invalid("spec.release.scaleDownDelay", "must be a duration")}},
		},
		"ReleaseWorkloadNameWithoutRevision": {
			reason: "Each revision runs in an object of its own: a workload name without {{revision}} is refused.",
			args:   args{patches: release(setRelease("workload", `{name: podinfo}`))},
			want:   want{errs: []fieldErr{invalid("spec.release.workload.name", "must hold {{revision}}")}},
		},
		"ReleaseWorkloadNameInvalid": {
			reason: "A workload name is an object name with any revision in it: upper case is refused.",
			args:   args{patches: release(setRelease("workload", `{name: "Podinfo-{{revision}}"}`))},
			want:   want{errs: []fieldErr{invalid("spec.release.workload.name", "with a revision of 63 characters, a lowercase RFC 1123 subdomain")}},
		},
		"ReleaseWorkloadNameTooLongForRevision": {
			reason: "A workload name must stay an object name with the longest revision, 63 characters: 191 characters and {{revision}} make 254.",
			args:   args{patches: release(setRelease("workload", `{name: "`+strings.Repeat("p", 191)+`{{revision}}"}`))},
			want:   want{errs: []fieldErr{invalid("spec.release.workload.name", "with a revision of 63 characters, must be no more than 253")}},
		},
		"ReleaseWorkloadNameLongest": {
			reason: "190 characters and {{revision}} make 253 with the longest revision: allowed.",
			args: args{
				patches: release(setRelease("workload", `{name: "`+strings.Repeat("p", 190)+`{{revision}}"}`)),
				pick:    func(cr *CanaryRoute) any { return len(cr.Spec.Release.Workload.NameOf(strings.Repeat("v", 63))) },
			},
			want: want{value: 253},
		},

		// traffic.rollbackWindow
		"RollbackWindowDefault": {
			reason: "Without rollbackWindow, every revision rolls out through the steps.",
			args:   args{patches: release(), pick: pickWindow},
			want:   want{value: int32(0)},
		},
		"RollbackWindow": {
			reason: "rollbackWindow is kept with a release.",
			args:   args{patches: release(set("spec.traffic.rollbackWindow", "3")), pick: pickWindow},
			want:   want{value: int32(3)},
		},
		"RollbackWindowMax": {
			reason: "rollbackWindow may be 10.",
			args:   args{patches: release(set("spec.traffic.rollbackWindow", "10")), pick: pickWindow},
			want:   want{value: int32(10)},
		},
		"RollbackWindowTooHigh": {
			reason: "rollbackWindow is at most 10.",
			args:   args{patches: release(set("spec.traffic.rollbackWindow", "11"))},
			want:   want{errs: []fieldErr{invalid("spec.traffic.rollbackWindow", "must be between 0 and 10")}},
		},
		"RollbackWindowNegative": {
			reason: "rollbackWindow is at least 0.",
			args:   args{patches: release(set("spec.traffic.rollbackWindow", "-1"))},
			want:   want{errs: []fieldErr{invalid("spec.traffic.rollbackWindow", "must be between 0 and 10")}},
		},
		"RollbackWindowWithoutRelease": {
			reason: "rollbackWindow rolls back to a release's earlier revisions: without release it is refused.",
			args:   args{patches: progressive(set("spec.traffic.rollbackWindow", "3"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.rollbackWindow", "it needs spec.release")}},
		},
		"RollbackWindowZeroWithoutRelease": {
			reason: "Even 0 is refused without release, as the XRD refuses any rollbackWindow without release.",
			args:   args{patches: progressive(set("spec.traffic.rollbackWindow", "0"))},
			want:   want{errs: []fieldErr{forbidden("spec.traffic.rollbackWindow", "it needs spec.release")}},
		},
	}
}

// TestParseMetricsRelease pins each rule of traffic.metrics, traffic.bake,
// release and traffic.rollbackWindow: the value that a valid field yields,
// and the field path and reason of every invalid one.
func TestParseMetricsRelease(t *testing.T) {
	runParseCases(t, metricsReleaseCases())
}

func TestMetricCountsIn(t *testing.T) {
	// Steps 0 to 3 at weights 0, 10, 50 and 100.
	steps := []Step{{Weight: percent.Int(0)}, {Weight: percent.Int(10)}, {Weight: percent.Int(50)}, {Weight: percent.Int(100)}}
	cases := map[string]struct {
		reason string
		metric Metric
		// want is whether the metric counts in each of steps 0 to 3.
		want []bool
	}{
		"Default": {
			reason: "Without steps, a metric counts in every step where the canary gets traffic, 100 included.",
			metric: Metric{},
			want:   []bool{false, true, true, true},
		},
		"DefaultCompareToPrimary": {
			reason: "Compared with the primary, a metric without steps does not count where the primary gets no traffic (weight 100): there is no baseline.",
			metric: Metric{CompareToPrimary: true},
			want:   []bool{false, true, true, false},
		},
		"Explicit": {
			reason: "With steps, a metric counts in exactly those, a step at weight 0 included.",
			metric: Metric{Steps: []int32{0, 3}},
			want:   []bool{true, false, false, true},
		},
		"ExplicitCompareToPrimary": {
			reason: "Compared with the primary, a metric never counts in a step at weight 100, even one it names.",
			metric: Metric{CompareToPrimary: true, Steps: []int32{2, 3}},
			want:   []bool{false, false, true, false},
		},
		"ExplicitEmpty": {
			reason: "An empty, non-nil list of steps names no step: the metric counts nowhere (nil is the default).",
			metric: Metric{Steps: []int32{}},
			want:   []bool{false, false, false, false},
		},
		"DryRun": {
			reason: "dryRun does not change where a metric counts: the rollout engine decides what a dry run holds.",
			metric: Metric{DryRun: true},
			want:   []bool{false, true, true, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := make([]bool, len(steps))
			for i := range steps {
				got[i] = tc.metric.CountsIn(steps, int32(i))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCountsIn(steps, 0..3): -want, +got:\n%s", tc.reason, diff)
			}
			// Outside the steps, a metric counts nowhere, whatever it names.
			for _, i := range []int32{-1, int32(len(steps)), 31} {
				if tc.metric.CountsIn(steps, i) {
					t.Errorf("%s\nCountsIn(steps, %d): want false outside the steps, got true", tc.reason, i)
				}
			}
		})
	}
}

func TestWithPrimaryRevision(t *testing.T) {
	release := []patch{
		del("spec.traffic.weight"),
		set("spec.traffic.steps", `[{weight: 10}, {weight: 100}]`),
		del("spec.primary"),
		set("spec.canary", `{revision: v2}`),
		set("spec.release", `{selector: {app: podinfo}, revisionLabel: version, targetPort: http}`),
	}
	type want struct {
		// primary is what the copy's primary selects, and revision its
		// PrimaryRevision.
		primary  Side
		revision string
	}
	cases := map[string]struct {
		reason   string
		patches  []patch
		revision string
		want     want
	}{
		"Release": {
			reason:   "The copy's primary selects the new revision; the rest of its Service is kept.",
			patches:  release,
			revision: "v3",
			want: want{
				primary: Side{Service: &ServiceSource{
					Selector:   map[string]string{"app": "podinfo", "version": "v3"},
					TargetPort: ptr.To(intstr.FromString("http")),
				}},
				revision: "v3",
			},
		},
		"SameRevision": {
			reason:   "Moving the primary to the revision it selects changes nothing.",
			patches:  release,
			revision: "v2",
			want: want{
				primary: Side{Service: &ServiceSource{
					Selector:   map[string]string{"app": "podinfo", "version": "v2"},
					TargetPort: ptr.To(intstr.FromString("http")),
				}},
				revision: "v2",
			},
		},
		"NoRelease": {
			reason:   "Without a release the spec is returned as it is, and PrimaryRevision is empty.",
			revision: "v3",
			want: want{
				primary:  Side{Service: &ServiceSource{Selector: map[string]string{"app": "podinfo"}}},
				revision: "",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr, err := Parse(xrWith(t, tc.patches...), nil)
			if err != nil {
				t.Fatalf("Parse(...): %v", err)
			}
			before := cr.Spec.Primary
			beforeSelector := map[string]string{}
			for k, v := range before.Service.Selector {
				beforeSelector[k] = v
			}
			beforeRevision := cr.Spec.PrimaryRevision()

			s := cr.Spec.WithPrimaryRevision(tc.revision)
			if diff := cmp.Diff(tc.want.primary, s.Primary); diff != "" {
				t.Errorf("%s\nWithPrimaryRevision(%q).Primary: -want, +got:\n%s", tc.reason, tc.revision, diff)
			}
			if got := s.PrimaryRevision(); got != tc.want.revision {
				t.Errorf("%s\nWithPrimaryRevision(%q).PrimaryRevision(): want %q, got %q", tc.reason, tc.revision, tc.want.revision, got)
			}
			if diff := cmp.Diff(cr.Spec.Canary, s.Canary); diff != "" {
				t.Errorf("%s\nWithPrimaryRevision(%q).Canary: the canary must not move: -before, +after:\n%s", tc.reason, tc.revision, diff)
			}
			// The original spec, its Service and its selector are untouched:
			// the copy is what a promotion composes, the original what the
			// run read.
			if diff := cmp.Diff(beforeSelector, cr.Spec.Primary.Service.Selector); diff != "" {
				t.Errorf("%s\nWithPrimaryRevision(%q) changed the original's selector: -before, +after:\n%s", tc.reason, tc.revision, diff)
			}
			if cr.Spec.Primary.Service != before.Service {
				t.Errorf("%s\nWithPrimaryRevision(%q) replaced the original's Service", tc.reason, tc.revision)
			}
			if got := cr.Spec.PrimaryRevision(); got != beforeRevision {
				t.Errorf("%s\nPrimaryRevision() of the original: want %q, got %q after WithPrimaryRevision(%q)", tc.reason, beforeRevision, got, tc.revision)
			}
		})
	}
}

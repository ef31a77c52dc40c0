package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-canary-route/internal/crdschema"
)

// repository is the repository's root, from this package's directory.
const repository = "../.."

// xrdFiles are the XRDs the tests validate against.
var xrdFiles = []string{
	filepath.Join(repository, definitions, "canaryroute-namespaced.yaml"),
	filepath.Join(repository, definitions, "canaryroute-cluster.yaml"),
}

// TestGeneratedFilesUpToDate fails when example/definitions or the schema
// that package xr embeds does not hold what the generator writes from the
// API types.
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(variants)+1 {
		t.Errorf("the generator writes %d files, want the %d XRDs and the schema", len(files), len(variants))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(repository, name))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale: run `go generate ./...` (-generated, +committed):\n%s", name, diff)
		}
	}
}

// TestXRDRules checks that the XRDs catch mistakes at admission time, with
// the CEL rules and the schema, before the function ever sees them.
func TestXRDRules(t *testing.T) {
	base := `
primary: {service: {selector: {app: podinfo}}}
canary: {backendRef: {name: canary, port: 80}}
parentRefs: [{name: gateway}]
port: 9898
`
	revisioned := strings.Replace(base, "{backendRef: {name: canary, port: 80}}", "{backendRef: {name: canary, port: 80}, revision: v2}", 1)
	cases := map[string]struct {
		reason string
		spec   string
		want   []string // substrings of the errors; none means accepted
	}{
		"Valid": {
			reason: "A plain spec is accepted.",
			spec:   base,
		},
		"TwoSources": {
			reason: "A side has exactly one backend source.",
			spec:   strings.Replace(base, "{service: {selector: {app: podinfo}}}", "{service: {selector: {app: podinfo}}, externalName: example.com}", 1),
			want:   []string{"set exactly one of service, externalName or backendRef"},
		},
		"NoSource": {
			reason: "A side without a source is refused.",
			spec:   strings.Replace(base, "{backendRef: {name: canary, port: 80}}", "{filters: []}", 1),
			want:   []string{"set exactly one of service, externalName or backendRef"},
		},
		"WeightAndSteps": {
			reason: "Manual weight and progressive steps exclude each other.",
			spec:   base + "traffic: {weight: 10, steps: [{weight: 10}]}\n",
			want:   []string{"set either traffic.weight (manual) or traffic.steps (progressive), not both"},
		},
		"StepsNeedRevision": {
			reason: "Progressive steps need a canary revision.",
			spec:   base + "traffic: {steps: [{weight: 10}]}\n",
			want:   []string{"traffic.steps needs canary.revision"},
		},
		"StepsGoDown": {
			reason: "Steps never lower the weight.",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: v2}", 1) + "traffic: {steps: [{weight: 50}, {weight: 10}]}\n",
			want:   []string{"steps must not lower the weight"},
		},
		"FineSteps": {
			reason: "Weights are numbers: steps with decimals, whole and not mixed, are in order for the CEL rule (CEL reads every one as a double).",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: v2}", 1) + "traffic: {steps: [{weight: 0.1}, {weight: 1}, {weight: 25.5}, {weight: 100}]}\n",
		},
		"FineStepsGoDown": {
			reason: "Steps with decimals never lower the weight either.",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: v2}", 1) + "traffic: {steps: [{weight: 1}, {weight: 0.5}]}\n",
			want:   []string{"steps must not lower the weight"},
		},
		"FineWeight": {
			reason: "A manual weight with decimals is a number the XRD accepts.",
			spec:   base + "traffic: {weight: 0.1}\n",
		},
		"FineWeightRange": {
			reason: "100.5 is above 100.",
			spec:   base + "traffic: {weight: 100.5}\n",
			want:   []string{"spec.traffic.weight"},
		},
		"WeightRange": {
			reason: "The weight is a percent.",
			spec:   base + "traffic: {weight: 101}\n",
			want:   []string{"spec.traffic.weight"},
		},
		"TLSRouteNeedsHostnames": {
			reason: "A TLSRoute routes by SNI.",
			spec:   base + "kind: TLSRoute\n",
			want:   []string{"a TLSRoute routes by SNI"},
		},
		"TCPRouteRuleMatches": {
			reason: "TLS, TCP and UDP rules carry no matches.",
			spec:   base + "kind: TCPRoute\nrules: [{matches: [{path: {value: /}}]}]\n",
			want:   []string{"TLSRoute, TCPRoute and UDPRoute rules carry no matches"},
		},
		"UDPRouteRuleBackends": {
			reason: "A UDPRoute's one rule carries the rollout: no backendRefs of its own.",
			spec:   base + "kind: UDPRoute\nrules: [{backendRefs: [{name: dns, port: 53}]}]\n",
			want:   []string{"backendRefs of their own"},
		},
		"UnknownKind": {
			reason: "The route kind is an enum.",
			spec:   base + "kind: SCTPRoute\n",
			want:   []string{"spec.kind"},
		},
		"RulesOfTheirOwn": {
			reason: "An HTTPRoute rule may have backendRefs of its own, and a retry.",
			spec:   base + "rules: [{backendRefs: [{name: cdn, port: 80}]}, {retry: {codes: [503], attempts: 2, backoff: 100ms}}]\n",
		},
		"RetryCodes": {
			reason: "Retry codes are HTTP error statuses.",
			spec:   base + "rules: [{retry: {codes: [200]}}]\n",
			want:   []string{"spec.rules[0].retry.codes[0]"},
		},
		"StickyBothSides": {
			reason: "Both cookies and their attributes are accepted.",
			spec: base + "traffic: {sessionAffinity: {cookieName: canary, primaryCookieName: stable, maxAge: 1h, " +
				"attributes: {path: /, domain: example.com, secure: true, sameSite: Lax}}}\n",
		},
		"StickySameCookie": {
			reason: "Each side sets a cookie of its own.",
			spec:   base + "traffic: {sessionAffinity: {cookieName: canary, primaryCookieName: canary, maxAge: 1h}}\n",
			want:   []string{"primaryCookieName must differ from cookieName"},
		},
		"SameSiteNoneNeedsSecure": {
			reason: "Browsers refuse SameSite=None without Secure.",
			spec:   base + "traffic: {sessionAffinity: {cookieName: canary, maxAge: 1h, attributes: {sameSite: None}}}\n",
			want:   []string{"SameSite=None needs secure: true"},
		},
		"SessionPersistenceNoAttributes": {
			reason: "The gateway writes its own cookie with SessionPersistence.",
			spec:   base + "traffic: {sessionAffinity: {cookieName: s, maxAge: 1h, mode: SessionPersistence, attributes: {secure: true}}}\n",
			want:   []string{"primaryCookieName and attributes go with mode Cookie"},
		},
		"BackendTLS": {
			reason: "tls on a service side with a hostname and one kind of CA is accepted.",
			spec:   strings.Replace(base, "{service: {selector: {app: podinfo}}}", "{service: {selector: {app: podinfo}}, tls: {hostname: podinfo.internal, wellKnownCACertificates: System}}", 1),
		},
		"BackendTLSOneKindOfCA": {
			reason: "tls sets exactly one of caCertificateRefs and wellKnownCACertificates.",
			spec:   strings.Replace(base, "{service: {selector: {app: podinfo}}}", "{service: {selector: {app: podinfo}}, tls: {hostname: podinfo.internal}}", 1),
			want:   []string{"set exactly one of caCertificateRefs or wellKnownCACertificates"},
		},
		"BackendTLSOnBackendRef": {
			reason: "tls goes with a side whose proxy Service the function composes.",
			spec:   strings.Replace(base, "{backendRef: {name: canary, port: 80}}", "{backendRef: {name: canary, port: 80}, tls: {hostname: c.internal, wellKnownCACertificates: System}}", 1),
			want:   []string{"tls goes with a service or externalName side"},
		},
		"BackendTLSSubjectAltNames": {
			reason: "tls names subject alternative names as Gateway API writes them.",
			spec: strings.Replace(base, "{service: {selector: {app: podinfo}}}", "{service: {selector: {app: podinfo}}, tls: {hostname: podinfo.internal, wellKnownCACertificates: System, "+
				"subjectAltNames: [{type: Hostname, hostname: podinfo.example.com}, {type: URI, uri: 'spiffe://example.com/podinfo'}]}}", 1),
		},
		"BackendTLSSubjectAltNameRules": {
			reason: "A subject alternative name follows the BackendTLSPolicy CRD's rules, as the function does.",
			spec:   strings.Replace(base, "{service: {selector: {app: podinfo}}}", "{service: {selector: {app: podinfo}}, tls: {hostname: podinfo.internal, wellKnownCACertificates: System, subjectAltNames: [{type: Hostname}]}}", 1),
			want:   []string{"SubjectAltName element must contain Hostname"},
		},
		"RevisionOnPrimary": {
			reason: "Only the canary has a revision.",
			spec:   strings.Replace(base, "{service: {selector: {app: podinfo}}}", "{service: {selector: {app: podinfo}}, revision: v1}", 1),
			want:   []string{"only the canary has a revision"},
		},
		"ControlsNeedSteps": {
			reason: "approval, promote and retry act on progressive rollouts.",
			spec:   base + "traffic: {weight: 10, retry: \"1\"}\n",
			want:   []string{"they need steps"},
		},
		"StepAnalysisUnknown": {
			reason: "A step's analysis names templates of traffic.analysis.",
			spec:   revisioned + "traffic: {steps: [{weight: 10, analysis: [smoke]}]}\n",
			want:   []string{"a step's analysis names templates of traffic.analysis"},
		},
		"StepAnalysisTwice": {
			reason: "A step names each template once.",
			spec: revisioned + "traffic: {steps: [{weight: 10, analysis: [smoke, smoke]}], " +
				"analysis: {smoke: {template: {apiVersion: batch/v1, kind: Job}, successWhen: \"true\"}}}\n",
			want: []string{"Duplicate value"},
		},
		"AnalysisName": {
			reason: "Analysis names are DNS-1123 labels of at most 32 characters.",
			spec: revisioned + "traffic: {steps: [{weight: 10}], " +
				"analysis: {Smoke_Test: {template: {apiVersion: batch/v1, kind: Job}, successWhen: \"true\"}}}\n",
			want: []string{"analysis names are DNS-1123 labels"},
		},
		"ProgressDeadline": {
			reason: "A progress deadline between 1m and 24h is accepted with steps.",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: v2}", 1) + "traffic: {steps: [{weight: 10}], progressDeadline: 10m}\n",
		},
		"ProgressDeadlineTooShort": {
			reason: "A progress deadline is at least 1m.",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: v2}", 1) + "traffic: {steps: [{weight: 10}], progressDeadline: 30s}\n",
			want:   []string{"progressDeadline must be between 1m and 24h"},
		},
		"ProgressDeadlineTooLong": {
			reason: "A progress deadline is at most 24h.",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: v2}", 1) + "traffic: {steps: [{weight: 10}], progressDeadline: 25h}\n",
			want:   []string{"progressDeadline must be between 1m and 24h"},
		},
		"ProgressDeadlineNeedsSteps": {
			reason: "A progress deadline bounds steps: manual mode has none.",
			spec:   base + "traffic: {weight: 10, progressDeadline: 10m}\n",
			want:   []string{"progressDeadline bounds how long a step may be held"},
		},
		"SelectorTooLarge": {
			reason: "A selector has at most 64 labels.",
			spec:   strings.Replace(base, "{selector: {app: podinfo}}", "{selector: {"+labels(65)+"}}", 1),
			want:   []string{"spec.primary.service.selector"},
		},
		"BadRevision": {
			reason: "A revision is a short plain word.",
			spec:   strings.Replace(base, "port: 80}}", "port: 80}, revision: 'v 2'}", 1),
			want:   []string{"spec.canary.revision"},
		},
		"Preview": {
			reason: "A preview names hostnames of its own beside a progressive rollout.",
			spec:   revisioned + "hostnames: [www.example.com]\ntraffic: {steps: [{weight: 0, approval: true}, {weight: 100}], preview: {hostnames: [preview.example.com]}}\n",
		},
		"PreviewNeedsSteps": {
			reason: "A preview shows the canary while a rollout is active: manual mode has none.",
			spec:   base + "traffic: {weight: 10, preview: {hostnames: [preview.example.com]}}\n",
			want:   []string{"a preview shows the canary while a rollout is active: it needs steps"},
		},
		"PreviewHostnameOfTheRoute": {
			reason: "A preview hostname that the main route names too would be the main route's.",
			spec:   revisioned + "hostnames: [www.example.com]\ntraffic: {steps: [{weight: 10}], preview: {hostnames: [preview.example.com, www.example.com]}}\n",
			want:   []string{"a preview hostname must not be one of spec.hostnames"},
		},
		"PreviewTCPRoute": {
			reason: "A TCPRoute has no hostnames, so no preview.",
			spec:   revisioned + "kind: TCPRoute\ntraffic: {steps: [{weight: 10}], preview: {hostnames: [preview.example.com]}}\n",
			want:   []string{"TCPRoute and UDPRoute have no hostnames"},
		},
		"PreviewNoHostnames": {
			reason: "A preview names 1 to 16 hostnames.",
			spec:   revisioned + "traffic: {steps: [{weight: 10}], preview: {hostnames: []}}\n",
			want:   []string{"spec.traffic.preview.hostnames"},
		},
		"PreviewDuplicateHostnames": {
			reason: "The preview's hostnames are a set.",
			spec:   revisioned + "traffic: {steps: [{weight: 10}], preview: {hostnames: [preview.example.com, preview.example.com]}}\n",
			want:   []string{"spec.traffic.preview.hostnames[1]"},
		},
		"PreviewBadHostname": {
			reason: "A preview hostname is a Gateway API hostname.",
			spec:   revisioned + "traffic: {steps: [{weight: 10}], preview: {hostnames: [Preview_Example]}}\n",
			want:   []string{"spec.traffic.preview.hostnames[0]"},
		},
		"PreviewLongRouteName": {
			reason: "The preview route is <routeName>-preview: the route's name leaves room for the suffix.",
			spec:   revisioned + "routeName: " + strings.Repeat("a", 246) + "\ntraffic: {steps: [{weight: 10}], preview: {hostnames: [preview.example.com]}}\n",
			want:   []string{"with traffic.preview, routeName is at most 245 characters"},
		},
	}
	xrds := crdschema.XRDs(t, xrdFiles...)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, kind := range []string{"CanaryRoute", "XCanaryRoute"} {
				var spec map[string]any
				if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
					t.Fatal(err)
				}
				meta := map[string]any{"name": "podinfo"}
				if kind == "CanaryRoute" {
					meta["namespace"] = "test"
				}
				xr := map[string]any{"apiVersion": "platform.example.org/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}
				errs := xrds.Validate(xr).ToAggregate()
				if len(tc.want) == 0 {
					if errs != nil {
						t.Errorf("%s\n%s: want accepted, got %v", tc.reason, kind, errs)
					}
					continue
				}
				if errs == nil {
					t.Errorf("%s\n%s: want rejected, got accepted", tc.reason, kind)
					continue
				}
				for _, w := range tc.want {
					if !strings.Contains(errs.Error(), w) {
						t.Errorf("%s\n%s: error %q does not mention %q", tc.reason, kind, errs, w)
					}
				}
			}
		})
	}
}

// TestExamplesPassXRDs checks every example XR against its XRD.
func TestExamplesPassXRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repository, "example", "*", "xr.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	xrds := crdschema.XRDs(t, xrdFiles...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var xr map[string]any
		if err := yaml.Unmarshal(b, &xr); err != nil {
			t.Fatal(err)
		}
		if errs := xrds.Validate(xr); len(errs) > 0 {
			t.Errorf("%s: the XRD rejects the example: %v", f, errs)
		}
	}
}

// TestXRDImmutableFields checks the transition rules: the route's name and
// namespace cannot change, since a new one would leave the old route's
// traffic behind.
func TestXRDImmutableFields(t *testing.T) {
	xrds := crdschema.XRDs(t, xrdFiles[1])
	xr := func(extra string) map[string]any {
		var spec map[string]any
		if err := yaml.Unmarshal([]byte(`
primary: {service: {selector: {app: podinfo}}}
canary: {backendRef: {name: canary, port: 80}}
parentRefs: [{name: gateway}]
port: 9898
`+extra), &spec); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"apiVersion": "platform.example.org/v1alpha1", "kind": "XCanaryRoute", "metadata": map[string]any{"name": "podinfo"}, "spec": spec}
	}
	cases := map[string]struct {
		reason   string
		old, new string
		want     string
	}{
		"Unchanged":        {reason: "Other fields may change.", old: "namespace: test\nrouteName: podinfo\n", new: "namespace: test\nrouteName: podinfo\ntraffic: {weight: 10}\n"},
		"RouteNameChanged": {reason: "routeName is immutable.", old: "routeName: podinfo\n", new: "routeName: other\n", want: "routeName is immutable"},
		"RouteNameAdded":   {reason: "routeName cannot be added later.", old: "", new: "routeName: other\n", want: "routeName is immutable"},
		"RouteNameRemoved": {reason: "routeName cannot be removed.", old: "routeName: podinfo\n", new: "", want: "routeName is immutable"},
		"NamespaceChanged": {reason: "namespace is immutable.", old: "namespace: test\n", new: "namespace: prod\n", want: "namespace is immutable"},
		"NamespaceRemoved": {reason: "namespace cannot be removed.", old: "namespace: test\n", new: "", want: "namespace is immutable"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := xrds.ValidateUpdate(xr(tc.old), xr(tc.new)).ToAggregate()
			switch {
			case tc.want == "" && errs != nil:
				t.Errorf("%s\nwant accepted, got %v", tc.reason, errs)
			case tc.want != "" && (errs == nil || !strings.Contains(errs.Error(), tc.want)):
				t.Errorf("%s\nwant an error mentioning %q, got %v", tc.reason, tc.want, errs)
			}
		})
	}
}

// labels is a YAML flow map body of n labels.
func labels(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("l%d: v", i)
	}
	return strings.Join(items, ", ")
}

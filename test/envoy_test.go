package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The Envoy Gateway translator's names and values that the test reads.
const (
	// egInvalidBackend is the cluster that Envoy Gateway gives the weight of
	// the backends it could not resolve: Envoy answers those requests 500.
	egInvalidBackend = "invalid-backend-cluster"
	egTCPProxy       = "envoy.filters.network.tcp_proxy"
	egOverwrite      = "OVERWRITE_IF_EXISTS_OR_ADD"

	annotationResourceName = "crossplane.io/composition-resource-name"
)

// TestEnvoyGateway proves with a real gateway's translator that the objects
// the function composes work. Each case renders an example with the real
// crossplane CLI and the function, and hands the composed objects, with
// what a cluster holds besides them (test/testdata/envoy/<example>.yaml:
// the GatewayClass, the Gateway, the namespaces, the backends the function
// does not compose), to Envoy Gateway's own translator: `egctl x translate`
// (v1.9.1, offline, see hack/tool.sh egctl). It checks the status Envoy Gateway
// gives the route (Accepted, and ResolvedRefs through the composed
// ReferenceGrants) and the xDS that reaches Envoy: every route in Envoy's
// order, with the backends, weights, per-backend filters and mirrors it
// carries.
//
// egctl runs without --add-missing-resources: that flag makes up every
// Service, and every Service port, that a route names, so a proxy Service
// composed with the wrong name or port would still resolve. The test gives
// egctl the whole cluster instead, and assigns the composed Services a
// cluster IP as the API server would.
func TestEnvoyGateway(t *testing.T) {
	egctl := env.egctl

	accepted := []routeCondition{
		{Type: string(gwapiv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gwapiv1.RouteReasonAccepted)},
		{Type: string(gwapiv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue, Reason: string(gwapiv1.RouteReasonResolvedRefs)},
	}
	setCookie := "Set-Cookie: storefront-canary=bfdbc061b9ec3583; Max-Age=86400; Path=/; HttpOnly"

	type args struct {
		example string   // the folder under example/
		omit    []string // kinds of composed objects to leave out of the cluster
	}
	type want struct {
		status []routeStatus
		xds    []xdsRoute
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Flagger": {
			reason: "The canary proxy in monitoring resolves through the composed ReferenceGrant, and Envoy splits 80/20 with each side's header filter.",
			args:   args{example: "flagger"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute test/podinfo", Parent: "istio-ingress/gateway", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:  "httproute/test/podinfo/rule/0/match/0/www_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{Backend: "Service test/podinfo-primary:9898", Weight: 80, RequestHeaders: []string{"add X-Route: primary"}},
						{Backend: "Service monitoring/canary-proxy:3456", Weight: 20, RequestHeaders: []string{"set X-Canary: true"}},
					},
				}},
			},
		},
		"FlaggerWithoutReferenceGrant": {
			reason: "Without the composed ReferenceGrant the canary in monitoring is refused (RefNotPermitted) and its 20% get errors: the grant is what opens exactly this backend.",
			args:   args{example: "flagger", omit: []string{"ReferenceGrant"}},
			want: want{
				status: []routeStatus{{
					Route:  "HTTPRoute test/podinfo",
					Parent: "istio-ingress/gateway",
					Conditions: []routeCondition{
						{Type: string(gwapiv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gwapiv1.RouteReasonAccepted)},
						{Type: string(gwapiv1.RouteConditionResolvedRefs), Status: metav1.ConditionFalse, Reason: string(gwapiv1.RouteReasonRefNotPermitted)},
					},
				}},
				xds: []xdsRoute{{
					Name:  "httproute/test/podinfo/rule/0/match/0/www_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{Backend: egInvalidBackend, Weight: 20},
						{Backend: "Service test/podinfo-primary:9898", Weight: 80, RequestHeaders: []string{"add X-Route: primary"}},
					},
				}},
			},
		},
		"KEDAInterceptor": {
			reason: "The interceptor proxy in keda resolves through the composed v1 ReferenceGrant; the canary's URLRewrite sets the Host that the interceptor routes by, on the canary only.",
			args:   args{example: "keda-interceptor"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute test/podinfo", Parent: "istio-ingress/gateway", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:  "httproute/test/podinfo/rule/0/match/0/www_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{Backend: "Service test/podinfo-primary:9898", Weight: 50},
						{Backend: "Service keda/keda-add-ons-http-interceptor-proxy:8080", Weight: 50, HostRewrite: "podinfo-canary.test.example.com"},
					},
				}},
			},
		},
		"SessionAffinity": {
			reason: "The cookie companion rule comes first and sends the cookie's holders to the canary; the canary sets the cookie next to its own response header in one modifier.",
			args:   args{example: "session-affinity"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute shop/storefront", Parent: "gateways/public", Conditions: accepted}},
				xds: []xdsRoute{
					{
						Name:  "httproute/shop/storefront/rule/0/match/0/shop_example_com",
						Match: `prefix / header Cookie~^(?:.*;\s*)?storefront-canary=bfdbc061b9ec3583(?:;.*)?$`,
						Backends: []xdsBackend{
							{Backend: "Service shop/storefront-canary:8080", Weight: 1, ResponseHeaders: []string{"add X-Served-By: canary", "add " + setCookie}},
						},
					},
					{
						Name:  "httproute/shop/storefront/rule/1/match/0/shop_example_com",
						Match: "prefix /",
						Backends: []xdsBackend{
							{Backend: "Service shop/storefront-primary:8080", Weight: 80},
							{Backend: "Service shop/storefront-canary:8080", Weight: 20, ResponseHeaders: []string{"add X-Served-By: canary", "add " + setCookie}},
						},
					},
				},
			},
		},
		"ABTesting": {
			reason: "Each rule's companion rules (the rule's matches with a header or a query condition added) come before it and reach the canary only; the rules split 90/10.",
			args:   args{example: "ab-testing"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute web/frontend", Parent: "gateways/public", Conditions: accepted}},
				xds: []xdsRoute{
					{
						Name:     "httproute/web/frontend/rule/2/match/0/app_example_com",
						Match:    "path-prefix /static header X-Beta=true header :method=GET",
						Backends: []xdsBackend{{Backend: "Service web/frontend-canary:8080", Weight: 1}},
					},
					{
						Name:     "httproute/web/frontend/rule/2/match/1/app_example_com",
						Match:    "path-prefix /static header :method=GET query beta=true",
						Backends: []xdsBackend{{Backend: "Service web/frontend-canary:8080", Weight: 1}},
					},
					{
						Name:  "httproute/web/frontend/rule/3/match/0/app_example_com",
						Match: "path-prefix /static header :method=GET",
						Backends: []xdsBackend{
							{Backend: "Service web/frontend-primary:8080", Weight: 90},
							{Backend: "Service web/frontend-canary:8080", Weight: 10},
						},
					},
					{
						Name:     "httproute/web/frontend/rule/0/match/0/app_example_com",
						Match:    "path-prefix /app header X-Beta=true",
						Backends: []xdsBackend{{Backend: "Service web/frontend-canary:8080", Weight: 1}},
					},
					{
						Name:     "httproute/web/frontend/rule/0/match/1/app_example_com",
						Match:    "path-prefix /app query beta=true",
						Backends: []xdsBackend{{Backend: "Service web/frontend-canary:8080", Weight: 1}},
					},
					{
						Name:  "httproute/web/frontend/rule/1/match/0/app_example_com",
						Match: "path-prefix /app",
						Backends: []xdsBackend{
							{Backend: "Service web/frontend-primary:8080", Weight: 90},
							{Backend: "Service web/frontend-canary:8080", Weight: 10},
						},
					},
				},
			},
		},
		"EnvoyBackend": {
			reason: "An Envoy Gateway Backend as the canary, named without a port, resolves and takes 5%.",
			args:   args{example: "envoy-backend"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute payments/payments", Parent: "envoy-gateway-system/eg", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:  "httproute/payments/payments/rule/0/match/0/pay_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{Backend: "Service payments/payments-primary:8443", Weight: 95},
						{Backend: "Backend payments/payments-edge-canary", Weight: 5},
					},
				}},
			},
		},
		"GRPC": {
			reason: "A GRPCRoute: the companion rule for the x-canary header comes first; the weighted rule splits 90/10 and mirrors 5% to the canary.",
			args:   args{example: "grpc"},
			want: want{
				status: []routeStatus{{Route: "GRPCRoute shop/checkout", Parent: "gateways/grpc", Conditions: accepted}},
				xds: []xdsRoute{
					{
						Name:  "grpcroute/shop/checkout/rule/0/match/0/grpc_shop_example_com",
						Match: "path-prefix /shop.v1.Checkout header x-canary=always",
						Backends: []xdsBackend{
							{Backend: "Service shop/checkout-canary:9090", Weight: 1, RequestHeaders: []string{"set x-route-track: canary"}},
						},
					},
					{
						Name:  "grpcroute/shop/checkout/rule/1/match/0/grpc_shop_example_com",
						Match: "path-prefix /shop.v1.Checkout",
						Backends: []xdsBackend{
							{Backend: "Service shop/checkout-primary:9090", Weight: 90},
							{Backend: "Service shop/checkout-canary:9090", Weight: 10, RequestHeaders: []string{"set x-route-track: canary"}},
						},
						Mirrors: []xdsMirror{{Backend: "Service shop/checkout-canary:9090", Percent: 5}},
					},
				},
			},
		},
		"Mirroring": {
			reason: "At step 0 (weight 0) the canary takes no traffic but gets a 50% mirror of the primary's.",
			args:   args{example: "mirroring"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute search/search", Parent: "gateways/internal", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:     "httproute/search/search/rule/0/match/0/search_internal_example_com",
					Match:    "prefix /",
					Backends: []xdsBackend{{Backend: "Service search/search-primary:8080", Weight: 100}},
					Mirrors:  []xdsMirror{{Backend: "Service search/search-canary:8080", Percent: 50}},
				}},
			},
		},
		"TLSPassthrough": {
			reason: "A TLSRoute to two custom backends: connections for the SNI name split 70/30.",
			args:   args{example: "tls"},
			want: want{
				status: []routeStatus{{Route: "TLSRoute security/vault", Parent: "gateways/passthrough/tls", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:  "tlsroute/security/vault",
					Match: "sni vault.example.com",
					Backends: []xdsBackend{
						{Backend: "Service security/vault-active:8200", Weight: 70},
						{Backend: "Service security/vault-next:8200", Weight: 30},
					},
				}},
			},
		},
		"TCP": {
			reason: "A TCPRoute (written at v1alpha2, read by Envoy Gateway at v1): connections split 50/50 between the proxy Services.",
			args:   args{example: "tcp"},
			want: want{
				status: []routeStatus{{Route: "TCPRoute data/postgres", Parent: "gateways/tcp/postgres", Conditions: accepted}},
				xds: []xdsRoute{{
					Name: "tcproute/data/postgres",
					Backends: []xdsBackend{
						{Backend: "Service data/postgres-primary:5432", Weight: 50},
						{Backend: "Service data/postgres-canary:5432", Weight: 50},
					},
				}},
			},
		},
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rendered := render(t, filepath.Join(env.root, "example", tc.args.example))
			cluster, err := os.ReadFile(filepath.Join("testdata", "envoy", tc.args.example+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			input := filepath.Join(t.TempDir(), "objects.yaml")
			if err := os.WriteFile(input, envoyInput(t, cluster, rendered, tc.args.omit), 0o600); err != nil {
				t.Fatal(err)
			}
			got := egctlTranslate(t, egctl, input)

			if diff := cmp.Diff(tc.want.status, got.routeStatuses(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nroute status: -want, +got:\n%s", tc.reason, diff)
			}
			xds, err := got.xdsRoutes()
			if err != nil {
				t.Fatalf("%s\n%v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.xds, xds, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nxDS routes: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// envoyInput is what egctl reads: the cluster's own objects, then the
// objects that crossplane render composed (those that carry a composition
// resource name; not the XR), less the kinds in omit, each as the API
// server would hold it:
//   - crossplane render leaves the owner's uid empty, which the API server
//     (and egctl's validation) refuses; Crossplane sets the XR's uid.
//   - a Service of type ClusterIP gets a cluster IP.
//   - Envoy Gateway v1.9 reads TCPRoutes and TLSRoutes at v1, which the
//     API server serves for objects written at v1alpha2 too (one schema,
//     conversion None). egctl's file loader does not convert: it panics on
//     a v1alpha2 TCPRoute.
func envoyInput(t *testing.T, cluster, rendered []byte, omit []string) []byte {
	t.Helper()
	var docs [][]byte
	for _, u := range yamlObjects(t, cluster) {
		b, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	clusterIP := 0
	for _, u := range yamlObjects(t, rendered) {
		if _, ok := u.GetAnnotations()[annotationResourceName]; !ok || slices.Contains(omit, u.GetKind()) {
			continue
		}
		refs := u.GetOwnerReferences()
		for i := range refs {
			if refs[i].UID == "" {
				refs[i].UID = "6f1c1d52-2f3a-4c55-9a6e-0c1d2e3f4a5b"
			}
		}
		u.SetOwnerReferences(refs)
		if u.GetAPIVersion() == "v1" && u.GetKind() == "Service" {
			typ, _, _ := unstructured.NestedString(u.Object, "spec", "type")
			ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP")
			if (typ == "" || typ == "ClusterIP") && ip == "" {
				clusterIP++
				if err := unstructured.SetNestedField(u.Object, fmt.Sprintf("10.96.100.%d", clusterIP), "spec", "clusterIP"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if u.GetAPIVersion() == gwapiv1.GroupName+"/v1alpha2" && (u.GetKind() == "TCPRoute" || u.GetKind() == "TLSRoute") {
			u.SetAPIVersion(gwapiv1.GroupVersion.String())
		}
		b, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return bytes.Join(docs, []byte("\n---\n"))
}

// yamlObjects splits a YAML stream into its objects, skipping empty
// documents.
func yamlObjects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		j, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(j, &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// egctlTranslate runs Envoy Gateway's translator on the objects in file and
// returns its Gateway API status and xDS.
func egctlTranslate(t *testing.T, egctl, file string) egctlResult {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), egctl, "x", "translate",
		"--from", "gateway-api", "--to", "gateway-api,xds", "--output", "json", "--file", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		in, _ := os.ReadFile(file)
		t.Fatalf("egctl x translate: %v\n%s\ninput:\n%s", err, stderr.String(), in)
	}
	var res egctlResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("cannot read egctl's output: %v\n%s", err, out)
	}
	return res
}

// egctlResult is the part of `egctl x translate -o json` that the test
// reads: the routes with the status Envoy Gateway gives them, and per
// Gateway the xDS config dump that Envoy would receive.
type egctlResult struct {
	HTTPRoutes []egctlRoute             `json:"httpRoutes"`
	GRPCRoutes []egctlRoute             `json:"grpcRoutes"`
	TLSRoutes  []egctlRoute             `json:"tlsRoutes"`
	TCPRoutes  []egctlRoute             `json:"tcpRoutes"`
	XDS        map[string]xdsConfigDump `json:"xds"`
}

type egctlRoute struct {
	Kind     string              `json:"kind"`
	Metadata metav1.ObjectMeta   `json:"metadata"`
	Status   gwapiv1.RouteStatus `json:"status"`
}

// routeStatus is a route's status for one parent.
type routeStatus struct {
	Route      string // kind namespace/name
	Parent     string // namespace/name[/sectionName]
	Conditions []routeCondition
}

type routeCondition struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
}

func (r egctlResult) routeStatuses() []routeStatus {
	var out []routeStatus
	for _, route := range slices.Concat(r.HTTPRoutes, r.GRPCRoutes, r.TLSRoutes, r.TCPRoutes) {
		for _, p := range route.Status.Parents {
			parent := string(p.ParentRef.Name)
			if p.ParentRef.Namespace != nil {
				parent = string(*p.ParentRef.Namespace) + "/" + parent
			}
			if p.ParentRef.SectionName != nil {
				parent += "/" + string(*p.ParentRef.SectionName)
			}
			s := routeStatus{Route: route.Kind + " " + route.Metadata.Namespace + "/" + route.Metadata.Name, Parent: parent}
			for _, c := range p.Conditions {
				s.Conditions = append(s.Conditions, routeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
			}
			slices.SortFunc(s.Conditions, func(a, b routeCondition) int { return strings.Compare(a.Type, b.Type) })
			out = append(out, s)
		}
	}
	return out
}

// xdsRoute is what Envoy does with the requests (an HTTP route) or the
// connections (a TLS or TCP filter chain) that one match of a route selects.
type xdsRoute struct {
	Name     string // Envoy's name: the route, its rule and match
	Match    string // path, headers, query parameters or SNI names
	Backends []xdsBackend
	Mirrors  []xdsMirror
}

type xdsBackend struct {
	Backend         string // "Kind namespace/name[:port]", or the cluster's name when no backend resolved
	Weight          uint32
	RequestHeaders  []string // "add Name: value" or "set Name: value"
	ResponseHeaders []string
	HostRewrite     string
}

type xdsMirror struct {
	Backend string
	Percent float64
}

// The parts of Envoy's config dump (protojson) that the test reads.
type xdsConfigDump struct {
	Configs []struct {
		DynamicEndpointConfigs []struct {
			EndpointConfig xdsLoadAssignment `json:"endpointConfig"`
		} `json:"dynamicEndpointConfigs"`
		DynamicListeners []struct {
			ActiveState struct {
				Listener struct {
					FilterChains       []xdsFilterChain `json:"filterChains"`
					DefaultFilterChain *xdsFilterChain  `json:"defaultFilterChain"`
				} `json:"listener"`
			} `json:"activeState"`
		} `json:"dynamicListeners"`
		DynamicRouteConfigs []struct {
			RouteConfig struct {
				VirtualHosts []struct {
					Routes []xdsRouteConfig `json:"routes"`
				} `json:"virtualHosts"`
			} `json:"routeConfig"`
		} `json:"dynamicRouteConfigs"`
	} `json:"configs"`
}

type xdsLoadAssignment struct {
	ClusterName string `json:"clusterName"`
	Endpoints   []struct {
		LoadBalancingWeight uint32 `json:"loadBalancingWeight"`
		Locality            struct {
			Region string `json:"region"`
		} `json:"locality"`
		Metadata struct {
			FilterMetadata struct {
				EnvoyGateway struct {
					Resources []xdsResource `json:"resources"`
				} `json:"envoy-gateway"`
			} `json:"filterMetadata"`
		} `json:"metadata"`
	} `json:"endpoints"`
}

type xdsRouteConfig struct {
	Name  string `json:"name"`
	Match struct {
		Prefix              string          `json:"prefix"`
		Path                string          `json:"path"`
		PathSeparatedPrefix string          `json:"pathSeparatedPrefix"`
		SafeRegex           *xdsRegex       `json:"safeRegex"`
		Headers             []xdsNamedMatch `json:"headers"`
		QueryParameters     []xdsNamedMatch `json:"queryParameters"`
	} `json:"match"`
	Route *struct {
		xdsClusterSpecifier
		RequestMirrorPolicies []struct {
			Cluster         string `json:"cluster"`
			RuntimeFraction *struct {
				DefaultValue struct {
					Numerator   uint32 `json:"numerator"`
					Denominator string `json:"denominator"`
				} `json:"defaultValue"`
			} `json:"runtimeFraction"`
		} `json:"requestMirrorPolicies"`
	} `json:"route"`
	DirectResponse *struct {
		Status uint32 `json:"status"`
	} `json:"directResponse"`
}

// xdsClusterSpecifier is where a route or a TCP proxy sends traffic: one
// cluster, or weighted clusters.
type xdsClusterSpecifier struct {
	Cluster          string `json:"cluster"`
	WeightedClusters *struct {
		Clusters []struct {
			Name                 string         `json:"name"`
			Weight               uint32         `json:"weight"`
			RequestHeadersToAdd  []xdsHeaderAdd `json:"requestHeadersToAdd"`
			ResponseHeadersToAdd []xdsHeaderAdd `json:"responseHeadersToAdd"`
			HostRewriteLiteral   string         `json:"hostRewriteLiteral"`
		} `json:"clusters"`
	} `json:"weightedClusters"`
}

type xdsRegex struct {
	Regex string `json:"regex"`
}

type xdsNamedMatch struct {
	Name         string `json:"name"`
	PresentMatch bool   `json:"presentMatch"`
	StringMatch  *struct {
		Exact     string    `json:"exact"`
		Prefix    string    `json:"prefix"`
		SafeRegex *xdsRegex `json:"safeRegex"`
	} `json:"stringMatch"`
}

type xdsHeaderAdd struct {
	Header struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"header"`
	AppendAction string `json:"appendAction"`
}

type xdsFilterChain struct {
	Name             string `json:"name"`
	FilterChainMatch struct {
		ServerNames []string `json:"serverNames"`
	} `json:"filterChainMatch"`
	Filters []struct {
		Name        string          `json:"name"`
		TypedConfig json.RawMessage `json:"typedConfig"`
	} `json:"filters"`
}

// xdsRoutes lists every HTTP route and every TCP proxy filter chain of
// every Gateway, in Envoy's order, with the backends behind their clusters.
// The cluster holds no routes but the composed ones.
func (r egctlResult) xdsRoutes() ([]xdsRoute, error) {
	var out []xdsRoute
	gateways := make([]string, 0, len(r.XDS))
	for gw := range r.XDS {
		gateways = append(gateways, gw)
	}
	slices.Sort(gateways)
	for _, gw := range gateways {
		dump := r.XDS[gw]
		assignments := map[string]xdsLoadAssignment{}
		for _, c := range dump.Configs {
			for _, e := range c.DynamicEndpointConfigs {
				assignments[e.EndpointConfig.ClusterName] = e.EndpointConfig
			}
		}
		for _, c := range dump.Configs {
			for _, rc := range c.DynamicRouteConfigs {
				for _, vh := range rc.RouteConfig.VirtualHosts {
					for _, rt := range vh.Routes {
						route, err := rt.summary(assignments)
						if err != nil {
							return nil, fmt.Errorf("gateway %s, route %s: %w", gw, rt.Name, err)
						}
						out = append(out, route)
					}
				}
			}
			for _, l := range c.DynamicListeners {
				chains := l.ActiveState.Listener.FilterChains
				if dfc := l.ActiveState.Listener.DefaultFilterChain; dfc != nil {
					chains = append(chains, *dfc)
				}
				for _, fc := range chains {
					for _, f := range fc.Filters {
						if f.Name != egTCPProxy {
							continue
						}
						var proxy xdsClusterSpecifier
						if err := json.Unmarshal(f.TypedConfig, &proxy); err != nil {
							return nil, err
						}
						backends, err := proxy.backends(assignments)
						if err != nil {
							return nil, fmt.Errorf("gateway %s, filter chain %s: %w", gw, fc.Name, err)
						}
						route := xdsRoute{Name: fc.Name, Backends: backends}
						if len(fc.FilterChainMatch.ServerNames) > 0 {
							route.Match = "sni " + strings.Join(fc.FilterChainMatch.ServerNames, " ")
						}
						out = append(out, route)
					}
				}
			}
		}
	}
	return out, nil
}

func (rt xdsRouteConfig) summary(assignments map[string]xdsLoadAssignment) (xdsRoute, error) {
	route := xdsRoute{Name: rt.Name, Match: rt.matchString()}
	if rt.DirectResponse != nil {
		route.Backends = []xdsBackend{{Backend: "direct response " + strconv.FormatUint(uint64(rt.DirectResponse.Status), 10)}}
	}
	if rt.Route == nil {
		return route, nil
	}
	var err error
	if route.Backends, err = rt.Route.backends(assignments); err != nil {
		return route, err
	}
	for _, m := range rt.Route.RequestMirrorPolicies {
		backends, err := xdsClusterSpecifier{Cluster: m.Cluster}.backends(assignments)
		if err != nil {
			return route, err
		}
		if len(backends) != 1 {
			return route, fmt.Errorf("mirror cluster %s has %d backends", m.Cluster, len(backends))
		}
		percent := 100.0
		if f := m.RuntimeFraction; f != nil {
			denominator := map[string]float64{"": 100, "HUNDRED": 100, "TEN_THOUSAND": 1e4, "MILLION": 1e6}[f.DefaultValue.Denominator]
			if denominator == 0 {
				return route, fmt.Errorf("mirror cluster %s: unknown denominator %q", m.Cluster, f.DefaultValue.Denominator)
			}
			percent = float64(f.DefaultValue.Numerator) * 100 / denominator
		}
		route.Mirrors = append(route.Mirrors, xdsMirror{Backend: backends[0].Backend, Percent: percent})
	}
	return route, nil
}

// backends resolves the clusters to the backends that Envoy Gateway put in
// them (the metadata of each locality of their load assignment): a weighted
// cluster holds one backend, a single cluster one locality per backend,
// weighted by the locality.
func (s xdsClusterSpecifier) backends(assignments map[string]xdsLoadAssignment) ([]xdsBackend, error) {
	if s.WeightedClusters == nil {
		if s.Cluster == "" {
			return nil, nil
		}
		la, ok := assignments[s.Cluster]
		if !ok {
			return []xdsBackend{{Backend: s.Cluster}}, nil
		}
		var out []xdsBackend
		for _, e := range la.Endpoints {
			out = append(out, xdsBackend{Backend: localityBackend(e.Locality.Region, e.Metadata.FilterMetadata.EnvoyGateway.Resources), Weight: e.LoadBalancingWeight})
		}
		return out, nil
	}
	var out []xdsBackend
	for _, c := range s.WeightedClusters.Clusters {
		b := xdsBackend{Backend: c.Name, Weight: c.Weight, HostRewrite: c.HostRewriteLiteral}
		if la, ok := assignments[c.Name]; ok {
			if len(la.Endpoints) != 1 {
				return nil, fmt.Errorf("weighted cluster %s has %d localities, want one backend", c.Name, len(la.Endpoints))
			}
			e := la.Endpoints[0]
			b.Backend = localityBackend(e.Locality.Region, e.Metadata.FilterMetadata.EnvoyGateway.Resources)
		}
		b.RequestHeaders = headerStrings(c.RequestHeadersToAdd)
		b.ResponseHeaders = headerStrings(c.ResponseHeadersToAdd)
		out = append(out, b)
	}
	return out, nil
}

// xdsResource is the Kubernetes object that Envoy Gateway made a locality
// of: the backend.
type xdsResource struct {
	Kind        string `json:"kind"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	SectionName string `json:"sectionName"`
}

// localityBackend names the backend of a locality, or falls back to the
// locality's name when Envoy Gateway did not say.
func localityBackend(region string, resources []xdsResource) string {
	if len(resources) != 1 {
		return region
	}
	r := resources[0]
	s := r.Kind + " " + r.Namespace + "/" + r.Name
	if r.SectionName != "" {
		s += ":" + r.SectionName
	}
	return s
}

// headerStrings writes header additions as the Gateway API filter that
// makes them: "set" overwrites, "add" appends.
func headerStrings(hs []xdsHeaderAdd) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		verb := "add"
		if h.AppendAction == egOverwrite {
			verb = "set"
		}
		out = append(out, verb+" "+h.Header.Key+": "+h.Header.Value)
	}
	return out
}

func (rt xdsRouteConfig) matchString() string {
	var parts []string
	m := rt.Match
	switch {
	case m.Prefix != "":
		parts = append(parts, "prefix "+m.Prefix)
	case m.Path != "":
		parts = append(parts, "path "+m.Path)
	case m.PathSeparatedPrefix != "":
		parts = append(parts, "path-prefix "+m.PathSeparatedPrefix)
	case m.SafeRegex != nil:
		parts = append(parts, "path~"+m.SafeRegex.Regex)
	}
	for _, h := range m.Headers {
		parts = append(parts, "header "+h.Name+h.condition())
	}
	for _, q := range m.QueryParameters {
		parts = append(parts, "query "+q.Name+q.condition())
	}
	return strings.Join(parts, " ")
}

func (n xdsNamedMatch) condition() string {
	switch {
	case n.PresentMatch:
		return " present"
	case n.StringMatch == nil:
		return " (unknown match)"
	case n.StringMatch.SafeRegex != nil:
		return "~" + n.StringMatch.SafeRegex.Regex
	case n.StringMatch.Prefix != "":
		return "^=" + n.StringMatch.Prefix
	default:
		return "=" + n.StringMatch.Exact
	}
}

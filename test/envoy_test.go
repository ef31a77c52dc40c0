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
	"time"

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
	egUDPProxy       = "envoy.filters.udp_listener.udp_proxy"
	egOverwrite      = "OVERWRITE_IF_EXISTS_OR_ADD"
	// egStatefulSession is the HTTP filter that keeps a session on the
	// backend it chose (Gateway API sessionPersistence); Envoy Gateway
	// enables it per route.
	egStatefulSession = "envoy.filters.http.stateful_session"
	// egTransportSocketMatch is the endpoint metadata that picks one of its
	// cluster's transport sockets (Envoy Gateway's upstream TLS of a
	// BackendTLSPolicy).
	egTransportSocketMatch = "envoy.transport_socket_match"
	egUpstreamTLSContext   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"

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
// order, with the backends, weights, per-backend filters, upstream TLS and
// mirrors it carries, and the redirects, retries and session persistence of
// the routes. It checks the status Envoy Gateway gives the composed
// policies (BackendTLSPolicy) too.
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
	canaryCookie := "Set-Cookie: checkout-canary=5b74a6f02cc6b0d6; Max-Age=86400; Path=/; Domain=example.com; Secure; HttpOnly; SameSite=Lax"
	stableCookie := "Set-Cookie: checkout-stable=ca86d7827e53d5fc; Max-Age=86400; Path=/; Domain=example.com; Secure; HttpOnly; SameSite=Lax"

	type args struct {
		example string   // the folder under example/
		omit    []string // kinds of composed objects to leave out of the cluster
	}
	type want struct {
		status   []routeStatus
		policies []policyStatus
		xds      []xdsRoute
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
		"BlueGreenPreview": {
			reason: "Blue/green awaiting its approval: www.example.com all to the primary (the canary at weight 0), and the preview route, accepted beside it, sends every request of preview.example.com to the canary.",
			args:   args{example: "blue-green", omit: []string{"Deployment"}},
			want: want{
				status: []routeStatus{
					{Route: "HTTPRoute test/podinfo", Parent: "istio-ingress/gateway", Conditions: accepted},
					{Route: "HTTPRoute test/podinfo-preview", Parent: "istio-ingress/gateway", Conditions: accepted},
				},
				xds: []xdsRoute{
					{
						Name:     "httproute/test/podinfo/rule/0/match/0/www_example_com",
						Match:    "prefix /",
						Backends: []xdsBackend{{Backend: "Service test/podinfo-primary:9898", Weight: 100}},
					},
					{
						Name:     "httproute/test/podinfo-preview/rule/0/match/0/preview_example_com",
						Match:    "prefix /",
						Backends: []xdsBackend{{Backend: "Service test/podinfo-canary:9898", Weight: 100}},
					},
				},
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
		"RedirectAndStatic": {
			reason: "Rules of their own stay out of the rollout: /old redirects (301, the prefix replaced by /), /assets reaches the CDN cache in cdn through the composed ReferenceGrant, and only /api splits 80/20 and retries 502 and 503 twice with a 100ms backoff (Envoy Gateway retries connection failures too).",
			args:   args{example: "redirect-and-static"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute test/shop", Parent: "istio-ingress/gateway", Conditions: accepted}},
				xds: []xdsRoute{
					{
						Name:     "httproute/test/shop/rule/1/match/0/shop_example_com",
						Match:    "path-prefix /assets",
						Backends: []xdsBackend{{Backend: "Service cdn/cdn-cache:80", Weight: 1}},
					},
					{
						Name:     "httproute/test/shop/rule/0/match/0/shop_example_com",
						Match:    "path-prefix /old",
						Redirect: `301 regex ^/old\/* -> /`,
					},
					{
						Name:  "httproute/test/shop/rule/2/match/0/shop_example_com",
						Match: "path-prefix /api",
						Backends: []xdsBackend{
							{Backend: "Service test/shop-primary:8080", Weight: 80},
							{Backend: "Service test/shop-canary:8080", Weight: 20},
						},
						Retry: &xdsRetry{
							On:          []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "retriable-status-codes"},
							StatusCodes: []uint32{502, 503},
							NumRetries:  2,
							Backoff:     100 * time.Millisecond,
						},
					},
				},
			},
		},
		"RedirectAndStaticWithoutReferenceGrant": {
			reason: "Without the composed ReferenceGrant the static rule's CDN cache in cdn is refused (RefNotPermitted) and /assets gets errors; the redirect and the weighted /api rule do not depend on it.",
			args:   args{example: "redirect-and-static", omit: []string{"ReferenceGrant"}},
			want: want{
				status: []routeStatus{{
					Route:  "HTTPRoute test/shop",
					Parent: "istio-ingress/gateway",
					Conditions: []routeCondition{
						{Type: string(gwapiv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gwapiv1.RouteReasonAccepted)},
						{Type: string(gwapiv1.RouteConditionResolvedRefs), Status: metav1.ConditionFalse, Reason: string(gwapiv1.RouteReasonRefNotPermitted)},
					},
				}},
				xds: []xdsRoute{
					{
						Name:     "httproute/test/shop/rule/1/match/0/shop_example_com",
						Match:    "path-prefix /assets",
						Backends: []xdsBackend{{Backend: "direct response 500"}},
					},
					{
						Name:     "httproute/test/shop/rule/0/match/0/shop_example_com",
						Match:    "path-prefix /old",
						Redirect: `301 regex ^/old\/* -> /`,
					},
					{
						Name:  "httproute/test/shop/rule/2/match/0/shop_example_com",
						Match: "path-prefix /api",
						Backends: []xdsBackend{
							{Backend: "Service test/shop-primary:8080", Weight: 80},
							{Backend: "Service test/shop-canary:8080", Weight: 20},
						},
						Retry: &xdsRetry{
							On:          []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "retriable-status-codes"},
							StatusCodes: []uint32{502, 503},
							NumRetries:  2,
							Backoff:     100 * time.Millisecond,
						},
					},
				},
			},
		},
		"FineWeights": {
			reason: "Finer weights: a step at 0.1% reaches Envoy as weights out of 10,000, primary 9990 and canary 10, within the Gateway API's per-backend limit.",
			args:   args{example: "fine-weights"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute test/podinfo", Parent: "istio-ingress/gateway", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:  "httproute/test/podinfo/rule/0/match/0/www_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{Backend: "Service test/podinfo-primary:9898", Weight: 9990},
						{Backend: "Service test/podinfo-canary:9898", Weight: 10},
					},
				}},
			},
		},
		"MultiRoute": {
			reason: "Several routes, one rollout: the HTTPRoute on the public gateway and the GRPCRoute on the internal one are both accepted and both split 95/5, each to the proxy Services' port of its own (9898, 9999).",
			args:   args{example: "multi-route"},
			want: want{
				status: []routeStatus{
					{Route: "HTTPRoute test/podinfo-web", Parent: "infra/public", Conditions: accepted},
					{Route: "GRPCRoute test/podinfo-grpc", Parent: "infra/internal", Conditions: accepted},
				},
				xds: []xdsRoute{
					{
						Name:  "grpcroute/test/podinfo-grpc/rule/0/match/-1/grpc_example_internal",
						Match: "prefix /",
						Backends: []xdsBackend{
							{Backend: "Service test/podinfo-primary:9999", Weight: 95},
							{Backend: "Service test/podinfo-canary:9999", Weight: 5},
						},
					},
					{
						Name:  "httproute/test/podinfo-web/rule/0/match/0/www_example_com",
						Match: "prefix /",
						Backends: []xdsBackend{
							{Backend: "Service test/podinfo-primary:9898", Weight: 95},
							{Backend: "Service test/podinfo-canary:9898", Weight: 5},
						},
					},
				},
			},
		},
		"Sticky": {
			reason: "Both sides are sticky: the canary's cookie companion rule comes first, then the primary's; each side sets its own cookie (Domain, Secure, HttpOnly, SameSite) on every response, in the companion rules and in the 70/30 rule.",
			args:   args{example: "sticky"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute shop/checkout", Parent: "istio-ingress/gateway", Conditions: accepted}},
				xds: []xdsRoute{
					{
						Name:  "httproute/shop/checkout/rule/0/match/0/checkout_example_com",
						Match: `prefix / header Cookie~^(?:.*;\s*)?checkout-canary=5b74a6f02cc6b0d6(?:;.*)?$`,
						Backends: []xdsBackend{
							{Backend: "Service shop/checkout-canary:8080", Weight: 1, ResponseHeaders: []string{"add " + canaryCookie}},
						},
					},
					{
						Name:  "httproute/shop/checkout/rule/1/match/0/checkout_example_com",
						Match: `prefix / header Cookie~^(?:.*;\s*)?checkout-stable=ca86d7827e53d5fc(?:;.*)?$`,
						Backends: []xdsBackend{
							{Backend: "Service shop/checkout-primary:8080", Weight: 1, ResponseHeaders: []string{"add " + stableCookie}},
						},
					},
					{
						Name:  "httproute/shop/checkout/rule/2/match/0/checkout_example_com",
						Match: "prefix /",
						Backends: []xdsBackend{
							{Backend: "Service shop/checkout-primary:8080", Weight: 70, ResponseHeaders: []string{"add " + stableCookie}},
							{Backend: "Service shop/checkout-canary:8080", Weight: 30, ResponseHeaders: []string{"add " + canaryCookie}},
						},
					},
				},
			},
		},
		"SessionPersistence": {
			reason: "The weighted rule's sessionPersistence reaches Envoy as a cookie-based stateful session on the route (cookie orders-session, path /, 2h), beside the 75/25 split. (Envoy Gateway v1.9.1 honours sessionPersistence on HTTPRoutes only: on a GRPCRoute it accepts the route and ignores the field.)",
			args:   args{example: "session-persistence"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute shop/orders", Parent: "istio-ingress/gateway", Conditions: accepted}},
				xds: []xdsRoute{{
					Name:  "httproute/shop/orders/rule/0/match/0/orders_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{Backend: "Service shop/orders-primary:8080", Weight: 75},
						{Backend: "Service shop/orders-canary:8080", Weight: 25},
					},
					Session: "cookie orders-session path / ttl 2h0m0s",
				}},
			},
		},
		"BackendTLS": {
			reason: "Both BackendTLSPolicies reach Envoy: TLS to each proxy Service with the SNI and the certificate name it asks for, the primary's verified against the CA of the ConfigMap shop-ca, the canary's against the system's CAs. (Envoy Gateway v1.9.1 refuses an ExternalName Service as a backend, UnsupportedValue, so an externalName side with tls works on gateways that route to ExternalName Services only.)",
			args:   args{example: "backend-tls"},
			want: want{
				status: []routeStatus{{Route: "HTTPRoute shop/payments", Parent: "istio-ingress/gateway", Conditions: accepted}},
				policies: []policyStatus{
					{
						Policy:   "BackendTLSPolicy shop/payments-canary",
						Ancestor: "istio-ingress/gateway",
						Conditions: []routeCondition{
							{Type: string(gwapiv1.PolicyConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gwapiv1.PolicyReasonAccepted)},
							{Type: string(gwapiv1.BackendTLSPolicyConditionResolvedRefs), Status: metav1.ConditionTrue, Reason: string(gwapiv1.BackendTLSPolicyReasonResolvedRefs)},
						},
					},
					{
						Policy:   "BackendTLSPolicy shop/payments-primary",
						Ancestor: "istio-ingress/gateway",
						Conditions: []routeCondition{
							{Type: string(gwapiv1.PolicyConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gwapiv1.PolicyReasonAccepted)},
							{Type: string(gwapiv1.BackendTLSPolicyConditionResolvedRefs), Status: metav1.ConditionTrue, Reason: string(gwapiv1.BackendTLSPolicyReasonResolvedRefs)},
						},
					},
				},
				xds: []xdsRoute{{
					Name:  "httproute/shop/payments/rule/0/match/0/payments_example_com",
					Match: "prefix /",
					Backends: []xdsBackend{
						{
							Backend: "Service shop/payments-primary:443",
							Weight:  95,
							TLS: &xdsTLS{
								SNI:             "payments.shop.internal",
								SubjectAltNames: []string{"DNS payments.shop.internal"},
								CA:              "sds payments-primary/shop-ca",
							},
						},
						{
							Backend: "Service shop/payments-canary:443",
							Weight:  5,
							TLS: &xdsTLS{
								SNI:             "payments.example.net",
								SubjectAltNames: []string{"DNS payments.example.net"},
								CA:              "sds system_ca_certificates",
							},
						},
					},
				}},
			},
		},
		"UDP": {
			reason: "A UDPRoute (v1) on the Gateway's UDP listener: Envoy's UDP proxy sends the datagrams to one cluster whose localities, the proxy Services, weigh 90/10.",
			args:   args{example: "udp"},
			want: want{
				status: []routeStatus{{Route: "UDPRoute infra/dns", Parent: "gateways/udp/dns", Conditions: accepted}},
				xds: []xdsRoute{{
					Name: "gateways/udp/dns",
					Backends: []xdsBackend{
						{Backend: "Service infra/dns-primary:53", Weight: 90},
						{Backend: "Service infra/dns-canary:53", Weight: 10},
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
			if diff := cmp.Diff(tc.want.policies, got.policyStatuses(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\npolicy status: -want, +got:\n%s", tc.reason, diff)
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
// reads: the routes and the policies with the status Envoy Gateway gives
// them, and per Gateway the xDS config dump that Envoy would receive.
type egctlResult struct {
	HTTPRoutes         []egctlRoute             `json:"httpRoutes"`
	GRPCRoutes         []egctlRoute             `json:"grpcRoutes"`
	TLSRoutes          []egctlRoute             `json:"tlsRoutes"`
	TCPRoutes          []egctlRoute             `json:"tcpRoutes"`
	UDPRoutes          []egctlRoute             `json:"udpRoutes"`
	BackendTLSPolicies []egctlPolicy            `json:"backendTLSPolicies"`
	XDS                map[string]xdsConfigDump `json:"xds"`
}

type egctlRoute struct {
	Kind     string              `json:"kind"`
	Metadata metav1.ObjectMeta   `json:"metadata"`
	Status   gwapiv1.RouteStatus `json:"status"`
}

type egctlPolicy struct {
	Kind     string               `json:"kind"`
	Metadata metav1.ObjectMeta    `json:"metadata"`
	Status   gwapiv1.PolicyStatus `json:"status"`
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
	for _, route := range slices.Concat(r.HTTPRoutes, r.GRPCRoutes, r.TLSRoutes, r.TCPRoutes, r.UDPRoutes) {
		for _, p := range route.Status.Parents {
			s := routeStatus{Route: route.Kind + " " + route.Metadata.Namespace + "/" + route.Metadata.Name, Parent: parentString(p.ParentRef)}
			s.Conditions = conditions(p.Conditions)
			out = append(out, s)
		}
	}
	return out
}

// policyStatus is a policy's status for one ancestor (the Gateway whose
// traffic it applies to), or, without an ancestor, a policy that Envoy
// Gateway attached to nothing.
type policyStatus struct {
	Policy     string // kind namespace/name
	Ancestor   string // namespace/name[/sectionName]
	Conditions []routeCondition
}

func (r egctlResult) policyStatuses() []policyStatus {
	var out []policyStatus
	for _, policy := range r.BackendTLSPolicies {
		name := policy.Kind + " " + policy.Metadata.Namespace + "/" + policy.Metadata.Name
		if len(policy.Status.Ancestors) == 0 {
			out = append(out, policyStatus{Policy: name})
		}
		for _, a := range policy.Status.Ancestors {
			out = append(out, policyStatus{Policy: name, Ancestor: parentString(a.AncestorRef), Conditions: conditions(a.Conditions)})
		}
	}
	return out
}

func parentString(ref gwapiv1.ParentReference) string {
	parent := string(ref.Name)
	if ref.Namespace != nil {
		parent = string(*ref.Namespace) + "/" + parent
	}
	if ref.SectionName != nil {
		parent += "/" + string(*ref.SectionName)
	}
	return parent
}

// conditions keeps the conditions' type, status and reason, sorted by type.
func conditions(cs []metav1.Condition) []routeCondition {
	out := make([]routeCondition, 0, len(cs))
	for _, c := range cs {
		out = append(out, routeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	slices.SortFunc(out, func(a, b routeCondition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// xdsRoute is what Envoy does with the requests (an HTTP route), the
// connections (a TLS or TCP filter chain) or the datagrams (a UDP listener)
// that one match of a route selects.
type xdsRoute struct {
	Name     string // Envoy's name: the route, its rule and match; the filter chain; the UDP listener
	Match    string // path, headers, query parameters or SNI names
	Redirect string // "code [scheme s] [host h] [port p] [path p] [prefix p] [regex pattern -> substitution]"
	Backends []xdsBackend
	Mirrors  []xdsMirror
	Retry    *xdsRetry
	Session  string // the stateful session: "cookie name path p ttl d" or "header name"
}

type xdsBackend struct {
	Backend         string // "Kind namespace/name[:port]", or the cluster's name when no backend resolved
	Weight          uint32
	RequestHeaders  []string // "add Name: value" or "set Name: value"
	ResponseHeaders []string
	HostRewrite     string
	TLS             *xdsTLS // the upstream TLS of the backend's endpoints; nil for plaintext
}

// xdsTLS is the TLS that Envoy speaks to a backend.
type xdsTLS struct {
	SNI             string
	SubjectAltNames []string // "DNS name": a name the backend's certificate must carry
	CA              string   // the trusted CAs: "sds secret", "file path", "inline"; empty: no verification
}

// xdsRetry is a route's retry policy.
type xdsRetry struct {
	On          []string // Envoy's retry conditions
	StatusCodes []uint32 // for retriable-status-codes
	NumRetries  uint32
	Backoff     time.Duration // the base interval
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
		DynamicActiveClusters []struct {
			Cluster xdsCluster `json:"cluster"`
		} `json:"dynamicActiveClusters"`
		DynamicListeners []struct {
			ActiveState struct {
				Listener struct {
					Name               string           `json:"name"`
					FilterChains       []xdsFilterChain `json:"filterChains"`
					DefaultFilterChain *xdsFilterChain  `json:"defaultFilterChain"`
					ListenerFilters    []xdsFilter      `json:"listenerFilters"`
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
		LbEndpoints []struct {
			Metadata struct {
				FilterMetadata map[string]map[string]string `json:"filterMetadata"`
			} `json:"metadata"`
		} `json:"lbEndpoints"`
	} `json:"endpoints"`
}

// xdsCluster is the part of a cluster that the test reads: the transport
// sockets (upstream TLS) of its endpoints.
type xdsCluster struct {
	Name                   string              `json:"name"`
	TransportSocket        *xdsTransportSocket `json:"transportSocket"`
	TransportSocketMatches []struct {
		Name            string              `json:"name"`
		Match           map[string]string   `json:"match"`
		TransportSocket *xdsTransportSocket `json:"transportSocket"`
	} `json:"transportSocketMatches"`
}

type xdsTransportSocket struct {
	Name        string          `json:"name"`
	TypedConfig json.RawMessage `json:"typedConfig"`
}

// xdsUpstreamTLSContext is an UpstreamTlsContext, with the validation
// context in any of its three places.
type xdsUpstreamTLSContext struct {
	Type             string `json:"@type"`
	SNI              string `json:"sni"`
	CommonTLSContext struct {
		ValidationContext                *xdsValidationContext `json:"validationContext"`
		ValidationContextSdsSecretConfig *xdsSDSSecretConfig   `json:"validationContextSdsSecretConfig"`
		CombinedValidationContext        *struct {
			DefaultValidationContext         *xdsValidationContext `json:"defaultValidationContext"`
			ValidationContextSdsSecretConfig *xdsSDSSecretConfig   `json:"validationContextSdsSecretConfig"`
		} `json:"combinedValidationContext"`
	} `json:"commonTlsContext"`
}

type xdsValidationContext struct {
	TrustedCA *struct {
		Filename     string `json:"filename"`
		InlineString string `json:"inlineString"`
		InlineBytes  string `json:"inlineBytes"`
	} `json:"trustedCa"`
	MatchTypedSubjectAltNames []struct {
		SANType string `json:"sanType"`
		Matcher struct {
			Exact string `json:"exact"`
		} `json:"matcher"`
	} `json:"matchTypedSubjectAltNames"`
}

type xdsSDSSecretConfig struct {
	Name string `json:"name"`
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
		RetryPolicy *struct {
			RetryOn              string   `json:"retryOn"`
			NumRetries           *uint32  `json:"numRetries"`
			RetriableStatusCodes []uint32 `json:"retriableStatusCodes"`
			RetryBackOff         *struct {
				BaseInterval string `json:"baseInterval"`
			} `json:"retryBackOff"`
		} `json:"retryPolicy"`
	} `json:"route"`
	Redirect       *xdsRedirect `json:"redirect"`
	DirectResponse *struct {
		Status uint32 `json:"status"`
	} `json:"directResponse"`
	TypedPerFilterConfig map[string]json.RawMessage `json:"typedPerFilterConfig"`
}

type xdsRedirect struct {
	HTTPSRedirect  bool   `json:"httpsRedirect"`
	SchemeRedirect string `json:"schemeRedirect"`
	HostRedirect   string `json:"hostRedirect"`
	PortRedirect   uint32 `json:"portRedirect"`
	PathRedirect   string `json:"pathRedirect"`
	PrefixRewrite  string `json:"prefixRewrite"`
	RegexRewrite   *struct {
		Pattern      xdsRegex `json:"pattern"`
		Substitution string   `json:"substitution"`
	} `json:"regexRewrite"`
	ResponseCode string `json:"responseCode"`
}

// xdsStatefulSession is the per-route config of the stateful session
// filter.
type xdsStatefulSession struct {
	Disabled        bool `json:"disabled"`
	StatefulSession *struct {
		SessionState *struct {
			TypedConfig struct {
				Type   string `json:"@type"`
				Cookie *struct {
					Name string `json:"name"`
					Path string `json:"path"`
					TTL  string `json:"ttl"`
				} `json:"cookie"`
				Name string `json:"name"` // a header's
			} `json:"typedConfig"`
		} `json:"sessionState"`
	} `json:"statefulSession"`
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
	Filters []xdsFilter `json:"filters"`
}

type xdsFilter struct {
	Name        string          `json:"name"`
	TypedConfig json.RawMessage `json:"typedConfig"`
}

// xdsUDPProxy is a UDP proxy's config: Envoy Gateway sends every datagram
// to one cluster, the matcher's action on no match.
type xdsUDPProxy struct {
	Matcher struct {
		MatcherList json.RawMessage `json:"matcherList"`
		OnNoMatch   struct {
			Action struct {
				TypedConfig xdsClusterSpecifier `json:"typedConfig"`
			} `json:"action"`
		} `json:"onNoMatch"`
	} `json:"matcher"`
}

// xdsIndex holds a Gateway's clusters and their load assignments by name.
type xdsIndex struct {
	assignments map[string]xdsLoadAssignment
	clusters    map[string]xdsCluster
}

// xdsRoutes lists every HTTP route, every TCP proxy filter chain and every
// UDP proxy listener of every Gateway, in Envoy's order, with the backends
// behind their clusters. The cluster holds no routes but the composed ones.
func (r egctlResult) xdsRoutes() ([]xdsRoute, error) {
	var out []xdsRoute
	gateways := make([]string, 0, len(r.XDS))
	for gw := range r.XDS {
		gateways = append(gateways, gw)
	}
	slices.Sort(gateways)
	for _, gw := range gateways {
		dump := r.XDS[gw]
		ix := xdsIndex{assignments: map[string]xdsLoadAssignment{}, clusters: map[string]xdsCluster{}}
		for _, c := range dump.Configs {
			for _, e := range c.DynamicEndpointConfigs {
				ix.assignments[e.EndpointConfig.ClusterName] = e.EndpointConfig
			}
			for _, cl := range c.DynamicActiveClusters {
				ix.clusters[cl.Cluster.Name] = cl.Cluster
			}
		}
		for _, c := range dump.Configs {
			for _, rc := range c.DynamicRouteConfigs {
				for _, vh := range rc.RouteConfig.VirtualHosts {
					for _, rt := range vh.Routes {
						route, err := rt.summary(ix)
						if err != nil {
							return nil, fmt.Errorf("gateway %s, route %s: %w", gw, rt.Name, err)
						}
						out = append(out, route)
					}
				}
			}
			for _, l := range c.DynamicListeners {
				listener := l.ActiveState.Listener
				for _, f := range listener.ListenerFilters {
					if f.Name != egUDPProxy {
						continue
					}
					var proxy xdsUDPProxy
					if err := json.Unmarshal(f.TypedConfig, &proxy); err != nil {
						return nil, err
					}
					if len(proxy.Matcher.MatcherList) > 0 {
						return nil, fmt.Errorf("gateway %s, listener %s: a UDP proxy with a matcher list", gw, listener.Name)
					}
					backends, err := proxy.Matcher.OnNoMatch.Action.TypedConfig.backends(ix)
					if err != nil {
						return nil, fmt.Errorf("gateway %s, listener %s: %w", gw, listener.Name, err)
					}
					out = append(out, xdsRoute{Name: listener.Name, Backends: backends})
				}
				chains := listener.FilterChains
				if dfc := listener.DefaultFilterChain; dfc != nil {
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
						backends, err := proxy.backends(ix)
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

func (rt xdsRouteConfig) summary(ix xdsIndex) (xdsRoute, error) {
	route := xdsRoute{Name: rt.Name, Match: rt.matchString()}
	if rt.DirectResponse != nil {
		route.Backends = []xdsBackend{{Backend: "direct response " + strconv.FormatUint(uint64(rt.DirectResponse.Status), 10)}}
	}
	if rt.Redirect != nil {
		var err error
		if route.Redirect, err = rt.Redirect.String(); err != nil {
			return route, err
		}
	}
	if raw, ok := rt.TypedPerFilterConfig[egStatefulSession]; ok {
		var err error
		if route.Session, err = sessionString(raw); err != nil {
			return route, err
		}
	}
	if rt.Route == nil {
		return route, nil
	}
	var err error
	if route.Backends, err = rt.Route.backends(ix); err != nil {
		return route, err
	}
	for _, m := range rt.Route.RequestMirrorPolicies {
		backends, err := xdsClusterSpecifier{Cluster: m.Cluster}.backends(ix)
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
	if p := rt.Route.RetryPolicy; p != nil {
		retry := &xdsRetry{StatusCodes: p.RetriableStatusCodes, NumRetries: 1} // Envoy's default: one retry
		if p.RetryOn != "" {
			retry.On = strings.Split(p.RetryOn, ",")
		}
		if p.NumRetries != nil {
			retry.NumRetries = *p.NumRetries
		}
		if b := p.RetryBackOff; b != nil {
			if retry.Backoff, err = time.ParseDuration(b.BaseInterval); err != nil {
				return route, fmt.Errorf("retry backoff: %w", err)
			}
		}
		route.Retry = retry
	}
	return route, nil
}

// String writes a redirect as its status code and the parts of the URL it
// replaces.
func (r xdsRedirect) String() (string, error) {
	codes := map[string]string{"": "301", "MOVED_PERMANENTLY": "301", "FOUND": "302", "SEE_OTHER": "303", "TEMPORARY_REDIRECT": "307", "PERMANENT_REDIRECT": "308"}
	code, ok := codes[r.ResponseCode]
	if !ok {
		return "", fmt.Errorf("unknown redirect response code %q", r.ResponseCode)
	}
	parts := []string{code}
	switch {
	case r.HTTPSRedirect:
		parts = append(parts, "scheme https")
	case r.SchemeRedirect != "":
		parts = append(parts, "scheme "+r.SchemeRedirect)
	}
	if r.HostRedirect != "" {
		parts = append(parts, "host "+r.HostRedirect)
	}
	if r.PortRedirect != 0 {
		parts = append(parts, "port "+strconv.FormatUint(uint64(r.PortRedirect), 10))
	}
	if r.PathRedirect != "" {
		parts = append(parts, "path "+r.PathRedirect)
	}
	if r.PrefixRewrite != "" {
		parts = append(parts, "prefix "+r.PrefixRewrite)
	}
	if rr := r.RegexRewrite; rr != nil {
		parts = append(parts, "regex "+rr.Pattern.Regex+" -> "+rr.Substitution)
	}
	return strings.Join(parts, " "), nil
}

// sessionString writes a route's stateful session config: the cookie or
// the header that keeps a session on its backend.
func sessionString(raw json.RawMessage) (string, error) {
	var s xdsStatefulSession
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	switch {
	case s.Disabled:
		return "disabled", nil
	case s.StatefulSession == nil || s.StatefulSession.SessionState == nil:
		return "", nil
	}
	c := s.StatefulSession.SessionState.TypedConfig
	if c.Cookie != nil {
		out := "cookie " + c.Cookie.Name
		if c.Cookie.Path != "" {
			out += " path " + c.Cookie.Path
		}
		if c.Cookie.TTL != "" {
			ttl, err := time.ParseDuration(c.Cookie.TTL)
			if err != nil {
				return "", fmt.Errorf("session cookie ttl: %w", err)
			}
			out += " ttl " + ttl.String()
		}
		return out, nil
	}
	if strings.HasSuffix(c.Type, ".HeaderBasedSessionState") {
		return "header " + c.Name, nil
	}
	return "", fmt.Errorf("unknown session state %s", c.Type)
}

// backends resolves the clusters to the backends that Envoy Gateway put in
// them (the metadata of each locality of their load assignment): a weighted
// cluster holds one backend, a single cluster one locality per backend,
// weighted by the locality.
func (s xdsClusterSpecifier) backends(ix xdsIndex) ([]xdsBackend, error) {
	if s.WeightedClusters == nil {
		if s.Cluster == "" {
			return nil, nil
		}
		la, ok := ix.assignments[s.Cluster]
		if !ok {
			return []xdsBackend{{Backend: s.Cluster}}, nil
		}
		var out []xdsBackend
		for i := range la.Endpoints {
			e := la.Endpoints[i]
			tls, err := ix.tls(s.Cluster, la, i)
			if err != nil {
				return nil, err
			}
			out = append(out, xdsBackend{Backend: localityBackend(e.Locality.Region, e.Metadata.FilterMetadata.EnvoyGateway.Resources), Weight: e.LoadBalancingWeight, TLS: tls})
		}
		return out, nil
	}
	var out []xdsBackend
	for _, c := range s.WeightedClusters.Clusters {
		b := xdsBackend{Backend: c.Name, Weight: c.Weight, HostRewrite: c.HostRewriteLiteral}
		if la, ok := ix.assignments[c.Name]; ok {
			if len(la.Endpoints) != 1 {
				return nil, fmt.Errorf("weighted cluster %s has %d localities, want one backend", c.Name, len(la.Endpoints))
			}
			e := la.Endpoints[0]
			b.Backend = localityBackend(e.Locality.Region, e.Metadata.FilterMetadata.EnvoyGateway.Resources)
			var err error
			if b.TLS, err = ix.tls(c.Name, la, 0); err != nil {
				return nil, err
			}
		}
		b.RequestHeaders = headerStrings(c.RequestHeadersToAdd)
		b.ResponseHeaders = headerStrings(c.ResponseHeadersToAdd)
		out = append(out, b)
	}
	return out, nil
}

// tls is the upstream TLS of a locality's endpoints: the transport socket
// of the cluster's first transport socket match that their metadata
// satisfies, or else the cluster's own. All the locality's endpoints must
// get the same.
func (ix xdsIndex) tls(cluster string, la xdsLoadAssignment, locality int) (*xdsTLS, error) {
	c, ok := ix.clusters[cluster]
	if !ok {
		return nil, fmt.Errorf("no cluster %s", cluster)
	}
	var out *xdsTLS
	for i, lb := range la.Endpoints[locality].LbEndpoints {
		socket := c.TransportSocket
		meta := lb.Metadata.FilterMetadata[egTransportSocketMatch]
		for _, m := range c.TransportSocketMatches {
			if subset(m.Match, meta) {
				socket = m.TransportSocket
				break
			}
		}
		tls, err := socket.tls()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", cluster, err)
		}
		if i > 0 && !cmp.Equal(tls, out) {
			return nil, fmt.Errorf("cluster %s: the endpoints of locality %d differ in TLS", cluster, locality)
		}
		out = tls
	}
	return out, nil
}

// subset reports whether every key of match has its value in meta.
func subset(match, meta map[string]string) bool {
	for k, v := range match {
		if got, ok := meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// tls reads an upstream TLS transport socket; nil is plaintext.
func (s *xdsTransportSocket) tls() (*xdsTLS, error) {
	if s == nil {
		return nil, nil
	}
	var ctx xdsUpstreamTLSContext
	if err := json.Unmarshal(s.TypedConfig, &ctx); err != nil {
		return nil, err
	}
	if ctx.Type != egUpstreamTLSContext {
		return nil, fmt.Errorf("transport socket %s of type %s", s.Name, ctx.Type)
	}
	out := &xdsTLS{SNI: ctx.SNI}
	common := ctx.CommonTLSContext
	vc, sds := common.ValidationContext, common.ValidationContextSdsSecretConfig
	if cvc := common.CombinedValidationContext; cvc != nil {
		vc, sds = cvc.DefaultValidationContext, cvc.ValidationContextSdsSecretConfig
	}
	if sds != nil {
		out.CA = "sds " + sds.Name
	}
	if vc != nil {
		if ca := vc.TrustedCA; ca != nil {
			switch {
			case ca.Filename != "":
				out.CA = "file " + ca.Filename
			default:
				out.CA = "inline"
			}
		}
		for _, san := range vc.MatchTypedSubjectAltNames {
			if san.Matcher.Exact == "" {
				return nil, fmt.Errorf("transport socket %s: a subject alt name matcher that is not exact", s.Name)
			}
			out.SubjectAltNames = append(out.SubjectAltNames, san.SANType+" "+san.Matcher.Exact)
		}
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

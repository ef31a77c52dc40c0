package standin

import "testing"

func TestIsReal(t *testing.T) {
	served := map[string]bool{"gateway-system/traefik": true}
	cases := map[string]struct {
		reason string
		ref    map[string]any
		ns     string
		want   bool
	}{
		"RealGateway": {
			reason: "A Gateway of a real implementation's class, named with its namespace, is the implementation's.",
			ref:    map[string]any{"name": "traefik", "namespace": "gateway-system", "sectionName": "web"},
			ns:     "shop",
			want:   true,
		},
		"SameNamespace": {
			reason: "Without a namespace, the parentRef names a Gateway in the route's namespace.",
			ref:    map[string]any{"name": "traefik"},
			ns:     "gateway-system",
			want:   true,
		},
		"ExplicitKind": {
			reason: "Group and kind may be written out.",
			ref:    map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "traefik", "namespace": "gateway-system"},
			want:   true,
		},
		"OtherNamespace": {
			reason: "A Gateway of the same name elsewhere is not the real one.",
			ref:    map[string]any{"name": "traefik"},
			ns:     "shop",
			want:   false,
		},
		"OtherGateway": {
			reason: "The examples' istio-ingress/gateway is the stand-in's to report on.",
			ref:    map[string]any{"name": "gateway", "namespace": "istio-ingress"},
			want:   false,
		},
		"CoreGroup": {
			reason: "An empty group written out is the core group, not the Gateway API's.",
			ref:    map[string]any{"group": "", "kind": "Gateway", "name": "traefik", "namespace": "gateway-system"},
			want:   false,
		},
		"NotAGateway": {
			reason: "A parent of another kind (a Service, for mesh routes) is never a real Gateway.",
			ref:    map[string]any{"group": "", "kind": "Service", "name": "traefik", "namespace": "gateway-system"},
			want:   false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := isReal(tc.ref, tc.ns, served); got != tc.want {
				t.Errorf("%s\nisReal(%v, %q): want %t, got %t", tc.reason, tc.ref, tc.ns, tc.want, got)
			}
		})
	}
}

// Package proxy builds the proxy Services that `service` and `externalName`
// sides compose: the stable names the route points at, whatever selects the
// pods (or names the host) behind them.
package proxy

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane-contrib/function-canary-route/internal/xr"
)

// Port names for well-known application protocols. A Service port name is
// an IANA service name (at most 15 characters), so protocols such as
// kubernetes.io/h2c get a short name of their own.
var portNames = map[string]string{
	"http":              "http",
	"https":             "https",
	"kubernetes.io/h2c": "h2c",
	"h2c":               "h2c",
	"grpc":              "grpc",
	"kubernetes.io/ws":  "ws",
	"ws":                "ws",
	"kubernetes.io/wss": "wss",
	"wss":               "wss",
	"tcp":               "tcp",
	"tls":               "tls",
	"udp":               "udp",
}

// defaultPortNames are the port names of proxy Services without an
// appProtocol, by route kind.
var defaultPortNames = map[xr.RouteKind]string{
	xr.KindHTTPRoute: "http",
	xr.KindGRPCRoute: "grpc",
	xr.KindTLSRoute:  "tls",
	xr.KindTCPRoute:  "tcp",
	xr.KindUDPRoute:  "udp",
}

// Service builds the proxy Service of a side, or returns nil when the side
// composes none (a backendRef side).
func Service(cr *xr.CanaryRoute, role xr.Role) *corev1.Service {
	side := cr.Spec.Primary
	if role == xr.RoleCanary {
		side = cr.Spec.Canary
	}
	if !side.ComposesService() {
		return nil
	}

	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      xr.ProxyServiceName(cr.RouteName, role),
			Namespace: cr.RouteNamespace,
		},
	}
	ports := routePorts(cr)
	if side.ExternalName != "" {
		svc.Spec.Type = corev1.ServiceTypeExternalName
		svc.Spec.ExternalName = FullyQualified(side.ExternalName)
		// The port the host listens on: what the API server would default
		// an unset targetPort to, written out so the composed Service says
		// what the cluster holds.
		for i := range ports {
			ports[i].TargetPort = intstr.FromInt32(ports[i].Port)
		}
		svc.Spec.Ports = ports
		return svc
	}

	svc.Spec.Type = corev1.ServiceTypeClusterIP
	svc.Spec.Selector = maps.Clone(side.Service.Selector)
	httpOnly := httpPorts(cr)
	for i := range ports {
		ports[i].TargetPort = intstr.FromInt32(ports[i].Port)
		if side.Service.TargetPort != nil {
			ports[i].TargetPort = *side.Service.TargetPort
		}
		// The side's appProtocol is what the HTTPRoutes and GRPCRoutes
		// reach it with: a stream route's port of its own goes without,
		// since a gateway refuses a backend whose appProtocol its route
		// cannot speak (see httpPorts).
		if ap := side.Service.AppProtocol; ap != "" && (httpOnly == nil || slices.Contains(httpOnly, ports[i].Name)) {
			ports[i].AppProtocol = &ap
			if len(ports) == 1 {
				ports[i].Name = PortName(ap, ports[i].Name)
			}
		}
	}
	svc.Spec.Ports = ports
	return svc
}

// routePorts are the ports of a proxy Service, without their targets: the
// route's port (spec.port); with spec.routes, one per distinct route port
// and protocol, in spec.routes' order, named after the first route's kind
// on it and its number (http-8080, grpc-9090) when there are several.
func routePorts(cr *xr.CanaryRoute) []corev1.ServicePort {
	port := func(kind xr.RouteKind, number int32) corev1.ServicePort {
		p := corev1.ServicePort{Name: defaultPortNames[kind], Protocol: corev1.ProtocolTCP, Port: number}
		if kind == xr.KindUDPRoute {
			p.Protocol = corev1.ProtocolUDP
		}
		return p
	}
	if !cr.Spec.MultiRoute() {
		return []corev1.ServicePort{port(cr.Spec.Kind, cr.Spec.Port)}
	}
	var out []corev1.ServicePort
	for _, e := range cr.Spec.Entries {
		p := port(e.Kind, e.Port)
		if !slices.ContainsFunc(out, func(o corev1.ServicePort) bool { return o.Port == p.Port && o.Protocol == p.Protocol }) {
			out = append(out, p)
		}
	}
	if len(out) > 1 {
		for i := range out {
			out[i].Name += "-" + strconv.Itoa(int(out[i].Port))
		}
	}
	return out
}

// httpPorts are the names of the proxy Service's ports that an HTTPRoute
// or a GRPCRoute of spec.routes reaches the sides on, when a stream route
// (TLSRoute, TCPRoute, UDPRoute) has a port of its own: the ports a side's
// tls (its BackendTLSPolicy) and appProtocol are for. nil when they are
// every port (or none is: stream routes alone), as for a single route.
func httpPorts(cr *xr.CanaryRoute) []string {
	ports := routePorts(cr)
	if len(ports) < 2 {
		return nil // One port cannot be split.
	}
	var out []string
	for _, p := range ports {
		// routePorts keeps one port of each number and protocol; an
		// HTTPRoute or a GRPCRoute is TCP.
		if slices.ContainsFunc(cr.Spec.Entries, func(e xr.Entry) bool {
			return e.Port == p.Port && p.Protocol == corev1.ProtocolTCP && !e.Kind.Streams()
		}) {
			out = append(out, p.Name)
		}
	}
	if len(out) == len(ports) {
		return nil
	}
	return out
}

// PortName is the Service port name for an application protocol: a
// well-known short name, else the protocol's last path segment when that is
// a valid port name, else fallback.
func PortName(appProtocol, fallback string) string {
	if name, ok := portNames[strings.ToLower(appProtocol)]; ok {
		return name
	}
	name := strings.ToLower(appProtocol[strings.LastIndex(appProtocol, "/")+1:])
	if len(validation.IsValidPortName(name)) == 0 {
		return name
	}
	return fallback
}

// FullyQualified writes a host name with the trailing dot that makes it
// absolute, which the API server accepts in an ExternalName Service: no
// resolver then tries it with the pod's search domains first, so a name such
// as kubernetes.default can never resolve to a Service of the cluster.
func FullyQualified(host string) string {
	if strings.HasSuffix(host, ".") {
		return host
	}
	return host + "."
}

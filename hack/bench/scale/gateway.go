package scale

import (
	"context"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/crossplane-contrib/function-canary-route/test/live/controlplane"
	"github.com/crossplane-contrib/function-canary-route/test/live/standin"
)

// A gateway runs the stand-in (test/live/standin) as a Gateway API
// implementation runs at scale: it reads routes, grants and Services from
// watch caches instead of listing and getting them on every pass, and
// writes route status from several workers, each over a shard of the
// routes. The stand-in itself is unchanged: each worker is a StandIn whose
// client serves those reads from the caches and lists only its shard.
//
// Listing every route and getting every backend Service on every pass, one
// request after another, a single stand-in takes a pass of 400 Services
// for 200 CanaryRoutes; under a busy API server a pass took up to 90 s, and
// every rollout step waits for one.
type gateway struct {
	mirrors map[schema.GroupVersionResource]*mirror
	svc     *mirror
}

// gatewayResources are what the stand-in lists: the route kinds and the
// grants.
func gatewayResources() []schema.GroupVersionResource {
	kinds := append(append([]schema.GroupVersionKind(nil), standin.RouteKinds...), standin.ReferenceGrantGVK)
	out := make([]schema.GroupVersionResource, 0, len(kinds))
	for _, gvk := range kinds {
		out = append(out, schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"})
	}
	return out
}

// startGateway starts the caches and the workers, until ctx ends; wg is
// done once every worker has stopped.
func startGateway(ctx context.Context, cfg *rest.Config, workers int, passes *Passes, logf func(string, ...any), wg *sync.WaitGroup) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	g := &gateway{mirrors: map[schema.GroupVersionResource]*mirror{}}
	for _, gvr := range gatewayResources() {
		// A kind the cluster does not serve (the experimental routes on a
		// standard-channel cluster) is left to the stand-in, which skips
		// it.
		if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			continue
		}
		g.mirrors[gvr] = startMirror(ctx, dyn.Resource(gvr), nil)
	}
	g.svc = startMirror(ctx, dyn.Resource(corev1.SchemeGroupVersion.WithResource("services")), nil)
	for _, m := range append(mapValues(g.mirrors), g.svc) {
		select {
		case <-m.synced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := range workers {
		c, err := controlplane.NewClient(cfg)
		if err != nil {
			return err
		}
		shard := func(u *unstructured.Unstructured) bool { return shardOf(u, workers) == i }
		c.Dynamic = cachedDynamic{Interface: c.Dynamic, mirrors: g.mirrors, shard: shard}
		c.Kube = cachedKube{Interface: c.Kube, svc: g.svc}
		gw := &standin.StandIn{Client: c}
		wg.Go(func() { passes.run(ctx, gw, logf) })
	}
	return nil
}

func shardOf(u *unstructured.Unstructured, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(u.GetNamespace() + "/" + u.GetName()))
	return int(h.Sum32() % uint32(n))
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A mirror holds the objects of one resource, kept by a list and a watch.
type mirror struct {
	mu     sync.RWMutex
	objs   map[string]*unstructured.Unstructured
	synced chan struct{}
}

// startMirror mirrors a resource until ctx ends, calling observe (if set)
// with every object listed or changed.
func startMirror(ctx context.Context, res dynamic.ResourceInterface, observe func(*unstructured.Unstructured)) *mirror {
	m := &mirror{objs: map[string]*unstructured.Unstructured{}, synced: make(chan struct{})}
	go func() {
		first := true
		for ctx.Err() == nil {
			l, err := res.List(ctx, metav1.ListOptions{})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			objs := make(map[string]*unstructured.Unstructured, len(l.Items))
			for i := range l.Items {
				objs[key(&l.Items[i])] = &l.Items[i]
			}
			m.mu.Lock()
			m.objs = objs
			m.mu.Unlock()
			if observe != nil {
				for i := range l.Items {
					observe(&l.Items[i])
				}
			}
			if first {
				close(m.synced)
				first = false
			}
			m.follow(ctx, res, l.GetResourceVersion(), observe)
		}
	}()
	return m
}

// follow watches from a resource version until the watch cannot go on (the
// version expired, or an error): the caller lists again.
func (m *mirror) follow(ctx context.Context, res dynamic.ResourceInterface, rv string, observe func(*unstructured.Unstructured)) {
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			return
		}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				rv = u.GetResourceVersion()
				m.mu.Lock()
				m.objs[key(u)] = u
				m.mu.Unlock()
				if observe != nil {
					observe(u)
				}
			case watch.Deleted:
				rv = u.GetResourceVersion()
				m.mu.Lock()
				delete(m.objs, key(u))
				m.mu.Unlock()
			case watch.Bookmark:
				rv = u.GetResourceVersion()
			case watch.Error:
				w.Stop()
				return
			}
		}
		w.Stop()
	}
}

func key(u *unstructured.Unstructured) string { return u.GetNamespace() + "/" + u.GetName() }

// list returns copies of the objects in a namespace (every namespace for
// ""), that keep holds for.
func (m *mirror) list(ns string, keep func(*unstructured.Unstructured) bool) *unstructured.UnstructuredList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := &unstructured.UnstructuredList{}
	for _, u := range m.objs {
		if (ns == "" || u.GetNamespace() == ns) && (keep == nil || keep(u)) {
			out.Items = append(out.Items, *u.DeepCopy())
		}
	}
	return out
}

func (m *mirror) get(ns, name string) *unstructured.Unstructured {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if u := m.objs[ns+"/"+name]; u != nil {
		return u.DeepCopy()
	}
	return nil
}

// cachedDynamic lists the mirrored resources from their mirrors, routes
// only of its shard; everything else, writes included, goes to the API
// server.
type cachedDynamic struct {
	dynamic.Interface
	mirrors map[schema.GroupVersionResource]*mirror
	shard   func(*unstructured.Unstructured) bool
}

func (c cachedDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := c.Interface.Resource(gvr)
	m, ok := c.mirrors[gvr]
	if !ok {
		return r
	}
	keep := c.shard
	if gvr.Resource == "referencegrants" {
		keep = nil
	}
	return cachedResource{NamespaceableResourceInterface: r, m: m, keep: keep}
}

type cachedResource struct {
	dynamic.NamespaceableResourceInterface
	m    *mirror
	keep func(*unstructured.Unstructured) bool
}

func (r cachedResource) Namespace(ns string) dynamic.ResourceInterface {
	return cachedNamespaced{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), m: r.m, ns: ns, keep: r.keep}
}

func (r cachedResource) List(_ context.Context, _ metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.m.list("", r.keep), nil
}

type cachedNamespaced struct {
	dynamic.ResourceInterface
	m    *mirror
	ns   string
	keep func(*unstructured.Unstructured) bool
}

func (r cachedNamespaced) List(_ context.Context, _ metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.m.list(r.ns, r.keep), nil
}

// cachedKube gets Services from their mirror.
type cachedKube struct {
	kubernetes.Interface
	svc *mirror
}

func (k cachedKube) CoreV1() corev1client.CoreV1Interface {
	return cachedCore{CoreV1Interface: k.Interface.CoreV1(), svc: k.svc}
}

type cachedCore struct {
	corev1client.CoreV1Interface
	svc *mirror
}

func (c cachedCore) Services(ns string) corev1client.ServiceInterface {
	return cachedServices{ServiceInterface: c.CoreV1Interface.Services(ns), ns: ns, svc: c.svc}
}

type cachedServices struct {
	corev1client.ServiceInterface
	ns  string
	svc *mirror
}

func (s cachedServices) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Service, error) {
	u := s.svc.get(s.ns, name)
	if u == nil {
		return nil, kerrors.NewNotFound(corev1.Resource("services"), name)
	}
	out := &corev1.Service{}
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

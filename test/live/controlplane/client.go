package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	// FieldManager is the server-side apply field manager of the harness
	// and the tests.
	FieldManager = "canary-route-live"

	errNewClient      = "cannot create a Kubernetes client"
	errFmtMapping     = "cannot find the resource of %s"
	errFmtReadObjects = "cannot read objects from %s"
	errFmtApply       = "cannot apply %s %s"
	mappingTimeout    = 30 * time.Second
)

// A Client reaches the control plane's API server with the admin's
// credentials, through unstructured objects: the kinds the tests use come
// from CRDs that appear while they run (XRDs, the function's Input).
type Client struct {
	Dynamic dynamic.Interface
	Kube    kubernetes.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewClient returns a Client for a rest.Config.
func NewClient(cfg *rest.Config) (*Client, error) {
	// Each API warning once (the legacy XRD's deprecation would otherwise
	// come with every read).
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, errNewClient)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, errNewClient)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, errNewClient)
	}
	return &Client{Dynamic: dyn, Kube: kube, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Resource returns the dynamic client of a kind, in a namespace for a
// namespaced kind. A kind that discovery does not know yet (a CRD created a
// moment ago) is looked up again until it appears or 30 seconds pass.
func (c *Client) Resource(ctx context.Context, gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	var m *meta.RESTMapping
	deadline := time.Now().Add(mappingTimeout)
	for {
		var err error
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			break
		}
		if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return nil, errors.Wrapf(err, errFmtMapping, gvk)
		}
		c.mapper.Reset()
		select {
		case <-ctx.Done():
			return nil, errors.Wrapf(ctx.Err(), errFmtMapping, gvk)
		case <-time.After(500 * time.Millisecond):
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(namespace), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// Apply applies an object with server-side apply, taking ownership of every
// field it sets.
func (c *Client) Apply(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, u.GroupVersionKind(), u.GetNamespace())
	if err != nil {
		return nil, err
	}
	out, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return out, errors.Wrapf(err, errFmtApply, u.GetKind(), objectName(u))
}

// DryRun applies an object without persisting it: the API server runs its
// admission (schema, CEL rules, defaults) and answers with what it would
// store.
func (c *Client) DryRun(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, u.GroupVersionKind(), u.GetNamespace())
	if err != nil {
		return nil, err
	}
	return r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
}

// Get returns an object.
func (c *Client) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, gvk, namespace)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, name, metav1.GetOptions{})
}

// List returns the objects of a kind in a namespace, or in all namespaces
// when namespace is empty.
func (c *Client) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, opts metav1.ListOptions) ([]unstructured.Unstructured, error) {
	r, err := c.Resource(ctx, gvk, namespace)
	if err != nil {
		return nil, err
	}
	l, err := r.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Delete deletes an object in the foreground, as kubectl delete
// --cascade=foreground does.
func (c *Client) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	r, err := c.Resource(ctx, gvk, namespace)
	if err != nil {
		return err
	}
	fg := metav1.DeletePropagationForeground
	return r.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
}

// ReadObjects reads every object of a multi-document YAML file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path) //nolint:gosec // Callers name manifests of the repository.
	if err != nil {
		return nil, errors.Wrapf(err, errFmtReadObjects, path)
	}
	out, err := DecodeObjects(b)
	return out, errors.Wrapf(err, errFmtReadObjects, path)
}

// DecodeObjects decodes every object of a multi-document YAML stream.
func DecodeObjects(b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// CRDGVK is the kind of CustomResourceDefinitions.
var CRDGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// installCRDs applies every CRD in CRDDirectoryPaths and waits until each
// is Established.
func (e *Environment) installCRDs(ctx context.Context) error {
	var names []string
	for _, dir := range e.CRDDirectoryPaths {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return errors.Wrapf(err, "cannot read %s", dir)
		}
		for _, f := range entries {
			if f.IsDir() || (!strings.HasSuffix(f.Name(), ".yaml") && !strings.HasSuffix(f.Name(), ".yml")) {
				continue
			}
			objs, err := ReadObjects(filepath.Join(dir, f.Name()))
			if err != nil {
				return err
			}
			for _, o := range objs {
				// Kustomizations and admission policies are left out: this
				// installs the APIs, nothing that guards their upgrades.
				if o.GroupVersionKind() != CRDGVK {
					continue
				}
				if _, err := e.client.Apply(ctx, o); err != nil {
					return err
				}
				names = append(names, o.GetName())
			}
		}
	}
	for _, n := range names {
		if err := Await(ctx, time.Minute, 200*time.Millisecond, "CRD "+n+" Established", func(ctx context.Context) (bool, string) {
			u, err := e.client.Get(ctx, CRDGVK, "", n)
			if err != nil {
				return false, err.Error()
			}
			return IsTrue(u, "Established"), DescribeConditions(u)
		}); err != nil {
			return err
		}
	}
	return nil
}

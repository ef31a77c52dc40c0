package main

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The table of `list`: one row per CanaryRoute, as the API machinery's table
// printer prints it (with a NAMESPACE column under -A).

// columnString is the type of every column.
const columnString = "string"

// listColumns are the table's columns.
var listColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: columnString, Format: "name", Description: "The CanaryRoute's name."},
	{Name: "Kind", Type: columnString, Description: "CanaryRoute (namespaced XR), CanaryRouteClaim (claim) or XCanaryRoute (cluster XR)."},
	{Name: "Phase", Type: columnString, Description: "Phase of the rollout."},
	{Name: "Step", Type: columnString, Description: "Current step of the steps (index/count)."},
	{Name: "Canary", Type: columnString, Description: "Percent of the traffic the canary gets."},
	{Name: "Revision", Type: columnString, Description: "The canary's revision the rollout is about."},
	{Name: "Stable", Type: columnString, Description: "The revision a release's primary serves."},
	{Name: "Reason", Type: columnString, Description: "The reason of the phase."},
	{Name: "Age", Type: columnString, Description: "Time since the CanaryRoute was created."},
}

// listTable is the table of items as of now. A claimed cluster XR is left
// out when its claim is among the items: the claim is its row, with the
// XR's status, where the function writes it.
func listTable(items []*unstructured.Unstructured, now time.Time) *metav1.Table {
	claimed, xrs := map[string]bool{}, map[string]*unstructured.Unstructured{}
	for _, o := range items {
		switch k, _ := kindOf(o.GetKind()); k.role {
		case roleClaim:
			claimed[str(o.Object, "spec", "resourceRef", "name")] = true
		case roleClusterXR:
			xrs[o.GetName()] = o
		case roleXR:
		}
	}
	t := &metav1.Table{ColumnDefinitions: listColumns}
	for _, o := range items {
		k, _ := kindOf(o.GetKind())
		if k.role == roleClusterXR && claimed[o.GetName()] {
			continue
		}
		status := object(o.Object, "status")
		if xr, ok := xrs[str(o.Object, "spec", "resourceRef", "name")]; ok && k.role == roleClaim {
			status = object(xr.Object, "status")
		}
		r := object(status, "rollout")
		step := "-"
		if i, ok := integer(r, "step"); ok {
			step = fmt.Sprintf("%d/%d", i, len(objects(o.Object, "spec", "traffic", "steps")))
		}
		canary := "-"
		if w, ok := number(r, "canaryWeight"); ok {
			canary = percent(w)
		}
		age := "<unknown>"
		if c := o.GetCreationTimestamp(); !c.IsZero() {
			age = duration.HumanDuration(now.Sub(c.Time))
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				o.GetName(), o.GetKind(), dash(str(r, "phase")), step, canary, dash(str(r, "revision")),
				dash(str(status, "release", "stable", "revision")), dash(str(r, "reason")), age,
			},
			Object: runtime.RawExtension{Object: o},
		})
	}
	return t
}

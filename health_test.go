package main

// The Argo CD health check of docs/argocd, run in the Lua interpreter Argo CD
// embeds (github.com/yuin/gopher-lua) the way Argo CD runs it
// (argoproj/argo-cd util/lua/lua.go: restricted libraries, the resource as
// the global obj, a table returned), on CanaryRoutes whose status the real
// function wrote across runs of xpSim, with Crossplane's own Synced and Ready
// conditions added as Crossplane writes them.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

const argoHealthScriptPath = "docs/argocd/canaryroute-health.lua"

// argoHealth is what Argo CD reads from the table the script returns.
type argoHealth struct {
	Status  string
	Message string
}

// argoCDHealthStatuses are the statuses Argo CD accepts from a script
// (util/lua isValidHealthStatusCode); any other becomes Unknown with
// "Lua returned an invalid health status".
var argoCDHealthStatuses = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

// argoLuaValue converts a resource decoded from JSON to a Lua value as Argo CD
// does (util/lua decodeValue, after layeh.com/gopher-json): objects are
// tables with string keys, arrays 1-based tables, numbers LNumber, bools,
// strings, and null nil. json.Number is a string there too.
func argoLuaValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(argoLuaValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), argoLuaValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}

// argoRunHealth runs a health script on an object as Argo CD's
// controller does: the object as the API server's JSON decodes into an
// Unstructured (integers int64), no standard library but package, base and
// table, one second at most, and the returned table read as a health
// status.
func argoRunHealth(t *testing.T, script string, obj map[string]any) argoHealth {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		// A status written by hand may not decode as an object's (a
		// metadata that is a string): the map as JSON decodes it.
		u.Object = map[string]any{}
		if err := json.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
	}

	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	// Argo CD also opens a safe subset of os, which the script does not use.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", argoLuaValue(l, u.Object))
	if err := l.DoString(script); err != nil {
		t.Fatalf("the health script fails: %v", err)
	}
	tbl, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health script returns a %s, want a table", l.Get(-1).Type())
	}
	var h argoHealth
	switch s := tbl.RawGetString("status").(type) {
	case lua.LString:
		h.Status = string(s)
	default:
		t.Fatalf("hs.status is a %s, want a string", s.Type())
	}
	switch m := tbl.RawGetString("message").(type) {
	case lua.LString:
		h.Message = string(m)
	case *lua.LNilType:
	default:
		t.Fatalf("hs.message is a %s, want a string or nil", m.Type())
	}
	if !slices.Contains(argoCDHealthStatuses, h.Status) {
		t.Errorf("hs.status %q is not one Argo CD knows: it would show Unknown", h.Status)
	}
	return h
}

func argoHealthScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(argoHealthScriptPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// argoPipelineStep is the step name the examples give the function.
const argoPipelineStep = "canary-route"

// argoObservedXR is the XR as Crossplane leaves it after the sim's last run:
// the status the function desired (kept as it was when the run was a
// Fatal), the function's conditions, and Crossplane's own Synced and Ready,
// each at the XR's generation (crossplane-runtime's
// ObservedGenerationPropagationManager). After a Fatal, Synced is
// ReconcileError with "cannot compose resources: pipeline step %q returned
// a fatal result: %s" (crossplane internal/controller/apiextensions/
// composite) and Ready stays as the last good run left it.
func argoObservedXR(t *testing.T, s *xpSim, generation int64) map[string]any {
	t.Helper()
	if len(s.runs) == 0 {
		t.Fatal("the sim has not run")
	}
	x := deepCopyMap(s.xr)
	x["metadata"].(map[string]any)["generation"] = generation
	status := map[string]any{}
	if s.status != nil {
		status = deepCopyMap(s.status)
	}
	cond := func(typ, st, reason, msg string) map[string]any {
		return map[string]any{
			"type": typ, "status": st, "reason": reason, "message": msg,
			"lastTransitionTime": "2026-12-02T09:00:00Z", "observedGeneration": generation,
		}
	}
	conds, _ := status["conditions"].([]any)
	last := s.runs[len(s.runs)-1]
	if last.fatal != "" {
		conds = append(conds, cond("Synced", "False", "ReconcileError",
			fmt.Sprintf("cannot compose resources: pipeline step %q returned a fatal result: %s", argoPipelineStep, last.fatal)))
	} else {
		conds = append(conds, cond("Synced", "True", "ReconcileSuccess", ""))
	}
	for i := len(s.runs) - 1; i >= 0; i-- {
		r := s.runs[i]
		if r.fatal != "" {
			continue
		}
		var unready []string
		for name, d := range r.rsp.GetDesired().GetResources() {
			if d.GetReady() != fnv1.Ready_READY_TRUE {
				unready = append(unready, name)
			}
		}
		slices.Sort(unready)
		if len(unready) > 0 {
			conds = append(conds, cond("Ready", "False", "Creating", "Unready resources: "+strings.Join(unready, ", ")))
		} else {
			conds = append(conds, cond("Ready", "True", "Available", ""))
		}
		break
	}
	status["conditions"] = conds
	x["status"] = status
	return x
}

// argoUntil runs the sim until status.rollout satisfies ok, and fails the
// test if it never does within n runs.
func argoUntil(t *testing.T, s *xpSim, n int, what string, ok func(map[string]any) bool) {
	t.Helper()
	for range n {
		if r := s.run(0); r.fatal == "" && r.out != nil && ok(r.out) {
			return
		}
	}
	t.Fatalf("the rollout never reached %s in %d runs:\n%s", what, n, s.describe())
}

func argoPhaseIs(phase string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["phase"] == phase }
}

func TestArgoCDHealth(t *testing.T) {
	script := argoHealthScript(t)
	// fromRollout stands for status.rollout.message as the function wrote it.
	const fromRollout = "<status.rollout.message>"
	cases := map[string]struct {
		reason string
		// xr is the CanaryRoute as Argo CD reads it from the API server.
		xr func(t *testing.T) map[string]any
		// phase is status.rollout.phase, "" for none, and rolloutReason
		// status.rollout.reason when not "": the case reached them.
		phase, rolloutReason string
		want                 argoHealth
	}{
		"NoStatus": {
			reason: "A CanaryRoute just created, before Crossplane or the function wrote anything, is Progressing.",
			xr: func(t *testing.T) map[string]any {
				return toStruct(t, flaggerXR).AsMap()
			},
			want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"},
		},
		"NoRolloutYet": {
			reason: "A status without status.rollout (Crossplane's conditions only, the function has not reported) is Progressing.",
			xr: func(t *testing.T) map[string]any {
				x := toStruct(t, flaggerXR).AsMap()
				x["metadata"].(map[string]any)["generation"] = 1
				x["status"] = map[string]any{"conditions": []any{
					map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "observedGeneration": 1},
					map[string]any{"type": "Ready", "status": "False", "reason": "Creating", "observedGeneration": 1},
				}}
				return x
			},
			want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"},
		},
		"ManualStable": {
			reason: "Manual mode is phase Stable: Healthy. The function writes no status.rollout.message in manual mode, so the message names the phase and the weight.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, flaggerXR, allowMonitoring)
				argoUntil(t, s, 3, "Stable", argoPhaseIs("Stable"))
				return argoObservedXR(t, s, 1)
			},
			phase:         "Stable",
			rolloutReason: "Manual",
			want:          argoHealth{Status: "Healthy", Message: "Stable: canary 20%"},
		},
		"ManualPaused": {
			reason: "paused: true in manual mode is phase Paused: Suspended.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, flaggerXR, allowMonitoring)
				s.run(0)
				s.setSpec("traffic.paused", true)
				argoUntil(t, s, 3, "Paused", argoPhaseIs("Paused"))
				return argoObservedXR(t, s, 2)
			},
			phase:         "Paused",
			rolloutReason: "Paused",
			want:          argoHealth{Status: "Suspended", Message: fromRollout},
		},
		"Progressing": {
			reason: "A progressive rollout holding a step for its pause is Progressing.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 6, "a step held by its pause", func(r map[string]any) bool {
					msg, _ := r["message"].(string)
					return r["phase"] == "Progressing" && strings.Contains(msg, "pause until")
				})
				return argoObservedXR(t, s, 1)
			},
			phase: "Progressing",
			want:  argoHealth{Status: "Progressing", Message: fromRollout},
		},
		"Paused": {
			reason: "A progressive rollout paused with traffic.paused is Suspended, as Argo Rollouts' Paused is.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 3, "Progressing", argoPhaseIs("Progressing"))
				s.setSpec("traffic.paused", true)
				argoUntil(t, s, 3, "Paused", argoPhaseIs("Paused"))
				return argoObservedXR(t, s, 2)
			},
			phase:         "Paused",
			rolloutReason: "Paused",
			want:          argoHealth{Status: "Suspended", Message: fromRollout},
		},
		"Succeeded": {
			reason: "A rollout past its last step is Succeeded: Healthy.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 50, pause: 1m}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 12, "Succeeded", argoPhaseIs("Succeeded"))
				return argoObservedXR(t, s, 1)
			},
			phase:         "Succeeded",
			rolloutReason: "RolloutSucceeded",
			want:          argoHealth{Status: "Healthy", Message: fromRollout},
		},
		"Aborted": {
			reason: "traffic.abort sends everything to the primary, phase Aborted: Degraded.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 3, "Progressing", argoPhaseIs("Progressing"))
				s.setSpec("traffic.abort", true)
				argoUntil(t, s, 3, "Aborted", argoPhaseIs("Aborted"))
				return argoObservedXR(t, s, 2)
			},
			phase:         "Aborted",
			rolloutReason: "Aborted",
			want:          argoHealth{Status: "Degraded", Message: fromRollout},
		},
		"FailedGate": {
			reason: "A gate False for longer than its failAfter fails the rollout: Degraded.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10}, {weight: 100}]`,
					`    gates: [{apiVersion: apps/v1, kind: Deployment, name: podinfo-v2, conditionType: Available, failAfter: 1m}]`), emptyInput)
				// The canary Deployment, unavailable since before the rollout.
				d := map[string]any{
					"apiVersion": "apps/v1", "kind": "Deployment",
					"metadata": map[string]any{"name": "podinfo-v2", "namespace": "test"},
					"status": map[string]any{"conditions": []any{map[string]any{
						"type": "Available", "status": "False",
						"reason": "MinimumReplicasUnavailable", "lastTransitionTime": "2026-12-02T09:00:00Z",
					}}},
				}
				s.objects[objID(d)] = d
				argoUntil(t, s, 12, "Failed", argoPhaseIs("Failed"))
				return argoObservedXR(t, s, 1)
			},
			phase:         "Failed",
			rolloutReason: "GateFailed",
			want:          argoHealth{Status: "Degraded", Message: fromRollout},
		},
		"FailedRefusedCanary": {
			reason: "A canary in a namespace the Input does not allow is held at 0%, phase Failed: Degraded.",
			xr: func(t *testing.T) map[string]any {
				xr := flaggerWith("backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}",
					"backendRef: {name: canary-proxy, namespace: monitoring, port: 3456}\n    revision: v2")
				xr = strings.Replace(xr, "weight: 20", "steps: [{weight: 10, pause: 1h}, {weight: 100}]", 1)
				s := newSim(t, xr, allowTest)
				argoUntil(t, s, 3, "Failed", argoPhaseIs("Failed"))
				return argoObservedXR(t, s, 1)
			},
			phase:         "Failed",
			rolloutReason: "NotAllowedByPolicy",
			want:          argoHealth{Status: "Degraded", Message: fromRollout},
		},
		"AwaitingApproval": {
			reason: "An approval step waiting for traffic.approval (phase Progressing, reason AwaitingApproval) is Suspended: it waits for a person.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, approval: true}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 6, "awaitingApproval", func(r map[string]any) bool { return r["awaitingApproval"] == true })
				return argoObservedXR(t, s, 1)
			},
			phase:         "Progressing",
			rolloutReason: "AwaitingApproval",
			want:          argoHealth{Status: "Suspended", Message: fromRollout},
		},
		"Approved": {
			reason: "Once approved, the rollout moves on: no longer Suspended.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, approval: true}, {weight: 50, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 6, "awaitingApproval", func(r map[string]any) bool { return r["awaitingApproval"] == true })
				s.setSpec("traffic.approval", map[string]any{"revision": "v2", "step": float64(0)})
				argoUntil(t, s, 6, "step 1", func(r map[string]any) bool { return r["step"] == float64(1) })
				return argoObservedXR(t, s, 2)
			},
			phase:         "Progressing",
			rolloutReason: "RolloutApproved",
			want:          argoHealth{Status: "Progressing", Message: fromRollout},
		},
		"FatalAfterProgressing": {
			reason: "A Fatal (bad spec) leaves status.rollout as the last good run wrote it (Progressing) and Synced False: Degraded with Crossplane's message.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 3, "Progressing", argoPhaseIs("Progressing"))
				s.setSpec("hostnames", []any{"NOT A HOST"})
				if r := s.run(0); r.fatal == "" {
					t.Fatalf("a host name the Gateway API refuses must be a Fatal:\n%s", s.describe())
				}
				return argoObservedXR(t, s, 2)
			},
			phase: "Progressing",
			want:  argoHealth{Status: "Degraded", Message: `cannot compose resources: pipeline step "canary-route" returned a fatal result: <fatal>`},
		},
		"FatalOnFirstRun": {
			reason: "A CanaryRoute that is a Fatal from its first run has no status.rollout, and Synced False: Degraded, not waiting.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				s.setSpec("hostnames", []any{"NOT A HOST"})
				if r := s.run(0); r.fatal == "" {
					t.Fatalf("a host name the Gateway API refuses must be a Fatal:\n%s", s.describe())
				}
				return argoObservedXR(t, s, 1)
			},
			want: argoHealth{Status: "Degraded", Message: `cannot compose resources: pipeline step "canary-route" returned a fatal result: <fatal>`},
		},
		"SpecNotYetObserved": {
			reason: "A Succeeded status from before the latest spec edit (Synced's observedGeneration behind metadata.generation) is Progressing until Crossplane reconciles the edit, never Healthy on stale status.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 50, pause: 1m}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 12, "Succeeded", argoPhaseIs("Succeeded"))
				x := argoObservedXR(t, s, 1)
				x["spec"].(map[string]any)["canary"].(map[string]any)["revision"] = "v3"
				x["metadata"].(map[string]any)["generation"] = 2
				return x
			},
			phase: "Succeeded",
			want:  argoHealth{Status: "Progressing", Message: "Waiting for Crossplane to reconcile generation 2"},
		},
		"ReconcilePaused": {
			reason: "Crossplane's pause annotation (Synced False, reason ReconcilePaused) is Suspended, not Degraded.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, steppedXR(`[{weight: 10, pause: 1h}, {weight: 100}]`, ""), emptyInput)
				argoUntil(t, s, 3, "Progressing", argoPhaseIs("Progressing"))
				x := argoObservedXR(t, s, 1)
				x["metadata"].(map[string]any)["annotations"] = map[string]any{"crossplane.io/paused": "true"}
				for _, c := range x["status"].(map[string]any)["conditions"].([]any) {
					if c := c.(map[string]any); c["type"] == "Synced" {
						c["status"], c["reason"], c["message"] = "False", "ReconcilePaused", "Reconciliation (including deletion) is paused via the pause annotation"
					}
				}
				return x
			},
			phase: "Progressing",
			want:  argoHealth{Status: "Suspended", Message: "Reconciliation (including deletion) is paused via the pause annotation"},
		},
		"NoRolloutMessage": {
			reason: "Without status.rollout.message the message names the phase and the canary weight.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, flaggerXR, allowMonitoring)
				argoUntil(t, s, 3, "Stable", argoPhaseIs("Stable"))
				x := argoObservedXR(t, s, 1)
				delete(x["status"].(map[string]any)["rollout"].(map[string]any), "message")
				return x
			},
			phase: "Stable",
			want:  argoHealth{Status: "Healthy", Message: "Stable: canary 20%"},
		},
		"UnknownPhase": {
			reason: "A phase this check does not know (a newer function) is Unknown, never guessed.",
			xr: func(t *testing.T) map[string]any {
				s := newSim(t, flaggerXR, allowMonitoring)
				argoUntil(t, s, 3, "Stable", argoPhaseIs("Stable"))
				x := argoObservedXR(t, s, 1)
				x["status"].(map[string]any)["rollout"].(map[string]any)["phase"] = "Promoting"
				return x
			},
			phase: "Promoting",
			want:  argoHealth{Status: "Unknown", Message: "Unknown rollout phase Promoting"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := tc.xr(t)
			status, _ := xr["status"].(map[string]any)
			rollout, _ := status["rollout"].(map[string]any)
			phase, _ := rollout["phase"].(string)
			if phase != tc.phase {
				t.Fatalf("%s\nstatus.rollout.phase is %q, want %q: the case does not test what it says", tc.reason, phase, tc.phase)
			}
			if r, _ := rollout["reason"].(string); tc.rolloutReason != "" && r != tc.rolloutReason {
				t.Fatalf("%s\nstatus.rollout.reason is %q, want %q: the case does not test what it says", tc.reason, r, tc.rolloutReason)
			}
			want := tc.want
			if want.Message == fromRollout {
				msg, _ := rollout["message"].(string)
				if msg == "" {
					t.Fatalf("%s\nthe function wrote no status.rollout.message", tc.reason)
				}
				want.Message = msg
			}
			want.Message = strings.Replace(want.Message, "<fatal>", argoFatalMessage(xr), 1)
			got := argoRunHealth(t, script, xr)
			t.Logf("phase %q reason %v: %s: %s", phase, rollout["reason"], got.Status, got.Message)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\nstatus.rollout: %v\n-want, +got:\n%s", tc.reason, rollout, diff)
			}
		})
	}
}

// argoFatalMessage is the function's Fatal message that Crossplane quoted in
// the XR's Synced condition, or "" when Synced is not False.
func argoFatalMessage(xr map[string]any) string {
	status, _ := xr["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if c, _ := c.(map[string]any); c["type"] == "Synced" && c["status"] == "False" {
			msg, _ := c["message"].(string)
			_, after, _ := strings.Cut(msg, "returned a fatal result: ")
			return after
		}
	}
	return ""
}

// TestArgoCDHealthForgedStatus: a status written by hand (or by another
// function of the pipeline) may hold values of any type. The check must
// answer a health for each, never raise a Lua error (Argo CD would show the
// error instead of a health) nor return a message that is not a string
// (Argo CD decodes it as one).
func TestArgoCDHealthForgedStatus(t *testing.T) {
	script := argoHealthScript(t)
	synced := map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"}
	withRollout := func(r any) map[string]any { return map[string]any{"conditions": []any{synced}, "rollout": r} }
	cases := map[string]struct {
		reason string
		status any
		meta   any // metadata, when not the XR's own
		want   argoHealth
	}{
		"StatusAString":        {reason: "A status that is no object is no report yet.", status: "oops", want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"}},
		"StatusAList":          {reason: "Nor is a list.", status: []any{"a"}, want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"}},
		"ConditionsAString":    {reason: "Conditions that are no list are none.", status: map[string]any{"conditions": "Synced"}, want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"}},
		"ConditionAString":     {reason: "A condition that is no object is skipped.", status: map[string]any{"conditions": []any{"Synced", nil, synced}, "rollout": map[string]any{"phase": "Stable"}}, want: argoHealth{Status: "Healthy", Message: "Stable"}},
		"SyncedMessageANumber": {reason: "A Synced False says Degraded, without a message that is no string.", status: map[string]any{"conditions": []any{map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": 42}}}, want: argoHealth{Status: "Degraded"}},
		"ObservedGenerationText": {
			reason: "An observedGeneration that is no number says nothing of the generation.",
			status: map[string]any{"conditions": []any{map[string]any{"type": "Synced", "status": "True", "observedGeneration": "zero"}}, "rollout": map[string]any{"phase": "Stable"}},
			want:   argoHealth{Status: "Healthy", Message: "Stable"},
		},
		"MetadataAString":    {reason: "A metadata that is no object has no generation.", meta: "x", status: withRollout(map[string]any{"phase": "Stable"}), want: argoHealth{Status: "Healthy", Message: "Stable"}},
		"RolloutAList":       {reason: "A rollout that is no object is no report yet.", status: withRollout([]any{map[string]any{"phase": "Stable"}}), want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"}},
		"RolloutAString":     {reason: "Nor is a string.", status: withRollout("Stable"), want: argoHealth{Status: "Progressing", Message: "Waiting for the function to report"}},
		"PhaseANumber":       {reason: "A phase that is no string is unknown.", status: withRollout(map[string]any{"phase": 3}), want: argoHealth{Status: "Unknown", Message: "Unknown rollout phase of type number"}},
		"PhaseAnObject":      {reason: "So is one that is an object.", status: withRollout(map[string]any{"phase": map[string]any{"x": 1}}), want: argoHealth{Status: "Unknown", Message: "Unknown rollout phase of type table"}},
		"MessageAnObject":    {reason: "A message that is no string is replaced by the phase.", status: withRollout(map[string]any{"phase": "Failed", "message": map[string]any{"a": 1}}), want: argoHealth{Status: "Degraded", Message: "Failed"}},
		"WeightAnObject":     {reason: "A canary weight that is no number is left out.", status: withRollout(map[string]any{"phase": "Stable", "canaryWeight": map[string]any{"a": 1}}), want: argoHealth{Status: "Healthy", Message: "Stable"}},
		"ApprovalAString":    {reason: "awaitingApproval must be true, not \"true\".", status: withRollout(map[string]any{"phase": "Progressing", "awaitingApproval": "true"}), want: argoHealth{Status: "Progressing", Message: "Progressing"}},
		"ComposedFalseClaim": {reason: "A claim carries the function's Composed condition, not its XR's Synced: Composed False is a Fatal, Degraded whatever the phase.", status: map[string]any{"conditions": []any{synced, map[string]any{"type": "Composed", "status": "False", "reason": "Refused", "message": "invalid CanaryRoute: spec.port: ..."}}, "rollout": map[string]any{"phase": "Stable"}}, want: argoHealth{Status: "Degraded", Message: "invalid CanaryRoute: spec.port: ..."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := map[string]any{
				"apiVersion": "platform.example.org/v1alpha1", "kind": "CanaryRoute",
				"metadata": map[string]any{"name": "podinfo", "namespace": "test", "generation": 1},
				"status":   tc.status,
			}
			if tc.meta != nil {
				obj["metadata"] = tc.meta
			}
			if diff := cmp.Diff(tc.want, argoRunHealth(t, script, obj)); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestArgoCDHealthReadme: the argocd-cm snippet of docs/argocd/README.md
// embeds the script as it is in docs/argocd, under the key of each kind the
// project's XRDs define.
func TestArgoCDHealthReadme(t *testing.T) {
	script := argoHealthScript(t)
	b, err := os.ReadFile("docs/argocd/README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	var cm map[string]any
	for _, blk := range blocks {
		if strings.Contains(blk[1], "kind: ConfigMap") && strings.Contains(blk[1], "resource.customizations.health.") {
			if err := yaml.Unmarshal([]byte(blk[1]), &cm); err != nil {
				t.Fatalf("the argocd-cm snippet does not parse: %v", err)
			}
			break
		}
	}
	if cm == nil {
		t.Fatal("docs/argocd/README.md has no argocd-cm snippet")
	}
	data, _ := cm["data"].(map[string]any)
	for _, kind := range []string{"CanaryRoute", "XCanaryRoute", "CanaryRouteClaim"} {
		key := "resource.customizations.health.platform.example.org_" + kind
		got, _ := data[key].(string)
		if diff := cmp.Diff(script, got); diff != "" {
			t.Errorf("argocd-cm %s is not %s: -file, +README:\n%s", key, argoHealthScriptPath, diff)
		}
	}
}

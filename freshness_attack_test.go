package main

// Attacks on the fresh-state contract ("Fresh state: a rollout never moves
// back", ../shared/API.md) at its seams with the older contracts: the
// release loop's order across objects, the takeover rule, the sequence as
// the XRD bounds it.

import (
	"testing"
	"time"
)

// laggingPromotion drives a release of v1 then v2 (one process with its
// memory, caches that do not lag) until the cluster's primary Service
// selects v2 while the route sends every request to the canary; it returns
// the sim and the composed objects as the cluster held them just before
// the primary Service moved (primary at v1, route at 100% canary): what a
// cache that lags one apply still holds.
func laggingPromotion(t *testing.T) (*laggingSim, cacheView) {
	t.Helper()
	s := newLaggingSim(t, releaseXR("v1"), 0, 0, true)
	for range 3 {
		if w := s.reconcileLagging(); len(w) > 0 {
			t.Fatalf("setup: %v", w)
		}
		s.now = s.now.Add(5 * time.Second)
	}
	s.edit("canary.revision", "v2")
	for range 60 {
		n := len(s.objVersions)
		if w := s.reconcileLagging(); len(w) > 0 {
			t.Fatalf("setup: %v", w)
		}
		s.now = s.now.Add(5 * time.Second)
		before, after := s.objVersions[n-1], s.objVersions[n]
		if selectsIn(before, "service-primary") == "v1" && selectsIn(after, "service-primary") == "v2" {
			if w := canaryWeightOf(before.objects[before.keys["route-httproute"]]); w != 100 {
				t.Fatalf("setup: the primary Service moved while the route gave the canary %d%%", w)
			}
			return s, before
		}
	}
	t.Fatalf("setup: the promotion never moved the primary Service:\n%s", describeHistory(s.history))
	return nil, cacheView{}
}

// selectsIn is the revision a Service of a cache view selects.
func selectsIn(v cacheView, key string) any {
	o := v.objects[v.keys[key]]
	spec, _ := o["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	return sel["version"]
}

// TestAttackLeavingPromotionUnderLaggingServiceCache: a promotion moved the
// primary Service to v2 (the function composed it, the cluster holds it);
// the next reconcile reads the newest spec and status, but its cache of
// composed objects lags one apply (the primary Service still selects v1,
// the route sends every request to the canary). Whatever leaves the
// promotion (an abort, a new revision, the route found not accepted, a
// pause) must not give the primary Service requests in the same answer
// that moves its selector back: without the lag the function unwinds
// first (every request stays on the canary while the primary moves back).
func TestAttackLeavingPromotionUnderLaggingServiceCache(t *testing.T) {
	for name, edit := range map[string]func(s *laggingSim){
		"abort":        func(s *laggingSim) { s.edit("traffic.abort", true) },
		"new revision": func(s *laggingSim) { s.edit("canary.revision", "v3") },
		"paused":       func(s *laggingSim) { s.edit("traffic.paused", true) },
		"route found not accepted": func(s *laggingSim) {
			s.gateway = func(time.Time) (string, string) { return "False", "Pending" }
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, lagged := laggingPromotion(t)
			edit(s)
			// Control: the same read on caches that do not lag leaves the
			// primary Service where the function composed it, or moves it
			// while the route sends it nothing.
			ctl, _ := laggingPromotion(t)
			edit(ctl)
			crc, _, _ := ctl.answer(read{xr: ctl.xrVersions[len(ctl.xrVersions)-1], objects: ctl.objVersions[len(ctl.objVersions)-1], at: ctl.now})
			if p := desiredSelector(crc.rsp, "service-primary"); p != "v2" && primaryWeightOf(crc.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()) > 0 {
				t.Fatalf("setup: control without lag moved the primary Service to %v under traffic", p)
			}
			r := read{xr: s.xrVersions[len(s.xrVersions)-1], objects: lagged, at: s.now}
			rc, _, wrong := s.answer(r)
			if len(wrong) > 0 {
				t.Fatalf("%v", wrong)
			}
			route := rc.rsp.GetDesired().GetResources()["route-httproute"].GetResource().AsMap()
			primary := desiredSelector(rc.rsp, "service-primary")
			if primary != "v2" && primaryWeightOf(route) > 0 {
				t.Errorf("Attack: %s during a promotion whose primary Service the function moved to v2, read with a cache of Services one apply behind: the answer moves the primary Service v2 -> %v and gives it %d%% in the same apply (the route's move and the selector's land together: requests reach a Service whose selector changes); the newest decision composed it at v2, which an observation that lags is no evidence against. Rollout answered: %v",
					name, primary, primaryWeightOf(route), rolloutOf(rc.rsp))
			}
			if (name == "paused" || name == "route found not accepted") && primary != "v2" {
				t.Errorf("Attack: %s during a promotion whose primary Service the function moved to v2 (cache of Services one apply behind): paused means nothing moves, and once the primary Service has moved it stays even if the route is then found stale (docs/rollout.md, The phases); the answer moves the primary Service v2 -> %v", name, primary)
			}
		})
	}
}

package controlplane

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Faults on purpose: a live test may stop Crossplane core or the gateway
// and start it again, as a rolling update or a crash of its pod would
// (KillFunction and RestartFunction do the same for the function). Each
// stop is SIGTERM, then SIGKILL after a grace period (10 s), as the
// kubelet stops a container; each start runs the same binary with the same
// environment, flags and ports, its output appended to the same log, and
// waits until it is ready as Start waits for it. Other tests that share
// the Environment see the outage: a test that stops a process runs alone.

const (
	errFmtNotRunning = "%s was not started: nothing to restart"
	errFmtRestart    = "cannot restart %s"
)

// A restartable is a process that a test may stop and start again: the one
// running now, and how to tell that a new one is ready.
type restartable struct {
	proc  *process
	ready func(ctx context.Context, p *process) error
}

// StopCrossplane stops Crossplane core: nothing is reconciled, no function
// is called, until RestartCrossplane. The API server, the function and the
// gateway keep running.
func (e *Environment) StopCrossplane() { e.stopProcess(&e.crossplane) }

// RestartCrossplane stops Crossplane core if it runs, starts it again with
// the same flags and ports, and returns once its readiness probe answers,
// as Start does. Its controllers then list every object again and
// reconcile every composite.
func (e *Environment) RestartCrossplane(ctx context.Context) error {
	return e.restartProcess(ctx, &e.crossplane, "Crossplane")
}

// StopGateway stops the gateway (Traefik): no request is served, and no
// route's status is written, until RestartGateway. The Gateway's and the
// routes' status stay as it last wrote them.
func (e *Environment) StopGateway() { e.stopProcess(&e.gateway) }

// RestartGateway stops the gateway if it runs, starts it again on the same
// entry point and metrics addresses, and returns once it serves: its
// metrics answer, its entry point answers HTTP, it applied a configuration
// (one with routers, when the Gateway has routes attached) and reports the
// Gateway Programmed for its generation. A route may take one more
// configuration (Traefik applies one at most every 500 ms) to be served: a
// test awaits its own requests' answers.
func (e *Environment) RestartGateway(ctx context.Context) error {
	return e.restartProcess(ctx, &e.gateway, "the gateway")
}

// stopProcess stops a restartable process (SIGTERM, then SIGKILL after
// stopGrace), and waits until it has exited.
func (e *Environment) stopProcess(r *restartable) {
	e.mu.Lock()
	p := r.proc
	e.mu.Unlock()
	p.stop()
}

// restartProcess stops a restartable process if it runs, starts it again
// in its place in Stop's order, and waits until it is ready.
func (e *Environment) restartProcess(ctx context.Context, r *restartable, what string) error {
	e.mu.Lock()
	old := r.proc
	e.mu.Unlock()
	if old == nil {
		return errors.Errorf(errFmtNotRunning, what)
	}
	old.stop()
	p, err := old.restart()
	if err != nil {
		return errors.Wrapf(err, errFmtRestart, old.name)
	}
	e.mu.Lock()
	r.proc = p
	for i := range e.procs {
		if e.procs[i] == old {
			e.procs[i] = p
		}
	}
	e.mu.Unlock()
	return r.ready(ctx, p)
}

// keep records a process that a test may restart, with its readiness, and
// adds it to those Stop stops.
func (e *Environment) keep(r *restartable, p *process, ready func(context.Context, *process) error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.proc, r.ready = p, ready
	e.procs = append(e.procs, p)
}

// gatewayServes waits until a gateway process serves: its metrics answer,
// its entry point answers HTTP (Traefik answers 404 for a host it has no
// route for), its log says it applied a configuration (with routers, if
// the Gateway has routes attached: the gateway provider's, not only the
// internal provider's), and the Gateway is Programmed for its generation.
func (e *Environment) gatewayServes(ctx context.Context, p *process, metrics, entry string) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	if err := p.waitReady(ctx, func(ctx context.Context) error {
		if err := getOK(ctx, hc, "http://"+metrics+"/metrics"); err != nil {
			return err
		}
		return answers(ctx, hc, "http://"+entry+"/")
	}); err != nil {
		return err
	}
	what := fmt.Sprintf("Gateway %s/%s Programmed by Traefik, which applied a configuration (log: %s)", GatewayNamespace, GatewayName, p.log)
	return Await(ctx, time.Minute, 200*time.Millisecond, what, func(ctx context.Context) (bool, string) {
		if err := p.exited(); err != nil {
			return false, err.Error()
		}
		u, err := e.client.Get(ctx, gvkGateway, GatewayNamespace, GatewayName)
		if err != nil {
			return false, err.Error()
		}
		c := Conditions(u)["Programmed"]
		programmed := c.Status == "True" && c.ObservedGeneration == u.GetGeneration()
		attached := int64(0)
		listeners, _, _ := unstructured.NestedSlice(u.Object, "status", "listeners")
		for _, l := range listeners {
			if m, ok := l.(map[string]any); ok {
				n, _ := m["attachedRoutes"].(int64)
				attached += n
			}
		}
		routers, applied, err := appliedRouters(p)
		if err != nil {
			return false, err.Error()
		}
		configured := applied && (attached == 0 || routers > 0)
		return programmed && configured, fmt.Sprintf("%s; %d routes attached; applied a configuration %t, with %d routers", DescribeConditions(u), attached, applied, routers)
	})
}

// appliedRouters reads a gateway process's log: whether it applied a
// configuration, and how many routers the last one held.
func appliedRouters(p *process) (int, bool, error) {
	out, err := p.output()
	if err != nil {
		return 0, false, err
	}
	routers, applied := 0, false
	s := bufio.NewScanner(strings.NewReader(out))
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		var line struct {
			Message string `json:"message"`
			Routers int    `json:"routers"`
		}
		if json.Unmarshal(s.Bytes(), &line) != nil || line.Message != "configuration applied" {
			continue
		}
		routers, applied = line.Routers, true
	}
	return routers, applied, nil
}

// answers checks that a server answers an HTTP request, whatever its
// status.
func answers(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	rsp, err := hc.Do(req)
	if err != nil {
		return err
	}
	return rsp.Body.Close()
}

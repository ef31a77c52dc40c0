package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errFmtStart     = "cannot start %s"
	errFmtExited    = "%s exited: %v (log: %s)"
	errFmtNotReady  = "%s was not ready within %s: %v (log: %s)"
	errFmtCreateLog = "cannot create the log of %s"
	stopGrace       = 10 * time.Second
)

// A process is one binary of the control plane, with its output in a log
// file that outlives it.
type process struct {
	name string
	log  string
	cmd  *exec.Cmd
	// logFrom is where this run's output starts in the log, which a
	// restarted process shares with its earlier runs.
	logFrom int64
	// env, bin and args start it again (restart).
	env  []string
	bin  string
	args []string

	done chan struct{}
	mu   sync.Mutex
	err  error
}

// startProcess starts a binary with its output in <logs>/<name>.log
// (appended, so a restarted process keeps one log).
func startProcess(name, logs string, env []string, bin string, args ...string) (*process, error) {
	path := filepath.Join(logs, name+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600) //nolint:gosec // The harness names its own logs.
	if err != nil {
		return nil, errors.Wrapf(err, errFmtCreateLog, name)
	}
	from, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()
		return nil, errors.Wrapf(err, errFmtCreateLog, name)
	}
	_, _ = fmt.Fprintf(f, "--- %s %s %v\n", time.Now().Format(time.RFC3339), bin, args)
	cmd := exec.Command(bin, args...) //nolint:gosec // The harness runs the binaries it was given.
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so that a ^C in the terminal reaches the
		// harness, which stops everything in order; and killed with the
		// harness, so that a test binary that dies leaves nothing running.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, errors.Wrapf(err, errFmtStart, name)
	}
	p := &process{name: name, log: path, cmd: cmd, logFrom: from, env: env, bin: bin, args: args, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error if the process has exited.
func (p *process) exited() error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return errors.Errorf(errFmtExited, p.name, p.err, p.log)
	default:
		return nil
	}
}

// waitReady polls ready until it returns nil, the process exits or the
// timeout passes, and says what it last saw.
func (p *process) waitReady(ctx context.Context, ready func(context.Context) error) error {
	const timeout = startTimeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if err := p.exited(); err != nil {
			return err
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Errorf(errFmtNotReady, p.name, timeout, last, p.log)
		case <-p.done:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM, then SIGKILL after a grace period, and waits.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill stops the process at once with SIGKILL, like a crash or the OOM
// killer: nothing of it runs after the signal.
func (p *process) kill() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// restart starts the process again with the same binary, environment and
// flags, its output appended to the same log. The process must have
// exited.
func (p *process) restart() (*process, error) {
	return startProcess(p.name, filepath.Dir(p.log), p.env, p.bin, p.args...)
}

// output is what this run of the process wrote to its log so far.
func (p *process) output() (string, error) {
	f, err := os.Open(p.log)
	if err != nil {
		return "", err
	}
	defer f.Close() //nolint:errcheck // Read-only.
	if _, err := f.Seek(p.logFrom, io.SeekStart); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	return string(b), err
}

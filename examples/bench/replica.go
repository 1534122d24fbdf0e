package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// A replica is a separate OS process running one system's workers (the
// bench binary run again with the hidden "replica" subcommand), so that
// its CPU can be read from /proc and replicas compete as separate
// deployments do. It talks to the bench over its standard input and
// output, one line each way:
//
//   - it writes "ready" once its pool and client are built;
//   - "go" starts its workers (so that start-up is outside the timing);
//   - "snap" answers one JSON line of replicaStats;
//   - SIGTERM, SIGINT or the end of its input stop the workers
//     gracefully, and the process exits.

// Replica kinds.
const (
	kindDeskkit      = "deskkit"       // channel.ChannelRegistry.Run
	kindRiverPost    = "river"         // River, each job the same POST as deskkit's
	kindRiverTrivial = "river-trivial" // River, each job doing nothing
)

// replicaStats is what a replica counted since it started.
type replicaStats struct {
	// Statements is every statement its database clients sent (see
	// README.md for how each system's are counted).
	Statements int64 `json:"statements"`
	// Done is the jobs its River workers finished (0 for deskkit, whose
	// deliveries are counted at the receiver and in the database).
	Done int64 `json:"done"`
}

// replicaOptions are the replica subcommand's flags, which the bench
// passes on.
type replicaOptions struct {
	kind        string
	databaseURL string
	workers     int
	pool        int
	timeout     time.Duration
	// fetchCooldown is River's FetchCooldown.
	fetchCooldown time.Duration
	// channelInFlight and tenantConcurrency are deskkit's
	// MaxInFlightPerChannel and TenantConcurrency (0: channel's defaults).
	channelInFlight, tenantConcurrency int
	// rateLimit is deskkit's channel.Config.RateLimit (0: none).
	rateLimit float64
}

// args returns the command line that starts a replica with o.
func (o replicaOptions) args() []string {
	return []string{"replica",
		"-kind", o.kind,
		"-database-url", o.databaseURL,
		"-workers", fmt.Sprint(o.workers),
		"-pool", fmt.Sprint(o.pool),
		"-timeout", o.timeout.String(),
		"-river-fetch-cooldown", o.fetchCooldown.String(),
		"-channel-in-flight", fmt.Sprint(o.channelInFlight),
		"-tenant-concurrency", fmt.Sprint(o.tenantConcurrency),
		"-channel-rate-limit", fmt.Sprint(o.rateLimit),
	}
}

// replicaWorker is one system's workers inside a replica process.
type replicaWorker interface {
	// run works until ctx is done, then stops gracefully.
	run(ctx context.Context) error
	stats() replicaStats
	close()
}

// replicaMain is the replica subcommand.
func replicaMain(args []string) error {
	var o replicaOptions
	fs := flag.NewFlagSet("replica", flag.ContinueOnError)
	fs.StringVar(&o.kind, "kind", "", "deskkit, river or river-trivial")
	fs.StringVar(&o.databaseURL, "database-url", "", "the scenario's database")
	fs.IntVar(&o.workers, "workers", 8, "workers (concurrency) of this replica")
	fs.IntVar(&o.pool, "pool", 10, "database connections of this replica at most")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "deskkit: channel.Config.Timeout")
	fs.DurationVar(&o.fetchCooldown, "river-fetch-cooldown", time.Millisecond, "River: Config.FetchCooldown")
	fs.IntVar(&o.channelInFlight, "channel-in-flight", 0, "deskkit: channel.Config.MaxInFlightPerChannel")
	fs.IntVar(&o.tenantConcurrency, "tenant-concurrency", 0, "deskkit: channel.Config.TenantConcurrency")
	fs.Float64Var(&o.rateLimit, "channel-rate-limit", 0, "deskkit: channel.Config.RateLimit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	var w replicaWorker
	var err error
	switch o.kind {
	case kindDeskkit:
		w, err = newDeskkitReplica(ctx, o)
	case kindRiverPost, kindRiverTrivial:
		w, err = newRiverReplica(ctx, o)
	default:
		err = fmt.Errorf("unknown replica kind %q", o.kind)
	}
	if err != nil {
		return err
	}
	defer w.close()

	out := bufio.NewWriter(os.Stdout)
	reply := func(line string) error {
		if _, err := out.WriteString(line + "\n"); err != nil {
			return err
		}
		return out.Flush()
	}
	if err := reply("ready"); err != nil {
		return err
	}
	started := make(chan struct{})
	go func() {
		defer stop() // the end of the input stops the replica
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			switch in.Text() {
			case "go":
				close(started)
			case "snap":
				b, _ := json.Marshal(w.stats())
				if reply(string(b)) != nil {
					return
				}
			}
		}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		return nil
	}
	return w.run(ctx)
}

// replicaProc is the bench's handle on a running replica process.
type replicaProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser // nil for the reference server
	out *bufio.Scanner
	// server is whether it is the reference server (startServer), which
	// works from its start and counts nothing.
	server bool
}

// startReplica starts a replica process and waits until it is ready.
func startReplica(ctx context.Context, o replicaOptions, env []string) (*replicaProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the bench binary: %w", err)
	}
	cmd := exec.Command(self, o.args()...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	// A replica dies with the bench, whatever kills the bench.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s replica: %w", o.kind, err)
	}
	p := &replicaProc{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	line, err := p.readLine(ctx)
	if err == nil && line != "ready" {
		err = fmt.Errorf("said %q", line)
	}
	if err != nil {
		p.stop(time.Second)
		return nil, fmt.Errorf("%s replica did not get ready: %w", o.kind, err)
	}
	return p, nil
}

// readLine reads the replica's next line, or fails when ctx ends first (the
// replica is then stopped by the caller).
func (p *replicaProc) readLine(ctx context.Context) (string, error) {
	got := make(chan bool, 1)
	go func() { got <- p.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			if err := p.out.Err(); err != nil {
				return "", err
			}
			return "", io.ErrUnexpectedEOF
		}
		return p.out.Text(), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pid is the replica's process id.
func (p *replicaProc) pid() int { return p.cmd.Process.Pid }

// start tells the replica to start its workers.
func (p *replicaProc) start() error {
	if p.server {
		return nil
	}
	_, err := io.WriteString(p.in, "go\n")
	return err
}

// snap asks the replica what it counted.
func (p *replicaProc) snap(ctx context.Context) (replicaStats, error) {
	var s replicaStats
	if p.server {
		return s, nil
	}
	if _, err := io.WriteString(p.in, "snap\n"); err != nil {
		return s, fmt.Errorf("ask replica %d: %w", p.pid(), err)
	}
	line, err := p.readLine(ctx)
	if err != nil {
		return s, fmt.Errorf("ask replica %d: %w", p.pid(), err)
	}
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		return s, fmt.Errorf("replica %d answered %q: %w", p.pid(), line, err)
	}
	return s, nil
}

// stop sends SIGTERM and waits up to grace for the replica to finish its
// attempts in flight and exit; then it is killed.
func (p *replicaProc) stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-done
	}
	if p.in != nil {
		_ = p.in.Close()
	}
}

// replicaSet is the replicas of one scenario.
type replicaSet []*replicaProc

// startReplicas starts n replicas and waits until all are ready; on an
// error the started ones are stopped.
func startReplicas(ctx context.Context, n int, o replicaOptions, env []string) (replicaSet, error) {
	var set replicaSet
	for range n {
		p, err := startReplica(ctx, o, env)
		if err != nil {
			set.stop(time.Second)
			return nil, err
		}
		set = append(set, p)
	}
	return set, nil
}

// start starts the workers of every replica.
func (set replicaSet) start() error {
	var errs []error
	for _, p := range set {
		errs = append(errs, p.start())
	}
	return errors.Join(errs...)
}

// stats sums what the replicas counted.
func (set replicaSet) stats(ctx context.Context) (replicaStats, error) {
	var sum replicaStats
	for _, p := range set {
		s, err := p.snap(ctx)
		if err != nil {
			return sum, err
		}
		sum.Statements += s.Statements
		sum.Done += s.Done
	}
	return sum, nil
}

// cpu sums the replicas' CPU time.
func (set replicaSet) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, p := range set {
		t, err := procCPU(p.pid())
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// stop stops every replica, in parallel.
func (set replicaSet) stop(grace time.Duration) {
	done := make(chan struct{})
	for _, p := range set {
		go func() { p.stop(grace); done <- struct{}{} }()
	}
	for range set {
		<-done
	}
}

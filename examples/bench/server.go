package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The reference server as users run it (issue 29, section 2): the
// deskkit side of the "server" scenario is the examples/server binary
// itself, with its own wiring (the directory's tenant language, its
// hooks, its pool) and its defaults (-event-concurrency 16), over the
// scenario's database, beside River with as many workers (-workers).

// serverReadyLine starts the line the reference server writes once it
// listens; its delivery worker starts right after it.
const serverReadyLine = "deskkit is listening on "

// buildServer builds examples/server into dir, from the source folder
// src (the bench runs from examples/bench: ../server), unless bin names
// a binary already built.
func buildServer(ctx context.Context, bin, src, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	out := filepath.Join(dir, "deskkit-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the reference server in %s: %w\n%s", src, err, b)
	}
	return out, nil
}

// startServer starts the reference server binary bin over dsn, listening
// on a free loopback port, with the bench's server secret (so that it
// opens the channels the bench added), and waits until it listens. Its
// log goes to logPath. The process is a replicaProc that starts working
// at once: start and snap do nothing (no statements are counted).
func startServer(ctx context.Context, bin, dsn string, secret []byte, logPath string) (*replicaProc, error) {
	cmd := exec.Command(bin, "serve", "-database-url", dsn, "-addr", "127.0.0.1:0", "-channel-allow-private-networks")
	cmd.Env = append(os.Environ(), "DESKKIT_SECRET="+string(secret))
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the reference server: %w", err)
	}
	p := &replicaProc{cmd: cmd, out: bufio.NewScanner(outPipe), server: true}
	for {
		line, err := p.readLine(ctx)
		if err != nil {
			p.stop(time.Second)
			return nil, fmt.Errorf("the reference server did not listen (its log: %s): %w", logPath, err)
		}
		if strings.HasPrefix(line, serverReadyLine) {
			break
		}
	}
	// What it prints after (the demo tenant's access) is read and
	// dropped, so that it never blocks on a full pipe.
	go func() {
		for p.out.Scan() {
		}
		_, _ = io.Copy(io.Discard, outPipe)
	}()
	return p, nil
}

// serverDrain is deskkitDrain's backlog drained by the reference server,
// one process, from when it listens.
func (b *bench) serverDrain(ctx context.Context) (*drainResult, error) {
	dir, err := os.MkdirTemp("", "deskkit-bench-server-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, err := buildServer(ctx, b.opts.serverBinary, b.opts.serverSource, dir)
	if err != nil {
		return nil, err
	}
	return b.drainFresh(ctx, 1, func(ctx context.Context, dsn string) (replicaSet, error) {
		p, err := startServer(ctx, bin, dsn, b.secret, filepath.Join(dir, "server.log"))
		if err != nil {
			return nil, err
		}
		return replicaSet{p}, nil
	})
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// River is the anchor: the queue a Go team would pick to send webhooks,
// on the same database, receiver and number of workers. Its jobs carry
// everything a POST needs (the channel's path and secret, the webhook-id
// and the body deskkit sends), so that a job reads nothing else: River's
// best case.

// webhookArgs is a River job's arguments: one message. The same rows serve
// the trivial job, whose worker does not post.
type webhookArgs struct {
	message
}

func (webhookArgs) Kind() string { return "bench_webhook" }

// riverReplica is a replica process's River client.
type riverReplica struct {
	pool       *pgxpool.Pool
	client     *river.Client[pgx.Tx]
	statements *statementTracer
	done       atomic.Int64
}

// newRiverReplica builds a River client whose default queue has o.workers
// workers, over a pool of o.pool connections whose statements are counted.
// FetchCooldown is River's throttle between fetches (100 ms by default,
// which caps 8 workers at 80 jobs/s: "throughput is limited by this
// value"); the bench sets it to River's minimum, 1 ms, by default.
// Jobs of kindRiverPost post their message to the receiver; those of
// kindRiverTrivial do nothing.
func newRiverReplica(ctx context.Context, o replicaOptions) (*riverReplica, error) {
	r := &riverReplica{statements: &statementTracer{}}
	var err error
	if r.pool, err = newPool(ctx, o.databaseURL, o.pool, r.statements); err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	w := &webhookWorker{post: o.kind == kindRiverPost, done: &r.done, client: loopbackClient(o.workers)}
	if err := river.AddWorkerSafely(workers, w); err != nil {
		r.pool.Close()
		return nil, fmt.Errorf("river: add worker: %w", err)
	}
	r.client, err = river.NewClient(riverpgxv5.New(r.pool), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:       workers,
		FetchCooldown: o.fetchCooldown,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		r.pool.Close()
		return nil, fmt.Errorf("river: new client: %w", err)
	}
	return r, nil
}

func (r *riverReplica) run(ctx context.Context) error {
	if err := r.client.Start(ctx); err != nil {
		return fmt.Errorf("river: start: %w", err)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.client.Stop(stopCtx)
}

func (r *riverReplica) stats() replicaStats {
	return replicaStats{Statements: r.statements.n.Load(), Done: r.done.Load()}
}

func (r *riverReplica) close() { r.pool.Close() }

// webhookWorker works webhookArgs jobs: with post, the same signed POST
// deskkit makes (the webhook-timestamp is the attempt's, signed with
// Standard Webhooks' library); without, nothing.
type webhookWorker struct {
	river.WorkerDefaults[webhookArgs]
	post   bool
	done   *atomic.Int64
	client *poster

	signers sync.Map // secret -> *standardwebhooks.Webhook
}

func (w *webhookWorker) Work(ctx context.Context, job *river.Job[webhookArgs]) error {
	if w.post {
		if err := w.client.send(ctx, &w.signers, job.Args.message); err != nil {
			return err
		}
	}
	w.done.Add(1)
	return nil
}

// newPool opens a pgx pool of at most maxConns connections, counting its
// statements in tracer if not nil.
func newPool(ctx context.Context, dsn string, maxConns int, tracer *statementTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	cfg.MaxConns = int32(maxConns)
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pgx pool: %w", err)
	}
	return pool, nil
}

// statementTracer counts the statements pgx sends: every Query, QueryRow
// and Exec (BEGIN and COMMIT among them: pgx sends them through Exec), every
// query of a batch, every CopyFrom and every explicit Prepare. (pgx's
// automatic statement cache prepares without telling the tracer, so the
// Prepare count misses those: at most one per statement and connection.)
type statementTracer struct{ n atomic.Int64 }

var (
	_ pgx.QueryTracer    = (*statementTracer)(nil)
	_ pgx.BatchTracer    = (*statementTracer)(nil)
	_ pgx.CopyFromTracer = (*statementTracer)(nil)
	_ pgx.PrepareTracer  = (*statementTracer)(nil)
)

func (t *statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *statementTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t *statementTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.n.Add(1)
}

func (t *statementTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (t *statementTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *statementTracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func (t *statementTracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *statementTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// riverHost is the bench's side of River in one scenario's database: it
// migrates River's schema and inserts the jobs.
type riverHost struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
}

// newRiverHost migrates River's tables into the scenario's database and
// builds an insert-only client, over a pool of conns connections. Its
// FetchCooldown is the replicas': River also spaces an inserting client's
// notifications of new jobs by it (one per queue per cooldown), and at
// the default, 100 ms, a job inserted after another would wait for the
// replica's next poll or notification.
func newRiverHost(ctx context.Context, dsn string, conns int, fetchCooldown time.Duration) (*riverHost, error) {
	pool, err := newPool(ctx, dsn, conns, nil)
	if err != nil {
		return nil, err
	}
	h := &riverHost{pool: pool}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("river: migrate: %w", err)
	}
	if h.client, err = river.NewClient(riverpgxv5.New(pool), &river.Config{FetchCooldown: fetchCooldown}); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river: new insert-only client: %w", err)
	}
	return h, nil
}

func (h *riverHost) close() { h.pool.Close() }

// insertChunk is how many jobs one InsertMany inserts.
const insertChunk = 2000

// insert inserts one job per message.
func (h *riverHost) insert(ctx context.Context, msgs []message) error {
	for from := 0; from < len(msgs); from += insertChunk {
		chunk := msgs[from:min(from+insertChunk, len(msgs))]
		params := make([]river.InsertManyParams, len(chunk))
		for i, m := range chunk {
			params[i] = river.InsertManyParams{Args: webhookArgs{m}}
		}
		if _, err := h.client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("river: insert jobs: %w", err)
		}
	}
	return nil
}

// benchEventsTable is what the River latency scenario's publishing
// transactions write beside their job: a row like deskkit's event
// (deskkit_outbox_events'), as a host's own write would be.
const benchEventsTable = `CREATE TABLE bench_events (
    tenant_id      BIGINT       NOT NULL,
    event_id       VARCHAR(100) NOT NULL,
    event_type     VARCHAR(100) NOT NULL,
    occurred_at_ms BIGINT       NOT NULL,
    title          TEXT         NOT NULL,
    body           TEXT         NOT NULL,
    data           TEXT         NOT NULL,
    created_at_ms  BIGINT       NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
)`

// createEvents creates bench_events.
func (h *riverHost) createEvents(ctx context.Context) error {
	if _, err := h.pool.Exec(ctx, benchEventsTable); err != nil {
		return fmt.Errorf("create bench_events: %w", err)
	}
	return nil
}

// publishOne writes ev's row and inserts m's job with InsertTx, in one
// transaction, as a host using River as its outbox would, and returns
// when the commit returned.
func (h *riverHost) publishOne(ctx context.Context, tenant int64, ev deskkit.Event, m message) (time.Time, error) {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return time.Time{}, err
	}
	err = pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO bench_events
  (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			tenant, ev.ID, ev.Type, ev.Time.UnixMilli(), ev.Title, ev.Text, string(data), time.Now().UnixMilli())
		if err != nil {
			return fmt.Errorf("insert the event's row: %w", err)
		}
		if _, err := h.client.InsertTx(ctx, tx, webhookArgs{m}, nil); err != nil {
			return fmt.Errorf("river: insert job: %w", err)
		}
		return nil
	})
	return time.Now(), err
}

// riverLatency is latency's River side, at rate events a second for the
// latency duration: each publishing transaction writes the event's row
// and inserts its job (InsertTx), to the webhook of each of the latency
// tenants in turn, worked by one River replica making deskkit's POST;
// commit to first arrival at the receiver, as deskkit's.
func (b *bench) riverLatency(ctx context.Context, rate int) (*latencyResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	host, err := newRiverHost(ctx, dsn, latencyPublishers, b.opts.riverFetchCooldown)
	if err != nil {
		return nil, err
	}
	defer host.close()
	if err := host.createEvents(ctx); err != nil {
		return nil, err
	}
	secrets := make([]string, b.opts.latencyTenants)
	for t := range secrets {
		secrets[t] = newSigningSecret()
	}
	publish := func(ctx context.Context, i int) (published, error) {
		t := i % len(secrets)
		tenant := int64(t + 1)
		path := channelPath(hookPath, tenant, 0)
		ev := trashedEvent(tenant, i)
		body, err := webhookBody(tenant, ev)
		if err != nil {
			return published{}, err
		}
		at, err := host.publishOne(ctx, tenant, ev, message{URL: b.rcv.base + path, ID: ev.ID, Secret: secrets[t], Body: body})
		return published{path, ev.ID, at}, err
	}
	set, err := startReplicas(ctx, 1, b.replicaOpts(kindRiverPost, dsn), b.env())
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	if err := set.start(); err != nil {
		return nil, err
	}
	if err := b.warmUp(ctx, len(secrets), publish); err != nil {
		return nil, err
	}
	evs, achieved, err := publishPaced(ctx, rate, b.opts.latencyDuration, publish)
	if err != nil {
		return nil, err
	}
	if err := b.waitArrived(ctx, evs); err != nil {
		return nil, err
	}
	return &latencyResult{Rate: rate, Achieved: achieved, Latency: b.latencyOf(evs)}, nil
}

// unfinished counts the jobs not completed yet (River records completions
// in batches, after the work).
func (h *riverHost) unfinished(ctx context.Context) (int64, error) {
	var n int64
	err := h.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state <> 'completed'").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("river: count unfinished jobs: %w", err)
	}
	return n, nil
}

// newSigner returns the Standard Webhooks signer of secret.
func newSigner(secret string) (*standardwebhooks.Webhook, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, fmt.Errorf("signing secret: %w", err)
	}
	return wh, nil
}

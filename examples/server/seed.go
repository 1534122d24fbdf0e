package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/trash"
)

// The seed command bulk-loads one tenant's trash for benchmarks:
//
//	go run ./examples/server seed -database-url postgres://... -projects 100 -entries 1000000
//
// Every entry is backed by a trashed row of the demo host, so restoring and
// clearing seeded entries work as for entries made through the API.
//
// Each batch of -batch entries is one transaction that also counts itself
// in deskkit_demo_seeds, so a seed never leaves half a batch behind: a batch
// that fails for a reason that may pass (a lost connection, a timeout) is
// tried again, and a seed that stops anyway resumes where it stopped when
// the same command runs again. On a terminal it shows its progress on one
// line; otherwise it logs it after the first batch, every 20 batches and
// at the end.
//
// Entry number n (0, 1, 2, ... within the tenant; a second seed continues
// after the demo rows the tenant has) is a sprint when n is a multiple of 20, 5% of entries, and
// a task otherwise. Sprints go round-robin over the projects, tasks to
// project n mod P + 1; about 80% of tasks belong to the latest sprint of
// their project seeded so far. Deletion dates spread evenly over the 90 days
// before the seed, oldest first, so a server with a shorter -retention will
// purge the older ones.
//
// Names are built so that search terms of known selectivity exist. At
// -entries 1000000 in a fresh tenant (950,000 tasks and 50,000 sprints):
//
//	targetType=TASK        targetName=task-0123457  1 entry (every name has its unique number)
//	targetType=TASK        targetName=zephyr        100 entries (n mod 10000 = 4321: 1 in 10,000)
//	targetType=TASK        targetName=alpha         about 73,000 (1 in 13 tasks)
//	targetType=TASK        targetName=urgent        100,000 entries (n mod 10 = 7: 10% of all entries, 10.5% of tasks)
//	targetType=TASK        targetName=task          all 950,000 tasks
//	targetType=TASK_SPRINT targetName=release       5,000 sprints (10% of sprints)
//	targetType=TASK_SPRINT targetName=sprint        all 50,000 sprints
//
// Other entry counts scale proportionally (zephyr matches entries/10,000).
const (
	seedSprintEvery  = 20                  // entry n is a sprint when n mod 20 = 0
	seedUrgentEvery  = 10                  // "urgent" in tasks with n mod 10 = 7
	seedUrgentAt     = 7                   // (never a sprint: 7 is not a multiple of 20)
	seedRareEvery    = 10000               // "zephyr" in tasks with n mod 10000 = 4321
	seedRareAt       = 4321                // (a task, and not an urgent one)
	seedReleaseEvery = 10                  // "release" in sprints number k with k mod 10 = 3
	seedReleaseAt    = 3                   // (sprint number k is entry 20k)
	seedSprintless   = 5                   // 1 in 5 tasks has no sprint
	seedSpread       = 90 * 24 * time.Hour // deletion dates spread over this
	seedUsers        = 4                   // creators of seeded targets: seed-user-1 to -4
	defaultSeedBatch = 5000                // entries per transaction; a few MB of SQL per statement
	seedLogEvery     = 20                  // batches between progress logs, after the first batch's
)

// Vocabulary of the names: no word contains another word or a search term
// above, so the counts stay exact.
var (
	seedWords1 = [...]string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike"}
	seedWords2 = [...]string{"login", "billing", "search", "export", "import", "mobile", "backend", "frontend", "docs", "cache", "queue"}
)

// seedConfig is what to seed.
type seedConfig struct {
	Tenant    string
	Projects  int
	Entries   int
	BatchSize int              // defaultSeedBatch if 0
	Now       func() time.Time // time.Now if nil
	// Progress, if set, gets a progress line rewritten in place after every
	// batch: a terminal. Without it progress goes to the log.
	Progress io.Writer

	// afterBatch, if set, runs inside each batch's transaction after its
	// rows are written, with the number of entries done once it commits:
	// tests fail batches through it.
	afterBatch func(ctx context.Context, done int) error
}

// seedResult counts what a seed added.
type seedResult struct {
	First         int64 // number of the run's first entry
	From          int64 // number of the first entry this call added: First unless it resumed
	Resumed       bool  // it finished a run that had stopped part way
	Sprints       int
	Tasks         int
	TasksInSprint int
}

// seedRun is a row of deskkit_demo_seeds: a seed of Entries entries,
// numbered from First, of which the committed batches added Done.
type seedRun struct {
	bun.BaseModel `bun:"table:deskkit_demo_seeds,alias:r"`

	ID        int64     `bun:"id,pk,autoincrement"`
	TenantID  int64     `bun:"tenant_id,notnull"`
	First     int64     `bun:"first_entry,notnull"`
	Entries   int64     `bun:"entries,notnull"`
	Projects  int64     `bun:"projects,notnull"`
	Done      int64     `bun:"done,notnull"`
	StartedAt time.Time `bun:"started_at,notnull"`
}

// Bounds of a seed's database work.
const (
	// seedStatementTimeout bounds each of seed's statements: a batch
	// inserts thousands of rows and updates the trigram index, far more
	// than any request does.
	seedStatementTimeout = 2 * time.Minute
	// seedBatchAttempts is how many times a batch that fails for a reason
	// that may pass (a connection lost, a timeout, a deadlock) is tried.
	seedBatchAttempts = 3
)

func seedCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, logger *slog.Logger) error {
	fs := newFlagSet("seed", stdout, stderr, getenv)
	cfg := seedConfig{}
	fs.IntVar(&cfg.Projects, "projects", 10, "number of projects to spread entries over")
	fs.IntVar(&cfg.Entries, "entries", 10000, "number of trash entries to add")
	fs.StringVar(&cfg.Tenant, "tenant", demoTenant, "tenant to seed, created if missing")
	fs.IntVar(&cfg.BatchSize, "batch", defaultSeedBatch, "entries per INSERT statement and transaction")
	dbURL := fs.databaseURL()
	if err := fs.parse(args); err != nil {
		return err
	}
	if isTerminal(stderr) {
		cfg.Progress = stderr
	}
	db, err := openDBWith(ctx, *dbURL, database.Options{MaxOpenConns: 2, StatementTimeout: seedStatementTimeout})
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	res, err := seed(ctx, db, cfg, logger)
	if err != nil {
		return err
	}
	added := res.Sprints + res.Tasks
	logger.InfoContext(ctx, "seeded", slog.String("tenant", cfg.Tenant), slog.Int("sprints", res.Sprints),
		slog.Int("tasks", res.Tasks), slog.Int("tasksInSprint", res.TasksInSprint), slog.Bool("resumed", res.Resumed),
		slog.String("took", time.Since(start).Round(time.Millisecond).String()))
	_, err = fmt.Fprintf(stdout, "seeded %d entries (%d sprints, %d tasks) numbered %d to %d in tenant %q\n",
		added, res.Sprints, res.Tasks, res.From, res.From+int64(added)-1, cfg.Tenant)
	return err
}

// isTerminal reports whether v, a reader or writer, is a terminal (a
// character device): where a progress line rewritten in place, or a prompt,
// makes sense; logs and pipes get log lines instead.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// seedTrashRow is a row of deskkit_trash with the columns trash/migrations
// creates. The trash package keeps its row type unexported and adds entries
// one at a time through Trash.Add, validating each and checking for
// conflicts; a bulk load of a million entries instead inserts thousands of
// rows per statement, so it writes the table directly and fills
// target_name_folded with trash.FoldName, as Add does.
type seedTrashRow struct {
	bun.BaseModel `bun:"table:deskkit_trash"`

	ID               int64            `bun:"id,pk,autoincrement"`
	TenantID         int64            `bun:"tenant_id,notnull"`
	ProjectID        int64            `bun:"project_id,notnull"`
	TargetType       trash.TargetType `bun:"target_type,notnull"`
	TargetID         int64            `bun:"target_id,notnull"`
	TargetName       string           `bun:"target_name,notnull"`
	TargetNameFolded string           `bun:"target_name_folded,notnull"`
	SprintID         *int64           `bun:"sprint_id"`
	CreatedBy        int64            `bun:"created_by,notnull"`
	DeletedBy        int64            `bun:"deleted_by,notnull"`
	DeletedDate      time.Time        `bun:"deleted_date,notnull"`
}

// seed adds cfg.Entries entries to the tenant's trash in transactions of
// cfg.BatchSize entries. Each transaction also counts its entries in the
// run's row of deskkit_demo_seeds, so the batches committed and the count
// never disagree: a batch that fails leaves nothing behind, one that fails
// for a reason that may pass is tried again, and a seed that stops (the
// database went away, the process was killed) resumes where it stopped
// when run again with the same -tenant, -entries and -projects.
func seed(ctx context.Context, db *bun.DB, cfg seedConfig, logger *slog.Logger) (seedResult, error) {
	switch {
	case cfg.Projects < 1:
		return seedResult{}, errors.New("-projects must be a positive integer")
	case cfg.Entries < 1:
		return seedResult{}, errors.New("-entries must be a positive integer")
	case cfg.BatchSize < 0:
		return seedResult{}, errors.New("-batch must be a positive integer")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = defaultSeedBatch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d, err := migrate.DialectOf(db)
	if err != nil {
		return seedResult{}, err
	}
	dir, err := directory.New(db, &directory.Config{Now: cfg.Now})
	if err != nil {
		return seedResult{}, err
	}
	tenant, err := dir.EnsureTenant(ctx, cfg.Tenant)
	if err != nil {
		return seedResult{}, fmt.Errorf("-tenant: %w", err)
	}
	deleter, err := dir.EnsureUserRole(ctx, tenant.ID, demoUsername, directory.Role{Admin: true})
	if err != nil {
		return seedResult{}, err
	}
	creators := make([]int64, seedUsers)
	for i := range creators {
		u, err := dir.EnsureUser(ctx, tenant.ID, fmt.Sprintf("seed-user-%d", i+1), false)
		if err != nil {
			return seedResult{}, err
		}
		creators[i] = u.ID
	}
	run, resumed, err := startSeedRun(ctx, db, tenant.ID, cfg)
	if err != nil {
		return seedResult{}, err
	}
	if resumed {
		logger.InfoContext(ctx, "resuming seed", slog.String("tenant", cfg.Tenant), slog.Int64("done", run.Done), slog.Int64("of", run.Entries))
	}

	s := seeder{
		cfg:      cfg,
		tenantID: tenant.ID,
		deleter:  deleter.ID,
		creators: creators,
		first:    run.First,
		entries:  run.Entries,
		now:      run.StartedAt.UTC().Truncate(time.Second),
		step:     max(time.Second, (seedSpread / time.Duration(run.Entries)).Truncate(time.Second)),
	}
	res := seedResult{First: run.First, From: run.First + run.Done, Resumed: resumed}
	progress := newSeedProgress(cfg.Progress, logger, int(run.Done), int(run.Entries))
	done, failures := int(run.Done), 0
	for done < int(run.Entries) {
		if s.latest == nil {
			if s.latest, err = latestSprints(ctx, db, tenant.ID); err != nil {
				return res, err
			}
		}
		end := min(done+cfg.BatchSize, int(run.Entries))
		var got seedResult
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			got = seedResult{}
			if err := s.batch(ctx, tx, done, end, &got); err != nil {
				return err
			}
			r, err := tx.NewUpdate().Model((*seedRun)(nil)).Set("done = ?", end).
				Where("r.id = ? AND r.done = ?", run.ID, done).Exec(ctx)
			if err != nil {
				return fmt.Errorf("count the batch: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("the seed run's count moved under it (%d rows, %v): is another seed of the tenant running?", n, err)
			}
			if cfg.afterBatch != nil {
				return cfg.afterBatch(ctx, end)
			}
			return nil
		})
		if err != nil {
			// The sprints the batch inserted may be gone with it.
			s.latest = nil
			failures++
			if ctx.Err() == nil && failures < seedBatchAttempts && (database.Unavailable(err) || database.Retryable(err)) {
				logger.WarnContext(ctx, "seed batch failed; trying again", slog.Int("from", done), slog.Any("error", err))
				// A commit whose answer was lost may have gone through:
				// the run's row says.
				if err := db.NewSelect().Model(&run).WherePK().Scan(ctx); err != nil {
					return res, s.stopped(done, fmt.Errorf("read the seed's progress: %w", err))
				}
				done = int(run.Done)
				continue
			}
			progress.end()
			return res, s.stopped(done, err)
		}
		failures = 0
		res.Sprints += got.Sprints
		res.Tasks += got.Tasks
		res.TasksInSprint += got.TasksInSprint
		done = end
		progress.batch(done)
	}
	progress.end()

	// Fresh statistics, so that the planner knows the tables' new sizes and
	// the benchmark measures plans, not stale estimates. VACUUM also sets
	// the visibility map, which index-only scans of the trash rely on.
	stmts := []string{"ANALYZE"}
	if d.Postgres {
		stmts = []string{"VACUUM ANALYZE deskkit_trash", "ANALYZE deskkit_demo_sprints", "ANALYZE deskkit_demo_tasks"}
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return res, fmt.Errorf("%s: %w", q, err)
		}
	}
	return res, nil
}

// startSeedRun returns the tenant's run that stopped part way, if any, for
// cfg to finish; else it records a new run, numbered on from the tenant's
// demo rows (trashed or not), so that a second seed does not repeat the
// first one's numbers. A stopped run of other parameters is an error: its
// entries were numbered and dated for them.
func startSeedRun(ctx context.Context, db *bun.DB, tenantID int64, cfg seedConfig) (seedRun, bool, error) {
	var runs []seedRun
	if err := db.NewSelect().Model(&runs).Where("r.tenant_id = ? AND r.done < r.entries", tenantID).OrderExpr("r.id DESC").Limit(1).Scan(ctx); err != nil {
		return seedRun{}, false, fmt.Errorf("read seed runs: %w", err)
	}
	if len(runs) > 0 {
		r := runs[0]
		if r.Entries != int64(cfg.Entries) || r.Projects != int64(cfg.Projects) {
			return seedRun{}, false, fmt.Errorf("tenant %q has a seed of %d entries over %d projects that stopped after %d; run seed with -entries %d -projects %d to finish it first",
				cfg.Tenant, r.Entries, r.Projects, r.Done, r.Entries, r.Projects)
		}
		return r, true, nil
	}
	first := 0
	for _, model := range []any{(*demoSprint)(nil), (*demoTask)(nil)} {
		n, err := db.NewSelect().Model(model).Where("tenant_id = ?", tenantID).Count(ctx)
		if err != nil {
			return seedRun{}, false, fmt.Errorf("count existing rows: %w", err)
		}
		first += n
	}
	r := seedRun{TenantID: tenantID, First: int64(first), Entries: int64(cfg.Entries), Projects: int64(cfg.Projects), StartedAt: cfg.Now().UTC()}
	if _, err := db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return seedRun{}, false, fmt.Errorf("record the seed run: %w", err)
	}
	return r, false, nil
}

// latestSprints maps each project of the tenant to its latest sprint, which
// the next tasks seeded in that project join.
func latestSprints(ctx context.Context, db bun.IDB, tenantID int64) (map[int64]int64, error) {
	var rows []struct {
		ProjectID int64 `bun:"project_id"`
		ID        int64 `bun:"id"`
	}
	if err := db.NewSelect().Model((*demoSprint)(nil)).ColumnExpr("s.project_id, max(s.id) AS id").
		Where("s.tenant_id = ?", tenantID).Group("s.project_id").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read latest sprints: %w", err)
	}
	m := make(map[int64]int64, len(rows))
	for _, r := range rows {
		m[r.ProjectID] = r.ID
	}
	return m, nil
}

// stopped is the error of a seed that stopped with done entries committed.
func (s *seeder) stopped(done int, err error) error {
	return fmt.Errorf("seed stopped after %d of %d entries (numbers %d to %d are in; nothing of the failed batch is): %w; run the same command again to resume",
		done, s.entries, s.first, s.first+int64(done)-1, err)
}

// seedProgress reports a seed's progress: a line rewritten in place on a
// terminal, else a log line after the first batch (so that a slow seed
// shows at once that it runs, and at what rate), then every seedLogEvery
// batches, and after the last.
type seedProgress struct {
	w        io.Writer
	logger   *slog.Logger
	start    time.Time
	from, of int
	batches  int
}

func newSeedProgress(w io.Writer, logger *slog.Logger, from, of int) *seedProgress {
	return &seedProgress{w: w, logger: logger, start: time.Now(), from: from, of: of}
}

func (p *seedProgress) batch(done int) {
	p.batches++
	took := time.Since(p.start)
	rate := float64(done-p.from) / max(took.Seconds(), 1e-3)
	if p.w != nil {
		left := time.Duration(float64(p.of-done)/max(rate, 1e-3)) * time.Second
		fmt.Fprintf(p.w, "\rseeding: %d of %d entries (%d%%), %.0f/s, %s left   ", done, p.of, done*100/p.of, rate, left.Round(time.Second))
		return
	}
	if p.batches == 1 || p.batches%seedLogEvery == 0 || done == p.of {
		p.logger.Info("seeding", slog.Int("done", done), slog.Int("of", p.of),
			slog.String("took", took.Round(time.Millisecond).String()), slog.Int("perSecond", int(rate)))
	}
}

// end ends the progress line on a terminal.
func (p *seedProgress) end() {
	if p.w != nil && p.batches > 0 {
		fmt.Fprintln(p.w)
	}
}

// seeder carries a seed's state across batches.
type seeder struct {
	cfg      seedConfig
	tenantID int64
	deleter  int64
	creators []int64
	first    int64 // number of entry 0 of this seed
	entries  int64 // of this seed, in all
	now      time.Time
	step     time.Duration   // between the deletion dates of consecutive entries
	latest   map[int64]int64 // project → its latest seeded sprint
}

// batch adds entries [from, to) of this seed inside tx: the demo rows first,
// for their ids, then the trash rows pointing at them.
func (s *seeder) batch(ctx context.Context, tx bun.Tx, from, to int, res *seedResult) error {
	var sprints []demoSprint
	var sprintNums []int64
	for i := from; i < to; i++ {
		n := s.first + int64(i)
		if n%seedSprintEvery != 0 {
			continue
		}
		sprints = append(sprints, demoSprint{
			TenantID:  s.tenantID,
			ProjectID: (n/seedSprintEvery)%int64(s.cfg.Projects) + 1,
			Name:      seedName(n),
			CreatedBy: s.creators[n%int64(len(s.creators))],
			State:     stateTrashed,
		})
		sprintNums = append(sprintNums, n)
	}
	if len(sprints) > 0 {
		// bun fills in the ids from RETURNING, in the order of the rows.
		if _, err := tx.NewInsert().Model(&sprints).Exec(ctx); err != nil {
			return fmt.Errorf("insert sprints: %w", err)
		}
		for _, sp := range sprints {
			s.latest[sp.ProjectID] = sp.ID
		}
	}

	var tasks []demoTask
	var taskNums []int64
	for i := from; i < to; i++ {
		n := s.first + int64(i)
		if n%seedSprintEvery == 0 {
			continue
		}
		project := n%int64(s.cfg.Projects) + 1
		var sprintID *int64
		if id, ok := s.latest[project]; ok && mix(n)%seedSprintless != 0 {
			sprintID = &id
			res.TasksInSprint++
		}
		tasks = append(tasks, demoTask{
			TenantID:  s.tenantID,
			ProjectID: project,
			SprintID:  sprintID,
			Name:      seedName(n),
			CreatedBy: s.creators[n%int64(len(s.creators))],
			State:     stateTrashed,
		})
		taskNums = append(taskNums, n)
	}
	if len(tasks) > 0 {
		if _, err := tx.NewInsert().Model(&tasks).Exec(ctx); err != nil {
			return fmt.Errorf("insert tasks: %w", err)
		}
	}

	rows := make([]seedTrashRow, 0, to-from)
	for i, sp := range sprints {
		rows = append(rows, s.trashRow(sprintNums[i], sp.ProjectID, trash.TargetSprint, sp.ID, sp.Name, nil, sp.CreatedBy))
	}
	for i, t := range tasks {
		rows = append(rows, s.trashRow(taskNums[i], t.ProjectID, trash.TargetTask, t.ID, t.Name, t.SprintID, t.CreatedBy))
	}
	if _, err := tx.NewInsert().Model(&rows).Returning("NULL").Exec(ctx); err != nil {
		return fmt.Errorf("insert trash entries: %w", err)
	}
	res.Sprints += len(sprints)
	res.Tasks += len(tasks)
	return nil
}

func (s *seeder) trashRow(n, project int64, typ trash.TargetType, id int64, name string, sprintID *int64, createdBy int64) seedTrashRow {
	age := time.Duration(s.first+s.entries-1-n) * s.step
	return seedTrashRow{
		TenantID:         s.tenantID,
		ProjectID:        project,
		TargetType:       typ,
		TargetID:         id,
		TargetName:       name,
		TargetNameFolded: trash.FoldName(name),
		SprintID:         sprintID,
		CreatedBy:        createdBy,
		DeletedBy:        s.deleter,
		DeletedDate:      s.now.Add(-age),
	}
}

// seedName is the name of entry n; see the seed command's comment for the
// search terms it makes.
func seedName(n int64) string {
	kind := "task"
	if n%seedSprintEvery == 0 {
		kind = "sprint"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s-%07d %s %s", kind, n, seedWords1[n%int64(len(seedWords1))], seedWords2[(n/int64(len(seedWords1)))%int64(len(seedWords2))])
	switch {
	case kind == "sprint" && (n/seedSprintEvery)%seedReleaseEvery == seedReleaseAt:
		b.WriteString(" release")
	case n%seedUrgentEvery == seedUrgentAt:
		b.WriteString(" urgent")
	case n%seedRareEvery == seedRareAt:
		b.WriteString(" zephyr")
	}
	return b.String()
}

// mix scrambles n (Fibonacci hashing), so that which tasks have no sprint
// does not line up with projects or name words.
func mix(n int64) uint64 { return (uint64(n) * 0x9E3779B97F4A7C15) >> 32 }

package trash

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/internal/readroute"
	"github.com/deskkit/deskkit/internal/telemetry"
)

// Errors the trash returns; they are deskkit's shared sentinels, so
// errors.Is works with either name.
var (
	ErrNotFound        = deskkit.ErrNotFound        // no such entry in the principal's tenant
	ErrForbidden       = deskkit.ErrForbidden       // the principal may not manage this entry
	ErrConflict        = deskkit.ErrConflict        // Add: the target is in the trash already
	ErrUnauthenticated = deskkit.ErrUnauthenticated // the principal is not valid
	ErrInvalid         = deskkit.ErrInvalid         // wrapped by every *deskkit.InputError
)

// DefaultBatchSize is how many entries restore-all, clear-all and retention
// handle in one transaction.
const DefaultBatchSize = 500

// Config holds the trash's optional settings; nil means all defaults.
type Config struct {
	// Authorizer says who may manage a whole project besides admins; if it
	// is also a ProjectViewer, it says which projects a principal may see.
	// Without one only admins manage projects, and everyone sees them all.
	Authorizer Authorizer
	// Users resolves the deleter's name for every search, and names and
	// avatars of creator and deleter for detailed searches. Without it the
	// names are "" and a detailed search answers like a basic one.
	Users UserResolver
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// BatchSize is the entries per transaction of restore-all, clear-all and
	// retention; DefaultBatchSize if 0.
	BatchSize int
	// Retention is how long entries stay before PurgeExpired purges them;
	// 0 keeps them until cleared.
	Retention time.Duration
	// Publisher receives the trash's events (EventTypes), inside the
	// transaction of the change they announce; nil publishes nothing. New
	// fails if it is a deskkit.EventTypeChecker that lacks one of the
	// types: register them first. See Events in the package documentation.
	Publisher deskkit.Publisher
	// MeterProvider and TracerProvider record, under the scope
	// github.com/deskkit/deskkit/trash, a span per operation ("trash.Add",
	// "trash.Search", "trash.RestoreAll", ...; status Error when it failed,
	// with deskkit.result) and the counter deskkit.trash.operations with
	// deskkit.operation (add, get, search, count, restore,
	// restore_project, clear, clear_project, purge), deskkit.kind (task or
	// sprint: the entry's type, or the searched type; "" for operations on
	// a project and when the entry was not found) and deskkit.result
	// ("ok", or the error key httpapi answers: resource_not_found,
	// forbidden, param_validation_error, service_unavailable,
	// internal_error...). The Restorer, Authorizer and UserResolver get the
	// span's context, so that what they do is a child of the operation.
	// nil means the global providers (otel.GetMeterProvider,
	// otel.GetTracerProvider), which record nothing until the host
	// installs some. Both are checked by deskkit's tests with the SDK's
	// ManualReader and SpanRecorder.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// ReadDB is an optional PostgreSQL hot standby of db (a streaming
	// read replica) for the reads that may be a moment stale: Search,
	// Count and Get. A principal's tenant reads its own writes: after
	// Restore, Clear, RestoreAll, ClearAll or Add, this Trash sends the
	// tenant's reads to db until the standby has replayed the write
	// (waiting up to 100 ms for it); Add in the host's transaction sends
	// them to db's position at read time for 10 s. Whatever this process
	// wrote, reads go to db while the standby's replay lag is ReadMaxLag
	// or more or it does not answer; a read the standby fails runs again
	// on db. Purges by retention reach the standby's readers within
	// the lag bound. Open ReadDB as db is opened (a pool behind PgBouncer
	// in transaction mode prepares nothing here either). Nil reads
	// everything from db. The rules are in examples/server/README.md
	// (Read replica).
	ReadDB *bun.DB
	// ReadMaxLag is the replay lag from which ReadDB gets no reads; 1 s
	// if 0.
	ReadMaxLag time.Duration
}

// withDefaults returns a copy of c (nil: of the zero Config) with the
// defaults filled in. New calls it, then validate on the copy, as every
// constructor of the module does.
func (c *Config) withDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.BatchSize == 0 {
		out.BatchSize = DefaultBatchSize
	}
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	if c.BatchSize < 0 {
		return errors.New("trash: BatchSize must not be negative")
	}
	if c.Retention < 0 {
		return errors.New("trash: Retention must not be negative")
	}
	if c.ReadMaxLag < 0 {
		return errors.New("trash: ReadMaxLag must not be negative")
	}
	return checkPublisher(c.Publisher)
}

// checkPublisher refuses a publisher that says (deskkit.EventTypeChecker)
// it does not know one of the trash's event types: an operation that
// publishes would otherwise fail at its publish. A publisher that cannot
// say is taken on trust.
func checkPublisher(p deskkit.Publisher) error {
	if name := deskkit.UnknownEventType(p, EventTypes()); name != "" {
		return fmt.Errorf("trash: the publisher does not know event type %s: call ChannelRegistry.RegisterEventTypes(trash.EventTypes()...) before trash.New", name)
	}
	return nil
}

// Trash is the recycle bin of tasks and sprints. It is safe for concurrent
// use, also by several processes sharing one database.
type Trash struct {
	db       *bun.DB
	restorer Restorer
	cfg      Config
	postgres bool
	ops      telemetry.Ops
	reads    *readroute.Router // Search, Count and Get: db, or Config.ReadDB
}

// New returns a trash over db, whose schema Migrate has created, with the
// host's restorer.
//
// New checks, after its arguments, that Migrate has run: one catalog query
// for the trash's tables, bounded by 5 seconds of its own (New takes no
// context). A missing table is an error naming the call that creates it
// ("trash.New: table deskkit_trash does not exist: run trash.Migrate(ctx,
// db) first"); a database that does not answer in time, or fails, is an
// error of its own that wraps the database's (context.DeadlineExceeded for
// the bound) and says nothing of migrating.
func New(db *bun.DB, restorer Restorer, cfg *Config) (*Trash, error) {
	if db == nil {
		return nil, errors.New("trash: db is required")
	}
	if restorer == nil {
		return nil, errors.New("trash: restorer is required")
	}
	d, err := migrate.DialectOf(db)
	if err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.ReadDB != nil {
		if rd, err := migrate.DialectOf(c.ReadDB); err != nil || !rd.Postgres || !d.Postgres {
			return nil, errors.New("trash: ReadDB is for a PostgreSQL standby of a PostgreSQL db")
		}
	}
	if err := migrate.Check(db, "trash.New", "trash.Migrate", tables, migrations); err != nil {
		return nil, err
	}
	reads, err := readroute.New(db, c.ReadDB, readroute.Config{Now: c.Now, MaxLag: c.ReadMaxLag})
	if err != nil {
		return nil, err
	}
	return &Trash{db: db, restorer: restorer, cfg: *c, postgres: d.Postgres, ops: newOps(*c), reads: reads}, nil
}

// tables are the tables Migrate creates, which New checks for.
var tables = []string{"deskkit_trash", "deskkit_trash_counts"}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate creates or updates the trash's tables (deskkit_trash,
// deskkit_trash_counts, and the deskkit_trash_migrations bookkeeping). It is safe to run from several
// processes at once. On PostgreSQL it needs the pg_trgm extension, which it
// creates if missing (a trusted extension: the database owner may), for
// the trigram index of substring search.
//
// deskkit_trash_counts holds the number of entries per tenant, target type
// and project, kept exact by triggers on deskkit_trash, so that any writer
// (Add in a host transaction, the batch jobs, a bulk load with plain
// INSERTs; see FoldName) keeps it right. Rows never move between tenants,
// projects or types (a trigger refuses it); only target_name may be
// changed in place. The same statements serve PostgreSQL and SQLite; the
// few differences sit side by side in the migration templates.
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, migrations.Table, migrations.FS)
}

// migrations is what Migrate applies, and New checks.
var migrations = migrate.Set{Table: "deskkit_trash_migrations", FS: migrationFiles}

// NewEntry is what the host knows of a target it is deleting.
type NewEntry struct {
	ProjectID  int64
	TargetType TargetType
	TargetID   int64
	TargetName string
	SprintID   *int64 // for a task in a sprint; must be nil for a sprint
	CreatedBy  int64  // who created the target
}

// Add puts a target in the trash, deleted by p now. Call it inside the
// transaction that deletes (or hides) the target, passing that transaction
// as db, so that both commit together or not at all.
//
// Add locks the project's counter row of the entry's type (see Lock order in
// the package doc). Where the host can, it calls Add before it locks or
// changes its own rows, so that its transaction takes locks in the trash's
// order (counters, then host rows); a host transaction that takes them the
// other way round may lose a deadlock to a concurrent restore and should be
// retried (database/sql hosts: on SQLSTATE 40P01).
//
// With a Config.Publisher, Add publishes task.trashed or sprint.trashed
// through db, so the event commits or rolls back with the host's
// transaction; given a plain *bun.DB rather than a transaction, Add opens
// one of its own for the entry and its event. The actor's name
// (Config.Users) is asked before the insert, but necessarily inside the
// host's transaction: Add hands the resolver db, and the resolver reads
// through it, never through a second connection of the pool (see
// UserResolver).
//
// Add accepts a TargetName that deskkit.CheckName accepts with MaxNameLength
// (valid UTF-8, not blank, no control characters, no bidirectional
// embeddings, overrides or isolates; emoji sequences joined by U+200D stay
// valid), the rule every deskkit service and the reference host share, so
// that what Add accepts is exactly what Get returns on both databases.
//
// It returns an *deskkit.InputError for a bad field and ErrConflict if the
// target is in the trash already; neither aborts a PostgreSQL transaction.
// An error of the publisher (or of Config.Users, when publishing) is
// returned wrapped, and may have aborted the host's PostgreSQL transaction:
// roll it back.
func (t *Trash) Add(ctx context.Context, db bun.IDB, p deskkit.Principal, e NewEntry) (Entry, error) {
	ctx, call := t.ops.Start(ctx, "trash.Add", "add")
	call.Kind = kindOf(e.TargetType)
	v, err := t.addEntry(ctx, db, p, e)
	call.End(err)
	if err == nil {
		switch db.(type) {
		case bun.Tx, *bun.Tx:
			t.reads.Pending(p.TenantID) // the host commits it, later
		default:
			t.reads.Wrote(ctx, p.TenantID)
		}
	}
	return v, err
}

func (t *Trash) addEntry(ctx context.Context, db bun.IDB, p deskkit.Principal, e NewEntry) (Entry, error) {
	if !p.Valid() {
		return Entry{}, ErrUnauthenticated
	}
	switch {
	case e.ProjectID < 1:
		return Entry{}, deskkit.Invalid("projectId", "must be a positive integer")
	case !e.TargetType.Valid():
		return Entry{}, deskkit.Invalid("targetType", "must be TASK or TASK_SPRINT")
	case e.TargetID < 1:
		return Entry{}, deskkit.Invalid("targetId", "must be a positive integer")
	case e.TargetType == TargetSprint && e.SprintID != nil:
		return Entry{}, deskkit.Invalid("sprintId", "must be empty for a sprint")
	case e.SprintID != nil && *e.SprintID < 1:
		return Entry{}, deskkit.Invalid("sprintId", "must be a positive integer")
	case e.CreatedBy < 1:
		return Entry{}, deskkit.Invalid("createdBy", "must be a positive integer")
	}
	// The shared rule for names: what passes is stored and read back as it
	// is (PostgreSQL cannot store NUL; invalid UTF-8 would come back changed).
	if err := deskkit.CheckName("targetName", e.TargetName, MaxNameLength); err != nil {
		return Entry{}, err
	}
	// The actor's name before the insert, which takes the trash's lock,
	// through db: in the host's transaction, which holds a connection, a
	// lookup through the pool would wait for a second one.
	actor, err := t.actor(ctx, db, p)
	if err != nil {
		return Entry{}, err
	}
	now := t.cfg.Now()
	r := row{
		TenantID:         p.TenantID,
		ProjectID:        e.ProjectID,
		TargetType:       e.TargetType,
		TargetID:         e.TargetID,
		TargetName:       e.TargetName,
		TargetNameFolded: FoldName(e.TargetName),
		SprintID:         e.SprintID,
		CreatedBy:        e.CreatedBy,
		DeletedBy:        p.UserID,
		DeletedDate:      now.UTC().Truncate(time.Second),
	}
	add := func(ctx context.Context, db bun.IDB) error {
		r.ID = 0 // a retried transaction starts over
		// ON CONFLICT DO NOTHING rather than catching the unique violation:
		// a failed statement would abort the host's PostgreSQL transaction.
		res, err := db.NewInsert().Model(&r).
			On("CONFLICT (tenant_id, target_type, target_id) DO NOTHING").
			Returning("id").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("trash: add: %w", err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("trash: %s %d is in the trash already: %w", e.TargetType, e.TargetID, ErrConflict)
		}
		return t.publishTrashed(ctx, db, actor, r, now)
	}
	switch db.(type) {
	case bun.Tx, *bun.Tx:
		err = add(ctx, db)
	default:
		if t.cfg.Publisher == nil {
			err = add(ctx, db) // one statement: no transaction needed
			break
		}
		// The entry and its event commit together, also when the host
		// passed no transaction.
		err = deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error { return add(ctx, tx) })
	}
	if err != nil {
		return Entry{}, err
	}
	return r.entry(t.cfg.Retention), nil
}

// Get returns one entry of p's tenant as a search with InfoScope InfoDetail
// shows it: with the deleter's and the creator's names and avatars from
// Config.Users (one call of the resolver, after the entry is read; none
// without a resolver). One entry is what a detail view shows, so it carries
// everything a search can.
//
// It returns ErrNotFound for an id that is not in p's tenant's trash and
// for an entry of a project p may not see (see ProjectViewer), exactly as
// Search would not list it, and ErrUnauthenticated for an invalid p.
func (t *Trash) Get(ctx context.Context, p deskkit.Principal, id int64) (Entry, error) {
	ctx, call := t.ops.Start(ctx, "trash.Get", "get")
	v, err := t.get(ctx, call, p, id)
	call.End(err)
	return v, err
}

func (t *Trash) get(ctx context.Context, call *telemetry.Call, p deskkit.Principal, id int64) (Entry, error) {
	if !p.Valid() {
		return Entry{}, ErrUnauthenticated
	}
	var es []Entry
	err := t.reads.Do(ctx, p.TenantID, func(db bun.IDB) error {
		r, err := t.read(ctx, db, p, id)
		if err != nil {
			return err
		}
		call.Kind = kindOf(r.TargetType)
		es = []Entry{r.entry(t.cfg.Retention)}
		if t.cfg.Users != nil {
			return t.resolveUsers(ctx, db, p.TenantID, es, true)
		}
		return nil
	})
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}

// read returns entry id of p's tenant if p may see its project, else
// ErrNotFound. It asks the ProjectViewer, so it runs outside transactions.
func (t *Trash) read(ctx context.Context, db bun.IDB, p deskkit.Principal, id int64) (row, error) {
	var r row
	err := db.NewSelect().Model(&r).Where("t.id = ? AND t.tenant_id = ?", id, p.TenantID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, ErrNotFound
	}
	if err != nil {
		return row{}, fmt.Errorf("trash: get: %w", err)
	}
	if err := t.checkVisible(ctx, p, r.ProjectID); err != nil {
		return row{}, err
	}
	return r, nil
}

// visible is the set of projects p may see: every one for admins and
// without a ProjectViewer, else what the viewer says.
func (t *Trash) visible(ctx context.Context, p deskkit.Principal) (ProjectScope, error) {
	v, ok := t.cfg.Authorizer.(ProjectViewer)
	if p.Admin || !ok {
		return ProjectScope{All: true}, nil
	}
	s, err := v.VisibleProjects(ctx, p)
	if err != nil {
		return ProjectScope{}, fmt.Errorf("trash: visible projects: %w", err)
	}
	return s, nil
}

// checkVisible returns ErrNotFound if p may not see projectID: to p, an
// invisible project's trash does not exist.
func (t *Trash) checkVisible(ctx context.Context, p deskkit.Principal, projectID int64) error {
	s, err := t.visible(ctx, p)
	if err != nil {
		return err
	}
	if !s.Contains(projectID) {
		return ErrNotFound
	}
	return nil
}

// Count returns how many entries, tasks and sprints, the project has in the
// trash of p's tenant. It returns an *deskkit.InputError for a bad projectID
// and ErrNotFound for a project p may not see.
//
// Count, and the totals of searches that filter by type and project only,
// read the counts table (see Migrate) instead of counting rows: a
// tenant-wide total over a million entries costs a few hundred counter rows.
func (t *Trash) Count(ctx context.Context, p deskkit.Principal, projectID int64) (int64, error) {
	ctx, call := t.ops.Start(ctx, "trash.Count", "count")
	var v int64
	// The input is checked before a pool is picked (a read routed to the
	// primary may first wait for the standby's replay).
	err := checkCount(p, projectID)
	if err == nil {
		err = t.reads.Do(ctx, p.TenantID, func(db bun.IDB) (err error) {
			v, err = t.count(ctx, db, p, projectID)
			return err
		})
	}
	call.End(err)
	return v, err
}

// checkCount checks Count's input.
func checkCount(p deskkit.Principal, projectID int64) error {
	if !p.Valid() {
		return ErrUnauthenticated
	}
	return deskkit.CheckID("projectId", projectID)
}

// count is Count, its input checked, on db.
func (t *Trash) count(ctx context.Context, db bun.IDB, p deskkit.Principal, projectID int64) (int64, error) {
	if err := t.checkVisible(ctx, p, projectID); err != nil {
		return 0, err
	}
	// One statement, written out and scanned into a plain variable: a
	// count is little more than its token lookup and this read, so bun's
	// query builder would be a large share of it.
	var n int64
	if err := db.QueryRowContext(ctx, countSQL, p.TenantID, projectID).Scan(&n); err != nil {
		return 0, fmt.Errorf("trash: count: %w", err)
	}
	return n, nil
}

// countSQL is Count's statement: what counted reads for one project of
// both types.
const countSQL = `SELECT coalesce(sum(entries), 0) FROM deskkit_trash_counts WHERE tenant_id = ? AND project_id = ?`

// counted reads deskkit_trash_counts, which triggers keep exact: the entries
// of a tenant, of one type unless typ is "", of the given projects unless
// projects is nil (every project).
func (t *Trash) counted(ctx context.Context, db bun.IDB, tenantID int64, typ TargetType, projects []int64) (int64, error) {
	q := db.NewSelect().Table("deskkit_trash_counts").ColumnExpr("coalesce(sum(entries), 0)").Where("tenant_id = ?", tenantID)
	if typ != "" {
		q = q.Where("target_type = ?", typ)
	}
	if projects != nil {
		q = q.Where("project_id IN (?)", bun.List(projects))
	}
	var n int64
	err := q.Scan(ctx, &n)
	return n, err
}

// Search returns a page of p's tenant's entries matching q, and how many
// match in all, within the projects p may see. It returns an
// *deskkit.InputError naming the field for a query that breaks a rule, and
// ErrNotFound for a q.ProjectID p may not see.
//
// A search holds at most one database connection at a time, so that with a
// bounded pool N concurrent searches cannot each hold one connection while
// waiting for a second: it reads the page, then the total if the page alone
// does not tell it (a page shorter than the page size does), from the
// counts table when the query filters by type and project only (see Count),
// else by counting the matching rows. Its costs on a million entries are in
// examples/server/README.md (Trash and verification in detail).
//
// User input reaches SQL only as bound values of bun's placeholders; keys,
// ops and order fields are looked up in fixed tables.
func (t *Trash) Search(ctx context.Context, p deskkit.Principal, q Query) (Page, error) {
	ctx, call := t.ops.Start(ctx, "trash.Search", "search")
	call.Kind = kindOf(q.TargetType)
	var v Page
	// The query is compiled (checked) before a pool is picked, as in Count.
	pl, err := compileFor(p, q)
	if err == nil {
		err = t.reads.Do(ctx, p.TenantID, func(db bun.IDB) (err error) {
			v, err = t.search(ctx, db, p, q, pl)
			return err
		})
	}
	call.End(err)
	return v, err
}

// compileFor checks Search's principal and compiles its query.
func compileFor(p deskkit.Principal, q Query) (plan, error) {
	if !p.Valid() {
		return plan{}, ErrUnauthenticated
	}
	return q.compile()
}

// search is Search of q, compiled to pl, on db. It adds the scope's
// condition to a copy of pl's.
func (t *Trash) search(ctx context.Context, db bun.IDB, p deskkit.Principal, q Query, pl plan) (Page, error) {
	pl.conds = slices.Clone(pl.conds)
	scope, err := t.visible(ctx, p)
	if err != nil {
		return Page{}, err
	}
	// The projects the total covers; nil for all.
	var projects []int64
	switch {
	case q.ProjectID != 0:
		if !scope.Contains(q.ProjectID) {
			return Page{}, ErrNotFound
		}
		projects = []int64{q.ProjectID}
	case !scope.All:
		if len(scope.IDs) == 0 {
			return Page{List: []Entry{}}, nil
		}
		projects = scope.IDs
		pl.conds = append(pl.conds, cond{"t.project_id IN (?)", []any{bun.List(projects)}})
	}
	filtered := func(sel *bun.SelectQuery) *bun.SelectQuery {
		sel = sel.Where("t.tenant_id = ?", p.TenantID)
		for _, c := range pl.conds {
			sel = sel.Where(c.sql, c.args...)
		}
		return sel
	}
	// A deferred join: page through ids alone (an index-only scan for the
	// common orders), then read the page's rows. Deep offsets then skip
	// index entries instead of whole rows.
	var rows []row
	ids := filtered(db.NewSelect().TableExpr("deskkit_trash AS t").Column("t.id")).
		OrderExpr(pl.order).Limit(pl.limit).Offset(pl.offset)
	if err := db.NewSelect().Model(&rows).Where("t.id IN (?)", ids).OrderExpr(pl.order).Scan(ctx); err != nil {
		return Page{}, fmt.Errorf("trash: search: %w", err)
	}
	// The total, after the page and on the same single connection's worth
	// of pool: a short page that is not empty (or the first page) already
	// tells it; else the counts table when the query filters by type and
	// project only; else a count of the matching rows.
	var total int64
	switch {
	case len(rows) < pl.limit && (len(rows) > 0 || pl.offset == 0):
		total = int64(pl.offset + len(rows))
	case pl.counted:
		if total, err = t.counted(ctx, db, p.TenantID, q.TargetType, projects); err != nil {
			return Page{}, fmt.Errorf("trash: search total: %w", err)
		}
	default:
		n, err := filtered(db.NewSelect().TableExpr("deskkit_trash AS t")).Count(ctx)
		if err != nil {
			return Page{}, fmt.Errorf("trash: search total: %w", err)
		}
		total = int64(n)
	}
	page := Page{Total: total, List: entries(rows, t.cfg.Retention)}
	if t.cfg.Users != nil && len(page.List) > 0 {
		if err := t.resolveUsers(ctx, db, p.TenantID, page.List, pl.detailed); err != nil {
			return Page{}, err
		}
	}
	return page, nil
}

// resolveUsers fills the deleters' names of es, and with detailed also the
// creators' names and both avatars, in one call of the UserResolver.
func (t *Trash) resolveUsers(ctx context.Context, db bun.IDB, tenantID int64, es []Entry, detailed bool) error {
	ids := make([]int64, 0, 2*len(es))
	for _, e := range es {
		ids = append(ids, e.DeletedBy)
		if detailed {
			ids = append(ids, e.CreatedBy)
		}
	}
	slices.Sort(ids)
	users, err := t.cfg.Users.ResolveUsers(ctx, db, tenantID, slices.Compact(ids))
	if err != nil {
		return fmt.Errorf("trash: resolve users: %w", err)
	}
	for i := range es {
		d := users[es[i].DeletedBy]
		es[i].DeletedByName = d.Name
		if detailed {
			c := users[es[i].CreatedBy]
			es[i].CreatedByName, es[i].CreatedByAvatar = c.Name, c.Avatar
			es[i].DeletedByAvatar = d.Avatar
		}
	}
	return nil
}

// Restore takes one entry out of the trash and brings its target back
// through the Restorer. A task whose sprint is in the trash too brings the
// sprint back first, even if p did not delete the sprint: the task cannot
// live without it. Everything happens in one transaction, the event
// (task.restored or sprint.restored) included: if the Restorer or the
// publisher fails, the entries stay.
//
// It returns ErrNotFound if the entry is not in p's tenant's trash, is in a
// project p may not see, or was just restored or cleared by someone else;
// and ErrForbidden if p may not manage the project and neither deleted nor
// created the target.
func (t *Trash) Restore(ctx context.Context, p deskkit.Principal, id int64) error {
	ctx, call := t.ops.Start(ctx, "trash.Restore", "restore")
	err := t.restore(ctx, call, p, id)
	call.End(err)
	t.wrote(ctx, p, err)
	return err
}

func (t *Trash) restore(ctx context.Context, call *telemetry.Call, p deskkit.Principal, id int64) error {
	if !p.Valid() {
		return ErrUnauthenticated
	}
	e, _, err := t.authorize(ctx, p, id)
	call.Kind = kindOf(e.TargetType) // known also when p may not
	if err != nil {
		return err
	}
	actor, err := t.actor(ctx, t.db, p)
	if err != nil {
		return err
	}
	return t.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := t.lockProjects(ctx, tx, p.TenantID, []int64{e.ProjectID}); err != nil {
			return err
		}
		// Sprint entries before task entries (the lock order).
		var sprints []row
		if e.TargetType == TargetTask && e.SprintID != nil {
			var err error
			sprints, err = t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
				return q.Where("t.tenant_id = ? AND t.project_id = ? AND t.target_type = ? AND t.target_id = ?", p.TenantID, e.ProjectID, TargetSprint, *e.SprintID)
			})
			if err != nil {
				return err
			}
		}
		self, err := t.takeOne(ctx, tx, p.TenantID, id)
		if err != nil {
			return err
		}
		if err := t.apply(ctx, tx, append(sprints, self), true); err != nil {
			return err
		}
		return t.publishRestored(ctx, tx, actor, self, sprints, t.cfg.Now())
	})
}

// Clear removes one entry for good and purges its target through the
// Restorer. Clearing a sprint first clears the entries of the tasks that
// belonged to it, so no task is left in the trash without its sprint; if
// one of those p could not clear on its own (p may not manage the project
// and neither deleted nor created the task), Clear refuses with an
// ErrForbidden saying so and changes nothing. One transaction, the event
// (task.cleared or sprint.cleared) included: if the Restorer or the
// publisher fails, nothing changes.
//
// It returns ErrNotFound and ErrForbidden as Restore does.
func (t *Trash) Clear(ctx context.Context, p deskkit.Principal, id int64) error {
	ctx, call := t.ops.Start(ctx, "trash.Clear", "clear")
	err := t.clear(ctx, call, p, id)
	call.End(err)
	t.wrote(ctx, p, err)
	return err
}

func (t *Trash) clear(ctx context.Context, call *telemetry.Call, p deskkit.Principal, id int64) error {
	if !p.Valid() {
		return ErrUnauthenticated
	}
	e, manage, err := t.authorize(ctx, p, id)
	call.Kind = kindOf(e.TargetType) // known also when p may not
	if err != nil {
		return err
	}
	actor, err := t.actor(ctx, t.db, p)
	if err != nil {
		return err
	}
	return t.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := t.lockProjects(ctx, tx, p.TenantID, []int64{e.ProjectID}); err != nil {
			return err
		}
		self, err := t.takeOne(ctx, tx, p.TenantID, id)
		if err != nil {
			return err
		}
		all, err := t.purge(ctx, tx, p, manage, []row{self})
		if err != nil {
			return err
		}
		return t.publishCleared(ctx, tx, actor, self, all, t.cfg.Now())
	})
}

// authorize reads entry id and decides, before any transaction, whether p
// may restore or clear it: hooks are asked before locks are taken. Entries
// never move between projects (a trigger refuses it), so the decision holds
// for the entry the transaction then takes by id, or finds gone. manage
// reports whether p may manage the entry's whole project.
func (t *Trash) authorize(ctx context.Context, p deskkit.Principal, id int64) (e row, manage bool, err error) {
	e, err = t.read(ctx, t.db, p, id) // the primary: the decision is for a write
	if err != nil {
		return row{}, false, err
	}
	manage, err = t.canManage(ctx, p, e.ProjectID)
	if err != nil {
		return row{}, false, err
	}
	if !mayAct(p, manage, e.DeletedBy, e.CreatedBy) {
		return e, false, ErrForbidden // e for the metrics' kind only
	}
	return e, manage, nil
}

func (t *Trash) canManage(ctx context.Context, p deskkit.Principal, projectID int64) (bool, error) {
	if p.Admin {
		return true, nil
	}
	if t.cfg.Authorizer == nil {
		return false, nil
	}
	ok, err := t.cfg.Authorizer.CanManageProject(ctx, p, projectID)
	if err != nil {
		return false, fmt.Errorf("trash: authorize: %w", err)
	}
	return ok, nil
}

// wrote tells the read router that p's tenant wrote, after an operation
// that ended with err: nil, or an error after batches that committed.
func (t *Trash) wrote(ctx context.Context, p deskkit.Principal, err error) {
	if p.Valid() && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrForbidden) && !errors.Is(err, ErrInvalid) {
		t.reads.Wrote(ctx, p.TenantID)
	}
}

// inTx runs fn in a transaction, again if PostgreSQL rolls it back for a
// deadlock or a serialization failure. fn does database work through tx
// only (and the Restorer must too), so running it again is safe.
func (t *Trash) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return deskkit.RunInTx(ctx, t.db, nil, fn)
}

// lockProjects locks, on PostgreSQL, the counter rows of the given projects
// of a tenant in primary-key order (tenant_id, target_type, project_id),
// creating missing ones, so that a row appearing later cannot be locked out
// of order. Every transaction that removes entries calls it first; since
// every change to a project's entries also locks one of these rows (the
// triggers), such transactions on one project run one after the other and
// cannot deadlock on entry rows. On SQLite, the IMMEDIATE transaction holds
// the database's write lock already.
func (t *Trash) lockProjects(ctx context.Context, tx bun.Tx, tenantID int64, projects []int64) error {
	if !t.postgres || len(projects) == 0 {
		return nil
	}
	projects = slices.Compact(slices.Sorted(slices.Values(projects)))
	type counter struct {
		TenantID   int64      `bun:"tenant_id"`
		TargetType TargetType `bun:"target_type"`
		ProjectID  int64      `bun:"project_id"`
		Entries    int64      `bun:"entries"`
	}
	keys := make([]counter, 0, 2*len(projects))
	for _, typ := range []TargetType{TargetTask, TargetSprint} { // "TASK" < "TASK_SPRINT"
		for _, id := range projects {
			keys = append(keys, counter{TenantID: tenantID, TargetType: typ, ProjectID: id})
		}
	}
	// A multi-row VALUES is inserted, and its conflicts locked, in order.
	// The no-op update is what takes the lock on an existing row.
	_, err := tx.NewInsert().Model(&keys).ModelTableExpr("deskkit_trash_counts AS c").
		On("CONFLICT (tenant_id, target_type, project_id) DO UPDATE SET entries = c.entries").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("trash: lock counts: %w", err)
	}
	return nil
}

// take deletes the entries where selects inside tx and returns them.
func (t *Trash) take(ctx context.Context, tx bun.Tx, where func(*bun.DeleteQuery) *bun.DeleteQuery) ([]row, error) {
	var rows []row
	if _, err := where(tx.NewDelete().Model((*row)(nil))).Returning("*").Exec(ctx, &rows); err != nil {
		return nil, fmt.Errorf("trash: take entries: %w", err)
	}
	return rows, nil
}

// takeOne deletes entry id of the tenant inside tx and returns it, or
// ErrNotFound if another operation took it since it was read.
func (t *Trash) takeOne(ctx context.Context, tx bun.Tx, tenantID, id int64) (row, error) {
	rows, err := t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("t.id = ? AND t.tenant_id = ?", id, tenantID)
	})
	if err != nil {
		return row{}, err
	}
	if len(rows) == 0 {
		return row{}, ErrNotFound
	}
	return rows[0], nil
}

// RestoreAll restores, sprints first, every entry of the project that p may
// manage: all of them for a project manager, else those p deleted or
// created (and the trashed sprints of those tasks). It works in batches of
// Config.BatchSize entries, each its own transaction (sprints and tasks
// share one when they fit), and returns how many entries it restored; on
// an error the batches before it stay restored. It returns ErrNotFound for
// a project p may not see.
//
// With a Config.Publisher it publishes one trash.restored with the total,
// in the transaction of its last batch; nothing if it restored nothing.
func (t *Trash) RestoreAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error) {
	ctx, call := t.ops.Start(ctx, "trash.RestoreAll", "restore_project")
	v, err := t.restoreAll(ctx, p, projectID)
	call.End(err)
	t.wrote(ctx, p, err)
	return v, err
}

func (t *Trash) restoreAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error) {
	return t.eachBatch(ctx, p, projectID, true)
}

// ClearAll clears, as Clear does, every entry of the project that p may
// manage, in batches as RestoreAll does, and returns how many entries it
// cleared (the tasks of cleared sprints included).
//
// If p may not manage the project and one of p's sprints holds trashed
// tasks p could not clear, ClearAll refuses with ErrForbidden before it
// changes anything. Each batch checks again inside its transaction, so a
// task trashed meanwhile is never purged behind p's back either; the batches
// before such a late refusal stay done.
//
// With a Config.Publisher it publishes one trash.cleared, as RestoreAll
// publishes trash.restored.
func (t *Trash) ClearAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error) {
	ctx, call := t.ops.Start(ctx, "trash.ClearAll", "clear_project")
	v, err := t.clearAll(ctx, p, projectID)
	call.End(err)
	t.wrote(ctx, p, err)
	return v, err
}

func (t *Trash) clearAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error) {
	return t.eachBatch(ctx, p, projectID, false)
}

func (t *Trash) eachBatch(ctx context.Context, p deskkit.Principal, projectID int64, restore bool) (int, error) {
	if !p.Valid() {
		return 0, ErrUnauthenticated
	}
	if err := deskkit.CheckID("projectId", projectID); err != nil {
		return 0, err
	}
	if err := t.checkVisible(ctx, p, projectID); err != nil {
		return 0, err
	}
	manage, err := t.canManage(ctx, p, projectID)
	if err != nil {
		return 0, err
	}
	actor, err := t.actor(ctx, t.db, p)
	if err != nil {
		return 0, err
	}
	scope := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("t.tenant_id = ? AND t.project_id = ?", p.TenantID, projectID)
		if !manage {
			q = q.Where("(t.deleted_by = ? OR t.created_by = ?)", p.UserID, p.UserID)
		}
		return q
	}
	order := []TargetType{TargetSprint, TargetTask}
	event := EventTrashRestored
	if !restore {
		order = []TargetType{TargetTask, TargetSprint}
		event = EventTrashCleared
		if !manage {
			// Refuse before changing anything.
			own := scope(t.db.NewSelect().TableExpr("deskkit_trash AS t").Column("t.target_id")).Where("t.target_type = ?", TargetSprint)
			if err := t.checkSprintTasks(ctx, t.db, p, projectID, own); err != nil {
				return 0, err
			}
		}
	}
	key := projectKey{tenantID: p.TenantID, projectID: projectID}
	// One event for the whole operation, with the total: nothing when it
	// took nothing.
	announce := func(ctx context.Context, tx bun.Tx, n int) error {
		if n == 0 {
			return nil
		}
		return t.publishProject(ctx, tx, event, actor, key, n, t.cfg.Now())
	}
	job := batchJob{
		lock: func(ctx context.Context, tx bun.Tx) error {
			return t.lockProjects(ctx, tx, p.TenantID, []int64{projectID})
		},
		last: func(ctx context.Context, tx bun.Tx, took tally) error { return announce(ctx, tx, took.total()) },
	}
	for _, typ := range order {
		job.passes = append(job.passes, batchPass{
			filter: func(q *bun.SelectQuery) *bun.SelectQuery {
				return scope(q).Where("t.target_type = ?", typ)
			},
			run: func(ctx context.Context, tx bun.Tx, batch *bun.SelectQuery) ([]row, int, int64, error) {
				if restore {
					return t.restoreBatch(ctx, tx, p.TenantID, projectID, batch)
				}
				es, err := t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
					return q.Where("t.id IN (?)", batch)
				})
				if err != nil || len(es) == 0 {
					return nil, 0, 0, err
				}
				all, err := t.purge(ctx, tx, p, manage, es)
				return all, len(es), maxID(es), err
			},
		})
	}
	done, err := t.inBatches(ctx, job)
	total := done.total()
	if err != nil && total > 0 {
		err = t.publishPartial(ctx, err, func(ctx context.Context, tx bun.Tx) error { return announce(ctx, tx, total) })
	}
	return total, err
}

// projectKey names a project of a tenant.
type projectKey struct{ tenantID, projectID int64 }

// tally counts entries per project.
type tally map[projectKey]int

func (c tally) add(rows []row) {
	for _, r := range rows {
		c[projectKey{tenantID: r.TenantID, projectID: r.ProjectID}]++
	}
}

func (c tally) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// keys returns the projects of c, ordered by tenant and project.
func (c tally) keys() []projectKey {
	keys := make([]projectKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b projectKey) int {
		return cmp.Or(cmp.Compare(a.tenantID, b.tenantID), cmp.Compare(a.projectID, b.projectID))
	})
	return keys
}

// batchFunc takes the entries that batch selects (a subquery of ids) out of
// the trash inside tx, with whatever must go with them, and restores or
// purges them. It returns every entry that left the trash, how many of them
// batch selected, and the highest id among those (0 if none).
type batchFunc func(ctx context.Context, tx bun.Tx, batch *bun.SelectQuery) (took []row, selected int, last int64, err error)

// batchPass is one walk of a batch job over the entries filter selects.
type batchPass struct {
	filter func(*bun.SelectQuery) *bun.SelectQuery
	run    batchFunc
}

// batchJob is a batch job: its passes, one after the other.
type batchJob struct {
	lock   func(ctx context.Context, tx bun.Tx) error // the counter locks: the lock order
	passes []batchPass
	// last, if set, runs in the transaction of the job's last batch, after
	// it, with every entry the job took, that batch's included: where the
	// job's event is published, so that it commits with the last change.
	last func(ctx context.Context, tx bun.Tx, took tally) error
}

// inBatches runs job: each pass walks its entries in id order, and each
// transaction takes job.lock and then at most BatchSize entries. Under
// those locks no one else changes the project's entries, so the batch a
// pass sees is the batch it takes. A pass that finishes with room left in
// the transaction's batch goes on to the next pass in the same transaction,
// so a job of at most BatchSize entries is one transaction: all or nothing,
// event included. Each batch starts after the last id of the one before,
// so no batch walks again over what earlier ones deleted (dead index
// entries until vacuum).
//
// It returns what the committed transactions took, also on an error, which
// leaves the transactions before it done.
func (t *Trash) inBatches(ctx context.Context, job batchJob) (tally, error) {
	done := tally{}
	pass, after := 0, int64(0)
	for pass < len(job.passes) {
		var took []row
		var p int
		var a int64
		err := t.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			took, p, a = nil, pass, after // a retried attempt starts over
			if err := job.lock(ctx, tx); err != nil {
				return err
			}
			for room := t.cfg.BatchSize; ; {
				ps := job.passes[p]
				batch := ps.filter(tx.NewSelect().TableExpr("deskkit_trash AS t").Column("t.id")).
					Where("t.id > ?", a).OrderExpr("t.id").Limit(room)
				rows, selected, last, err := ps.run(ctx, tx, batch)
				if err != nil {
					return err
				}
				took = append(took, rows...)
				if room -= selected; room == 0 {
					a = last // the pass may go on: in the next transaction
					return nil
				}
				if p, a = p+1, 0; p == len(job.passes) {
					if job.last == nil {
						return nil
					}
					all := maps.Clone(done)
					all.add(took)
					return job.last(ctx, tx, all)
				}
			}
		})
		if err != nil {
			return done, err
		}
		done.add(took)
		pass, after = p, a
	}
	return done, nil
}

// partialPublishTimeout bounds publishPartial, which runs even when the
// caller's context is done.
const partialPublishTimeout = 10 * time.Second

// publishPartial runs publish, the event of a batch job, in a transaction
// of its own after the job failed with err: the batches before the failure
// are done, and the tenant's channels should hear of them. It returns err,
// joined with publish's error if that failed too.
func (t *Trash) publishPartial(ctx context.Context, err error, publish func(ctx context.Context, tx bun.Tx) error) error {
	if t.cfg.Publisher == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), partialPublishTimeout)
	defer cancel()
	if perr := t.inTx(ctx, publish); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

func maxID(es []row) int64 {
	var m int64
	for _, e := range es {
		m = max(m, e.ID)
	}
	return m
}

// restoreBatch takes the entries that batch selects in one project out of
// the trash, with the trashed sprints of the tasks among them (sprint
// entries first: the lock order), and restores them all, sprints first.
func (t *Trash) restoreBatch(ctx context.Context, tx bun.Tx, tenantID, projectID int64, batch *bun.SelectQuery) ([]row, int, int64, error) {
	pulled := tx.NewSelect().TableExpr("deskkit_trash AS k").Column("k.sprint_id").
		Where("k.id IN (?) AND k.target_type = ? AND k.sprint_id IS NOT NULL", batch, TargetTask)
	sprints, err := t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("t.tenant_id = ? AND t.project_id = ? AND t.target_type = ? AND t.target_id IN (?)", tenantID, projectID, TargetSprint, pulled)
	})
	if err != nil {
		return nil, 0, 0, err
	}
	es, err := t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
		return q.Where("t.id IN (?)", batch)
	})
	if err != nil || len(es) == 0 {
		return nil, 0, 0, err
	}
	selected, last := len(es), maxID(es)
	all := append(sprints, es...)
	slices.SortFunc(all, func(a, b row) int {
		return cmp.Or(sprintFirst(a.TargetType)-sprintFirst(b.TargetType), cmp.Compare(a.ID, b.ID))
	})
	return all, selected, last, t.apply(ctx, tx, all, true)
}

// purge deletes es for good, taken out of the trash in tx, and returns
// every entry it purged. Task entries of sprints among es (in the sprint's
// project) come out and are purged first. Unless p manages the project (or
// is the system: a zero Principal, for retention), a sprint holding tasks p
// could not clear stops it with ErrForbidden.
func (t *Trash) purge(ctx context.Context, tx bun.Tx, p deskkit.Principal, manage bool, es []row) ([]row, error) {
	var tasks []row
	for _, key := range sprintsByProject(es) {
		if !manage {
			if err := t.checkSprintTasks(ctx, tx, p, key.projectID, bun.List(key.sprintIDs)); err != nil {
				return nil, err
			}
		}
		ts, err := t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
			return q.Where("t.tenant_id = ? AND t.project_id = ? AND t.target_type = ? AND t.sprint_id IN (?)", key.tenantID, key.projectID, TargetTask, bun.List(key.sprintIDs))
		})
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, ts...)
	}
	// Tasks before their sprints, each in id order.
	all := append(tasks, es...)
	slices.SortFunc(all, func(a, b row) int {
		return cmp.Or(sprintFirst(b.TargetType)-sprintFirst(a.TargetType), cmp.Compare(a.ID, b.ID))
	})
	return all, t.apply(ctx, tx, all, false)
}

type sprintGroup struct {
	tenantID, projectID int64
	sprintIDs           []int64
}

// sprintsByProject groups the target ids of the sprints among es by tenant
// and project, in that order.
func sprintsByProject(es []row) []sprintGroup {
	var out []sprintGroup
	for _, e := range es {
		if e.TargetType != TargetSprint {
			continue
		}
		i := slices.IndexFunc(out, func(g sprintGroup) bool { return g.tenantID == e.TenantID && g.projectID == e.ProjectID })
		if i < 0 {
			out = append(out, sprintGroup{tenantID: e.TenantID, projectID: e.ProjectID})
			i = len(out) - 1
		}
		out[i].sprintIDs = append(out[i].sprintIDs, e.TargetID)
	}
	slices.SortFunc(out, func(a, b sprintGroup) int {
		return cmp.Or(cmp.Compare(a.tenantID, b.tenantID), cmp.Compare(a.projectID, b.projectID))
	})
	return out
}

// checkSprintTasks returns ErrForbidden, naming the sprint, if one of the
// sprints (of the tenant's project; a bun.List of target ids or a subquery
// selecting them) holds trashed tasks that p neither deleted nor created:
// clearing the sprint would purge them, and p may not clear them. Callers
// use it only when p does not manage the project.
func (t *Trash) checkSprintTasks(ctx context.Context, db bun.IDB, p deskkit.Principal, projectID int64, sprints any) error {
	var found []int64
	err := db.NewSelect().TableExpr("deskkit_trash AS k").Column("k.sprint_id").
		Where("k.tenant_id = ? AND k.project_id = ? AND k.target_type = ?", p.TenantID, projectID, TargetTask).
		Where("k.sprint_id IN (?)", sprints).
		Where("k.deleted_by <> ? AND k.created_by <> ?", p.UserID, p.UserID).
		OrderExpr("k.sprint_id").Limit(1).
		Scan(ctx, &found)
	if err != nil {
		return fmt.Errorf("trash: check sprint tasks: %w", err)
	}
	if len(found) > 0 {
		return deskkit.NewErrorf(ErrForbidden, fmt.Sprintf("trash: sprint %d holds trashed tasks you may not clear", found[0]),
			"sprint %d holds trashed tasks you may not clear", found[0])
	}
	return nil
}

func sprintFirst(tt TargetType) int {
	if tt == TargetSprint {
		return 0
	}
	return 1
}

// apply runs the Restorer on es, in their order, as one batch call where the
// Restorer can take batches.
func (t *Trash) apply(ctx context.Context, tx bun.Tx, rows []row, restore bool) error {
	es := entries(rows, t.cfg.Retention)
	if b, ok := t.restorer.(BatchRestorer); ok && restore {
		return b.RestoreBatch(ctx, tx, es)
	}
	if b, ok := t.restorer.(BatchPurger); ok && !restore {
		return b.PurgeBatch(ctx, tx, es)
	}
	return t.applyEach(ctx, tx, es, restore)
}

func (t *Trash) applyEach(ctx context.Context, tx bun.Tx, es []Entry, restore bool) error {
	for _, e := range es {
		var err error
		if restore {
			err = t.restorer.Restore(ctx, tx, e)
		} else {
			err = t.restorer.Purge(ctx, tx, e)
		}
		if err != nil {
			return fmt.Errorf("trash: %s %s %d: %w", verb(restore), e.TargetType, e.TargetID, err)
		}
	}
	return nil
}

func verb(restore bool) string {
	if restore {
		return "restore"
	}
	return "purge"
}

// PurgeExpired purges, across all tenants, the entries deleted longer ago
// than Config.Retention, in batches, and returns how many it purged. It does
// nothing when Retention is 0. Several replicas may run it at once: each
// batch reads its entries, locks the counters of their projects in order
// (the lock order), and takes only the entries still there, so each entry is
// purged once. Run it on a timer, as the reference server does.
//
// With a Publisher, it publishes one trash.purged per project it purged
// entries of, in the transaction of its last batch (see Events in the
// package documentation).
func (t *Trash) PurgeExpired(ctx context.Context) (int, error) {
	ctx, call := t.ops.Start(ctx, "trash.PurgeExpired", "purge")
	v, err := t.purgeExpired(ctx)
	call.End(err)
	return v, err
}

func (t *Trash) purgeExpired(ctx context.Context) (int, error) {
	if t.cfg.Retention == 0 {
		return 0, nil
	}
	cutoff := t.cfg.Now().UTC().Add(-t.cfg.Retention)
	announce := func(ctx context.Context, tx bun.Tx, took tally) error {
		now := t.cfg.Now()
		for _, key := range took.keys() {
			if err := t.publishProject(ctx, tx, EventTrashPurged, nil, key, took[key], now); err != nil {
				return err
			}
		}
		return nil
	}
	done, err := t.inBatches(ctx, batchJob{
		lock: func(context.Context, bun.Tx) error { return nil }, // run locks what it finds
		passes: []batchPass{{
			filter: func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("t.deleted_date < ?", cutoff)
			},
			run: func(ctx context.Context, tx bun.Tx, batch *bun.SelectQuery) ([]row, int, int64, error) {
				// The batch spans projects, known only once read: read it, then
				// lock, then take what is still there.
				var found []row
				if err := tx.NewSelect().Model(&found).Column("t.id", "t.tenant_id", "t.project_id").
					Where("t.id IN (?)", batch).OrderExpr("t.id").Scan(ctx); err != nil {
					return nil, 0, 0, fmt.Errorf("trash: select expired: %w", err)
				}
				if len(found) == 0 {
					return nil, 0, 0, nil
				}
				if err := t.lockBatchProjects(ctx, tx, found); err != nil {
					return nil, 0, 0, err
				}
				ids := make([]int64, len(found))
				for i, r := range found {
					ids[i] = r.ID
				}
				es, err := t.take(ctx, tx, func(q *bun.DeleteQuery) *bun.DeleteQuery {
					return q.Where("t.id IN (?) AND t.deleted_date < ?", bun.List(ids), cutoff)
				})
				if err != nil {
					return nil, 0, 0, err
				}
				// Retention is the system's doing: it may purge everything.
				all, err := t.purge(ctx, tx, deskkit.Principal{}, true, es)
				return all, len(found), ids[len(ids)-1], err
			}}},
		last: announce,
	})
	if err != nil && len(done) > 0 {
		err = t.publishPartial(ctx, err, func(ctx context.Context, tx bun.Tx) error { return announce(ctx, tx, done) })
	}
	return done.total(), err
}

// lockBatchProjects locks the counters of every project of the batch,
// tenant by tenant in order, so that batches spanning projects keep the
// lock order too.
func (t *Trash) lockBatchProjects(ctx context.Context, tx bun.Tx, batch []row) error {
	byTenant := map[int64][]int64{}
	for _, r := range batch {
		byTenant[r.TenantID] = append(byTenant[r.TenantID], r.ProjectID)
	}
	for _, tenantID := range sortedKeys(byTenant) {
		if err := t.lockProjects(ctx, tx, tenantID, byTenant[tenantID]); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

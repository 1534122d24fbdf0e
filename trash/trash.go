package trash

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/migrate"
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
	// Authorizer says who may manage a whole project besides admins.
	Authorizer Authorizer
	// Users resolves names and avatars for detailed searches. Without it a
	// detailed search answers like a basic one.
	Users UserResolver
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// BatchSize is the entries per transaction of restore-all, clear-all and
	// retention; DefaultBatchSize if 0.
	BatchSize int
	// Retention is how long entries stay before PurgeExpired purges them;
	// 0 keeps them until cleared.
	Retention time.Duration
}

func (c *Config) withDefaults() Config {
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
	return out
}

func (c *Config) validate() error {
	if c.BatchSize < 0 {
		return errors.New("trash: BatchSize must not be negative")
	}
	if c.Retention < 0 {
		return errors.New("trash: Retention must not be negative")
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
}

// New returns a trash over db, whose schema Migrate has created, with the
// host's restorer.
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
	return &Trash{db: db, restorer: restorer, cfg: c, postgres: d.Postgres}, nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate creates or updates the trash's tables (deskkit_trash, and the
// deskkit_trash_migrations bookkeeping). It is safe to run from several
// processes at once. On PostgreSQL it needs the pg_trgm extension, which it
// creates if missing (a trusted extension: the database owner may).
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, "deskkit_trash_migrations", migrationFiles)
}

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
// It returns an *deskkit.InputError for a bad field and ErrConflict if the
// target is in the trash already; neither aborts a PostgreSQL transaction.
func (t *Trash) Add(ctx context.Context, db bun.IDB, p deskkit.Principal, e NewEntry) (Entry, error) {
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
	case e.TargetName == "":
		return Entry{}, deskkit.Invalid("targetName", "is required")
	case len([]rune(e.TargetName)) > MaxNameLength:
		return Entry{}, deskkit.Invalid("targetName", "must be at most %d characters", MaxNameLength)
	case e.TargetType == TargetSprint && e.SprintID != nil:
		return Entry{}, deskkit.Invalid("sprintId", "must be empty for a sprint")
	case e.SprintID != nil && *e.SprintID < 1:
		return Entry{}, deskkit.Invalid("sprintId", "must be a positive integer")
	case e.CreatedBy < 1:
		return Entry{}, deskkit.Invalid("createdBy", "must be a positive integer")
	}
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
		DeletedDate:      t.cfg.Now().UTC().Truncate(time.Second),
	}
	// ON CONFLICT DO NOTHING rather than catching the unique violation: a
	// failed statement would abort the host's PostgreSQL transaction.
	res, err := db.NewInsert().Model(&r).
		On("CONFLICT (tenant_id, target_type, target_id) DO NOTHING").
		Returning("id").
		Exec(ctx)
	if err != nil {
		return Entry{}, fmt.Errorf("trash: add: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return Entry{}, fmt.Errorf("trash: %s %d is in the trash already: %w", e.TargetType, e.TargetID, ErrConflict)
	}
	return r.entry(), nil
}

// Get returns one entry of p's tenant, or ErrNotFound.
func (t *Trash) Get(ctx context.Context, p deskkit.Principal, id int64) (Entry, error) {
	if !p.Valid() {
		return Entry{}, ErrUnauthenticated
	}
	var r row
	err := t.db.NewSelect().Model(&r).Where("t.id = ? AND t.tenant_id = ?", id, p.TenantID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, ErrNotFound
	}
	if err != nil {
		return Entry{}, fmt.Errorf("trash: get: %w", err)
	}
	return r.entry(), nil
}

// Count returns how many entries, tasks and sprints, the project has in the
// trash of p's tenant. It returns an *deskkit.InputError for a bad projectID.
func (t *Trash) Count(ctx context.Context, p deskkit.Principal, projectID int64) (int64, error) {
	if !p.Valid() {
		return 0, ErrUnauthenticated
	}
	if projectID < 1 {
		return 0, deskkit.Invalid("projectId", "must be a positive integer")
	}
	n, err := t.counted(ctx, p.TenantID, "", projectID)
	if err != nil {
		return 0, fmt.Errorf("trash: count: %w", err)
	}
	return n, nil
}

// counted reads deskkit_trash_counts, which triggers keep exact: the entries
// of a tenant, of one type unless typ is "", of one project unless
// projectID is 0.
func (t *Trash) counted(ctx context.Context, tenantID int64, typ TargetType, projectID int64) (int64, error) {
	q := t.db.NewSelect().Table("deskkit_trash_counts").ColumnExpr("coalesce(sum(entries), 0)").Where("tenant_id = ?", tenantID)
	if typ != "" {
		q = q.Where("target_type = ?", typ)
	}
	if projectID != 0 {
		q = q.Where("project_id = ?", projectID)
	}
	var n int64
	err := q.Scan(ctx, &n)
	return n, err
}

// Search returns a page of p's tenant's entries matching q, and how many
// match in all. It returns an *deskkit.InputError naming the field for a
// query that breaks a rule.
func (t *Trash) Search(ctx context.Context, p deskkit.Principal, q Query) (Page, error) {
	if !p.Valid() {
		return Page{}, ErrUnauthenticated
	}
	pl, err := q.compile()
	if err != nil {
		return Page{}, err
	}
	filtered := func(sel *bun.SelectQuery) *bun.SelectQuery {
		sel = sel.Where("t.tenant_id = ?", p.TenantID)
		for _, c := range pl.conds {
			sel = sel.Where(c.sql, c.args...)
		}
		return sel
	}
	// The page and the total run concurrently, on two connections.
	var (
		rows     []row
		total    int64
		totalErr error
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if pl.counted {
			total, totalErr = t.counted(ctx, p.TenantID, q.TargetType, pl.projectID)
			return
		}
		var n int
		n, totalErr = filtered(t.db.NewSelect().TableExpr("deskkit_trash AS t")).Count(ctx)
		total = int64(n)
	}()
	// A deferred join: page through ids alone (an index-only scan for the
	// common orders), then read the page's rows. Deep offsets then skip
	// index entries instead of whole rows.
	ids := filtered(t.db.NewSelect().TableExpr("deskkit_trash AS t").Column("t.id")).
		OrderExpr(pl.order).Limit(pl.limit).Offset(pl.offset)
	err = t.db.NewSelect().Model(&rows).Where("t.id IN (?)", ids).OrderExpr(pl.order).Scan(ctx)
	wg.Wait()
	if err = errors.Join(err, totalErr); err != nil {
		return Page{}, fmt.Errorf("trash: search: %w", err)
	}
	page := Page{Total: total, List: entries(rows)}
	if pl.detailed && t.cfg.Users != nil && len(page.List) > 0 {
		if err := t.resolveUsers(ctx, p.TenantID, page.List); err != nil {
			return Page{}, err
		}
	}
	return page, nil
}

func (t *Trash) resolveUsers(ctx context.Context, tenantID int64, es []Entry) error {
	ids := make([]int64, 0, 2*len(es))
	for _, e := range es {
		ids = append(ids, e.CreatedBy, e.DeletedBy)
	}
	slices.Sort(ids)
	users, err := t.cfg.Users.ResolveUsers(ctx, tenantID, slices.Compact(ids))
	if err != nil {
		return fmt.Errorf("trash: resolve users: %w", err)
	}
	for i := range es {
		c, d := users[es[i].CreatedBy], users[es[i].DeletedBy]
		es[i].CreatedByName, es[i].CreatedByAvatar = c.Name, c.Avatar
		es[i].DeletedByName, es[i].DeletedByAvatar = d.Name, d.Avatar
	}
	return nil
}

// Restore takes one entry out of the trash and brings its target back
// through the Restorer. A task whose sprint is in the trash too brings the
// sprint back first. Everything happens in one transaction: if the Restorer
// fails, the entries stay.
//
// It returns ErrNotFound if the entry is not in p's tenant's trash (or was
// just restored or cleared by someone else), and ErrForbidden if p may not
// manage the project and neither deleted nor created the target.
func (t *Trash) Restore(ctx context.Context, p deskkit.Principal, id int64) error {
	if !p.Valid() {
		return ErrUnauthenticated
	}
	return t.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		e, err := t.take(ctx, tx, p, id)
		if err != nil {
			return err
		}
		_, err = t.restore(ctx, tx, p.TenantID, []row{e})
		return err
	})
}

// Clear removes one entry for good and purges its target through the
// Restorer. Clearing a sprint first clears the entries of the tasks that
// belonged to it, so no task is left in the trash without its sprint. One
// transaction: if the Restorer fails, nothing changes.
//
// It returns ErrNotFound and ErrForbidden as Restore does.
func (t *Trash) Clear(ctx context.Context, p deskkit.Principal, id int64) error {
	if !p.Valid() {
		return ErrUnauthenticated
	}
	return t.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		e, err := t.take(ctx, tx, p, id)
		if err != nil {
			return err
		}
		_, err = t.purge(ctx, tx, p.TenantID, []row{e})
		return err
	})
}

// take deletes entry id from the trash inside tx and returns it, if p may
// manage it. Deleting first locks the row: of two concurrent restores or
// clears of one entry, the second waits and then finds nothing.
func (t *Trash) take(ctx context.Context, tx bun.Tx, p deskkit.Principal, id int64) (row, error) {
	var rows []row
	if _, err := tx.NewDelete().Model((*row)(nil)).
		Where("t.id = ? AND t.tenant_id = ?", id, p.TenantID).
		Returning("*").
		Exec(ctx, &rows); err != nil {
		return row{}, fmt.Errorf("trash: take entry: %w", err)
	}
	if len(rows) == 0 {
		return row{}, ErrNotFound
	}
	e := rows[0]
	if e.DeletedBy == p.UserID || e.CreatedBy == p.UserID {
		return e, nil
	}
	ok, err := t.canManage(ctx, p, e.ProjectID)
	if err != nil {
		return row{}, err
	}
	if !ok {
		return row{}, ErrForbidden
	}
	return e, nil
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

// RestoreAll restores, sprints first, every entry of the project that p may
// manage: all of them for a project manager, else those p deleted or
// created. It works in batches of Config.BatchSize, each its own
// transaction, and returns how many entries it restored; on an error the
// batches before it stay restored.
func (t *Trash) RestoreAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error) {
	return t.eachBatch(ctx, p, projectID, []TargetType{TargetSprint, TargetTask}, t.restore)
}

// ClearAll clears, as Clear does, every entry of the project that p may
// manage, in batches as RestoreAll does, and returns how many entries it
// cleared (the tasks of cleared sprints included).
func (t *Trash) ClearAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error) {
	return t.eachBatch(ctx, p, projectID, []TargetType{TargetTask, TargetSprint}, t.purge)
}

// batchFunc restores or purges entries already taken out of the trash inside
// tx, takes out what must go with them, and returns how many entries left
// the trash in all.
type batchFunc func(ctx context.Context, tx bun.Tx, tenantID int64, es []row) (int, error)

func (t *Trash) eachBatch(ctx context.Context, p deskkit.Principal, projectID int64, order []TargetType, fn batchFunc) (int, error) {
	if !p.Valid() {
		return 0, ErrUnauthenticated
	}
	if projectID < 1 {
		return 0, deskkit.Invalid("projectId", "must be a positive integer")
	}
	manage, err := t.canManage(ctx, p, projectID)
	if err != nil {
		return 0, err
	}
	scope := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("tenant_id = ? AND project_id = ?", p.TenantID, projectID)
		if !manage {
			q = q.Where("(deleted_by = ? OR created_by = ?)", p.UserID, p.UserID)
		}
		return q
	}
	total := 0
	for _, typ := range order {
		n, err := t.inBatches(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
			return scope(q).Where("target_type = ?", typ)
		}, func(ctx context.Context, tx bun.Tx, es []row) (int, error) {
			return fn(ctx, tx, p.TenantID, es)
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// inBatches takes the entries filter selects out of the trash, BatchSize at
// a time in id order, each batch in a transaction of its own, and hands each
// batch to fn, which returns how many entries it handled. Each batch starts
// after the last id of the one before, so no batch walks again over what
// earlier ones deleted (dead index entries until vacuum). Entries that a
// concurrent operation holds are skipped on PostgreSQL and left to it.
func (t *Trash) inBatches(ctx context.Context, filter func(*bun.SelectQuery) *bun.SelectQuery, fn func(ctx context.Context, tx bun.Tx, es []row) (int, error)) (int, error) {
	total := 0
	var after int64
	for {
		var n int
		var last int64
		err := t.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			es, err := t.takeBatch(ctx, tx, filter, after)
			if err != nil || len(es) == 0 {
				return err
			}
			for _, e := range es {
				last = max(last, e.ID)
			}
			n, err = fn(ctx, tx, es)
			return err
		})
		if err != nil {
			return total, err
		}
		if last == 0 {
			return total, nil
		}
		total += n
		after = last
	}
}

// takeBatch deletes up to BatchSize entries that filter selects with ids
// above afterID, lowest id first, inside tx, and returns them. On PostgreSQL
// it skips rows another transaction holds, so concurrent batch jobs split
// the work instead of queueing on each other.
func (t *Trash) takeBatch(ctx context.Context, tx bun.Tx, filter func(*bun.SelectQuery) *bun.SelectQuery, afterID int64) ([]row, error) {
	ids := filter(tx.NewSelect().Table("deskkit_trash").Column("id")).Where("id > ?", afterID).OrderExpr("id").Limit(t.cfg.BatchSize)
	if t.postgres {
		ids = ids.For("UPDATE SKIP LOCKED")
	}
	var rows []row
	if _, err := tx.NewDelete().Model((*row)(nil)).
		Where("t.id IN (?)", ids).
		Returning("*").
		Exec(ctx, &rows); err != nil {
		return nil, fmt.Errorf("trash: take batch: %w", err)
	}
	return rows, nil
}

// restore brings back es, taken out of the trash in tx. Sprints of tasks
// among es that are in the trash too come out and come back first.
func (t *Trash) restore(ctx context.Context, tx bun.Tx, tenantID int64, es []row) (int, error) {
	var sprintIDs []int64
	for _, e := range es {
		if e.TargetType == TargetTask && e.SprintID != nil {
			sprintIDs = append(sprintIDs, *e.SprintID)
		}
	}
	var sprints []row
	if len(sprintIDs) > 0 {
		slices.Sort(sprintIDs)
		if _, err := tx.NewDelete().Model((*row)(nil)).
			Where("t.tenant_id = ? AND t.target_type = ? AND t.target_id IN (?)", tenantID, TargetSprint, bun.In(slices.Compact(sprintIDs))).
			Returning("*").
			Exec(ctx, &sprints); err != nil {
			return 0, fmt.Errorf("trash: take sprints: %w", err)
		}
	}
	// Sprints (those among es and those just taken) before tasks, each in id order.
	all := append(sprints, es...)
	slices.SortFunc(all, func(a, b row) int {
		return cmp.Or(sprintFirst(a.TargetType)-sprintFirst(b.TargetType), cmp.Compare(a.ID, b.ID))
	})
	return len(all), t.apply(ctx, tx, all, true)
}

// purge deletes es for good, taken out of the trash in tx. Task entries of
// sprints among es come out and are purged first.
func (t *Trash) purge(ctx context.Context, tx bun.Tx, tenantID int64, es []row) (int, error) {
	var sprintIDs []int64
	for _, e := range es {
		if e.TargetType == TargetSprint {
			sprintIDs = append(sprintIDs, e.TargetID)
		}
	}
	var tasks []row
	if len(sprintIDs) > 0 {
		if _, err := tx.NewDelete().Model((*row)(nil)).
			Where("t.tenant_id = ? AND t.target_type = ? AND t.sprint_id IN (?)", tenantID, TargetTask, bun.In(sprintIDs)).
			Returning("*").
			Exec(ctx, &tasks); err != nil {
			return 0, fmt.Errorf("trash: take tasks of sprints: %w", err)
		}
	}
	// Tasks before their sprints, each in id order.
	all := append(tasks, es...)
	slices.SortFunc(all, func(a, b row) int {
		return cmp.Or(sprintFirst(b.TargetType)-sprintFirst(a.TargetType), cmp.Compare(a.ID, b.ID))
	})
	return len(all), t.apply(ctx, tx, all, false)
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
	es := entries(rows)
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
// nothing when Retention is 0. Several replicas may run it at once: on
// PostgreSQL each takes rows the others do not hold; on SQLite writers queue.
// Run it on a timer, as the reference server does.
func (t *Trash) PurgeExpired(ctx context.Context) (int, error) {
	if t.cfg.Retention == 0 {
		return 0, nil
	}
	cutoff := t.cfg.Now().UTC().Add(-t.cfg.Retention)
	return t.inBatches(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("deleted_date < ?", cutoff)
	}, func(ctx context.Context, tx bun.Tx, es []row) (int, error) {
		// A batch may span tenants; purge each tenant's part on its own so
		// sprint-task lookups stay within the tenant.
		byTenant := map[int64][]row{}
		for _, e := range es {
			byTenant[e.TenantID] = append(byTenant[e.TenantID], e)
		}
		n := 0
		for _, tenantID := range sortedKeys(byTenant) {
			m, err := t.purge(ctx, tx, tenantID, byTenant[tenantID])
			if err != nil {
				return n, err
			}
			n += m
		}
		return n, nil
	})
}

func sortedKeys(m map[int64][]row) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

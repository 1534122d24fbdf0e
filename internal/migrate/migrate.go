// Package migrate runs a deskkit package's embedded SQL migrations with bun's
// migrator, under that package's own migrations tables.
//
// Migration files are Go templates rendered with Dialect, so the few
// statements that differ between PostgreSQL and SQLite sit side by side in
// one file: {{if .Postgres}} ... {{else}} ... {{end}}.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// Dialect is the template data of every migration file.
type Dialect struct {
	Postgres bool
	SQLite   bool
}

// DialectOf reports which supported database db talks to, or an error for
// one deskkit does not support.
func DialectOf(db bun.IDB) (Dialect, error) {
	switch db.Dialect().Name() {
	case dialect.PG:
		return Dialect{Postgres: true}, nil
	case dialect.SQLite:
		return Dialect{SQLite: true}, nil
	default:
		return Dialect{}, fmt.Errorf("deskkit: unsupported database dialect %s", db.Dialect().Name())
	}
}

// Run applies the migrations in fsys (found in any folder of it, by bun's
// file names: 20261122000001_name.tx.up.sql) that are not applied yet. table names
// the migrations table ("deskkit_trash_migrations"); the locks table is
// table+"_locks". Several processes may call Run at once: on PostgreSQL they
// queue on an advisory lock held by a session, so a crashed process never
// leaves the lock behind; on SQLite they queue on bun's lock row.
func Run(ctx context.Context, db *bun.DB, table string, fsys fs.FS) error {
	d, err := DialectOf(db)
	if err != nil {
		return err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(fsys); err != nil {
		return fmt.Errorf("deskkit: discover migrations: %w", err)
	}
	m := migrate.NewMigrator(db, ms,
		migrate.WithTableName(table),
		migrate.WithLocksTableName(table+"_locks"),
		migrate.WithTemplateData(d),
		migrate.WithMarkAppliedOnSuccess(true),
	)
	if d.Postgres {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		key := lockKey(table)
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", key); err != nil {
			return fmt.Errorf("deskkit: lock migrations: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", key) //nolint:errcheck // the session ends with conn anyway
		return apply(ctx, m)
	}
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("deskkit: init migrations: %w", err)
	}
	for {
		err := m.Lock(ctx)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer m.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // a failed unlock surfaces on the next Run
	return apply(ctx, m)
}

func apply(ctx context.Context, m *migrate.Migrator) error {
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("deskkit: init migrations: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("deskkit: migrate: %w", err)
	}
	return nil
}

func lockKey(table string) int64 {
	h := fnv.New64a()
	h.Write([]byte(table))
	return int64(h.Sum64())
}

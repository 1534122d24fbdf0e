package channel

import (
	"context"
	"log/slog"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/migrate"
)

// nameFoldedIndex is the unique index on (tenant_id, name_folded): channel
// names are unique within the tenant without case.
const nameFoldedIndex = "deskkit_channels_name_folded_unique"

// foldedNamesStep is the migration that adds deskkit_channels.name_folded
// (deskkit.FoldName of the name) under nameFoldedIndex. Names already
// stored that fold to one key are resolved by age: the oldest channel
// (created_at_ms, then id) keeps its name, each newer one is renamed with
// " (2)", " (3)", ... appended, and each rename is logged at WARN on log.
func foldedNamesStep(log *slog.Logger) migrate.Step {
	return migrate.Step{
		Version: "20261123000002",
		Comment: "folded_names",
		Up: func(ctx context.Context, tx bun.Tx, d migrate.Dialect) error {
			_, err := migrate.FoldNames(ctx, tx, d, migrate.FoldedNames{
				Table: "deskkit_channels", ID: "id", Scope: "tenant_id", Name: "name", Key: "name_folded",
				Created: "created_at_ms", Index: nameFoldedIndex, Max: MaxNameRunes,
			}, log)
			return err
		},
	}
}

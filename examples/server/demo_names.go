package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/httpapi/console"
)

// The demo host's names for the console: a real host reads its projects
// table; the demo has no such table (a project is a number its routes and
// the seed command take), so it names project n by a fixed list, the same
// on every server: 1 is "Website", 2 "Mobile app", ..., 9 "Website 2".
// Its sprints are rows of its own, named by whoever created them.

var demoProjectNames = []string{"Website", "Mobile app", "Billing", "Onboarding", "Data platform", "Support desk", "Design system", "Infrastructure"}

// demoProjectName is the demo host's name of project id (at least 1).
func demoProjectName(id int64) string {
	n := int64(len(demoProjectNames))
	name := demoProjectNames[(id-1)%n]
	if round := (id-1)/n + 1; round > 1 {
		name += " " + strconv.FormatInt(round, 10)
	}
	return name
}

// demoNames names the demo host's projects and sprints for the console.
type demoNames struct{ db *bun.DB }

var (
	_ console.ProjectNamer = demoNames{}
	_ console.SprintNamer  = demoNames{}
)

// ProjectNames names every project id: the demo host's projects are all
// the positive numbers, in every tenant.
func (demoNames) ProjectNames(_ context.Context, _ int64, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for _, id := range ids {
		if id > 0 {
			out[id] = demoProjectName(id)
		}
	}
	return out, nil
}

// SprintNames reads the names of the tenant's sprints among ids, in any
// state (a task's sprint may be in the trash with it), in one query.
func (n demoNames) SprintNames(ctx context.Context, tenant int64, ids []int64) (map[int64]string, error) {
	var rows []demoSprint
	if err := n.db.NewSelect().Model(&rows).Column("id", "name").Where("s.tenant_id = ? AND s.id IN (?)", tenant, bun.List(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("demo: sprint names: %w", err)
	}
	out := make(map[int64]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Name
	}
	return out, nil
}

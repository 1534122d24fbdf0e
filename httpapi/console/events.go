package console

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/eventcat"
)

// eventGroup is the types one service publishes, under its name.
type eventGroup struct {
	Service, Label string
	Events         []eventChoice
}

// serviceOrder ranks the services' groups: deskkit's, then the host's,
// then the host's own groups by name.
var serviceOrder = []string{deskkit.ServiceTrash, deskkit.ServiceVerify, deskkit.ServiceChannel, deskkit.ServiceHost}

// serviceLabel is the heading of service's group in r's language: the
// product's name for the host's own types, a group's own name for a
// service deskkit does not know.
func (c *Console) serviceLabel(r *http.Request, service string) string {
	switch service {
	case deskkit.ServiceTrash:
		return c.tr(r, "Trash")
	case deskkit.ServiceVerify:
		return c.tr(r, "Users")
	case deskkit.ServiceChannel:
		return c.tr(r, "Event channels")
	case deskkit.ServiceHost:
		return c.cfg.ProductName
	}
	return service
}

// eventGroups groups the catalogue's types by service, each group's in
// the catalogue's order (by name), described in r's language.
func (c *Console) eventGroups(r *http.Request, types []deskkit.EventType, checked []string) []eventGroup {
	l := c.localizer(r)
	var groups []eventGroup
	for i, t := range types {
		service := t.ServiceName()
		g := slices.IndexFunc(groups, func(g eventGroup) bool { return g.Service == service })
		if g < 0 {
			groups = append(groups, eventGroup{Service: service, Label: c.serviceLabel(r, service)})
			g = len(groups) - 1
		}
		choice := eventChoice{Index: i, Name: t.Name, Description: t.Describe(l.Messages(), l.Language()), Checked: slices.Contains(checked, t.Name)}
		if p, err := eventcat.Payload(t); err == nil {
			choice.Example = eventcat.Indent(p)
		}
		groups[g].Events = append(groups[g].Events, choice)
	}
	rank := func(s string) int {
		if i := slices.Index(serviceOrder, s); i >= 0 {
			return i
		}
		return len(serviceOrder)
	}
	slices.SortStableFunc(groups, func(a, b eventGroup) int {
		return cmp.Or(cmp.Compare(rank(a.Service), rank(b.Service)), strings.Compare(a.Service, b.Service))
	})
	return groups
}

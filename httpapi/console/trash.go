package console

import (
	"context"
	"html"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/trash"
)

// trashRoutes registers the trash pages: the search, and a confirmation
// page (GET) and its action (POST) for restoring or clearing one entry or a
// whole project's trash. Every read and change is a call of the trash
// service with the session's principal, as the API makes it.
func (c *Console) trashRoutes() {
	c.sections.Trash = true
	c.page(ScopeTrash, "GET "+c.base+"trash", c.trashPage)
	c.page(ScopeTrash, "GET "+c.base+"trash/{id}/{action}", c.confirmEntry)
	c.page(ScopeTrash, "POST "+c.base+"trash/{id}/{action}", c.actOnEntry)
	c.page(ScopeTrash, "GET "+c.base+"trash/project/{project}/{action}", c.confirmProject)
	c.page(ScopeTrash, "POST "+c.base+"trash/project/{project}/{action}", c.actOnProject)
}

// trashRights is what *trash.Trash answers beside httpapi.TrashService:
// what a principal may do, by the rule its actions enforce, asked before a
// page offers an action. A Config.Trash without it (a host's own service,
// or a wrapper that does not pass these methods on) gets every action
// offered and a project number to type, as before; its actions still
// refuse what they refuse.
type trashRights interface {
	Allowed(ctx context.Context, p deskkit.Principal, es []trash.Entry) ([]trash.EntryRights, error)
	ProjectRights(ctx context.Context, p deskkit.Principal, projectID int64) (trash.Rights, error)
	Projects(ctx context.Context, p deskkit.Principal) ([]trash.ProjectCount, error)
}

// rights is Config.Trash's trashRights, or nil.
func (c *Console) rights() trashRights {
	r, _ := c.cfg.Trash.(trashRights)
	return r
}

// Page sizes the search offers, and its default.
var trashPageSizes = []int{10, 20, 50, 100}

const trashDefaultPageSize = 20

// trashSort is an order the search offers, by its form value.
type trashSort struct {
	Value, Label string
	Field        trash.OrderField
	Order        trash.SortOrder
}

var trashSorts = []trashSort{
	{"deleted-desc", text("Deleted, newest first"), trash.OrderByDeletedDate, trash.Desc},
	{"deleted-asc", text("Deleted, oldest first"), trash.OrderByDeletedDate, trash.Asc},
	{"name-asc", text("Name, A to Z"), trash.OrderByTargetName, trash.Asc},
	{"name-desc", text("Name, Z to A"), trash.OrderByTargetName, trash.Desc},
}

// trashForm is the search form's values as the person gave them.
type trashForm struct {
	Project string
	Name    string
	Type    string
	Deleted string // yyyy-mm-dd, a day in the reader's time zone
	Sort    string
	Size    int
	PageNo  int
}

// trashView is the search page's data.
type trashView struct {
	Form    trashForm
	Sorts   []trashSort
	Sizes   []int
	Types   []trashType
	Project int64 // the project picked, 0 for every project
	// ProjectLabel names the project picked: its name when the host
	// resolves it (Config.Projects), "project ID" otherwise.
	ProjectLabel string
	// Rights is what the reader may do with the picked project's trash;
	// nil when the service cannot tell (every action is offered).
	Rights *trash.Rights
	// Projects are the projects to pick from, named; nil when the service
	// cannot list them (a number is typed instead).
	Projects []projectOption
	Result   *trash.Page
	Rows     template.HTML // the result table's rows (trashRowsHTML)
	Pages    int
	Prev     string // URL of the page before, "" on the first
	Next     string
	Back     string // this page's URL, where actions come back to
}

// trashRowsHTML writes the result table's rows. It is Go rather than a
// template: a template pipeline costs a reflective call per value and per
// escaper, and a page of rows that way cost more than the search under it
// (the page took 1.6 times the API call; see BenchmarkConsoleTrashPage*).
// Every value is escaped with html.EscapeString, which is right for text
// and for the double-quoted attribute values it is written into; URLs are
// built from numbers and url.QueryEscape.
//
// rights, if not nil, says which actions each row offers (the reader's,
// trash.Allowed); a row with none says so.
func trashRowsHTML(base string, es []trash.Entry, rights []trash.EntryRights, back string, projects, sprints map[int64]string, loc *time.Location, tr func(string, ...any) string) template.HTML {
	q := "?back=" + url.QueryEscape(back)
	// The words of every row, in the page's language, once.
	lName, lProject, lBy, lDeleted := html.EscapeString(tr("Name")), html.EscapeString(tr("Project")), html.EscapeString(tr("Deleted by")), html.EscapeString(tr("Deleted"))
	lPurged, lActions, kept := html.EscapeString(tr("Purged")), html.EscapeString(tr("Actions")), html.EscapeString(tr("kept until cleared"))
	lRestore, lClear := html.EscapeString(tr("Restore…")), html.EscapeString(tr("Clear…"))
	lNone := html.EscapeString(tr("Only its deleter, its creator or a project manager may restore or clear it."))
	var b strings.Builder
	b.Grow(len(es) * 900)
	for i, e := range es {
		id := strconv.FormatInt(e.ID, 10)
		name := html.EscapeString(e.TargetName)
		by := e.DeletedByName
		if by == "" {
			by = tr("user %d", e.DeletedBy)
		}
		purged := kept
		if e.PurgeDate != nil {
			purged = formatIn(*e.PurgeDate, loc)
		}
		may := trash.EntryRights{Restore: true, Clear: true}
		if rights != nil {
			may = rights[i]
		}
		if e.SprintID != nil {
			if sn := sprints[*e.SprintID]; sn != "" {
				name += `<span class="note detail sprint-of">` + html.EscapeString(tr("in sprint “%s”", sn)) + `</span>`
			}
		}
		var actions string
		if may.Restore {
			actions += `<a class="button secondary" href="` + html.EscapeString(base+"trash/"+id+"/restore"+q) + `" aria-label="` + html.EscapeString(tr("Restore %s", e.TargetName)) + `">` + lRestore + `</a> `
		}
		if may.Clear {
			actions += `<a class="button quiet-danger" href="` + html.EscapeString(base+"trash/"+id+"/clear"+q) + `" aria-label="` + html.EscapeString(tr("Clear %s", e.TargetName)) + `">` + lClear + `</a>`
		}
		if actions == "" {
			actions = `<span class="note no-actions">` + lNone + `</span>`
		}
		b.WriteString(`<tr id="entry-` + id + `">` +
			`<td data-label="` + lName + `">` + name + `</td>` +
			`<td data-label="` + lProject + `">` + html.EscapeString(projectName(projects, e.ProjectID)) + `</td>` +
			`<td data-label="` + lBy + `">` + html.EscapeString(by) + `</td>` +
			`<td data-label="` + lDeleted + `"><time datetime="` + e.DeletedDate.UTC().Format(time.RFC3339) + `">` + formatIn(e.DeletedDate, loc) + `</time></td>` +
			`<td data-label="` + lPurged + `">` + purged + `</td>` +
			`<td data-label="` + lActions + `"><div class="actions">` + actions + "</div></td></tr>\n")
	}
	return template.HTML(b.String()) // every value above is escaped
}

// projectOption is a project the search form offers.
type projectOption struct {
	Value string // its id
	Label string // its name, and how many entries it has
}

type trashType struct {
	Value trash.TargetType
	Label string
}

var trashTypes = []trashType{{trash.TargetTask, text("Tasks")}, {trash.TargetSprint, text("Sprints")}}

// sprint tells whether t is a sprint (else a task), for the texts that
// name the one or the other.
func sprint(t trash.TargetType) bool { return t == trash.TargetSprint }

// parseTrashForm reads the search form from q into a trash.Query, or
// returns what is wrong with it: the project, page and size by the API's
// rules for projectId, pageNo and pageSize (httpapi.ParseID, ParseInt),
// the rest, which only the form takes, as a formError.
func parseTrashForm(q url.Values, loc *time.Location, tr func(string, ...any) string) (trashForm, trash.Query, int64, error) {
	f := trashForm{
		Project: strings.TrimSpace(q.Get("project")),
		Name:    strings.TrimSpace(q.Get("name")),
		Type:    q.Get("type"),
		Deleted: strings.TrimSpace(q.Get("deleted")),
		Sort:    q.Get("sort"),
		Size:    trashDefaultPageSize,
		PageNo:  1,
	}
	var query trash.Query
	if f.Type == "" {
		f.Type = string(trash.TargetTask)
	}
	query.TargetType = trash.TargetType(f.Type)
	if !query.TargetType.Valid() {
		return f, query, 0, formError(tr("Type must be Tasks or Sprints."))
	}
	var project int64
	if f.Project != "" {
		n, err := httpapi.ParseID("project", f.Project)
		if err != nil {
			return f, query, 0, err
		}
		project = n
	}
	query.ProjectID = project
	query.TargetName = f.Name
	if f.Deleted != "" {
		day, err := time.ParseInLocation("2006-01-02", f.Deleted, loc)
		if err != nil {
			return f, query, 0, formError(tr("Deleted on must be a date such as 2026-11-24."))
		}
		query.Filters = []trash.Filter{
			{Key: "deletedDate", Op: trash.OpGreaterThanEqual, Value: day},
			{Key: "deletedDate", Op: trash.OpLessThan, Value: day.AddDate(0, 0, 1)},
		}
	}
	if f.Sort == "" {
		f.Sort = trashSorts[0].Value
	}
	found := false
	for _, s := range trashSorts {
		if s.Value == f.Sort {
			query.OrderBy, query.OrderSort, found = s.Field, s.Order, true
		}
	}
	if !found {
		return f, query, 0, formError(tr("Sort must be one of the orders offered."))
	}
	if v := q.Get("size"); v != "" {
		n, err := httpapi.ParseInt("size", v, 1, trashPageSizes[len(trashPageSizes)-1])
		if err != nil {
			return f, query, 0, err
		}
		f.Size = n
	}
	if v := q.Get("page"); v != "" {
		n, err := httpapi.ParseInt("page", v, 1, trash.MaxPageNo)
		if err != nil {
			return f, query, 0, err
		}
		f.PageNo = n
	}
	query.PageSize, query.PageNo = f.Size, f.PageNo
	return f, query, project, nil
}

// values is the form as a query string, on page pageNo.
func (f trashForm) values(pageNo int) string {
	v := url.Values{}
	for k, s := range map[string]string{"project": f.Project, "name": f.Name, "type": f.Type, "deleted": f.Deleted, "sort": f.Sort} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Size != trashDefaultPageSize {
		v.Set("size", strconv.Itoa(f.Size))
	}
	if pageNo > 1 {
		v.Set("page", strconv.Itoa(pageNo))
	}
	return v.Encode()
}

func (c *Console) trashPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	tr := func(format string, args ...any) string { return c.tr(r, format, args...) }
	form, query, project, err := parseTrashForm(r.URL.Query(), c.zoneOf(r), tr)
	v := trashView{Form: form, Sorts: trashSorts, Sizes: trashPageSizes, Types: trashTypes, Project: project, Back: c.base + "trash"}
	if qs := form.values(form.PageNo); qs != "" {
		v.Back += "?" + qs
	}
	if err != nil {
		c.renderProblem(w, r, s, "trash", v, c.problem(r, err))
		return
	}
	page, err := c.cfg.Trash.Search(r.Context(), s.Principal, query)
	if err != nil {
		c.renderProblem(w, r, s, "trash", v, c.problem(r, err))
		return
	}
	v.Result = &page
	ctx := r.Context()
	ids := make([]int64, 0, len(page.List)+1)
	if project > 0 {
		ids = append(ids, project)
	}
	for _, e := range page.List {
		if !slices.Contains(ids, e.ProjectID) {
			ids = append(ids, e.ProjectID)
		}
	}
	var rows []trash.EntryRights
	if rt := c.rights(); rt != nil {
		if rows, err = rt.Allowed(ctx, s.Principal, page.List); err != nil {
			c.renderProblem(w, r, s, "trash", v, c.problem(r, err))
			return
		}
		if project > 0 {
			pr, err := rt.ProjectRights(ctx, s.Principal, project)
			if err != nil {
				c.renderProblem(w, r, s, "trash", v, c.problem(r, err))
				return
			}
			v.Rights = &pr
		}
		ps, err := rt.Projects(ctx, s.Principal)
		if err != nil {
			c.renderProblem(w, r, s, "trash", v, c.problem(r, err))
			return
		}
		for _, p := range ps {
			if !slices.Contains(ids, p.ProjectID) {
				ids = append(ids, p.ProjectID)
			}
		}
		names := c.projectNames(ctx, s.Principal.TenantID, ids)
		v.Projects = projectOptions(ps, project, names, tr)
		v.Rows = trashRowsHTML(c.base, page.List, rows, v.Back, names, c.sprintNames(ctx, s.Principal.TenantID, page.List), c.zoneOf(r), tr)
		if project > 0 {
			v.ProjectLabel = c.projectLabel(r, names, project)
		}
	} else {
		names := c.projectNames(ctx, s.Principal.TenantID, ids)
		v.Rows = trashRowsHTML(c.base, page.List, nil, v.Back, names, c.sprintNames(ctx, s.Principal.TenantID, page.List), c.zoneOf(r), tr)
		if project > 0 {
			v.ProjectLabel = c.projectLabel(r, names, project)
		}
	}
	v.Pages = int((page.Total + int64(form.Size) - 1) / int64(form.Size))
	if form.PageNo > 1 {
		v.Prev = c.base + "trash?" + form.values(form.PageNo-1)
	}
	if form.PageNo < v.Pages {
		v.Next = c.base + "trash?" + form.values(form.PageNo+1)
	}
	c.render(w, r, s, http.StatusOK, "trash", v)
}

// projectOptions are the projects the search form offers: those with
// entries (ps), named, and the one picked if it has none.
func projectOptions(ps []trash.ProjectCount, picked int64, names map[int64]string, tr func(string, ...any) string) []projectOption {
	out := make([]projectOption, 0, len(ps)+1)
	found := false
	for _, p := range ps {
		found = found || p.ProjectID == picked
		label := tr("%s (%d entries)", projectName(names, p.ProjectID), p.Entries)
		if p.Entries == 1 {
			label = tr("%s (%d entry)", projectName(names, p.ProjectID), p.Entries)
		}
		out = append(out, projectOption{Value: strconv.FormatInt(p.ProjectID, 10), Label: label})
	}
	if picked > 0 && !found {
		out = append(out, projectOption{Value: strconv.FormatInt(picked, 10), Label: projectName(names, picked)})
	}
	return out
}

// trashConfirmView is a confirmation page's data.
type trashConfirmView struct {
	Action  string // "restore" or "clear"
	Entry   *trash.Entry
	Project int64
	// ProjectName is the entry's project's name, or its id.
	ProjectName string
	Count       int64 // the project's entries, for a project-wide action
	Changed     bool  // the count changed since the person confirmed
	Back        string
	Question    string
	// Button is the confirming button's text; "" offers none (Refusal
	// says why).
	Button string
	// Refusal, if set, says why the action is not offered: the reader
	// may not do it, or it would do nothing.
	Refusal string
}

// backTo is where an action returns: a trash search URL the form carried,
// or the trash page.
func (c *Console) backTo(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path != c.base+"trash" || strings.HasPrefix(v, "//") {
		return c.base + "trash"
	}
	return u.RequestURI()
}

// actionOn reads the {action} and the id named name of an entry or project
// route, or answers the page that does not exist.
func (c *Console) actionOn(w http.ResponseWriter, r *http.Request, s *consoleSession, name string) (string, int64, bool) {
	action, okA := entryAction(r)
	id, okID := pathInt(r, name)
	if !okA || !okID {
		c.noSuchPage(w, r, s)
		return "", 0, false
	}
	return action, id, true
}

// entryAction checks the {action} of an entry or project route.
func entryAction(r *http.Request) (string, bool) {
	a := r.PathValue("action")
	return a, a == "restore" || a == "clear"
}

// pathID is pathInt's id, or false after answering the page that does not
// exist.
func (c *Console) pathID(w http.ResponseWriter, r *http.Request, s *consoleSession, name string) (int64, bool) {
	id, ok := pathInt(r, name)
	if !ok {
		c.noSuchPage(w, r, s)
	}
	return id, ok
}

// noSuchPage answers 404 within the layout.
func (c *Console) noSuchPage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	c.plainErrorIn(w, r, s, http.StatusNotFound, c.tr(r, "There is no such page in the console."))
}

// pathInt reads an id path value as the API reads one (httpapi.ParseID:
// its one canonical spelling).
func pathInt(r *http.Request, name string) (int64, bool) {
	n, err := httpapi.ParseID(name, r.PathValue(name))
	return n, err == nil
}

// formError is a form's value refused by a rule of the console's own, for
// a value only the form takes (a date without a time, an order offered):
// its text, already in the page's language, answered as the API answers
// invalid input (400 param_validation_error).
type formError string

func (e formError) Error() string         { return string(e) }
func (e formError) Unwrap() error         { return deskkit.ErrInvalid }
func (e formError) ClientMessage() string { return string(e) }

func (c *Console) confirmEntry(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	action, id, ok := c.actionOn(w, r, s, "id")
	if !ok {
		return
	}
	e, err := c.cfg.Trash.Get(r.Context(), s.Principal, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	names := c.projectNames(r.Context(), s.Principal.TenantID, []int64{e.ProjectID})
	v := trashConfirmView{Action: action, Entry: &e, Project: e.ProjectID, Back: c.backTo(r.URL.Query().Get("back")),
		ProjectName: projectName(names, e.ProjectID)}
	name := c.tr(r, "task “%s”", e.TargetName)
	if sprint(e.TargetType) {
		name = c.tr(r, "sprint “%s”", e.TargetName)
	}
	if rt := c.rights(); rt != nil {
		may, err := rt.Allowed(r.Context(), s.Principal, []trash.Entry{e})
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		if action == "restore" && !may[0].Restore || action == "clear" && !may[0].Clear {
			v.Refusal = c.tr(r, "You may not do this: only the person who deleted or created it, or who manages the project, may restore or clear it.")
			if may[0].Restore {
				v.Refusal = c.tr(r, "You may not clear this sprint: it holds deleted tasks of other people, which only a project manager may clear.")
			}
			c.render(w, r, s, http.StatusForbidden, "trash_confirm", v)
			return
		}
	}
	if action == "restore" {
		v.Question = c.tr(r, "Restore %s to %s?", name, c.projectLabel(r, names, e.ProjectID))
		if e.TargetType == trash.TargetTask && e.SprintID != nil {
			v.Question = joinSentences(v.Question, c.tr(r, "If its sprint is in the trash too, the sprint comes back with it."))
		}
		v.Button = c.tr(r, "Restore task")
		if sprint(e.TargetType) {
			v.Button = c.tr(r, "Restore sprint")
		}
	} else {
		v.Question = c.tr(r, "Clear %s for good? It cannot be restored afterwards.", name)
		if sprint(e.TargetType) {
			v.Question = joinSentences(v.Question, c.tr(r, "The tasks that went with the sprint are cleared too."))
		}
		v.Button = c.tr(r, "Clear task for good")
		if sprint(e.TargetType) {
			v.Button = c.tr(r, "Clear sprint for good")
		}
	}
	c.render(w, r, s, http.StatusOK, "trash_confirm", v)
}

func (c *Console) actOnEntry(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	action, id, ok := c.actionOn(w, r, s, "id")
	if !ok {
		return
	}
	ctx := r.Context()
	// The entry's name for the message, read first: after the action it is
	// gone. A refusal of the read is the action's refusal too.
	e, err := c.cfg.Trash.Get(ctx, s.Principal, id)
	if err == nil {
		if action == "restore" {
			err = c.cfg.Trash.Restore(ctx, s.Principal, id)
		} else {
			err = c.cfg.Trash.Clear(ctx, s.Principal, id)
		}
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	switch {
	case action == "restore" && sprint(e.TargetType):
		setFlash(w, r, c.tr(r, "Restored sprint “%s”.", e.TargetName))
	case action == "restore":
		setFlash(w, r, c.tr(r, "Restored task “%s”.", e.TargetName))
	case sprint(e.TargetType):
		setFlash(w, r, c.tr(r, "Cleared sprint “%s”.", e.TargetName))
	default:
		setFlash(w, r, c.tr(r, "Cleared task “%s”.", e.TargetName))
	}
	redirect(w, r, c.backTo(r.PostForm.Get("back")))
}

func (c *Console) confirmProject(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	action, project, ok := c.actionOn(w, r, s, "project")
	if !ok {
		return
	}
	rights, err := c.projectRights(r, s, project)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := c.projectConfirm(r, action, project, c.projectLabelOf(r, s, project), rights, false, c.backTo(r.URL.Query().Get("back")))
	status := http.StatusOK
	if v.Refusal != "" {
		status = http.StatusConflict
	}
	c.render(w, r, s, status, "trash_confirm", v)
}

// projectRights is what s may do with project's trash: the service's
// answer (trashRights), or, from a service that cannot tell, the count of
// the whole project with Manage as the admin flag.
func (c *Console) projectRights(r *http.Request, s *consoleSession, project int64) (trash.Rights, error) {
	if rt := c.rights(); rt != nil {
		return rt.ProjectRights(r.Context(), s.Principal, project)
	}
	n, err := c.cfg.Trash.Count(r.Context(), s.Principal, project)
	return trash.Rights{Manage: s.Principal.Admin, Entries: n}, err
}

// projectConfirm is the confirmation of a project-wide action, stating
// the count of the entries it would take for the reader (rights); with
// none, it offers no button and says why.
func (c *Console) projectConfirm(r *http.Request, action string, project int64, label string, rights trash.Rights, changed bool, back string) trashConfirmView {
	n := rights.Entries
	v := trashConfirmView{Action: action, Project: project, Count: n, Changed: changed, Back: back}
	switch {
	case n == 0 && rights.Manage:
		v.Refusal = c.tr(r, "%s has nothing in the trash: there is nothing to do.", capital(label))
		return v
	case n == 0:
		v.Refusal = c.tr(r, "None of the entries of %s's trash is yours to restore or clear: only the people who deleted or created them, or who manage the project, may.", label)
		return v
	case action == "restore" && n == 1:
		v.Question = c.tr(r, "Restore all %d entry (tasks and sprints) of %s's trash?", n, label)
		v.Button = c.tr(r, "Restore %d entry", n)
	case action == "restore":
		v.Question = c.tr(r, "Restore all %d entries (tasks and sprints) of %s's trash?", n, label)
		v.Button = c.tr(r, "Restore %d entries", n)
	case n == 1:
		v.Question = c.tr(r, "Clear all %d entry (tasks and sprints) of %s's trash for good? They cannot be restored afterwards.", n, label)
		v.Button = c.tr(r, "Clear %d entry for good", n)
	default:
		v.Question = c.tr(r, "Clear all %d entries (tasks and sprints) of %s's trash for good? They cannot be restored afterwards.", n, label)
		v.Button = c.tr(r, "Clear %d entries for good", n)
	}
	if !rights.Manage {
		v.Question = joinSentences(v.Question, c.tr(r, "You do not manage this project: these are the entries you deleted or created, and only they are affected."))
	}
	return v
}

func (c *Console) actOnProject(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	action, project, ok := c.actionOn(w, r, s, "project")
	if !ok {
		return
	}
	ctx := r.Context()
	back := c.backTo(r.PostForm.Get("back"))
	// The person confirmed a count; if the trash holds another number now,
	// ask again with it rather than act on entries they did not count.
	confirmed, err := strconv.ParseInt(r.PostForm.Get("count"), 10, 64)
	if err != nil || confirmed < 0 {
		c.plainErrorIn(w, r, s, http.StatusBadRequest, c.tr(r, "The confirmation has no count; open the confirmation again."))
		return
	}
	rights, err := c.projectRights(r, s, project)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	label := c.projectLabelOf(r, s, project)
	if rights.Entries != confirmed || rights.Entries == 0 {
		c.render(w, r, s, http.StatusConflict, "trash_confirm", c.projectConfirm(r, action, project, label, rights, rights.Entries != confirmed, back))
		return
	}
	var done int
	if action == "restore" {
		done, err = c.cfg.Trash.RestoreAll(ctx, s.Principal, project)
	} else {
		done, err = c.cfg.Trash.ClearAll(ctx, s.Principal, project)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	switch {
	case done == 0:
		// Someone else took the entries between the count and the action:
		// nothing was done, and the page says so, not as a success.
		v := trashConfirmView{Action: action, Project: project, Back: back,
			Refusal: c.tr(r, "Nothing was done: the entries of %s's trash were restored or cleared by someone else meanwhile.", label)}
		c.render(w, r, s, http.StatusConflict, "trash_confirm", v)
		return
	case action == "restore" && done == 1:
		setFlash(w, r, c.tr(r, "Restored %d entry of %s.", done, label))
	case action == "restore":
		setFlash(w, r, c.tr(r, "Restored %d entries of %s.", done, label))
	case done == 1:
		setFlash(w, r, c.tr(r, "Cleared %d entry of %s.", done, label))
	default:
		setFlash(w, r, c.tr(r, "Cleared %d entries of %s.", done, label))
	}
	redirect(w, r, back)
}

// plainErrorIn is plainError for a signed-in page: the layout keeps its
// navigation.
func (c *Console) plainErrorIn(w http.ResponseWriter, r *http.Request, s *consoleSession, status int, msg string) {
	c.render(w, r, s, status, "error", errorView{Message: msg})
}

// projectName is how a page names project id: its name from names, or
// its id.
func projectName(names map[int64]string, id int64) string {
	if n := names[id]; n != "" {
		return n
	}
	return strconv.FormatInt(id, 10)
}

// projectLabel names project id in a sentence: "project Launch" or
// "project 7".
func (c *Console) projectLabel(r *http.Request, names map[int64]string, id int64) string {
	return c.tr(r, "project %s", projectName(names, id))
}

// sprintNames asks Config.Sprints for the names of the sprints the tasks
// of es belong to; nil without the hook or on an error (logged).
func (c *Console) sprintNames(ctx context.Context, tenant int64, es []trash.Entry) map[int64]string {
	if c.cfg.Sprints == nil {
		return nil
	}
	var ids []int64
	for _, e := range es {
		if e.SprintID != nil && !slices.Contains(ids, *e.SprintID) {
			ids = append(ids, *e.SprintID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	names, err := c.cfg.Sprints.SprintNames(ctx, tenant, ids)
	if err != nil {
		c.cfg.Logger.WarnContext(ctx, "console: sprint names", slog.Any("error", err))
		return nil
	}
	return names
}

// projectLabelOf is projectLabel for one project of s's tenant.
func (c *Console) projectLabelOf(r *http.Request, s *consoleSession, id int64) string {
	return c.projectLabel(r, c.projectNames(r.Context(), s.Principal.TenantID, []int64{id}), id)
}

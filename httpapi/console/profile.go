package console

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// profileRoutes registers the profile pages: the profile and its edit
// form, and the guided change of the e-mail address or the mobile number.
// Each step is the verification call the API's client makes
// (httpapi/verify.go) with the session's principal, in the API's order:
//
//   - with an address to change (MODIFY_EMAIL, MODIFY_MOBILE): a code to
//     the current address (send), its check (which answers a link secret),
//     a code to the new address (send), and the change, which carries the
//     link secret and the new address's code;
//   - without one (BIND_EMAIL, BIND_MOBILE): a code to the new address and
//     the change with that code.
//
// The link secret travels in a hidden field of the next step's form, as a
// client of the API holds it between two calls: the pages are not stored
// (no-store) and the secret is good once, for this user, for 10 minutes.
// The flow's forms are not boosted by htmx (hx-boost="false"): each step is
// a full page, so that the countdown's script (static/profile.js, no
// inline script) runs on it.
func (c *Console) profileRoutes() {
	c.sections.Profile = true
	c.page(ScopeProfile, "GET "+c.base+"profile", c.profilePage)
	c.page(ScopeProfile, "POST "+c.base+"profile", c.updateProfile)
	c.page(ScopeProfile, "GET "+c.base+"profile/{kind}", c.changeStart)
	c.page(ScopeProfile, "POST "+c.base+"profile/{kind}/{step}", c.changeStep)
}

// profileForm is the edit form's fields, as the API's PATCH
// /user/current takes them.
type profileForm struct {
	Username, FirstName, LastName, FullName, Landline, Avatar, Title, Gender, Address string
}

func formOf(d verify.Detail) profileForm {
	return profileForm{Username: d.Username, FirstName: d.FirstName, LastName: d.LastName, FullName: d.FullName,
		Landline: d.Landline, Avatar: d.Avatar, Title: d.Title, Gender: d.Gender, Address: d.Address}
}

// genderLabels are the texts of verify.Genders' values.
var genderLabels = map[string]string{"MALE": text("Male"), "FEMALE": text("Female"), "UNKNOWN": text("Unknown")}

// genderLabel is the text of a gender value; the value itself when it has
// none.
func genderLabel(g string) string {
	if l, ok := genderLabels[g]; ok {
		return l
	}
	return g
}

type profileView struct {
	Detail  verify.Detail
	Form    profileForm
	Was     profileForm // the stored values the form started from
	Genders []string
}

// wasForm reads the stored values the form carried ("was.*" fields), so
// that saving needs no read of the profile; ok is false for a form without
// them.
func wasForm(f url.Values) (profileForm, bool) {
	if f.Get("was") != "1" {
		return profileForm{}, false
	}
	return profileForm{Username: f.Get("was.username"), FirstName: f.Get("was.firstName"), LastName: f.Get("was.lastName"),
		FullName: f.Get("was.fullName"), Landline: f.Get("was.landline"), Avatar: f.Get("was.avatar"), Title: f.Get("was.title"),
		Gender: f.Get("was.gender"), Address: f.Get("was.address")}, true
}

func (c *Console) profilePage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	d, err := c.cfg.Verifier.Detail(r.Context(), s.Principal)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, http.StatusOK, "profile", profileView{Detail: d, Form: formOf(d), Was: formOf(d), Genders: verify.Genders()})
}

// updateProfile sends the fields the person changed, as a client of the
// API sends a partial update: a field left as it was stays out of it (a
// username or gender never set cannot be sent empty). What it was comes
// with the form, so that a save is one service call; the profile is read
// only to show the form again after a refusal.
func (c *Console) updateProfile(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	ctx := r.Context()
	f := r.PostForm
	was, ok := wasForm(f)
	var d verify.Detail
	if !ok {
		var err error
		if d, err = c.cfg.Verifier.Detail(ctx, s.Principal); err != nil {
			c.fail(w, r, s, err)
			return
		}
		was = formOf(d)
	}
	form := profileForm{Username: f.Get("username"), FirstName: f.Get("firstName"), LastName: f.Get("lastName"),
		FullName: f.Get("fullName"), Landline: f.Get("landline"), Avatar: f.Get("avatar"), Title: f.Get("title"),
		Gender: f.Get("gender"), Address: f.Get("address")}
	var p verify.Profile
	changed := 0
	set := func(dst **string, now, was string) {
		if now != was {
			v := now
			*dst = &v
			changed++
		}
	}
	set(&p.Username, form.Username, was.Username)
	set(&p.FirstName, form.FirstName, was.FirstName)
	set(&p.LastName, form.LastName, was.LastName)
	set(&p.FullName, form.FullName, was.FullName)
	set(&p.Landline, form.Landline, was.Landline)
	set(&p.Avatar, form.Avatar, was.Avatar)
	set(&p.Title, form.Title, was.Title)
	set(&p.Gender, form.Gender, was.Gender)
	set(&p.Address, form.Address, was.Address)
	if changed == 0 {
		setFlash(w, r, c.tr(r, "Nothing changed."))
		redirect(w, r, c.base+"profile")
		return
	}
	if _, err := c.cfg.Verifier.UpdateProfile(ctx, s.Principal, p); err != nil {
		problem := c.problem(r, err)
		if ok {
			var derr error
			if d, derr = c.cfg.Verifier.Detail(ctx, s.Principal); derr != nil {
				c.fail(w, r, s, derr)
				return
			}
		}
		c.renderProblem(w, r, s, "profile", profileView{Detail: d, Form: form, Was: formOf(d), Genders: verify.Genders()}, problem)
		return
	}
	setFlash(w, r, c.tr(r, "Your profile is saved."))
	redirect(w, r, c.base+"profile")
}

// The steps of a change, as the flow's forms name them.
const (
	stepStart        = "start"         // the current address: ask for a code
	stepSendCurrent  = "send-current"  // POST: a code to the current address
	stepCheckCurrent = "check-current" // POST: check it, for a link secret
	stepNew          = "new"           // the new address: ask for a code
	stepSendNew      = "send-new"      // POST: a code to the new address
	stepConfirm      = "confirm"       // POST: the change
)

// changeView is one step's page.
type changeView struct {
	Kind    string // "email" or "mobile"
	Noun    string // "e-mail address", "mobile number"
	Bind    bool   // no current address: one proof, of the new one
	Current string // the current address, as the profile shows it
	Step    string // stepStart, stepCheckCurrent, stepNew or stepConfirm
	Steps   []changeStepItem
	Link    string // the link secret the check of the current address answered
	Address string // the new e-mail address or mobile number
	Country string // the new mobile number's region
	Sent    *verify.Sent
	// Wait is how many seconds are left before a new code may be asked
	// for (Sent's resend interval, or a limit's Retry-After): the page
	// counts it down (data-countdown) and the resend button waits.
	Wait int
	// SentTo says where the last code went.
	SentTo string
	// Restart: the link secret is no longer good; the flow starts again.
	Restart bool
}

type changeStepItem struct {
	Label   string
	Current bool
}

// changeKind is the kind in the path, and the words for it.
func changeKind(r *http.Request) (kind, noun string, ok bool) {
	switch r.PathValue("kind") {
	case "email":
		return "email", text("e-mail address"), true
	case "mobile":
		return "mobile", text("mobile number"), true
	}
	return "", "", false
}

// newChangeView is the view of step for the user d.
func newChangeView(kind, noun string, d verify.Detail, step string, tr func(string, ...any) string) changeView {
	v := changeView{Kind: kind, Noun: noun, Step: step}
	if kind == "email" {
		v.Current = d.Email
	} else {
		v.Current = d.Mobile
	}
	v.Bind = v.Current == ""
	labels := []struct{ step, label string }{
		{stepStart, tr("Code to your current %s", tr(noun))},
		{stepCheckCurrent, tr("Check it")},
		{stepNew, tr("Code to the new %s", tr(noun))},
		{stepConfirm, tr("Confirm")},
	}
	if v.Bind {
		labels = labels[2:]
		labels[0].label = tr("Code to your %s", tr(noun))
	}
	for _, l := range labels {
		v.Steps = append(v.Steps, changeStepItem{Label: l.label, Current: l.step == step})
	}
	return v
}

// bizKey is the flow's bizKey: MODIFY_* with a current address, BIND_*
// without.
func (v changeView) bizKey() verify.BizKey {
	switch {
	case v.Kind == "email" && v.Bind:
		return verify.BindEmail
	case v.Kind == "email":
		return verify.ModifyEmail
	case v.Bind:
		return verify.BindMobile
	}
	return verify.ModifyMobile
}

func (c *Console) changeStart(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	kind, noun, ok := changeKind(r)
	if !ok {
		c.noSuchPage(w, r, s)
		return
	}
	d, err := c.cfg.Verifier.Detail(r.Context(), s.Principal)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	step := stepStart
	if kind == "email" && d.Email == "" || kind == "mobile" && d.Mobile == "" {
		step = stepNew
	}
	v := newChangeView(kind, noun, d, step, func(f string, a ...any) string { return c.tr(r, f, a...) })
	if kind == "mobile" {
		v.Country = d.Country
	}
	c.render(w, r, s, http.StatusOK, "profile_change", v)
}

// changeStep runs one POST step of the flow and shows the next step, or
// the same step again with what was wrong.
func (c *Console) changeStep(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	kind, noun, ok := changeKind(r)
	if !ok {
		c.noSuchPage(w, r, s)
		return
	}
	ctx := r.Context()
	tr := func(format string, args ...any) string { return c.tr(r, format, args...) }
	d, err := c.cfg.Verifier.Detail(ctx, s.Principal)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	f := r.PostForm
	link := f.Get("link")
	address := strings.TrimSpace(f.Get("address"))
	country := strings.TrimSpace(f.Get("country"))
	code := strings.TrimSpace(f.Get("code"))
	// view is the page of step, carrying the flow's state.
	view := func(step string) changeView {
		v := newChangeView(kind, noun, d, step, tr)
		v.Link, v.Address, v.Country = link, address, country
		return v
	}
	// again shows step again with err as the API answers it, and the
	// wait of a limit.
	again := func(step string, err error) {
		p := c.problem(r, err)
		v := view(step)
		v.Wait = retryAfterSeconds(err)
		if errors.Is(err, verify.ErrLinkSecret) || errors.Is(err, verify.ErrNotBound) || errors.Is(err, verify.ErrAlreadyBound) {
			// The proof has run out, or the flow chose MODIFY_* or BIND_*
			// from the profile it read and the address came or went since
			// (another tab, the API): the flow starts again.
			v.Restart = true
			p.Message = joinSentences(p.Message, tr("Start again."))
		}
		c.renderProblem(w, r, s, "profile_change", v, p)
	}
	// A new code asked for from the page that takes the code goes back to
	// it when refused (a limit), so that the code already sent can still
	// be entered.
	from := f.Get("from")
	v := view("")
	biz := v.bizKey()
	switch r.PathValue("step") {
	case stepSendCurrent:
		if v.Bind {
			again(stepStart, verify.ErrNotBound)
			return
		}
		sent, err := c.send(r, s, kind, biz, v.Current, d.Country)
		if err != nil {
			again(cmpStep(from, stepCheckCurrent, stepStart), err)
			return
		}
		v = view(stepCheckCurrent)
		v.Sent, v.Wait, v.SentTo = &sent, sent.ResendInSeconds, v.Current
		c.render(w, r, s, http.StatusOK, "profile_change", v)
	case stepCheckCurrent:
		var l verify.Link
		if kind == "email" {
			l, err = c.cfg.Verifier.CheckEmail(ctx, s.Principal, verify.EmailCheck{BizKey: biz, Email: v.Current, Code: code})
		} else {
			l, err = c.cfg.Verifier.CheckSMS(ctx, s.Principal, verify.SMSCheck{BizKey: biz, Mobile: v.Current, Country: d.Country, Code: code})
		}
		if err != nil {
			again(stepCheckCurrent, err)
			return
		}
		link = l.Secret
		v = view(stepNew)
		if kind == "mobile" && country == "" {
			v.Country = d.Country
		}
		c.render(w, r, s, http.StatusOK, "profile_change", v)
	case stepSendNew:
		if !v.Bind && link == "" {
			again(stepStart, verify.ErrLinkSecret)
			return
		}
		sent, err := c.send(r, s, kind, biz, address, country)
		if err != nil {
			again(cmpStep(from, stepConfirm, stepNew), err)
			return
		}
		v = view(stepConfirm)
		v.Sent, v.Wait, v.SentTo = &sent, sent.ResendInSeconds, address
		c.render(w, r, s, http.StatusOK, "profile_change", v)
	case stepConfirm:
		var nd verify.Detail
		if kind == "email" {
			nd, err = c.cfg.Verifier.ChangeEmail(ctx, s.Principal, verify.EmailChange{BizKey: biz, Email: address, Code: code, LinkSecret: link})
		} else {
			nd, err = c.cfg.Verifier.ChangeMobile(ctx, s.Principal, verify.MobileChange{BizKey: biz, Mobile: address, Country: country, Code: code, LinkSecret: link})
		}
		if err != nil {
			again(stepConfirm, err)
			return
		}
		now := nd.Email
		if kind == "mobile" {
			now = nd.Mobile
		}
		msg := tr("Your %s is now %s.", tr(noun), now)
		if !v.Bind {
			msg += " " + tr("A notice goes to the old one.")
		}
		setFlash(w, r, msg)
		redirect(w, r, c.base+"profile")
	default:
		c.noSuchPage(w, r, s)
	}
}

// cmpStep is from if it is the step allowed, else otherwise.
func cmpStep(from, allowed, otherwise string) string {
	if from == allowed {
		return from
	}
	return otherwise
}

// send asks for a code to address, by e-mail or text message, as the
// API's send endpoints do.
func (c *Console) send(r *http.Request, s *consoleSession, kind string, biz verify.BizKey, address, country string) (verify.Sent, error) {
	if kind == "email" {
		return c.cfg.Verifier.SendEmail(r.Context(), s.Principal, verify.EmailSend{BizKey: biz, ToAddress: [][]string{{address}}})
	}
	return c.cfg.Verifier.SendSMS(r.Context(), s.Principal, verify.SMSSend{BizKey: biz, Mobile: address, Country: country})
}

// retryAfterSeconds is the wait a limit asked for, in whole seconds
// rounded up; 0 for any other error.
func retryAfterSeconds(err error) int {
	var ra deskkit.RetryAfterer
	if !errors.Is(err, deskkit.ErrRateLimited) || !errors.As(err, &ra) {
		return 0
	}
	return int(math.Ceil(ra.RetryAfterDuration().Seconds()))
}

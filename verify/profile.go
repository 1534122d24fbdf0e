package verify

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// Bounds of profile fields.
const (
	MaxNameLength     = 100 // username, firstName, lastName, fullName, title
	MaxLandlineLength = 40
	MaxAvatarLength   = 400
	MaxAddressLength  = 200
)

// genders are the values of User.Gender, in the order Genders lists them.
var genders = [...]string{"MALE", "FEMALE", "UNKNOWN"}

// Genders returns the values of User.Gender, in a new slice each call:
// nothing a caller does to it changes what UpdateProfile accepts.
func Genders() []string { return slices.Clone(genders[:]) }

// Detail is the current user as the API shows it.
type Detail struct {
	ID         int64  `json:"id" minimum:"1" description:"User id."`
	TenantID   int64  `json:"tenantId" minimum:"1" description:"The user's tenant."`
	TenantName string `json:"tenantName" description:"The tenant's name."`
	Username   string `json:"username"`
	FirstName  string `json:"firstName"`
	LastName   string `json:"lastName"`
	FullName   string `json:"fullName"`
	Mobile     string `json:"mobile" pattern:"^$|^\\+[1-9][0-9]{1,14}$" description:"E.164 (+8613800138000); empty if none."`                // E.164, "" if none
	Country    string `json:"country" description:"The mobile number's ISO 3166-1 region (CN); empty if none."`                              // the mobile's region
	ITC        int    `json:"itc" minimum:"0" maximum:"999" description:"The mobile number's international telephone code (86); 0 if none."` // the mobile's telephone code; 0 if none
	Email      string `json:"email" description:"Empty if none."`
	Landline   string `json:"landline"`
	Avatar     string `json:"avatar" description:"An http or https URL of an image; empty if none."`
	Title      string `json:"title"`
	Gender     string `json:"gender" enum:"MALE,FEMALE,UNKNOWN,"`
	Address    string `json:"address"`
}

// TenantDetail is the current user's tenant as the API shows it.
type TenantDetail struct {
	ID   int64  `json:"id" minimum:"1"`
	Name string `json:"name"`
}

// Detail returns the principal's user with its tenant's name.
func (v *Verifier) Detail(ctx context.Context, p deskkit.Principal) (Detail, error) {
	ctx, call := v.ops.Start(ctx, "verify.Detail", "")
	r, err := v.detail(ctx, p)
	call.End(err)
	return r, err
}

func (v *Verifier) detail(ctx context.Context, p deskkit.Principal) (Detail, error) {
	u, err := v.user(ctx, p)
	if err != nil {
		return Detail{}, err
	}
	t, err := v.dir.Tenant(ctx, p.TenantID)
	if err != nil {
		return Detail{}, fmt.Errorf("verify: read tenant %d: %w", p.TenantID, err)
	}
	d := Detail{
		ID: u.ID, TenantID: u.TenantID, TenantName: t.Name, Username: u.Username,
		FirstName: u.FirstName, LastName: u.LastName, FullName: u.FullName,
		Mobile: u.Mobile, Country: u.Country, Email: u.Email, Landline: u.Landline,
		Avatar: u.Avatar, Title: u.Title, Gender: u.Gender, Address: u.Address,
	}
	if u.Mobile != "" {
		d.ITC = ITC(u.Country)
	}
	return d, nil
}

// Tenant returns the principal's tenant.
func (v *Verifier) Tenant(ctx context.Context, p deskkit.Principal) (TenantDetail, error) {
	ctx, call := v.ops.Start(ctx, "verify.Tenant", "")
	r, err := v.tenant(ctx, p)
	call.End(err)
	return r, err
}

func (v *Verifier) tenant(ctx context.Context, p deskkit.Principal) (TenantDetail, error) {
	if !p.Valid() {
		return TenantDetail{}, ErrUnauthenticated
	}
	t, err := v.dir.Tenant(ctx, p.TenantID)
	if err != nil {
		return TenantDetail{}, fmt.Errorf("verify: read tenant %d: %w", p.TenantID, err)
	}
	return TenantDetail(t), nil
}

// UpdateProfile changes the fields of the principal's profile that pr
// names and returns the updated detail. Rules: a username of 1 character
// or more, each field within its Max*Length; avatar an http or https URL
// (or "" for none); gender MALE, FEMALE or UNKNOWN. A username another
// user of the tenant has is an error matching ErrConflict.
//
// An update that sets firstName or lastName but not fullName sets fullName
// too, from the new parts and the stored one it leaves (deskkit.FullName:
// "Ada Lovelace", but "王小明" for names in a CJK script); longer than
// MaxNameLength, it is refused naming fullName, which the client then
// sends. An update that sets fullName keeps it as given.
func (v *Verifier) UpdateProfile(ctx context.Context, p deskkit.Principal, pr Profile) (Detail, error) {
	ctx, call := v.ops.Start(ctx, "verify.UpdateProfile", "")
	r, err := v.updateProfile(ctx, p, pr)
	call.End(err)
	return r, err
}

func (v *Verifier) updateProfile(ctx context.Context, p deskkit.Principal, pr Profile) (Detail, error) {
	if !p.Valid() {
		return Detail{}, ErrUnauthenticated
	}
	if err := checkProfile(&pr); err != nil {
		return Detail{}, err
	}
	if pr.FullName == nil && (pr.FirstName != nil || pr.LastName != nil) {
		// The full name follows its parts; the part the update leaves is
		// read before the transaction, which holds a connection.
		u, err := v.user(ctx, p)
		if err != nil {
			return Detail{}, err
		}
		first, last := u.FirstName, u.LastName
		if pr.FirstName != nil {
			first = *pr.FirstName
		}
		if pr.LastName != nil {
			last = *pr.LastName
		}
		full := deskkit.FullName(first, last)
		if utf8.RuneCountInString(full) > MaxNameLength {
			return Detail{}, deskkit.Invalid("fullName", "must be at most %d characters, firstName and lastName joined; send fullName", MaxNameLength)
		}
		pr.FullName = &full
	}
	err := deskkit.RunInTx(ctx, v.db, nil, func(ctx context.Context, tx bun.Tx) error {
		return v.dir.UpdateProfile(ctx, tx, p.TenantID, p.UserID, pr)
	})
	if err != nil {
		return Detail{}, fmt.Errorf("verify: update profile: %w", err)
	}
	return v.Detail(ctx, p)
}

// checkProfile checks pr's fields and trims the username.
func checkProfile(pr *Profile) error {
	if pr.Username != nil {
		s := strings.TrimSpace(*pr.Username)
		pr.Username = &s
		if err := deskkit.CheckName("username", s, MaxNameLength); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		s    *string
		max  int
	}{
		{"firstName", pr.FirstName, MaxNameLength},
		{"lastName", pr.LastName, MaxNameLength},
		{"fullName", pr.FullName, MaxNameLength},
		{"title", pr.Title, MaxNameLength},
		{"landline", pr.Landline, MaxLandlineLength},
		{"address", pr.Address, MaxAddressLength},
		{"avatar", pr.Avatar, MaxAvatarLength},
	} {
		if f.s == nil {
			continue
		}
		if err := deskkit.CheckText(f.name, *f.s, f.max); err != nil {
			return err
		}
	}
	if pr.Avatar != nil && *pr.Avatar != "" {
		u, err := url.Parse(*pr.Avatar)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return deskkit.Invalid("avatar", "must be an http or https URL, such as https://example.com/me.png")
		}
	}
	if pr.Gender != nil {
		if !slices.Contains(genders[:], *pr.Gender) {
			return deskkit.Invalid("gender", "must be MALE, FEMALE or UNKNOWN")
		}
	}
	return nil
}

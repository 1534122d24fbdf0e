package directory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

func TestCheckLocale(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "en": "en", "zh-CN": "zh-CN", "zh-cn": "zh-CN", "ZH-HANS-cn": "zh-Hans-CN", "es-419": "es-419", "de-ch-1996": "de-CH-1996",
		"tlh": "tlh", "zh-TW": "zh-TW", "EN-u-CA-gregory": "en-u-ca-gregory", "en-US-x-twain": "en-US-x-twain",
	} {
		got, err := directory.CheckLocale("locale", in)
		if err != nil || got != want {
			t.Errorf("CheckLocale(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// Issue 28, fault 10: well-formed but no language, taken before.
	for in, rule := range map[string]string{
		"klingon":     "must be a valid BCP 47 language tag, such as en or zh-CN: registered subtags, in the order language, script, region, variants",
		"en-CN-Hans":  "must be a valid BCP 47 language tag, such as en or zh-CN: hans is no registered subtag", // a script after the region
		"zh-Hanz":     "must be a valid BCP 47 language tag, such as en or zh-CN: Hanz is no registered subtag",
		"en-abcdefgh": "must be a valid BCP 47 language tag, such as en or zh-CN: abcdefgh is no registered subtag",
	} {
		_, err := directory.CheckLocale("locale", in)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "locale" || ie.Rule.String() != rule {
			t.Errorf("CheckLocale(%q): %v, want locale %s", in, err, rule)
		}
	}
	for _, in := range []string{"zh_CN", "not a tag", "z", "zhzh", "-en", "en-", "en--US", "en-toolongsubtag", "中文", strings.Repeat("a", 8) + strings.Repeat("-abcdefgh", 4)} {
		_, err := directory.CheckLocale("tenantLocale", in)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "tenantLocale" || !strings.Contains(ie.Rule.String(), "BCP 47") {
			t.Errorf("CheckLocale(%q): %v, want an input error naming tenantLocale", in, err)
		}
	}
}

// A user's and a tenant's locales are stored, read together by Locales and
// with a token by AuthenticateUser, and kept per tenant.
func TestLocales(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setupFixture(t, db)
		ann := f.user(t, f.tenant.ID, "ann")
		zed := f.user(t, f.other.ID, "zed")
		if u, tn, err := f.d.Locales(ctx, ann.Principal()); err != nil || u != "" || tn != "" {
			t.Fatalf("locales before any is set: %q %q %v", u, tn, err)
		}
		if err := f.d.SetUserLocale(ctx, f.tenant.ID, ann.ID, "zh-cn"); err != nil {
			t.Fatal(err)
		}
		if err := f.d.SetTenantLocale(ctx, f.tenant.ID, "en"); err != nil {
			t.Fatal(err)
		}
		if u, tn, err := f.d.Locales(ctx, ann.Principal()); err != nil || u != "zh-CN" || tn != "en" {
			t.Errorf("ann's locales: %q %q %v", u, tn, err)
		}
		// The other tenant's user and tenant are untouched.
		if u, tn, err := f.d.Locales(ctx, zed.Principal()); err != nil || u != "" || tn != "" {
			t.Errorf("zed's locales: %q %q %v", u, tn, err)
		}
		if l, err := f.d.TenantLocale(ctx, f.other.ID); err != nil || l != "" {
			t.Errorf("the other tenant's locale: %q %v", l, err)
		}
		if l, err := f.d.TenantLocale(ctx, f.tenant.ID); err != nil || l != "en" {
			t.Errorf("the tenant's locale: %q %v", l, err)
		}
		// A user named with another tenant's id is nobody.
		if err := f.d.SetUserLocale(ctx, f.other.ID, ann.ID, "en"); !errors.Is(err, deskkit.ErrNotFound) {
			t.Errorf("setting ann's locale through the other tenant: %v", err)
		}
		if u, tn, err := f.d.Locales(ctx, deskkit.Principal{UserID: ann.ID, TenantID: f.other.ID}); err != nil || u != "" || tn != "" {
			t.Errorf("ann read through the other tenant: %q %q %v", u, tn, err)
		}
		if err := f.d.SetTenantLocale(ctx, 999999, "en"); !errors.Is(err, deskkit.ErrNotFound) {
			t.Errorf("an unknown tenant: %v", err)
		}
		if err := f.d.SetUserLocale(ctx, f.tenant.ID, ann.ID, "zh_CN"); err == nil {
			t.Error("a malformed locale was stored")
		}

		token, err := f.d.IssueToken(ctx, ann)
		if err != nil {
			t.Fatal(err)
		}
		u, err := f.d.AuthenticateUser(ctx, token)
		if err != nil || u.Locale != "zh-CN" || u.TenantLocale != "en" {
			t.Errorf("AuthenticateUser: %+v %v", u, err)
		}
		if got, err := f.d.User(ctx, f.tenant.ID, ann.ID); err != nil || got.Locale != "zh-CN" {
			t.Errorf("User: %+v %v", got, err)
		}
		if tn, err := f.d.Tenant(ctx, f.tenant.ID); err != nil || tn.Locale != "en" {
			t.Errorf("Tenant: %+v %v", tn, err)
		}
		// "" clears.
		if err := f.d.SetUserLocale(ctx, f.tenant.ID, ann.ID, ""); err != nil {
			t.Fatal(err)
		}
		if u, _, _ := f.d.Locales(ctx, ann.Principal()); u != "" {
			t.Errorf("ann's locale after clearing: %q", u)
		}
	})
}

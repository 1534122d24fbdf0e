package verifytest

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/verify"
)

// FuncDirectory is a verify.Directory whose methods call its function
// fields, for a test that scripts one answer. A method whose field is nil
// panics: the test did not expect the Verifier to call it.
type FuncDirectory struct {
	UserFn          func(ctx context.Context, tenantID, userID int64) (verify.User, error)
	TenantFn        func(ctx context.Context, tenantID int64) (verify.Tenant, error)
	HolderFn        func(ctx context.Context, tenantID int64, k verify.Kind, address string) (int64, error)
	UpdateProfileFn func(ctx context.Context, db bun.IDB, tenantID, userID int64, p verify.Profile) error
	SetMobileFn     func(ctx context.Context, db bun.IDB, tenantID, userID int64, old, mobile, country string) error
	SetEmailFn      func(ctx context.Context, db bun.IDB, tenantID, userID int64, old, email string) error
}

var _ verify.Directory = (*FuncDirectory)(nil)

// User calls UserFn.
func (f *FuncDirectory) User(ctx context.Context, tenantID, userID int64) (verify.User, error) {
	return f.UserFn(ctx, tenantID, userID)
}

// Tenant calls TenantFn.
func (f *FuncDirectory) Tenant(ctx context.Context, tenantID int64) (verify.Tenant, error) {
	return f.TenantFn(ctx, tenantID)
}

// Holder calls HolderFn.
func (f *FuncDirectory) Holder(ctx context.Context, tenantID int64, k verify.Kind, address string) (int64, error) {
	return f.HolderFn(ctx, tenantID, k, address)
}

// UpdateProfile calls UpdateProfileFn.
func (f *FuncDirectory) UpdateProfile(ctx context.Context, db bun.IDB, tenantID, userID int64, p verify.Profile) error {
	return f.UpdateProfileFn(ctx, db, tenantID, userID, p)
}

// SetMobile calls SetMobileFn.
func (f *FuncDirectory) SetMobile(ctx context.Context, db bun.IDB, tenantID, userID int64, old, mobile, country string) error {
	return f.SetMobileFn(ctx, db, tenantID, userID, old, mobile, country)
}

// SetEmail calls SetEmailFn.
func (f *FuncDirectory) SetEmail(ctx context.Context, db bun.IDB, tenantID, userID int64, old, email string) error {
	return f.SetEmailFn(ctx, db, tenantID, userID, old, email)
}

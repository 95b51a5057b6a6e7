package app

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// AccountCredentials are a clinic's credentials in plain text: they exist
// only on their way to the operator, once.
type AccountCredentials struct {
	AccountCode string `json:"account_code"`
	AdminToken  string `json:"admin_token"`
	APIKey      string `json:"api_key"`
	APISecret   string `json:"api_secret"`
}

// NewAccount is what the operator gives to create a clinic.
type NewAccount struct {
	Code, Name, Domain string
	SSO                bool
}

var (
	accountCodeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,62}$`)
	domainRE      = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$`)
)

// Features an account can switch on.
var knownFeatures = []string{FeatureERx}

// SystemPrincipal is the operator acting from the command line on a clinic.
func SystemPrincipal(acct *clinic.Account) *clinic.Principal {
	return &clinic.Principal{Account: acct, Kind: clinic.CredSystem, RequestID: "cli"}
}

// CreateAccount creates a clinic with its admin user and returns its
// credentials; only their hashes are stored.
func (a *App) CreateAccount(ctx context.Context, in NewAccount) (*AccountCredentials, error) {
	if err := CheckFields(Line("name", in.Name, MaxNameChars), Line("domain", in.Domain, MaxLineChars)); err != nil {
		return nil, err
	}
	in.Code = strings.TrimSpace(in.Code)
	if !accountCodeRE.MatchString(in.Code) {
		return nil, clinic.Errorf(clinic.EInvalid, "account code must be 2-63 lowercase letters, digits or '-', starting with a letter or digit.")
	}
	if strings.TrimSpace(in.Name) == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "account name is required.")
	}
	if !domainRE.MatchString(in.Domain) {
		return nil, clinic.Errorf(clinic.EInvalid, "domain must be a DNS name such as clinic.example.com.")
	}
	now := a.Unix()
	creds := &AccountCredentials{AccountCode: in.Code, AdminToken: NewSecret(), APIKey: NewSecret(), APISecret: NewSecret()}
	acct := &clinic.Account{Code: in.Code, Name: strings.TrimSpace(in.Name), Domain: strings.ToLower(in.Domain), SSOEnabled: in.SSO, Created: now, Modified: now}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateAccount(ctx, acct, store.AccountSecrets{
			AdminTokenHash: HashSecret(creds.AdminToken), APIKeyHash: HashSecret(creds.APIKey), APISecretHash: HashSecret(creds.APISecret),
		}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return clinic.Errorf(clinic.EConflict, "an account with code %q already exists.", in.Code)
			}
			return err
		}
		// The admin token acts as this user, so "-" and GET /me mean something for it.
		admin := &clinic.User{AccountID: acct.ID, Code: "admin-" + RandomHex(8), Username: "admin." + in.Code,
			FirstName: "Clinic", LastName: "Admin", Type: clinic.UserAdmin, Status: clinic.StatusActive, Active: true,
			IsAdmin: true, Roles: []string{"clinic_admin"}, Extra: map[string]any{}, Created: now, Modified: now}
		if err := a.createUser(ctx, q, admin, true); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, SystemPrincipal(acct), "account.create", "account", in.Code, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("create account", err, "")
	}
	return creds, nil
}

// AccountByCode finds a clinic for the command line.
func (a *App) AccountByCode(ctx context.Context, code string) (*clinic.Account, error) {
	acct, err := a.store.Read().AccountByCode(ctx, code)
	return acct, StoreErr("account", err, fmt.Sprintf("no account with code %q.", code))
}

// SetSSO turns single sign-on on or off.
func (a *App) SetSSO(ctx context.Context, code string, on bool) error {
	acct, err := a.AccountByCode(ctx, code)
	if err != nil {
		return err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.SetAccountSSO(ctx, acct.ID, on, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, SystemPrincipal(acct), "account.sso", "account", code, OutcomeOK)
	})
	return StoreErr("set sso", err, "")
}

// SetFeature switches an account feature on or off.
func (a *App) SetFeature(ctx context.Context, code, feature string, on bool) error {
	if !slices.Contains(knownFeatures, feature) {
		return clinic.Errorf(clinic.EInvalid, "unknown feature %q; known: %s.", feature, strings.Join(knownFeatures, ", "))
	}
	acct, err := a.AccountByCode(ctx, code)
	if err != nil {
		return err
	}
	fs := slices.DeleteFunc(slices.Clone(acct.Features), func(f string) bool { return f == feature })
	if on {
		fs = append(fs, feature)
	}
	slices.Sort(fs)
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.SetAccountFeatures(ctx, acct.ID, fs, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, SystemPrincipal(acct), "account.feature", "account", code, OutcomeOK)
	})
	return StoreErr("set feature", err, "")
}

// Rotation targets.
const (
	RotateAdminToken = "admin_token"
	RotateAPISecret  = "api_secret"
	RotateAll        = "all" // admin token, API key and secret: the demo's restart
)

// Rotate replaces a clinic credential and returns the new value(s). The old
// value stops working when the transaction commits.
func (a *App) Rotate(ctx context.Context, code, what string) (*AccountCredentials, error) {
	acct, err := a.AccountByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	creds := &AccountCredentials{AccountCode: code}
	now := a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if what == RotateAdminToken || what == RotateAll {
			creds.AdminToken = NewSecret()
			if err := q.SetAccountAdminTokenHash(ctx, acct.ID, HashSecret(creds.AdminToken), now); err != nil {
				return err
			}
		}
		if what == RotateAPISecret || what == RotateAll {
			creds.APISecret = NewSecret()
			if err := q.SetAccountAPISecretHash(ctx, acct.ID, HashSecret(creds.APISecret), now); err != nil {
				return err
			}
		}
		if what == RotateAll {
			creds.APIKey = NewSecret()
			if err := q.SetAccountAPIKeyHash(ctx, acct.ID, HashSecret(creds.APIKey), now); err != nil {
				return err
			}
		}
		if creds.AdminToken == "" && creds.APISecret == "" {
			return clinic.Errorf(clinic.EInvalid, "nothing to rotate: name the admin token or the API secret.")
		}
		return a.AuditIn(ctx, q, SystemPrincipal(acct), "account.rotate."+what, "account", code, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("rotate", err, "")
	}
	return creds, nil
}

// Settings is GET /settings: what a clinic shows before anyone logs in.
func (a *App) Settings(ctx context.Context, p *clinic.Principal) (*clinic.Account, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	return p.Account, nil
}

// Accounts is GET /accounts. A clinic sees only itself: clinics hosted on one
// server never learn of each other.
func (a *App) Accounts(ctx context.Context, p *clinic.Principal) ([]*clinic.Account, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	return []*clinic.Account{p.Account}, nil
}

// Account is GET /accounts/{code}; "-" is the caller's clinic.
func (a *App) Account(ctx context.Context, p *clinic.Principal, code string) (*clinic.Account, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	if code != "-" && code != p.Account.Code {
		return nil, clinic.Errorf(clinic.ENotFound, "Account not found.")
	}
	return p.Account, nil
}

// accountByCode and accountByID are the request path's account reads,
// through the store's account cache.
func (a *App) accountByCode(ctx context.Context, code string) (*clinic.Account, error) {
	return a.store.AccountByCode(ctx, code)
}

func (a *App) accountByID(ctx context.Context, id int64) (*clinic.Account, error) {
	return a.store.AccountByID(ctx, id)
}

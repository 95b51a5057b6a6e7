package app

import "teleclinic/internal/clinic"

// Every exported operation that takes a Principal starts with one of these
// checks, whatever door called it: the API's route table checks the same
// credential first (its Need column), and the portal's pages call app
// directly. What follows the check (the caller's relation to a visit, a
// record or a file) is each operation's own rule.

// RequireAdmin admits the clinic admin token and the operator's command line.
func RequireAdmin(p *clinic.Principal) error {
	if p == nil || p.Account == nil || !p.IsAdmin() {
		return clinic.Errorf(clinic.EForbidden, "Only the clinic admin may do this.")
	}
	return nil
}

// RequireUser admits a signed-in user, or the admin acting as the clinic's
// admin user (NeedUser).
func RequireUser(p *clinic.Principal) error {
	if p == nil || p.Account == nil || p.User == nil || (p.Kind != clinic.CredUserToken && !p.IsAdmin()) {
		return clinic.Errorf(clinic.EUnauthenticated, "Sign in first: this needs a user token.")
	}
	return nil
}

// requireAPIKey admits the clinic's API key and secret (NeedAPIKey), and
// the operator.
func requireAPIKey(p *clinic.Principal) error {
	if p == nil || p.Account == nil || (p.Kind != clinic.CredAPIKey && p.Kind != clinic.CredSystem) {
		return clinic.Errorf(clinic.EUnauthenticated, "This needs the clinic's API key and secret.")
	}
	return nil
}

// RequireAccount admits any caller that named its clinic (NeedAccountCode):
// the public and pre-login operations.
func RequireAccount(p *clinic.Principal) error {
	if p == nil || p.Account == nil {
		return clinic.Errorf(clinic.EUnauthenticated, "Missing X-AccountCode.")
	}
	return nil
}

package clinic

// User types (spec: "User types").
const (
	UserAdmin      = 100
	UserMember     = 200 // a registered patient
	UserCompany    = 300
	UserProvider   = 400
	UserKiosk      = 500 // deprecated
	UserGuest      = 600
	UserPhoneBridg = 700
)

// User statuses. The spec shows status as an integer without listing values;
// these are ours and documented in openapi.yaml.
const (
	StatusPending  = 0  // created, not yet activated (password not set)
	StatusActive   = 1  // may log in
	StatusDisabled = -1 // blocked by the clinic
)

// Genders as profile responses show them.
const (
	GenderUnknown = 0
	GenderMale    = 1
	GenderFemale  = 2
)

// Visit statuses (spec: "States and transitions").
const (
	VisitPending    = 10
	VisitConfirmed  = 20
	VisitInProgress = 25
	VisitCompleted  = 30
	VisitCancelled  = 40
)

// Account is a clinic: the tenant every other row belongs to.
type Account struct {
	ID         int64
	Code       string
	Name       string
	Domain     string
	SSOEnabled bool
	Features   []string
	Created    int64
	Modified   int64
}

// User is a patient, provider, guest or the clinic's admin user.
type User struct {
	ID            int64
	AccountID     int64
	Code          string
	Username      string
	FirstName     string
	LastName      string
	Email         string
	PasswordHash  string
	DOB           string
	Gender        int
	Type          int
	Subtype       string
	Status        int
	Active        bool
	TOS           bool
	Timezone      string
	EmailVerified bool
	SignupStep    int
	SvcID         string
	Nationality   string
	Phone         string
	StreetAddr    string
	City          string
	State         string
	Zip           string
	PCPName       string
	PCPPhone      string
	PhotoFileID   string
	Extra         map[string]any
	DisableEmails bool
	IsHidden      bool
	IsAdmin       bool
	Roles         []string
	Group         string
	LastLogin     int64
	Created       int64
	Modified      int64
}

// FullName is first and last name joined the way the profile shows it.
func (u *User) FullName() string {
	switch {
	case u.FirstName == "":
		return u.LastName
	case u.LastName == "":
		return u.FirstName
	}
	return u.FirstName + " " + u.LastName
}

// Room is a video consultation room. Only the fields the user profile and the
// room list need exist so far.
type Room struct {
	ID        int64
	AccountID int64
	Code      string
	Slug      string
	Name      string
	Domain    string
	Active    bool
	Created   int64
	Modified  int64
}

// RoomLink is a user's association with a room, as the profile shows it.
type RoomLink struct {
	Room      Room
	Default   bool
	AddedTime int64
	Source    string
}

// CredentialKind says which of the spec's credentials authenticated a request.
type CredentialKind int

// The credential kinds of the spec's Authentication section.
const (
	CredNone CredentialKind = iota
	CredAccountCode
	CredAPIKey
	CredUserToken
	CredAdminToken
	CredSystem // the operator's command line
)

func (k CredentialKind) String() string {
	switch k {
	case CredAccountCode:
		return "account_code"
	case CredAPIKey:
		return "api_key"
	case CredUserToken:
		return "user_token"
	case CredAdminToken:
		return "admin_token"
	case CredSystem:
		return "system"
	}
	return "none"
}

// Principal is who is calling and for which clinic. Every app operation takes
// one; every store query is scoped by its Account.
type Principal struct {
	Account   *Account
	Kind      CredentialKind
	User      *User // the acting user: the token's user, or the clinic admin user for the admin token
	TokenID   int64 // the access token row, for logout of "the caller's" token
	RequestID string
}

// IsAdmin reports whether the caller has the clinic's full admin permissions.
func (p *Principal) IsAdmin() bool { return p.Kind == CredAdminToken || p.Kind == CredSystem }

// UserID returns the acting user's id, or 0.
func (p *Principal) UserID() int64 {
	if p.User == nil {
		return 0
	}
	return p.User.ID
}

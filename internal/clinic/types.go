package clinic

import "strconv"

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
	// Version moves on every change to the row (a trigger does it), so two
	// reads with the same version saw the same row.
	Version int64
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

// VideoID names a user to TURN servers and LiveKit: their svcid, or their
// id for a user created before svcids.
func (u *User) VideoID() string {
	if u.SvcID != "" {
		return u.SvcID
	}
	return strconv.FormatInt(u.ID, 10)
}

// Room is a video consultation room.
type Room struct {
	ID        int64
	AccountID int64
	Code      string
	Slug      string
	Name      string
	Domain    string
	Active    bool
	Settings  RoomSettings
	Created   int64
	Modified  int64
}

// RoomSettings is everything about a room beyond its names. It is stored as
// one JSON document; the tags are the storage names.
type RoomSettings struct {
	Subtitle           string            `json:"subtitle"`
	Description        string            `json:"description"`
	PublicAccess       bool              `json:"public_access_room"`
	WalkinEnabled      bool              `json:"walkin_enabled"`
	AppointmentEnabled bool              `json:"appointment_enabled"`
	GuestType          int               `json:"guest_type"`
	GuestLogin         bool              `json:"guest_login"`
	Consultations      []Consultation    `json:"consultations"`
	Currency           string            `json:"currency"`
	Specialties        []Specialty       `json:"specialties"`
	Operation          OperationSettings `json:"operation"`
	QueueCapacity      int               `json:"queue_capacity"`
	// Appointments is nil until the clinic sets it: AppointmentRules()
	// then gives the defaults.
	Appointments *AppointmentSettings `json:"appointment_settings,omitempty"`
	// WaitAlertMinutes: the room's providers are emailed when a walk-in
	// has waited this long with no provider (0: never).
	WaitAlertMinutes int `json:"wait_alert_minutes,omitempty"`
	// IntakeQuestions are the room's own questions on its intake form.
	IntakeQuestions []IntakeQuestion `json:"intake_questions,omitempty"`
	// Consent is the text a patient signs with each intake (nil: none).
	Consent *ConsentText `json:"consent,omitempty"`
	// Contact is how patients reach the clinic about this room's visits
	// (nil: not given): shown wherever a page or an email tells them to
	// contact the clinic.
	Contact *RoomContact `json:"contact,omitempty"`
	// EmailNote is the clinic's own words to its patients in the mails of
	// a booking, a move and a reminder ("Have your insurance card at
	// hand."; "": none).
	EmailNote string `json:"email_note,omitempty"`
	// Translations are the room's words in the clinic's other languages,
	// by language tag (docs/design-notes.md, "The clinic's words in each
	// language").
	Translations map[string]RoomText `json:"translations,omitempty"`
}

// RoomText is a room's clinic-written words in one more language than
// its own: each one left empty is the room's own.
type RoomText struct {
	Name        string `json:"name,omitempty"`
	Subtitle    string `json:"subtitle,omitempty"`
	Description string `json:"description,omitempty"`
	CloseMsg    string `json:"close_msg,omitempty"`
	EmailNote   string `json:"email_note,omitempty"`
	// Questions are the intake questions' words, by question id.
	Questions map[string]QuestionWording `json:"questions,omitempty"`
	// Consent is the consent's text in this language, of ConsentVersion:
	// a translation of another version than the room's is not shown (a
	// patient signs only what the clinic wrote of the version in force).
	Consent        string `json:"consent,omitempty"`
	ConsentVersion string `json:"consent_version,omitempty"`
}

// QuestionWording is an intake question's words in one language: its
// label and its choices' labels, in the order of the question's own (an
// answer is always kept as the room's own choice).
type QuestionWording struct {
	Label   string   `json:"label,omitempty"`
	Choices []string `json:"choices,omitempty"`
}

// RoomWords are a room's words as a reader of one language reads them.
type RoomWords struct {
	Name, Subtitle, Description, CloseMsg, EmailNote string
	Questions                                        []QuestionWords
	Consent                                          *ConsentText
}

// QuestionWords is an intake question as a reader reads it: its label,
// and its choices as value (the room's own, what the answer keeps) and
// label.
type QuestionWords struct {
	IntakeQuestion
	Options []Choice
}

// Choice is one choice of a question: the value kept and the label read.
type Choice struct{ Value, Label string }

// WordsIn are room r's words for a reader of language tag: its
// translation's where it has them, its own elsewhere.
func (r *Room) WordsIn(tag string) RoomWords {
	s := r.Settings
	t := s.Translations[tag]
	or := func(v, own string) string {
		if v != "" {
			return v
		}
		return own
	}
	w := RoomWords{Name: or(t.Name, r.Name), Subtitle: or(t.Subtitle, s.Subtitle), Description: or(t.Description, s.Description),
		CloseMsg: or(t.CloseMsg, s.Operation.CloseMsg), EmailNote: or(t.EmailNote, s.EmailNote)}
	for _, q := range s.IntakeQuestions {
		qt := t.Questions[q.ID]
		qw := QuestionWords{IntakeQuestion: q}
		qw.Label = or(qt.Label, q.Label)
		for i, c := range q.Choices {
			label := c
			if len(qt.Choices) == len(q.Choices) && qt.Choices[i] != "" {
				label = qt.Choices[i]
			}
			qw.Options = append(qw.Options, Choice{Value: c, Label: label})
		}
		w.Questions = append(w.Questions, qw)
	}
	if c := s.Consent; c != nil {
		w.Consent = &ConsentText{Version: c.Version, Text: c.Text}
		if t.Consent != "" && t.ConsentVersion == c.Version {
			w.Consent.Text = t.Consent
		}
	}
	return w
}

// RoomContact is a room's phone number and email address for patients.
type RoomContact struct {
	Phone string `json:"phone"`
	Email string `json:"email"`
}

// Intake question kinds.
const (
	QuestionText   = "text"
	QuestionChoice = "choice"
	QuestionYesNo  = "yesno"
	QuestionDate   = "date"
)

// IntakeQuestion is a question of a room's intake form. Its answer is
// kept in the intake's custom fields under "q_" and its id.
type IntakeQuestion struct {
	ID       string   `json:"id"`
	Label    string   `json:"label"`
	Kind     string   `json:"kind"`
	Choices  []string `json:"choices,omitempty"`
	Required bool     `json:"required"`
}

// AnswerKey is where an intake keeps the answer to question id.
func AnswerKey(id string) string { return "q_" + id }

// ConsentText is a room's consent, with its version: a patient signs the
// version they were shown.
type ConsentText struct {
	Version string `json:"version"`
	Text    string `json:"text"`
}

// Consent is a patient's signature of a room's consent text.
type Consent struct {
	ID, AccountID, UserID, RoomID, IntakeID int64
	Version, Text, SignedName               string
	SignedAt                                int64
}

// AppointmentSettings are a room's rules for booked visits.
type AppointmentSettings struct {
	// JoinBeforeMinutes: the patient's call opens this long before the
	// start (the provider's is open at any time).
	JoinBeforeMinutes int `json:"join_before_minutes"`
	// CancelHours: a patient cancels or reschedules up to this long before
	// the start; after that, only the clinic can (0: until the start).
	CancelHours int `json:"cancel_hours"`
	// RefundPercent of a paid visit goes back to the patient who cancels
	// in time.
	RefundPercent int `json:"refund_percent"`
	// ReminderMinutes: an email goes to the patient this long before the
	// start, one for each.
	ReminderMinutes []int `json:"reminder_minutes"`
	// NoShowMinutes: a booked visit whose patient has not arrived (their
	// visit page, or a client following its events, never opened near the
	// start) and that no one started this long after its start becomes a
	// no-show (0: only when someone marks it).
	NoShowMinutes int `json:"no_show_minutes"`
	// NoShowFee and LateCancelFee, in the room's currency, are charged to
	// the patient's saved card for a no-show and for a cancellation inside
	// the CancelHours window (0: none). With a late-cancel fee, a patient
	// may cancel inside the window, and is told the fee first; without
	// one, only the clinic can.
	NoShowFee     float64 `json:"no_show_fee"`
	LateCancelFee float64 `json:"late_cancel_fee"`
}

// AppointmentRules are the room's rules for booked visits.
func (s RoomSettings) AppointmentRules() AppointmentSettings {
	if s.Appointments == nil { // the defaults
		return AppointmentSettings{JoinBeforeMinutes: 10, CancelHours: 0, RefundPercent: 100, ReminderMinutes: []int{24 * 60, 15}}
	}
	return *s.Appointments
}

// Consultation is a kind of visit a room offers, with its length and price.
type Consultation struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Duration    int     `json:"duration"` // minutes
	Amount      float64 `json:"amount"`
	Group       bool    `json:"group"`
	Charge      bool    `json:"charge"`
	Slots       int     `json:"slots"`
}

// Specialty is a specialty a room offers.
type Specialty struct {
	Code     string `json:"code"`
	Name     string `json:"name"`
	Duration int    `json:"duration"`
}

// OperationSettings say when a room takes patients.
type OperationSettings struct {
	IsClosed      bool     `json:"is_closed"`
	CloseMsg      string   `json:"close_msg"`
	CloseHTML     string   `json:"close_html"`
	ClosedDays    []string `json:"closed_days"` // lowercase weekday names
	Timezone      string   `json:"default_timezone"`
	IsOpenAllTime bool     `json:"is_open_all_time"`
	OpenTime      string   `json:"open_time"`  // HH:MM local; with CloseTime, the daily hours
	CloseTime     string   `json:"close_time"` // HH:MM local
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
	// CredAdminSession is the clinic admin signed in to the portal: a
	// session of the clinic's admin user opened with the admin token
	// (app.AdminSignIn), with a user token's lifetimes.
	CredAdminSession
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
	case CredAdminSession:
		return "admin_session"
	}
	return "none"
}

// Principal is who is calling and for which clinic. Every app operation takes
// one; every store query is scoped by its Account.
type Principal struct {
	Account *Account
	Kind    CredentialKind
	User    *User // the acting user: the token's user, or the clinic admin user for the admin token
	TokenID int64 // the access token row, for logout of "the caller's" token
	// Until is when the credential expires by time alone (its absolute or
	// idle expiry, unix seconds), unless revoked first; 0 for none.
	Until     int64
	RequestID string
	// ClientAddr is the address the request came from, for throttling
	// sign-in attempts ("" when unknown).
	ClientAddr string
	// VisitScope, when not 0, is the one visit the credential opens: a
	// portal session started by a link an email carried (app/visitlinks.go).
	VisitScope int64
	// Grant, when not nil, narrows the credential to what an app was
	// granted: a SMART access token (app/smart.go).
	Grant *Grant
}

// IsAdmin reports whether the caller has the clinic's full admin permissions.
func (p *Principal) IsAdmin() bool {
	return p.Kind == CredAdminToken || p.Kind == CredSystem || p.Kind == CredAdminSession
}

// UserID returns the acting user's id, or 0.
func (p *Principal) UserID() int64 {
	if p.User == nil {
		return 0
	}
	return p.User.ID
}

// Intake is what a patient tells the clinic before a visit.
type Intake struct {
	ID             int64
	AccountID      int64
	RoomID         int64
	MemberID       int64
	CreatorUserID  int64
	ProviderID     int64
	Type           int // 1 walk-in, 2 scheduled
	ReasonForVisit string
	Location       string
	Phone          string
	Custom         map[string]string
	Attachments    []int64 // file ids
	ConsultationID string  // one of the room's consultations; "" is the room's first
	VisitID        int64
	Created        int64
	Modified       int64
}

// Intake types.
const (
	IntakeWalkin   = 1
	IntakeSchedule = 2
)

// Outcomes of a cancelled visit a clinic counts apart (Visit.Outcome).
const (
	OutcomeNoShow     = "no_show"
	OutcomeLateCancel = "late_cancel"
)

// Visit kinds: how a visit came to be.
const (
	KindWalkin      = "walkin"
	KindEconsult    = "econsult"
	KindAppointment = "appointment"
)

// Visit subtypes (spec: Visit subtypes).
const (
	VisitInPerson = 1
	VisitPhone    = 2
	VisitVideo    = 3
	VisitEconsult = 4
)

// Visit is a consultation between a patient and a provider.
type Visit struct {
	ID           int64
	AccountID    int64
	Code         string
	Kind         string
	MemberID     int64
	ProviderID   int64 // 0 for an unassigned e-consult
	RoomID       int64
	IntakeID     int64
	SlotID       int64
	Status       int
	Type         int
	Start, End   int64
	ActualStart  int64 // 0 until started
	ActualEnd    int64 // 0 until ended
	CancelReason string
	Outcome      string // of a cancelled visit: OutcomeNoShow, OutcomeLateCancel or ""
	Meeting      Meeting
	Created      int64
	Modified     int64
	MessageCount int  // messages in its thread; every place up to it is taken
	RemindersOff bool // the patient turned its reminder emails off
	// SeenAt is when the patient of a waiting walk-in last had its page
	// open (0: no page has followed it); app.Left says whether they left.
	SeenAt int64
}

// ThreadVisit is what a visit's thread and call need of a visit: who may
// read and write it (its patient, provider, kind and room), its status, its
// creation and its thread's length. It is read on every thread and call
// request, so it is read alone (8 columns, not a Visit's 20); a type of its
// own keeps a Visit from travelling with most of its fields zero.
type ThreadVisit struct {
	ID           int64
	AccountID    int64
	Kind         string
	MemberID     int64
	ProviderID   int64
	RoomID       int64
	Status       int
	Start        int64 // an appointment's start; 0 for other kinds
	Created      int64
	MessageCount int
}

// Thread is v's ThreadVisit.
func (v *Visit) Thread() *ThreadVisit {
	return &ThreadVisit{ID: v.ID, AccountID: v.AccountID, Kind: v.Kind, MemberID: v.MemberID, ProviderID: v.ProviderID,
		RoomID: v.RoomID, Status: v.Status, Start: v.Start, Created: v.Created, MessageCount: v.MessageCount}
}

// Meeting is a visit's call details.
type Meeting struct {
	MeetingID          string `json:"meeting_id"`
	ConferencePIN      string `json:"conference_pin"`
	RecordingAutoStart bool   `json:"recording_auto_start"`
	Expiry             int64  `json:"expiry"`
}

// Slot statuses.
const (
	SlotOpen   = 10
	SlotBooked = 20
)

// SlotGroup is one publication of availability, as the provider wrote it.
type SlotGroup struct {
	ID           int64
	AccountID    int64
	ProviderID   int64
	RoomID       int64
	DateStart    string // YYYY-MM-DD, local
	DateEnd      string
	TimeStart    string // HH:MM, local
	TimeEnd      string
	Timezone     string
	Repeat       bool
	RepeatDay    []string // weekday names
	RepeatWeek   int
	VisitType    string
	Consultation Consultation
	Duration     int // minutes per slot
	Created      int64
	Modified     int64
}

// Slot is a bookable time of a provider in a room.
type Slot struct {
	ID         int64
	AccountID  int64
	ProviderID int64
	RoomID     int64
	GroupID    int64
	Start, End int64
	Status     int
	VisitID    int64
	Created    int64
	Modified   int64
	// HeldBy is the intake an open slot is held for until HeldUntil,
	// while its patient pays.
	HeldBy, HeldUntil int64
}

// FreeFor says whether the slot may be booked at now for intake: open,
// and held by no other intake.
func (s *Slot) FreeFor(intake, now int64) bool {
	return s.Status == SlotOpen && (s.HeldUntil <= now || s.HeldBy == intake)
}

// Recording is a recorded call of a visit.
type Recording struct {
	ID           int64
	AccountID    int64
	VisitID      int64
	BlobKey      string
	Size         int64
	ContentType  string
	Start, End   int64
	Version      int
	Participants []Participant
	Created      int64
}

// Participant is someone in a recorded call.
type Participant struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	SvcID     string `json:"svcid"`
}

// CallPeer is one browser page in a visit's peer-to-peer call.
type CallPeer struct {
	AccountID, VisitID int64
	Peer               string // random, chosen by the server at join
	UserID             int64
	Name               string
	Role               string // patient, provider or guest
	Joined, Seen       int64
	Left               int64 // 0 while in the call
}

// CallSignal is a signalling message of a visit's call: from one peer to
// another, or to all (To ""). Seq orders a visit's signals.
type CallSignal struct {
	AccountID, VisitID int64
	Seq                int64
	From, To           string
	Kind               string
	Body               string // JSON, as the sending page wrote it
	Created            int64
}

// IdempotencyRecord is a request sent with an Idempotency-Key and, once it
// has finished, its answer, which a retry with the same key replays.
type IdempotencyRecord struct {
	AccountID   int64
	Caller      string // who sent it: the credential kind and the user
	Key         string
	Fingerprint string // the method, path and parameters, hashed
	Status      int    // the answer's HTTP status; 0 while in flight
	ContentType string
	Body        []byte
	Created     int64
}

// OAuth client kinds: a SMART app a person signs in to, in a browser or on
// a device (public, no secret: PKCE alone), one with a server that keeps a
// secret (confidential), and a backend service that signs its own
// assertions with a key the admin registered (SMART Backend Services).
const (
	ClientPublic       = "public"
	ClientConfidential = "confidential"
	ClientBackend      = "backend"
)

// OAuthClient is an app the clinic admin registered to use the clinic's
// FHIR API by SMART App Launch.
type OAuthClient struct {
	ID, AccountID int64
	ClientID      string
	Name          string
	Kind          string
	SecretHash    string
	RedirectURIs  []string // exact, as the app sends them
	JWKS          string   // a backend service's public keys, a JSON Web Key Set
	Scopes        []string // a backend service's system scopes
	Revoked       int64    // when the admin revoked it; 0 while it may be used
	Created       int64
}

// OAuthRequest is an authorize request from the app's redirect to the
// exchange of its code: done once the person approved it (AuthTime).
type OAuthRequest struct {
	ID        string
	AccountID int64
	ClientID  string
	Params    []byte // the request's parameters as the authorization server keeps them (JSON)
	UserID    int64
	PatientID int64
	Scopes    []string // as granted
	AuthTime  int64
	Expires   int64
}

// OAuthToken is an access token an app holds (its id is the token's jti)
// and, with offline_access, the refresh token that renews it.
type OAuthToken struct {
	ID             string
	AccountID      int64
	ClientID       string
	UserID         int64 // 0 for a backend service
	PatientID      int64 // the launch's patient, 0 for none
	Scopes         []string
	AuthTime       int64
	Expires        int64
	RefreshHash    string
	RefreshExpires int64
	Revoked        int64
	Created        int64
}

// Grant is what an app's access token lets it do, on top of (never beyond)
// the person's role: its SMART scopes and its launch's patient.
type Grant struct {
	ClientID  string
	Scopes    []string
	PatientID int64
}

// ExportJob is a FHIR Bulk Data export: what was asked, how far it is,
// and, once done, its files.
type ExportJob struct {
	ID        string
	AccountID int64
	ClientID  string // the backend service that asked ("" for the admin token)
	Level     string // system, patient or group
	GroupID   int64  // a group export's room
	Types     []string
	Since     int64
	Request   string // the kick-off's address, for the manifest
	Status    string // accepted, running, done, error, cancelled, expired
	Progress  string
	Output    []ExportFile
	Error     string
	Created   int64
	Finished  int64
	Expires   int64
}

// ExportFile is one NDJSON file of an export: a type's resources.
type ExportFile struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
	Key   string `json:"key"` // the blob's key
	Name  string `json:"name"`
}

// EHRConnection is an EHR a clinic launches Teleclinic from (SMART EHR
// launch, Teleclinic the app): its FHIR base, Teleclinic's client there,
// and the room its visits are held in.
type EHRConnection struct {
	ID, AccountID int64
	ISS           string
	ClientID      string
	SealedSecret  string
	RoomID        int64
	Created       int64
}

// EHRLaunch is a launch from an EHR in flight: from Teleclinic's redirect
// to the EHR's authorize endpoint to the code's return.
type EHRLaunch struct {
	State        string
	AccountID    int64
	ConnectionID int64
	Verifier     string // sealed
	Issuer       string // the EHR's authorization server
	TokenURL     string
	Expires      int64
}

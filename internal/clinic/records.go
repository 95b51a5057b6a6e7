package clinic

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The records of the families whose rows app and httpapi pass around:
// entity types live here, never in store, so that only app knows store.

// AuditEntry is one line of the audit trail: who, which clinic, what action
// on which object, and the outcome. It never holds the object's content.
type AuditEntry struct {
	ID          int64
	AccountID   int64
	ActorKind   string
	ActorUserID int64
	Action      string
	ObjectType  string
	ObjectID    string
	Outcome     string
	RequestID   string
	Created     int64
	// Seq and Hash are the entry's place in its clinic's hash chain and
	// its link there (0 and "" for entries from before the chain).
	Seq  int64
	Hash string
	// MAC authenticates the entry on its own from when it is written
	// ("" for entries from before it): the chainer refuses a pending
	// entry without a valid one, so a row inserted by SQL never joins the
	// chain.
	MAC string
}

// PaymentSource is a saved card.
type PaymentSource struct {
	ID            int64
	UserID        int64
	RoomID        int64
	ProviderID    int64
	Processor     string
	PaymentMethod string
	Brand         string
	Last4         string
	ExpMonth      int
	ExpYear       int
	IsDefault     bool
	Created       int64
	Modified      int64
}

// Coupon is a discount code of a clinic.
type Coupon struct {
	ID             int64
	Code           string
	PercentOffBP   int // hundredths of a percent
	ValidUntil     int64
	MaxRedemptions int
	Redemptions    int
	Active         bool
	Created        int64
	Modified       int64
}

// Invoice is a consultation's bill. Amounts are minor units.
type Invoice struct {
	ID             int64
	Kind           string // InvoiceVisit, or the fee it charges
	IntakeID       int64
	MemberID       int64
	VisitID        int64
	RoomID         int64
	SourceID       int64
	Processor      string
	Consultation   json.RawMessage
	Currency       string
	Amount         int64
	Discount       int64
	AmountDue      int64
	CouponID       int64
	CouponCode     string
	PercentOffBP   int
	Status         string
	ChargeRef      string
	FailureCode    string
	FailureMessage string
	Refunded       int64
	RefundRef      string
	AttemptStarted int64
	Created        int64
	Modified       int64
}

// Invoice kinds: a visit's price, or a fee the room's policy charges for
// a missed or late-cancelled visit.
const (
	InvoiceVisit         = "visit"
	InvoiceNoShowFee     = "no_show_fee"
	InvoiceLateCancelFee = "late_cancel_fee"
)

// EMRSection is one stored medical-record section of a user.
type EMRSection struct {
	Name            string
	Data            json.RawMessage
	DataNotReported bool
	Modified        int64
	ModifiedBy      int64
}

// Pharmacy is a pharmacy a patient chose; Fields holds its API fields and
// Extra the search result it came from, as the client sent it.
type Pharmacy struct {
	UserID    int64
	Code      string
	Fields    map[string]any
	Extra     json.RawMessage
	IsDefault bool
	Created   int64
}

// Prescription is a drug a provider prescribed for a patient.
type Prescription struct {
	ID           int64
	UserID       int64
	PrescriberID int64
	VisitID      int64
	DrugID       string
	NDC          string
	Drug         string
	Directions   string
	Qty          int
	Refills      int
	PharmacyCode string
	Status       string
	Created      int64
	Modified     int64
}

// File is an uploaded file: its row describes the bytes kept in blob
// storage under BlobKey.
type File struct {
	ID            int64
	AccountID     int64
	CreatorUserID int64
	Category      string
	TargetType    string // user or visit
	TargetID      int64
	IntakeID      int64 // for a visit's file: the visit's intake, if any
	Name          string
	Title         string
	Description   string
	Size          int64
	Ext           string
	ContentType   string
	BlobKey       string
	Created       int64
}

// Device is a user's health device.
type Device struct {
	ID       int64
	UserID   int64
	DeviceID string
	Name     string
	Type     string
	Created  int64
}

// Reading is one health measurement.
type Reading struct {
	ID        int64
	UserID    int64
	DeviceID  string
	Type      string
	DataType  string
	DataClass string
	Date      string
	Time      int64
	Values    map[string]any
	Created   int64
}

// InsuranceCard is a user's primary or secondary card; Fields holds the
// card's fields by their API names.
type InsuranceCard struct {
	UserID       int64
	CardType     string
	Fields       map[string]any
	Modified     int64
	CheckStarted int64
}

// EligibilityJob is one check of a card.
type EligibilityJob struct {
	ID       int64
	UserID   int64
	CardType string
	Status   string
	Details  map[string]any
	Started  int64
	Finished int64
}

// Message is one entry of a visit's thread.
type Message struct {
	ID          int64
	AccountID   int64
	VisitID     int64
	Seq         int
	AuthorID    int64
	ActorType   int
	Type        string
	Content     string
	Attachments []int64
	CreatedUS   int64 // microseconds since the epoch
}

// Endpoint is where a user's notifications are sent: a device's push token
// or an email address.
type Endpoint struct {
	ID        int64
	AccountID int64
	UserID    int64
	Type      int
	Address   string
	Created   int64
	Modified  int64
}

// Notification is something a user is told.
type Notification struct {
	ID        int64
	AccountID int64
	UserID    int64
	Type      string
	Title     string
	Image     string
	VisitID   int64
	IsNew     bool
	Read      bool
	Created   int64
	MtimeMS   int64
}

// RoomPage is a page of a clinic's rooms with the counts of a DataTables
// answer.
type RoomPage struct {
	Rooms           []Room
	Filtered, Total int
}

// AccessEntry is one access to a patient's record as the patient reads it
// (GET /users/{id}/access-log): who, when and what, never the content.
type AccessEntry struct {
	AuditEntry
	ActorName string // the acting user's name, "" for a credential without a user
	ActorType int    // the acting user's type (User…), 0 for a credential without a user
}

// Visit note statuses: a draft the provider edits, then signed (locked).
const (
	NoteDraft  = "draft"
	NoteSigned = "signed"
)

// VisitNote is the provider's note of a visit: its SOAP sections, the
// diagnoses chosen, and the summary the patient is given once the note
// is signed and the visit over. Signed, it changes only by addenda.
type VisitNote struct {
	ID, AccountID, VisitID int64
	AuthorID               int64
	Subjective, Objective  string
	Assessment, Plan       string
	Diagnoses              []NoteDiagnosis
	// Procedure is the service the note bills (a code of the clinic's
	// procedure list; "" for none).
	Procedure          string
	PatientSummary     string
	Status             string
	SignedBy, SignedAt int64
	// SignedHash is ContentHash as signed ("" before).
	SignedHash        string
	Created, Modified int64
	Addenda           []NoteAddendum
}

// ContentHash is the SHA-256 (hex) of what a signature binds: the note's
// visit, author, sections, diagnoses, service and summary, its signer and
// the time of signing, as canonical JSON. Addenda come after and are not
// in it.
func (n *VisitNote) ContentHash() string {
	b, _ := json.Marshal(struct {
		Visit, Author                           int64
		Subjective, Objective, Assessment, Plan string
		Diagnoses                               []NoteDiagnosis
		Procedure, Summary                      string
		SignedBy, SignedAt                      int64
	}{n.VisitID, n.AuthorID, n.Subjective, n.Objective, n.Assessment, n.Plan, n.Diagnoses, n.Procedure, n.PatientSummary, n.SignedBy, n.SignedAt})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SignatureHolds reports whether a signed note is still what was signed.
func (n *VisitNote) SignatureHolds() bool {
	return n.Status == NoteSigned && n.SignedHash != "" && n.SignedHash == n.ContentHash()
}

// ClaimCodes are a visit's billing codes (GET /visits/{id}/codes): its
// diagnoses, the primary first, and its procedures. The visit's provider
// or the admin sets them (app/billing); signing the note makes its
// diagnoses the claim's (app.SignVisitNote).
type ClaimCodes struct {
	Diagnoses  []string         `json:"diagnoses"`
	Procedures []ClaimProcedure `json:"procedures"`
}

// MaxClaimDiagnoses is how many diagnoses a claim holds (a CMS-1500
// holds twelve).
const MaxClaimDiagnoses = 12

// MaxClaimProcedures is how many procedures (service lines) a claim holds
// (a CMS-1500 holds six).
const MaxClaimProcedures = 6

// ClaimProcedure is a procedure code with its modifiers.
type ClaimProcedure struct {
	Code      string   `json:"code"`
	Modifiers []string `json:"modifiers"`
}

// NoteDiagnosis is an ICD-10-CM code of a note, with its description as
// the code set gave it when chosen.
type NoteDiagnosis struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// NoteAddendum is a dated addition to a signed note.
type NoteAddendum struct {
	ID, AuthorID int64
	Body         string
	Created      int64
}

// VisitFacts are what a visit recorded of itself for its claim: how the
// patient took part, where they were, the provider's state, the call's
// own start and end, and who took part.
type VisitFacts struct {
	VisitID       int64
	Modality      string // ModalityVideo, ModalityAudio or ""
	PatientState  string // two letters, as said at check-in
	PatientHome   string // "yes", "no" or "" (not said)
	ProviderState string
	CallStart     int64 // when the patient and a provider were first both in the call
	CallEnd       int64 // when the call last lost one of them, or the visit ended
	Participants  []CallParticipant
	Rejoins       int // how often someone already in the call joined again (a dropped connection, a reload)
	Updated       int64
}

// Interpreter is the first interpreter who took part in the call (nil:
// none).
func (f *VisitFacts) Interpreter() *CallParticipant {
	for i := range f.Participants {
		if f.Participants[i].Role == "interpreter" {
			return &f.Participants[i]
		}
	}
	return nil
}

// CallParticipant is one who took part in a visit's call.
type CallParticipant struct {
	UserID int64  `json:"user_id"`
	Role   string `json:"role"`
	Name   string `json:"name"`
	// Language is an interpreter's language (role "interpreter").
	Language string `json:"language,omitempty"`
}

// Modalities of a visit's call.
const (
	ModalityVideo = "video"
	ModalityAudio = "audio"
)

// Interpreter is one of the clinic's interpreters: a person, or an agency
// that sends one, for one language, reached by email or text.
type Interpreter struct {
	ID        int64
	AccountID int64
	Name      string
	Language  string // a BCP 47 tag: es, vi, ase (American Sign Language)
	Email     string
	Phone     string // E.164
	Agency    bool
	Active    bool
	Created   int64
}

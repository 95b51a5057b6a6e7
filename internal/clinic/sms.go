package clinic

// SMSSettings are a clinic's text-message sender and quiet hours.
type SMSSettings struct {
	AccountID int64
	// Provider is SMSOff, SMSSandbox or SMSTwilio.
	Provider   string
	AccountSID string
	// SealedToken is the Twilio auth token, sealed with the server key.
	SealedToken string
	From        string // E.164
	// QuietStart and QuietEnd are minutes after midnight in Timezone;
	// equal: no quiet hours. Automatic texts due inside them wait for
	// their end.
	QuietStart, QuietEnd int
	Timezone             string
	Modified             int64
}

// The text-message providers.
const (
	SMSOff     = "off"
	SMSSandbox = "sandbox"
	SMSTwilio  = "twilio"
)

// SMSConsent is a person's yes to texts: the number they gave and when.
type SMSConsent struct {
	AccountID, UserID int64
	Phone             string // E.164
	Consented         int64
	// Stopped: the number texted STOP since (read with the consent, not
	// kept in it); no text goes until START comes from it.
	Stopped bool
}

// SMSLogEntry is one text in the delivery log.
type SMSLogEntry struct {
	ID, AccountID, UserID int64
	Phone                 string // masked: the last four digits
	Kind                  string
	SID                   string
	// Status is Teleclinic's (pending, skipped, failed) until the provider
	// took the text, then the provider's (queued, sent, delivered,
	// undelivered, failed).
	Status           string
	ErrorCode        int
	Error            string
	Created, Updated int64
}

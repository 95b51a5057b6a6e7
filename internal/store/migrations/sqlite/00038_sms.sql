-- +goose Up
-- Text messages. A clinic's sender (Twilio, or the sandbox that answers as
-- Twilio's test credentials do; the auth token sealed) and its quiet
-- hours (minutes after midnight in its zone; start = end: none). A
-- person's consent to texts, with the number they gave and when they
-- said yes; a clinic's numbers that texted STOP; and the delivery log
-- (the number masked to its last four digits; the text itself is not
-- kept: it carries a sign-in link).
CREATE TABLE sms_settings (
    account_id  BIGINT  PRIMARY KEY REFERENCES accounts (id),
    provider    TEXT    NOT NULL,
    account_sid TEXT    NOT NULL DEFAULT '',
    auth_token  TEXT    NOT NULL DEFAULT '',
    from_number TEXT    NOT NULL DEFAULT '',
    quiet_start INTEGER NOT NULL DEFAULT 0,
    quiet_end   INTEGER NOT NULL DEFAULT 0,
    timezone    TEXT    NOT NULL DEFAULT 'UTC',
    modified    BIGINT  NOT NULL
);
CREATE TABLE sms_consents (
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    user_id    BIGINT NOT NULL REFERENCES users (id),
    phone      TEXT   NOT NULL,
    consented  BIGINT NOT NULL,
    PRIMARY KEY (account_id, user_id)
);
CREATE TABLE sms_optouts (
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    phone      TEXT   NOT NULL,
    created    BIGINT NOT NULL,
    PRIMARY KEY (account_id, phone)
);
CREATE TABLE sms_log (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    user_id    BIGINT  NOT NULL,
    phone      TEXT    NOT NULL DEFAULT '',
    kind       TEXT    NOT NULL,
    sid        TEXT    NOT NULL DEFAULT '',
    status     TEXT    NOT NULL,
    error_code INTEGER NOT NULL DEFAULT 0,
    error      TEXT    NOT NULL DEFAULT '',
    created    BIGINT  NOT NULL,
    updated    BIGINT  NOT NULL
);
CREATE INDEX sms_log_account ON sms_log (account_id, id);
CREATE INDEX sms_log_sid ON sms_log (account_id, sid);

-- +goose Down
DROP TABLE sms_log;
DROP TABLE sms_optouts;
DROP TABLE sms_consents;
DROP TABLE sms_settings;

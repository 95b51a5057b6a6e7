-- +goose Up
-- A clinic's card processor: the sandbox until its admin saves Stripe keys.
-- The secret key is sealed with the server key.
CREATE TABLE billing_settings (
    account_id      BIGINT  NOT NULL PRIMARY KEY REFERENCES accounts (id),
    processor       TEXT    NOT NULL,
    publishable_key TEXT    NOT NULL DEFAULT '',
    sealed_secret   TEXT    NOT NULL DEFAULT '',
    modified        BIGINT  NOT NULL
);

-- The processor's customer for each patient of a clinic.
CREATE TABLE billing_customers (
    account_id   BIGINT NOT NULL REFERENCES accounts (id),
    user_id      BIGINT NOT NULL REFERENCES users (id),
    processor    TEXT   NOT NULL,
    customer_ref TEXT   NOT NULL,
    created      BIGINT NOT NULL,
    PRIMARY KEY (account_id, user_id, processor)
);

-- Saved cards, scoped by room and provider (0: the room's own). The
-- processor keeps the card; we keep its reference and what the patient
-- recognises it by. The partial unique index allows one default per scope.
CREATE TABLE payment_sources (
    id             INTEGER PRIMARY KEY,
    account_id     BIGINT  NOT NULL REFERENCES accounts (id),
    user_id        BIGINT  NOT NULL REFERENCES users (id),
    room_id        BIGINT  NOT NULL,
    provider_id    BIGINT  NOT NULL DEFAULT 0,
    processor      TEXT    NOT NULL,
    payment_method TEXT    NOT NULL,
    brand          TEXT    NOT NULL,
    last4          TEXT    NOT NULL,
    exp_month      INTEGER NOT NULL,
    exp_year       INTEGER NOT NULL,
    is_default     INTEGER NOT NULL DEFAULT 0,
    created        BIGINT  NOT NULL,
    modified       BIGINT  NOT NULL
);
CREATE INDEX payment_sources_scope ON payment_sources (account_id, user_id, room_id, provider_id);
CREATE UNIQUE INDEX payment_sources_one_default ON payment_sources (account_id, user_id, room_id, provider_id, processor) WHERE is_default = 1;

-- Coupons: percent_off in hundredths of a percent; valid_until 0 and
-- max_redemptions 0 mean no limit. redemptions moves only by a conditional
-- UPDATE, so a limit holds under concurrent use.
CREATE TABLE coupons (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id),
    code            TEXT    NOT NULL,
    percent_off_bp  INTEGER NOT NULL,
    valid_until     BIGINT  NOT NULL DEFAULT 0,
    max_redemptions INTEGER NOT NULL DEFAULT 0,
    redemptions     INTEGER NOT NULL DEFAULT 0,
    active          INTEGER NOT NULL DEFAULT 1,
    created         BIGINT  NOT NULL,
    modified        BIGINT  NOT NULL,
    UNIQUE (account_id, code)
);

-- Invoices: amounts in the currency's minor units. One invoice per intake
-- that is not failed (the partial unique index), so an intake is charged
-- once however many calls race; a failed one may be tried again.
CREATE TABLE invoices (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id),
    intake_id       BIGINT  NOT NULL REFERENCES intakes (id),
    member_id       BIGINT  NOT NULL REFERENCES users (id),
    visit_id        BIGINT  NOT NULL DEFAULT 0,
    room_id         BIGINT  NOT NULL,
    source_id       BIGINT  NOT NULL DEFAULT 0,
    processor       TEXT    NOT NULL,
    consultation    TEXT    NOT NULL,
    currency        TEXT    NOT NULL,
    amount          BIGINT  NOT NULL,
    discount        BIGINT  NOT NULL DEFAULT 0,
    amount_due      BIGINT  NOT NULL,
    coupon_id       BIGINT  NOT NULL DEFAULT 0,
    coupon_code     TEXT    NOT NULL DEFAULT '',
    percent_off_bp  INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL,
    charge_ref      TEXT    NOT NULL DEFAULT '',
    failure_code    TEXT    NOT NULL DEFAULT '',
    failure_message TEXT    NOT NULL DEFAULT '',
    refunded        BIGINT  NOT NULL DEFAULT 0,
    refund_ref      TEXT    NOT NULL DEFAULT '',
    attempt_started BIGINT  NOT NULL DEFAULT 0,
    created         BIGINT  NOT NULL,
    modified        BIGINT  NOT NULL
);
CREATE UNIQUE INDEX invoices_one_per_intake ON invoices (account_id, intake_id) WHERE status <> 'failed';
CREATE INDEX invoices_member ON invoices (account_id, member_id, id);

-- The consultation an intake is for (a room consultation id; '' means the
-- room's first).
ALTER TABLE intakes ADD COLUMN consultation_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE intakes DROP COLUMN consultation_id;
DROP TABLE invoices;
DROP TABLE coupons;
DROP TABLE payment_sources;
DROP TABLE billing_customers;
DROP TABLE billing_settings;

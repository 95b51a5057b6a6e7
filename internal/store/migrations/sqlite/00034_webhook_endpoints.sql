-- +goose Up
-- A clinic's webhook endpoints beyond the spec's one (accounts.webhook_url,
-- which keeps announcing visit.message.created): each a URL, its signing
-- secret (sealed with the server key) and the event types it subscribed
-- to, comma separated.
CREATE TABLE webhook_endpoints (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id),
    url        TEXT    NOT NULL,
    secret     TEXT    NOT NULL,
    events     TEXT    NOT NULL,
    created    BIGINT  NOT NULL,
    modified   BIGINT  NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, id);
-- An event's delivery to an endpoint is an outbox item (topic 'event')
-- that names it: a clinic's deliveries are listed per endpoint.
ALTER TABLE outbox ADD COLUMN endpoint_id BIGINT;
CREATE INDEX outbox_endpoint ON outbox (account_id, endpoint_id, id) WHERE endpoint_id IS NOT NULL;

-- +goose Down
DROP INDEX outbox_endpoint;
ALTER TABLE outbox DROP COLUMN endpoint_id;
DROP TABLE webhook_endpoints;

-- +goose Up
-- A visit's call in peer-to-peer mode: who is in it and the signalling
-- messages between them (docs/design-notes.md, "The video visit"). The
-- rows are working state, not a record: a visit's go when it closes.
--
-- calls.seq numbers the visit's signals. Each signal takes the next one
-- by an UPDATE of this row, whose lock orders the signals' commits, so a
-- reader that has seen n never misses a signal numbered below n. Joins take
-- the same lock, which keeps a call's seat count exact.
CREATE TABLE calls (
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    visit_id   BIGINT NOT NULL REFERENCES visits (id),
    seq        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, visit_id)
);
-- A peer is one browser page in the call. seen moves at each keep-alive of
-- its signalling stream; a peer not seen for a while has gone.
CREATE TABLE call_peers (
    account_id BIGINT NOT NULL,
    visit_id   BIGINT NOT NULL,
    peer       TEXT   NOT NULL,
    user_id    BIGINT NOT NULL REFERENCES users (id),
    name       TEXT   NOT NULL,
    role       TEXT   NOT NULL,
    joined     BIGINT NOT NULL,
    seen       BIGINT NOT NULL,
    left_at    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, visit_id, peer),
    FOREIGN KEY (account_id, visit_id) REFERENCES calls (account_id, visit_id) ON DELETE CASCADE
);
-- to_peer '' is every peer of the call.
CREATE TABLE call_signals (
    account_id BIGINT NOT NULL,
    visit_id   BIGINT NOT NULL,
    seq        BIGINT NOT NULL,
    from_peer  TEXT   NOT NULL,
    to_peer    TEXT   NOT NULL,
    kind       TEXT   NOT NULL,
    body       TEXT   NOT NULL,
    created    BIGINT NOT NULL,
    PRIMARY KEY (account_id, visit_id, seq),
    FOREIGN KEY (account_id, visit_id) REFERENCES calls (account_id, visit_id) ON DELETE CASCADE
);
-- A provider's one-time invitation of a guest (an interpreter, a family
-- member) into a visit's call: the link's token, hashed. used_at is set
-- by the one UPDATE that accepts it.
CREATE TABLE call_invites (
    token_hash TEXT   PRIMARY KEY,
    account_id BIGINT NOT NULL,
    visit_id   BIGINT NOT NULL REFERENCES visits (id),
    invited_by BIGINT NOT NULL REFERENCES users (id),
    created    BIGINT NOT NULL,
    expires    BIGINT NOT NULL,
    used_at    BIGINT NOT NULL DEFAULT 0
);
-- The guests who accepted an invitation: participants of the visit's
-- call, and of nothing else of the visit.
CREATE TABLE call_guests (
    account_id BIGINT NOT NULL,
    visit_id   BIGINT NOT NULL REFERENCES visits (id),
    user_id    BIGINT NOT NULL REFERENCES users (id),
    invited_by BIGINT NOT NULL,
    created    BIGINT NOT NULL,
    PRIMARY KEY (account_id, visit_id, user_id)
);

-- +goose Down
DROP TABLE call_guests;
DROP TABLE call_invites;
DROP TABLE call_signals;
DROP TABLE call_peers;
DROP TABLE calls;
